"""Read a ``.safetensors`` file into NumPy arrays without the ``safetensors`` package.

The format is an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and
byte range, then the raw little-endian bytes.  Reading it here keeps PyTorch and its wheels out of the
install: only the arrays are needed.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from nerservice.errors import EmbeddingsError

DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": None, "I64": "<i8", "I32": "<i4"}
MAX_HEADER = 100 * 1024 * 1024


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise EmbeddingsError(f"cannot read {path}: {exc}") from None
    if len(raw) < 8:
        raise EmbeddingsError(f"{path}: not a safetensors file (shorter than its header length)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > min(MAX_HEADER, len(raw) - 8):
        raise EmbeddingsError(f"{path}: not a safetensors file (header length {n})")
    try:
        header = json.loads(raw[8 : 8 + n])
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EmbeddingsError(f"{path}: unreadable safetensors header: {exc}") from None
    body = memoryview(raw)[8 + n :]
    out: dict[str, np.ndarray] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = DTYPES.get(spec.get("dtype"))
        begin, end = spec["data_offsets"]
        if dtype is None or not 0 <= begin <= end <= len(body):
            raise EmbeddingsError(f"{path}: tensor {name!r} has dtype {spec.get('dtype')} or range {begin}-{end}"
                                  " this reader does not take")
        arr = np.frombuffer(body[begin:end], dtype=dtype)
        shape = tuple(int(d) for d in spec["shape"])
        if arr.size != int(np.prod(shape)):
            raise EmbeddingsError(f"{path}: tensor {name!r} holds {arr.size} values for shape {shape}")
        out[name] = arr.reshape(shape)
    return out
