"""A large, read-only list of distinct strings that answers "which position holds this string?" in a few
bytes per string.

A Python ``dict`` from str to int costs ~130 bytes per entry (the str object, its hash-table slot and
entry); a word vocabulary that keeps every word of GloVe 6B (``model.vector_vocabulary``: 356k words after
normalisation) held 50 MB that way in every serving process.  Here the strings are one UTF-8 blob with
offsets (in position order), and lookups go through their 64-bit hashes, sorted, with a permutation back to
positions: ~25 bytes per string.  A hash match is confirmed by comparing the bytes, so a lookup is exact.
Python's ``hash`` is salted per process, which is fine: the hashes are computed in the process that uses
them and never stored.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np


class PackedStrings:
    def __init__(self, items: Sequence[str]) -> None:
        encoded = [s.encode("utf-8") for s in items]
        self._offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=self._offsets[1:])
        self._blob = b"".join(encoded)
        hashes = np.fromiter((hash(s) for s in items), dtype=np.int64, count=len(items))
        self._order = np.argsort(hashes, kind="stable").astype(np.int32)
        self._hashes = hashes[self._order]
        starts = np.flatnonzero(np.r_[True, self._hashes[1:] != self._hashes[:-1], True])
        for a, b in zip(starts[:-1], starts[1:]):
            if b - a > 1:  # equal hashes: distinct strings are fine, a repeated string is not
                run = [encoded[int(i)] for i in self._order[a:b]]
                if len(set(run)) < len(run):
                    repeated = next(x for x in run if run.count(x) > 1)
                    raise ValueError(f"duplicate item {repeated.decode('utf-8')!r}")

    def __len__(self) -> int:
        return len(self._order)

    def __getitem__(self, i: int) -> str:
        return self._blob[self._offsets[i]:self._offsets[i + 1]].decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def index(self, item: str) -> int:
        """The position of ``item``, or -1."""
        return int(self.indices([item])[0])

    def indices(self, items: Sequence[str]) -> np.ndarray:
        """(len(items),) int64 positions, -1 for strings not held; one vectorised search for all of them."""
        out = np.full(len(items), -1, dtype=np.int64)
        if not len(self) or not items:
            return out
        wanted = np.fromiter((hash(s) for s in items), dtype=np.int64, count=len(items))
        pos = np.searchsorted(self._hashes, wanted)
        n = len(self._hashes)
        for k in np.flatnonzero((pos < n) & (self._hashes[np.minimum(pos, n - 1)] == wanted)):
            target = items[int(k)].encode("utf-8")
            p = int(pos[k])
            while p < n and self._hashes[p] == wanted[k]:  # the run of equal hashes (almost always one)
                i = int(self._order[p])
                if self._blob[self._offsets[i]:self._offsets[i + 1]] == target:
                    out[k] = i
                    break
                p += 1
        return out
