"""A bounded, thread-safe LRU of word features (the word graph's output) keyed by word id + characters.

A word's features (word vector, char-CNN, char-BiLSTM, dense layer; for a gazetteer model the dense layer's
per-word share before its ReLU, the per-token gazetteer share being added in the context graph) do not
depend on its sentence, and text repeats words heavily, so rows computed once are reused across batches.
The key is the word id and the clipped character ids (the char row trimmed of padding), exactly the word
graph's inputs, so a hit returns bit-identical features.  Memory: ``capacity`` rows of ``dim`` float32 in
one preallocated array (``nbytes``), plus a dict of keys; ``stats()`` reports both.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np


class WordFeatureCache:
    def __init__(self, capacity: int, dim: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity, self.dim = capacity, dim
        self._rows = np.zeros((capacity, dim), dtype=np.float32)
        self._slot: OrderedDict[bytes, int] = OrderedDict()  # key -> row of _rows, oldest first
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @staticmethod
    def keys(word_ids: np.ndarray, chars: np.ndarray) -> list[bytes]:
        """One key per row: the bytes of (word id, char ids...) with trailing zero bytes stripped.  Real chars
        are non-zero ids followed by padding zeros, so stripping makes a key independent of the batch's char
        width and still unique (the stripped bytes, re-padded with zeros, give back the row)."""
        rows = np.concatenate([np.asarray(word_ids, dtype=np.int32)[:, None], chars], axis=1)
        return [r.tobytes().rstrip(b"\0") for r in rows]

    def features(self, word_ids: np.ndarray, word_chars: np.ndarray,
                 compute: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """Rows for every (word_ids[i], word_chars[i]); misses are computed in one ``compute`` call."""
        chars = np.ascontiguousarray(word_chars, dtype=np.int32)
        keys = self.keys(word_ids, chars)
        out = np.empty((len(keys), self.dim), dtype=np.float32)
        missing: list[int] = []
        with self._lock:
            for i, k in enumerate(keys):
                slot = self._slot.get(k)
                if slot is None:
                    missing.append(i)
                else:
                    self._slot.move_to_end(k)
                    out[i] = self._rows[slot]
            self.hits += len(keys) - len(missing)
            self.misses += len(missing)
        if not missing:
            return out
        idx = np.asarray(missing)
        fresh = compute(np.ascontiguousarray(word_ids[idx], dtype=np.int32), chars[idx])
        out[idx] = fresh
        with self._lock:
            for i, row in zip(missing, fresh):
                k = keys[i]
                if k in self._slot:  # another batch computed it meanwhile (same values)
                    continue
                if len(self._slot) < self.capacity:
                    slot = len(self._slot)
                else:
                    _, slot = self._slot.popitem(last=False)  # evict the least recently used
                self._slot[k] = slot
                self._rows[slot] = row
        return out

    def stats(self) -> dict[str, Any]:
        with self._lock:
            n = len(self._slot)
            key_bytes = sum(len(k) for k in self._slot)
            return {"entries": n, "capacity": self.capacity, "hits": self.hits, "misses": self.misses,
                    "rows_bytes": int(self._rows.nbytes), "keys_bytes": key_bytes}
