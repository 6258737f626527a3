"""Temporary environment changes that are undone afterwards.

Spark reuses Python workers across tasks (``spark.python.worker.reuse``), so a task that sets
``TF_CONFIG`` or ``CUDA_VISIBLE_DEVICES`` must put the previous values back, or the next task in the
same process inherits them.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def scoped_environ(updates: Mapping[str, str | None]) -> Iterator[dict[str, str | None]]:
    """Apply ``updates`` (``None`` deletes a variable) and restore every touched variable on exit,
    including deleting ones that did not exist before. Yields the saved previous values."""
    saved = {name: os.environ.get(name) for name in updates}
    try:
        for name, value in updates.items():
            _set(name, value)
        yield dict(saved)
    finally:
        for name, value in saved.items():
            _set(name, value)


def _set(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
