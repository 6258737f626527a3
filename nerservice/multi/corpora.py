"""The corpora of a multi-corpus config, read, relabelled and checked before anything trains.

Each corpus keeps its own tag set (its head). Inside the model a corpus's tags are named
``<corpus>|<tag>`` (``ncbi|B-Disease``, ``ncbi|O``): every tag column then belongs to one head, and the
tag of a sentence's first token tells the training step which head the sentence trains
(``nerservice/multi/tagger.py``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nerservice.data import Sentence
from nerservice.errors import EmptyCorpusError, EmptyLabelSetError
from nerservice.multi.config import CorporaConfig, CorpusSpec
from nerservice.text.vocab import HEAD_SEP, MultiTagVocabulary


@dataclass
class CorpusSplits:
    """One corpus's splits, labels already renamed by its label map (tags are plain IOB2)."""

    name: str
    train: list[Sentence]
    dev: list[Sentence]
    test: list[Sentence] | None = None

    def labelled(self) -> list[Sentence]:
        return self.train + self.dev + (self.test or [])

    @property
    def labels(self) -> list[str]:
        return sorted({t[2:] for s in self.labelled() for t in s.tags if t != "O"})


def with_dev_in_train(corpora: Sequence[CorpusSplits]) -> list[CorpusSplits]:
    """The final-model recipe's phase 2 (``training/recipes.py``): every corpus trains on train + dev; dev
    stays the evaluation set (then a training-set figure)."""
    return [CorpusSplits(c.name, [*c.train, *c.dev], c.dev, c.test) for c in corpora]


def evaluation_splits(corpora: Sequence[CorpusSplits]) -> dict[str, dict[str, list[Sentence]]]:
    """{"dev": {corpus: sentences}, "test": {...}} — what ``multi.evaluation.evaluate_heads`` scores an
    ensemble of multi-corpus models on (``--seeds N``); "test" only for the corpora that have one."""
    splits = {"dev": {c.name: list(c.dev) for c in corpora}}
    tests = {c.name: list(c.test) for c in corpora if c.test}
    return {**splits, "test": tests} if tests else splits


def relabel(sentences: Sequence[Sentence], spec: CorpusSpec) -> list[Sentence]:
    if not spec.label_map:
        return list(sentences)
    return [Sentence(s.tokens, tuple(t if t == "O" else f"{t[:2]}{spec.mapped(t[2:])}" for t in s.tags),
                     file=s.file, line=s.line) for s in sentences]


def build_splits(config: CorporaConfig, raw: Mapping[str, Mapping[str, Sequence[Sentence]]]) -> list[CorpusSplits]:
    """``raw[name][split]``: sentences as read (by ``read_corpora`` here, or from Parquet by the Spark
    job). Checks each corpus has sentences and entity labels, and that its label map fits its labels."""
    out = []
    for spec in config.corpora:
        parts = raw[spec.name]
        for split in ("train", "dev"):
            if not parts.get(split):
                raise EmptyCorpusError(f"corpus {spec.name!r}: its {split} split has no sentences",
                                       corpus=spec.name, split=split)
        labels = {t[2:] for part in parts.values() for s in part for t in s.tags if t != "O"}
        if not {t[2:] for s in parts["train"] for t in s.tags if t != "O"}:
            raise EmptyLabelSetError(f"corpus {spec.name!r}: its train split has no entity labels (every tag is O)",
                                     hint="a corpus teaches its head only through its entities",
                                     corpus=spec.name)
        config.check_labels(spec.name, labels)
        test = parts.get("test")
        out.append(CorpusSplits(spec.name, relabel(parts["train"], spec), relabel(parts["dev"], spec),
                                relabel(test, spec) if test is not None else None))
    return out


def read_corpora(config: CorporaConfig, *, lenient: bool = False) -> list[CorpusSplits]:
    config.check()
    raw = {spec.name: {split: _read(path, spec, lenient) for split, path in spec.paths().items()}
           for spec in config.corpora}
    return build_splits(config, raw)


def _read(path: str, spec: CorpusSpec, lenient: bool) -> list[Sentence]:
    """Token files through nerservice.data; PubTator/BioC/BRAT/JSON-lines documents (``format`` or detected)
    through nerservice.documents (the corpus's label map then applies to the converted labels)."""
    from nerservice.data import read_corpus
    from nerservice.documents import ConvertOptions, document_format, read_document_corpus

    doc_fmt = document_format([path], spec.format)
    if doc_fmt is not None:
        options = ConvertOptions(lenient=lenient, sentences=spec.sentences, tokens=spec.tokens)
        return read_document_corpus(path, fmt=doc_fmt, options=options).sentences
    return read_corpus(path, fmt=spec.format, scheme=spec.scheme, lenient=lenient).sentences  # type: ignore[arg-type]


def namespaced(name: str, sentences: Sequence[Sentence]) -> list[Sentence]:
    return [Sentence(s.tokens, tuple(f"{name}{HEAD_SEP}{t}" for t in s.tags), file=s.file, line=s.line)
            for s in sentences]


def tag_vocabulary(corpora: Sequence[CorpusSplits]) -> MultiTagVocabulary:
    """Heads in config order, each with the tags of all its labelled splits."""
    return MultiTagVocabulary([(c.name, {t for s in c.labelled() for t in s.tags}) for c in corpora])
