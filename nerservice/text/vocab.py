"""Vocabularies: words, characters, tags, and their one-file JSON form saved with every model.

Word ids are looked up by ``normalize_word`` forms (the caller normalises; ``Vocabulary`` itself is a
plain string→id map, which is also what the char vocabulary needs).  Orders are deterministic — counts
descending, then lexical — so the same corpus always gives the same ids, whatever the input order.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nerservice.encoder.wordpiece import WordPiece
from nerservice.errors import CorpusError, ModelLoadError
from nerservice.text.gazetteer import Gazetteer

# Re-exported: their home is text/normalize.py (the gazetteer needs them without the vocabularies).
from nerservice.text.normalize import DIGIT_SCAN_LIMIT as DIGIT_SCAN_LIMIT
from nerservice.text.normalize import normalize_word as normalize_word
from nerservice.text.packed_strings import PackedStrings

# Ids below this live in a dict (fast lookups: a model's own corpus words come first); the rest, in a
# vocabulary that keeps a vectors file's words (``model.vector_vocabulary``), in a ``PackedStrings``:
# ~25 bytes per word instead of ~130 (356k GloVe words: 50 MB of every serving process, BENCHMARKS.md
# session 22), at a few microseconds per lookup of a word past the dict.
DICT_IDS = 50_000
PAD_ID = 0
UNK_ID = 1
PAD = "<pad>"
UNK = "<unk>"
VOCAB_VERSION = "nerservice.vocab.v1"


class Vocabulary:
    """String ↔ id map with ``<pad>`` = 0 and ``<unk>`` = 1 reserved; unknown strings map to ``UNK_ID``."""

    def __init__(self, items: Sequence[str]) -> None:
        self._items: list[str] = [PAD, UNK]
        self._ids: dict[str, int] = {PAD: PAD_ID, UNK: UNK_ID}
        items = list(items)
        for item in items:
            if not isinstance(item, str):
                raise TypeError(f"vocabulary items must be str, got {type(item).__name__}: {item!r}")
        head, tail = items[: DICT_IDS - 2], items[DICT_IDS - 2:]
        for item in head:
            if item in self._ids:
                what = "reserved" if item in (PAD, UNK) else "duplicate"
                raise ValueError(f"{what} vocabulary item {item!r}")
            self._ids[item] = len(self._items)
            self._items.append(item)
        self._tail: PackedStrings | None = None
        if tail:
            clash = next((item for item in tail if item in self._ids), None)
            if clash is not None:
                raise ValueError(f"{'reserved' if clash in (PAD, UNK) else 'duplicate'} vocabulary item {clash!r}")
            try:
                self._tail = PackedStrings(tail)
            except ValueError as exc:
                raise ValueError(f"vocabulary: {exc}") from None

    @classmethod
    def build(
        cls,
        items: Iterable[str],
        *,
        min_count: int = 1,
        max_size: int | None = None,
        extra: Iterable[str] = (),
    ) -> "Vocabulary":
        """Counted items (count ≥ ``min_count``, at most ``max_size`` of them, most frequent first, ties
        lexical), then ``extra`` (e.g. words that have pretrained vectors) in the given order, skipping
        ones already present.  Neither ``min_count`` nor ``max_size`` applies to ``extra``: a word with a
        pretrained vector is worth an id even if the corpus never shows it."""
        counts = Counter(items)
        counts.pop(PAD, None)
        counts.pop(UNK, None)
        ranked = sorted((item for item, n in counts.items() if n >= min_count), key=lambda w: (-counts[w], w))
        if max_size is not None:
            ranked = ranked[:max_size]
        seen = set(ranked)
        for item in extra:
            if item not in seen and item not in (PAD, UNK):
                seen.add(item)
                ranked.append(item)
        return cls(ranked)

    def id(self, item: str) -> int:
        found = self._ids.get(item)
        if found is not None:
            return found
        return self.ids([item])[0] if self._tail is not None else UNK_ID

    def ids(self, items: Iterable[str]) -> list[int]:
        get = self._ids.get
        items = list(items)
        out = [get(item, UNK_ID) for item in items]
        if self._tail is not None:
            missed = [k for k, i in enumerate(out) if i == UNK_ID]
            found = self._tail.indices([items[k] for k in missed])
            base = len(self._items)
            for k, p in zip(missed, found.tolist()):
                if p >= 0:
                    out[k] = base + p
        return out

    def item(self, idx: int) -> str:
        if not 0 <= idx < len(self):
            raise IndexError(f"vocabulary id {idx} out of range 0..{len(self) - 1}")
        return self._items[idx] if idx < len(self._items) else self._tail[idx - len(self._items)]  # type: ignore[index]

    def __len__(self) -> int:
        return len(self._items) + (len(self._tail) if self._tail is not None else 0)

    def __contains__(self, item: object) -> bool:
        if item in self._ids:
            return True
        return isinstance(item, str) and self._tail is not None and self._tail.index(item) >= 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and len(self) == len(other) and self.items == other.items

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} ids)"

    @property
    def items(self) -> list[str]:
        """The items without the two reserved entries (id = position + 2)."""
        return self._items[2:] + (list(self._tail) if self._tail is not None else [])

    def to_dict(self) -> dict[str, Any]:
        return {"items": self.items}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Vocabulary":
        items = d.get("items") if isinstance(d, dict) else None
        if not isinstance(items, list):
            raise ModelLoadError("vocabulary data has no 'items' list", got=type(d).__name__)
        try:
            return cls(items)
        except (TypeError, ValueError) as exc:
            raise ModelLoadError(f"corrupt vocabulary: {exc}") from None


class TagVocabulary:
    """Tag ↔ id map without padding/unknown entries: "O" is always 0, the other tags follow sorted."""

    def __init__(self, tags: Iterable[str]) -> None:
        others = sorted(set(tags) - {"O"})
        self._tags: list[str] = ["O", *others]
        self._ids: dict[str, int] = {t: i for i, t in enumerate(self._tags)}

    def id(self, tag: str) -> int:
        try:
            return self._ids[tag]
        except KeyError:
            raise CorpusError(
                f"unknown tag {tag!r}; this tag set knows {self._tags}",
                hint="the tag is not in the training data the vocabulary was built from",
                tag=tag,
                known=self._tags,
            ) from None

    def tag(self, idx: int) -> str:
        if not 0 <= idx < len(self._tags):
            raise IndexError(f"tag id {idx} out of range 0..{len(self._tags) - 1}")
        return self._tags[idx]

    def __len__(self) -> int:
        return len(self._tags)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TagVocabulary) and self._tags == other._tags

    def __repr__(self) -> str:
        return f"TagVocabulary({self._tags})"

    @property
    def tags(self) -> list[str]:
        return list(self._tags)

    @property
    def labels(self) -> list[str]:
        """Entity types, sorted: "B-Disease", "I-Disease" → "Disease" (any one-letter prefix + "-")."""
        return sorted({t[2:] for t in self._tags if len(t) > 2 and t[1] == "-"})

    def to_dict(self) -> dict[str, Any]:
        return {"tags": self.tags}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TagVocabulary":
        tags = d.get("tags") if isinstance(d, dict) else None
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ModelLoadError("tag vocabulary data has no 'tags' list of strings", got=type(d).__name__)
        vocab = cls(tags)
        if vocab.tags != tags:  # ids are positions: a reordered list would silently remap every tag
            raise ModelLoadError(f"corrupt tag vocabulary: tags {tags} are not in canonical order {vocab.tags}")
        return vocab


HEAD_SEP = "|"  # a multi-corpus model's tag column is named "<corpus>|<tag>", e.g. "ncbi|B-Disease"


class MultiTagVocabulary:
    """The tag columns of a multi-corpus model: one ``TagVocabulary`` per corpus (its head), laid side by
    side. Column ids run head by head (head 0's "O" is 0); a column belongs to exactly one head, so the
    gold tag of a sentence's first token names the head that sentence trains."""

    def __init__(self, heads: Sequence[tuple[str, Iterable[str]]]) -> None:
        if not heads:
            raise ValueError("a multi-corpus tag vocabulary needs at least one head")
        self.heads: list[tuple[str, TagVocabulary]] = [(name, TagVocabulary(tags)) for name, tags in heads]
        names = [n for n, _ in self.heads]
        if len(set(names)) != len(names) or any(not n or HEAD_SEP in n for n in names):
            raise ValueError(f"head names must be unique, non-empty and without {HEAD_SEP!r}: {names}")
        self._tags = [f"{n}{HEAD_SEP}{t}" for n, tv in self.heads for t in tv.tags]
        self._ids = {t: i for i, t in enumerate(self._tags)}
        starts = np.cumsum([0] + [len(tv) for _, tv in self.heads])
        self.slices = [slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.heads]

    def head(self, name: str) -> tuple[slice, TagVocabulary]:
        i = self.names.index(name)
        return self.slices[i], self.heads[i][1]

    def column_heads(self) -> np.ndarray:
        """(K,) the head index of every tag column."""
        return np.concatenate([np.full(s.stop - s.start, i, dtype=np.int32) for i, s in enumerate(self.slices)])

    # The same column lookups as a single head's (both keep ``_tags``/``_ids`` over all columns).
    def id(self, tag: str) -> int:
        return TagVocabulary.id(self, tag)  # type: ignore[arg-type]

    def tag(self, i: int) -> str:
        return TagVocabulary.tag(self, i)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return TagVocabulary.__len__(self)  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MultiTagVocabulary) and self._tags == other._tags

    def __repr__(self) -> str:
        return f"MultiTagVocabulary({[(n, tv.tags) for n, tv in self.heads]})"

    @property
    def tags(self) -> list[str]:
        return list(self._tags)

    @property
    def labels(self) -> list[str]:
        """Entity types over all heads (labels merged by the corpora's label maps appear once)."""
        return sorted({label for _, tv in self.heads for label in tv.labels})

    def to_dict(self) -> dict[str, Any]:
        return {"tags": self.tags, "heads": [{"name": n, "tags": tv.tags} for n, tv in self.heads]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MultiTagVocabulary":
        heads = d.get("heads")
        ok = isinstance(heads, list) and all(
            isinstance(h, dict) and isinstance(h.get("name"), str) and isinstance(h.get("tags"), list)
            and all(isinstance(t, str) for t in h["tags"]) for h in heads)
        if not ok:
            raise ModelLoadError("multi-corpus tag vocabulary has no valid 'heads' list")
        try:
            vocab = cls([(h["name"], h["tags"]) for h in heads])  # type: ignore[union-attr]
        except ValueError as exc:
            raise ModelLoadError(f"corrupt multi-corpus tag vocabulary: {exc}") from None
        if vocab.tags != d.get("tags") or any(tv.tags != h["tags"] for (_, tv), h in zip(vocab.heads, heads or [])):
            raise ModelLoadError("corrupt multi-corpus tag vocabulary: tags are not in canonical order")
        return vocab


def tag_vocabulary_from_dict(d: Any) -> TagVocabulary | MultiTagVocabulary:
    if isinstance(d, dict) and "heads" in d:
        return MultiTagVocabulary.from_dict(d)
    return TagVocabulary.from_dict(d)


@dataclass
class Vocabularies:
    """Everything needed to turn tokens into ids and ids back into tags, saved beside the model."""

    words: Vocabulary
    chars: Vocabulary
    tags: TagVocabulary | MultiTagVocabulary
    # The character LM's own characters (``model.char_lm``), None without one; saved only when present, so
    # the vocabularies of models without an LM stay byte for byte what they were.
    lm_chars: Vocabulary | None = None
    # The dictionary feature's strings (``model.gazetteer``), None without one; saved only when present.
    gazetteer: Gazetteer | None = None
    # The pretrained encoder's word pieces (``model.encoder``), None without one; saved only when present.
    word_pieces: WordPiece | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "version": VOCAB_VERSION,
            "words": self.words.to_dict(),
            "chars": self.chars.to_dict(),
            "tags": self.tags.to_dict(),
        }
        if self.lm_chars is not None:
            out["lm_chars"] = self.lm_chars.to_dict()
        if self.gazetteer is not None:
            out["gazetteer"] = self.gazetteer.to_dict()
        if self.word_pieces is not None:
            out["word_pieces"] = self.word_pieces.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Vocabularies":
        if not isinstance(d, dict) or d.get("version") != VOCAB_VERSION:
            got = d.get("version") if isinstance(d, dict) else type(d).__name__
            raise ModelLoadError(f"unsupported vocabularies version {got!r}, expected {VOCAB_VERSION!r}")
        return cls(
            words=Vocabulary.from_dict(d.get("words")),  # type: ignore[arg-type]
            chars=Vocabulary.from_dict(d.get("chars")),  # type: ignore[arg-type]
            tags=tag_vocabulary_from_dict(d.get("tags")),
            lm_chars=Vocabulary.from_dict(d["lm_chars"]) if "lm_chars" in d else None,
            gazetteer=Gazetteer.from_dict(d["gazetteer"]) if "gazetteer" in d else None,
            word_pieces=word_pieces_from_dict(d["word_pieces"]) if "word_pieces" in d else None,
        )

    def save(self, path: str | Path) -> None:
        """Write one UTF-8 JSON file atomically: a crash never leaves a half-written vocabulary."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.to_dict(), f, ensure_ascii=False)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | Path) -> "Vocabularies":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ModelLoadError(f"cannot read vocabularies {path}: {exc}", path=str(path)) from None
        return cls.from_dict(data)


def word_pieces_from_dict(d: Any) -> WordPiece:
    try:
        return WordPiece.from_dict(d)
    except ValueError as exc:
        raise ModelLoadError(f"vocabularies: {exc}") from None
