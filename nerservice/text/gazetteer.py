"""Entity strings of the training annotations, matched in text as one feature per token (``model.gazetteer``).

The tagger sees, at each token, whether it begins or continues a string that the training corpus annotated
as an entity of some type ("acute myeloid leukemia" → Disease): a dictionary feature, as in the CRF-era
biomedical taggers, built from the corpus itself so nothing is downloaded.

Two rules keep it honest:
  * A string enters only when the training text annotates most of its occurrences (``min_ratio``): "cancer"
    alone in NCBI-disease is tagged nearly always, "development" never — a string that is an entity in
    one abstract and plain text in ten would mislead more than it helps.
  * Training sentences get the feature **without their own annotations** (jackknife): the training text is
    cut into ``folds`` contiguous blocks (these corpora keep abstracts together) and each block is matched
    against the gazetteer of the other blocks.  Matched against its own annotations, every training entity
    would carry the feature and the network would learn to trust it blindly; at test time new entities never
    do.  Dev, test and inference text use the gazetteer of the whole training set, saved with the model.

Feature ids: 0 padding, 1 no match, ``2 + 2k`` begins a string of type k, ``3 + 2k`` continues one.
Matching is greedy, longest string first, left to right; keys are ``normalize_word`` forms (lower case,
digits → 0), so "BRCA1" and "brca2" are the same key.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import numpy as np

from nerservice.data.schemes import spans
from nerservice.errors import ModelLoadError
from nerservice.text.normalize import normalize_word

GAZETTEER_VERSION: Final = "nerservice.gazetteer.v1"
NO_MATCH: Final = 1


class TaggedSentence(Protocol):
    @property
    def tokens(self) -> Sequence[str]: ...

    @property
    def tags(self) -> Sequence[str]: ...


Key = tuple[str, ...]


@dataclass(frozen=True)
class Gazetteer:
    types: tuple[str, ...]
    entries: Mapping[Key, int]  # normalised token tuple -> index into ``types``
    max_tokens: int

    @property
    def n_ids(self) -> int:
        """Size of the feature's id space (the tagger's embedding rows)."""
        return 2 + 2 * len(self.types)

    def token_ids(self, tokens: Sequence[str]) -> list[int]:
        keys = [normalize_word(t) for t in tokens]
        return self._match(keys, self.entries)

    def _match(self, keys: Sequence[str], entries: Mapping[Key, int]) -> list[int]:
        out = [NO_MATCH] * len(keys)
        i, n = 0, len(keys)
        while i < n:
            for width in range(min(self.max_tokens, n - i), 0, -1):
                k = entries.get(tuple(keys[i:i + width]))
                if k is not None:
                    out[i] = 2 + 2 * k
                    out[i + 1:i + width] = [3 + 2 * k] * (width - 1)
                    i += width
                    break
            else:
                i += 1
        return out

    def flat_ids(self, sentences: Iterable[Sequence[str]]) -> np.ndarray:
        """Every token's feature id, sentences concatenated (``EncodedCorpus``'s flat layout)."""
        ids = [x for tokens in sentences for x in self.token_ids(tokens)]
        return np.asarray(ids, dtype=np.int32)

    def jackknife_ids(self, sentences: Sequence[TaggedSentence], *, folds: int, min_ratio: float) -> np.ndarray:
        """The training sentences' feature ids, each block of sentences matched against a gazetteer built
        from the other blocks only (see the module docstring); types stay this gazetteer's."""
        keys = [[normalize_word(t) for t in s.tokens] for s in sentences]
        bounds = np.linspace(0, len(sentences), max(1, min(folds, len(sentences))) + 1).astype(int)
        out: list[int] = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            rest = [i for i in range(len(sentences)) if not a <= i < b]
            entries = _select(*_count(keys, sentences, rest, self.max_tokens), min_ratio=min_ratio,
                              type_index={t: j for j, t in enumerate(self.types)})
            for i in range(a, b):
                out.extend(self._match(keys[i], entries))
        return np.asarray(out, dtype=np.int32)

    def to_dict(self) -> dict[str, Any]:
        return {"version": GAZETTEER_VERSION, "types": list(self.types), "max_tokens": self.max_tokens,
                "entries": [[list(k), v] for k, v in sorted(self.entries.items())]}

    @classmethod
    def from_dict(cls, d: Any) -> Gazetteer:
        if not isinstance(d, dict) or d.get("version") != GAZETTEER_VERSION:
            got = d.get("version") if isinstance(d, dict) else type(d).__name__
            raise ModelLoadError(f"unsupported gazetteer version {got!r}, expected {GAZETTEER_VERSION!r}")
        types = tuple(str(t) for t in d.get("types", []))
        try:
            entries = {tuple(str(x) for x in k): int(v) for k, v in d.get("entries", [])}
        except (TypeError, ValueError):
            raise ModelLoadError("the gazetteer's entries are not [[tokens...], type index] pairs") from None
        if any(not 0 <= v < len(types) or not k for k, v in entries.items()):
            raise ModelLoadError("a gazetteer entry names a type index outside its types, or no tokens")
        return cls(types=types, entries=entries, max_tokens=int(d.get("max_tokens", 1)))

    def __len__(self) -> int:
        return len(self.entries)


def _count(keys: Sequence[Sequence[str]], sentences: Sequence[TaggedSentence], rows: Iterable[int],
           max_tokens: int) -> tuple[dict[Key, Counter[str]], Counter[Key]]:
    """(annotations per string and type, occurrences of each annotated string anywhere in ``rows``)."""
    rows = list(rows)
    annotated: dict[Key, Counter[str]] = defaultdict(Counter)
    for i in rows:
        for start, end, label in spans(sentences[i].tags):
            if end - start <= max_tokens:
                annotated[tuple(keys[i][start:end])][label] += 1
    widths = sorted({len(k) for k in annotated})
    seen: Counter[Key] = Counter()
    for i in rows:
        ks = keys[i]
        for j in range(len(ks)):
            for w in widths:
                if j + w > len(ks):
                    break
                key = tuple(ks[j:j + w])
                if key in annotated:
                    seen[key] += 1
    return annotated, seen


def _select(annotated: Mapping[Key, Counter[str]], seen: Mapping[Key, int], *, min_ratio: float,
            type_index: Mapping[str, int]) -> dict[Key, int]:
    entries: dict[Key, int] = {}
    for key, by_type in annotated.items():
        if sum(by_type.values()) >= min_ratio * max(seen.get(key, 0), 1):
            label = min(by_type, key=lambda t: (-by_type[t], t))  # the most frequent type; ties by name
            if label in type_index:
                entries[key] = type_index[label]
    return entries


def build_gazetteer(sentences: Sequence[TaggedSentence], *, min_ratio: float, max_tokens: int) -> Gazetteer:
    """The gazetteer of ``sentences``' annotations (strings of at most ``max_tokens`` tokens)."""
    keys = [[normalize_word(t) for t in s.tokens] for s in sentences]
    annotated, seen = _count(keys, sentences, range(len(sentences)), max_tokens)
    types = tuple(sorted({t for c in annotated.values() for t in c}))
    entries = _select(annotated, seen, min_ratio=min_ratio, type_index={t: j for j, t in enumerate(types)})
    return Gazetteer(types=types, entries=entries, max_tokens=max_tokens)
