"""What preprocessing one input file produced, and how a file is named in reports: shared by the token-file
path (``preprocess.py``) and the document path (``preprocess_docs.py``, ``predict_docs.py``) without either
importing the other."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FileResult:
    """What one file produced. ``report`` is a small JSON-able summary collected on the driver."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)


def display_path(uri: str) -> str:
    """Spark's ``file:/x/y.tsv`` → ``/x/y.tsv`` (what a person opens); other schemes stay URIs."""
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("file:"):
        return uri[len("file:"):]
    return uri
