"""The multi-corpus config: which corpora one model learns, their splits, and how their labels are named.

    {
      "version": "nerservice.corpora.v1",
      "corpora": [
        {"name": "ncbi",   "train": "NCBI-disease/train.tsv", "dev": "NCBI-disease/devel.tsv",
         "test": "NCBI-disease/test.tsv"},
        {"name": "bc2gm",  "train": "BC2GM/train.tsv", "dev": "BC2GM/devel.tsv", "label_map": {"GENE": "Gene"}}
      ],
      "batching": "per-corpus"
    }

Relative paths are relative to the config file's folder. ``label_map`` renames a corpus's entity types
when its files are read (``GENE`` -> ``Gene``); two corpora mapping onto one name merge that type in the
model's output (NCBI's and BC5CDR's ``Disease``). Within one corpus two labels may not land on one name:
that would silently merge two types the corpus keeps apart (``LabelMapError``).

``batching``: "per-corpus" (every batch holds sentences of one corpus; the batches of all corpora are
shuffled together, so each corpus is sampled in proportion to its size) or "mixed" (length-bucketed
batches over the union of the corpora).

``weight`` (per corpus, default 1; per-corpus batching only): how many passes over that corpus one epoch
makes, relative to its size. 2 gives a corpus twice its share of the updates (two passes, each shuffled
on its own); 0.5 half (a different half of its batches each epoch). It is the lever against one corpus
losing to the others in the shared encoder (BENCHMARKS.md, "Multi-corpus model").
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nerservice.errors import ConfigError, DuplicateCorpusError, LabelMapError, MissingSplitError

CORPORA_VERSION: Literal["nerservice.corpora.v1"] = "nerservice.corpora.v1"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"  # also a metric-key and file-name safe word
SPLITS = ("train", "dev", "test")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CorpusSpec(_Strict):
    name: str = Field(pattern=NAME_PATTERN)
    train: str
    dev: str
    test: str | None = None
    format: Literal["auto", "tsv", "conll", "pubtator", "bioc-xml", "bioc-json", "brat", "jsonl"] = "auto"
    scheme: Literal["auto", "iob1", "iob2", "iobes"] = "auto"
    label_map: dict[str, str] = Field(default_factory=dict)
    # passes over this corpus per epoch (per-corpus batching); bounded so one config cannot ask for 1000s
    weight: float = Field(1.0, gt=0.0, le=8.0)
    # document formats only: sentence and token modes of nerservice.documents.ConvertOptions
    sentences: Literal["split", "lines"] = "split"
    tokens: Literal["words", "whitespace"] = "words"

    def paths(self) -> dict[str, str]:
        return {k: v for k in SPLITS if (v := getattr(self, k)) is not None}

    def mapped(self, label: str) -> str:
        return self.label_map.get(label, label)


class CorporaConfig(_Strict):
    version: Literal["nerservice.corpora.v1"] = CORPORA_VERSION
    corpora: list[CorpusSpec] = Field(min_length=1)
    batching: Literal["per-corpus", "mixed"] = "per-corpus"

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.corpora]

    @property
    def weights(self) -> list[float]:
        return [c.weight for c in self.corpora]

    @classmethod
    def from_dict(cls, data: Any, *, base_dir: str | Path | None = None, where: str = "corpora config",
                  files: bool = True) -> "CorporaConfig":
        """``files=False``: the split files are not looked at (a Spark worker gets the corpora as data)."""
        try:
            config = cls.model_validate(data)
        except ValidationError as exc:
            detail = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"invalid {where}: {detail}") from None
        if base_dir is not None:
            config = config.resolved(Path(base_dir))
        config.check(files=files)
        return config

    @classmethod
    def load(cls, path: str | Path) -> "CorporaConfig":
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read corpora config {p}: {exc}", path=str(p)) from None
        return cls.from_dict(data, base_dir=p.parent, where=f"corpora config {p}")

    def resolved(self, base: Path) -> "CorporaConfig":
        """Relative split paths made relative to ``base`` (the config file's folder); URIs left alone."""
        def fix(v: str | None) -> str | None:
            if v is None or "://" in v or Path(v).is_absolute():
                return v
            return str(base / v)

        return self.model_copy(update={"corpora": [
            c.model_copy(update={k: fix(getattr(c, k)) for k in SPLITS}) for c in self.corpora]})

    def check(self, *, files: bool = True) -> None:
        """Everything that can be said before a corpus is read: unique names, existing split files, and
        label maps that do not collide among their own targets."""
        if self.batching != "per-corpus" and any(c.weight != 1.0 for c in self.corpora):
            raise ConfigError("corpus weights need per-corpus batching",
                              hint='set "batching": "per-corpus" or drop the weights')
        seen: set[str] = set()
        for c in self.corpora:
            if c.name.lower() in seen:  # names become folder names and metric keys: case-insensitive
                raise DuplicateCorpusError(f"two corpora are named {c.name!r}", hint="give every corpus its own name",
                                           corpus=c.name)
            seen.add(c.name.lower())
            for source, target in c.label_map.items():
                if not target or not target.strip() or target != target.strip() or "|" in target or not source:
                    raise LabelMapError(f"corpus {c.name!r}: label_map {source!r} -> {target!r} is not a label",
                                        hint="labels are non-empty, without surrounding spaces or '|'",
                                        corpus=c.name)
            targets: dict[str, str] = {}
            for source, target in c.label_map.items():
                if target in targets:
                    raise LabelMapError(
                        f"corpus {c.name!r}: label_map sends both {targets[target]!r} and {source!r} to {target!r}",
                        hint="one corpus's types stay apart; merge types across corpora, not within one",
                        corpus=c.name, label=target)
                targets[target] = source
            if files:
                for split, path in c.paths().items():
                    if "://" not in path and not Path(path).exists():  # a BRAT corpus is a folder
                        raise MissingSplitError(f"corpus {c.name!r}: {split} split {path} does not exist",
                                                hint="fix the path in the corpora config (relative paths are "
                                                "relative to the config file)", corpus=c.name, split=split,
                                                path=path)

    def check_labels(self, name: str, labels: set[str]) -> None:
        """With the labels a corpus's training split really has: every mapped label exists, and no label
        is mapped onto another label the corpus keeps."""
        spec = next(c for c in self.corpora if c.name == name)
        unknown = sorted(set(spec.label_map) - labels)
        if unknown:
            raise LabelMapError(f"corpus {name!r}: label_map names {unknown}, which its train split does not have",
                                hint=f"its labels are {sorted(labels)}", corpus=name, labels=sorted(labels))
        out: dict[str, str] = {}
        for label in sorted(labels):
            target = spec.mapped(label)
            if target in out:
                raise LabelMapError(f"corpus {name!r}: label_map makes {out[target]!r} and {label!r} both {target!r}",
                                    hint="one corpus's types stay apart", corpus=name, label=target)
            out[target] = label
