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

Several corpora (one multi-corpus model): each corpus's strings are selected on its own text (a chemical in
an NCBI-disease abstract is not annotated there, and must not count against the chemical), types are named
per corpus (``"bc5cdr|Chemical"``), and where two corpora hold the same string the one listed first keeps
it.  A training sentence is matched against its own corpus's other blocks and the other corpora whole — as
new text of that corpus is at inference.

Feature ids: 0 padding, 1 no match, ``2 + 2k`` begins a string of type k, ``3 + 2k`` continues one.
Matching is greedy, longest string first, left to right; keys are ``normalize_word`` forms (lower case,
digits → 0), so "BRCA1" and "brca2" are the same key.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
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

    @cached_property
    def _starts(self) -> dict[str, tuple[int, ...]]:
        return _index(self.entries)

    def token_ids(self, tokens: Sequence[str]) -> list[int]:
        return _match([normalize_word(t) for t in tokens], self.entries, self._starts)

    def flat_ids(self, sentences: Iterable[Sequence[str]]) -> np.ndarray:
        """Every token's feature id, sentences concatenated (``EncodedCorpus``'s flat layout)."""
        ids = [x for tokens in sentences for x in self.token_ids(tokens)]
        return np.asarray(ids, dtype=np.int32)

    def ids_of_keys(self, keys: Sequence[str], offsets: Sequence[int]) -> np.ndarray:
        """``flat_ids`` from tokens already in ``normalize_word`` form, flat, sentence ``i`` at
        ``keys[offsets[i]:offsets[i + 1]]``: ``EncodedCorpus`` normalises each distinct token once anyway."""
        starts = self._starts
        ids = [x for a, b in zip(offsets[:-1], offsets[1:]) for x in _match(keys[a:b], self.entries, starts)]
        return np.asarray(ids, dtype=np.int32)

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


@dataclass(frozen=True)
class GazetteerBuild:
    gazetteer: Gazetteer  # of all the training text: saved with the model, matched against new text
    training_ids: np.ndarray  # the training sentences' ids (flat, in the order given), jackknifed


def _index(entries: Mapping[Key, int]) -> dict[str, tuple[int, ...]]:
    """First token -> the widths of the strings it starts, longest first: most tokens start none, so a
    position costs one dictionary lookup."""
    widths: dict[str, set[int]] = defaultdict(set)
    for key in entries:
        widths[key[0]].add(len(key))
    return {k: tuple(sorted(w, reverse=True)) for k, w in widths.items()}


def _match(keys: Sequence[str], entries: Mapping[Key, int], starts: Mapping[str, tuple[int, ...]]) -> list[int]:
    """Greedy left to right, the longest string first."""
    out = [NO_MATCH] * len(keys)
    i, n = 0, len(keys)
    while i < n:
        for width in starts.get(keys[i], ()):
            k = entries.get(tuple(keys[i:i + width])) if i + width <= n else None
            if k is not None:
                out[i] = 2 + 2 * k
                out[i + 1:i + width] = [3 + 2 * k] * (width - 1)
                i += width
                break
        else:
            i += 1
    return out


def _count(keys: Sequence[Sequence[str]], sentences: Sequence[TaggedSentence], rows: Iterable[int],
           max_tokens: int) -> tuple[dict[Key, Counter[str]], Counter[Key]]:
    """(annotations per string and label, occurrences of each annotated string anywhere in ``rows``)."""
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


def _select(annotated: Mapping[Key, Counter[str]], seen: Mapping[Key, int], *, min_ratio: float) -> dict[Key, str]:
    """The strings annotated in at least ``min_ratio`` of their occurrences, each with its most frequent
    label (ties by name)."""
    return {key: min(by_type, key=lambda t: (-by_type[t], t)) for key, by_type in annotated.items()
            if sum(by_type.values()) >= min_ratio * max(seen.get(key, 0), 1)}


def _merged(parts: Sequence[Mapping[Key, str]], prefixes: Sequence[str], type_index: Mapping[str, int]
            ) -> dict[Key, int]:
    """One corpus's selection after another; a string already held by an earlier corpus stays its."""
    out: dict[Key, int] = {}
    for part, prefix in zip(parts, prefixes):
        for key, label in part.items():
            out.setdefault(key, type_index[prefix + label])
    return out


def build_for_training(corpora: Sequence[tuple[str, Sequence[TaggedSentence]]], *, min_ratio: float,
                       max_tokens: int, folds: int) -> GazetteerBuild:
    """The gazetteer of ``corpora`` — (type prefix, training sentences) pairs, ``""`` for one corpus — and the
    training sentences' feature ids, each of ``folds`` blocks per corpus matched without its own annotations
    (module docstring)."""
    gazetteer, keys, full, type_index = _build(corpora, min_ratio=min_ratio, max_tokens=max_tokens)
    prefixes = [p for p, _ in corpora]
    out: list[int] = []
    for c, (_, sents) in enumerate(corpora):
        bounds = np.linspace(0, len(sents), max(1, min(folds, len(sents))) + 1).astype(int)
        for a, b in zip(bounds[:-1], bounds[1:]):
            rest = [i for i in range(len(sents)) if not a <= i < b]
            own = _select(*_count(keys[c], sents, rest, max_tokens), min_ratio=min_ratio)
            entries = _merged([own if j == c else part for j, part in enumerate(full)], prefixes, type_index)
            starts = _index(entries)
            for i in range(a, b):
                out.extend(_match(keys[c][i], entries, starts))
    return GazetteerBuild(gazetteer, np.asarray(out, dtype=np.int32))


def _build(corpora: Sequence[tuple[str, Sequence[TaggedSentence]]], *, min_ratio: float, max_tokens: int
           ) -> tuple[Gazetteer, list[list[list[str]]], list[dict[Key, str]], dict[str, int]]:
    """(the gazetteer, every sentence's keys, each corpus's own selection, type -> index)."""
    prefixes = [p for p, _ in corpora]
    keys = [[[normalize_word(t) for t in s.tokens] for s in sents] for _, sents in corpora]
    counted = [_count(k, sents, range(len(sents)), max_tokens) for k, (_, sents) in zip(keys, corpora)]
    full = [_select(*c, min_ratio=min_ratio) for c in counted]
    types = tuple(sorted({p + label for (annotated, _), p in zip(counted, prefixes)
                          for c in annotated.values() for label in c}))
    type_index = {t: j for j, t in enumerate(types)}
    gazetteer = Gazetteer(types=types, entries=_merged(full, prefixes, type_index), max_tokens=max_tokens)
    return gazetteer, keys, full, type_index


def build_gazetteer(sentences: Sequence[TaggedSentence], *, min_ratio: float, max_tokens: int) -> Gazetteer:
    """The gazetteer of one corpus's annotations (strings of at most ``max_tokens`` tokens)."""
    return _build([("", sentences)], min_ratio=min_ratio, max_tokens=max_tokens)[0]
