"""One head of a multi-corpus model as a single-corpus model: its emission columns, its block of the
transition matrix (``model.heads.head_crf``) and its tags — exactly what the multi-corpus model's own decode of
that head uses (``model.heads.decode_head``), with no other head's types and no overlap rule between heads.

Used where a caller wants one corpus's types from a multi-corpus model: ``Extractor.load(..., head=NAME)``
(``nerservice predict --head``, the API's ``NERSERVICE_API_HEAD``, ``spark_jobs/predict.py --head``) and
distillation (``nerservice distil --teacher-head``, ``distil/head.py``).  Which names are heads is
``check_head``'s rule alone; ``check_folder_head`` applies it to a folder without loading the model (a Spark
driver, before any executor loads it).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from nerservice.artifacts.files import read_json
from nerservice.artifacts.layout import ENSEMBLE, VOCAB
from nerservice.errors import ConfigError
from nerservice.model.decode import CrfParams, Tagged
from nerservice.model.heads import decode_head, head_crf
from nerservice.text.vocab import MultiTagVocabulary, TagVocabulary, tag_vocabulary_from_dict


def check_head(tags: TagVocabulary | MultiTagVocabulary, name: str) -> MultiTagVocabulary:
    """``tags`` when ``name`` is one of its heads; a coded ``ConfigError`` for a single-corpus tag set or a
    name that is not a head."""
    if not isinstance(tags, MultiTagVocabulary):
        raise ConfigError(f"head {name!r}: a single-corpus model has no heads to choose from (its tags: "
                          f"{tags.tags})", hint="a head is one corpus of a multi-corpus model; drop the head")
    if name not in tags.names:
        raise ConfigError(f"head {name!r}: the model has no such head; its heads are {tags.names}",
                          hint=f"one of {tags.names}")
    return tags


def check_folder_head(model_dir: str | Path, name: str) -> None:
    """``check_head`` on a verified model folder (saved model, ONNX export or ensemble) from its vocab.json: no
    weights, no runtime.  An ensemble's tags are its first member's, as ``LoadedEnsemble.vocabs`` (its
    members share one tag set).  Only the tag entry becomes a vocabulary; the others are checked when the
    model loads."""
    d = Path(model_dir)
    if (d / ENSEMBLE).is_file():
        d = d / str(read_json(d / ENSEMBLE)["members"][0]["dir"])  # verify_manifest checked this list
    vocab = read_json(d / VOCAB)
    check_head(tag_vocabulary_from_dict(vocab.get("tags") if isinstance(vocab, dict) else None), name)


class HeadPredictor:
    """A multi-corpus predictor's head ``name``: its emission columns, its CRF block, and ``tag`` =
    ``decode_head`` (a ``TagPredictor``, as the Extractor, ``distil`` and ``evaluate_predictor`` use one).
    Anything else (batch sizes, members, caches, runtime) is the inner predictor's."""

    def __init__(self, inner: Any, tags: MultiTagVocabulary, name: str) -> None:
        self._inner, self._tags, self._name = inner, tags, name
        self._cols, self._head = tags.head(name)

    def __getattr__(self, attr: str) -> Any:  # only called for what this class does not define
        if attr.startswith("__") or attr == "_inner":  # copy probes before __init__ ran: no recursion
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    @property
    def tag_labels(self) -> list[str]:
        return self._head.tags

    def crf_params(self) -> CrfParams:
        return head_crf(self._inner.crf_params(), self._cols)

    def emissions(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        return [e[:, self._cols] for e in self._inner.emissions(sentences)]

    def tag(self, sentences: Sequence[Sequence[str]], *, with_scores: bool = True) -> list[Tagged]:
        return decode_head(self._inner.emissions(sentences), self._inner.crf_params(), self._tags, self._name,
                           with_scores=with_scores, batch_size=self._inner.batch_size,
                           bucket_size=self._inner.bucket_size)

    def predict_tags(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        return [t.tags for t in self.tag(sentences, with_scores=False)]


class HeadArtifact:
    """A loaded multi-corpus artifact (model, ensemble, ONNX export; Keras or ONNX Runtime), seen as its head
    ``name``: ``vocabs`` has the head's tags and ``predictor()`` decodes that head alone; everything else
    (config, lineage, metrics, path, members) is the artifact's own."""

    def __init__(self, loaded: Any, name: str) -> None:
        tags = check_head(loaded.vocabs.tags, name)
        self.name = name
        self._loaded, self._tags = loaded, tags
        self.head_tags = tags.head(name)[1]
        self.vocabs = replace(loaded.vocabs, tags=self.head_tags)

    def __getattr__(self, attr: str) -> Any:  # only called for what this class does not define
        if attr.startswith("__") or attr == "_loaded":  # copy probes before __init__ ran: no recursion
            raise AttributeError(attr)
        return getattr(self._loaded, attr)

    def predictor(self, **options: Any) -> HeadPredictor:
        return HeadPredictor(self._loaded.predictor(**options), self._tags, self.name)
