"""The optional packages of the runtime, imported with a coded install hint instead of a traceback."""
from __future__ import annotations

import importlib
from typing import Any

from nerservice.errors import ModelLoadError

HINTS = {
    "onnxruntime": "install the inference runtime: pip install 'nerservice[serve]' (or: pip install onnxruntime)",
    "onnx": "install the export tools: pip install 'nerservice[export]' (onnx, beside the training extra)",
}


def require(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ModelLoadError(f"the {name} package is not installed ({exc})", hint=HINTS[name]) from None
