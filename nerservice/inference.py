"""``Extractor``: raw texts → entities with character offsets into the original text.

One class serves the REST API, Spark batch inference and the CLI, so they cannot drift.  Texts are split
into sentences and tokenised with offsets; all sentences of all texts are tagged together in
length-bucketed batches; decoded IOB2 spans are mapped back to character offsets.  An entity's score is
the mean CRF marginal probability of its tags (1.0 = the model is certain of every token's tag).

Two steps for callers that schedule the work (the REST batcher): ``prepare(texts)`` tokenises (no weights,
any thread) and says what tagging will cost; ``run(pieces)`` tags one or more prepared pieces in one go.
A ``Prepared`` can be cut at sentence boundaries (``split``) so one large request runs as several model
calls with other requests' work in between (``nerservice/text/prepared.py``).  ``extract(texts)`` is
the two in one.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nerservice.artifacts.formats import LoadedArtifact
from nerservice.data.schemes import spans
from nerservice.text.prepared import Cost, Prepared
from nerservice.text.sentences import tokenize_sentences
from nerservice.text.tokenizer import Token


@dataclass(frozen=True)
class Entity:
    start: int
    end: int
    label: str
    text: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Extractor:
    def __init__(self, loaded: LoadedArtifact, *, max_sentence_tokens: int = 256, batch_size: int = 256,
                 token_budget: int = 8192, with_scores: bool = True, jit_compile: bool | str = False) -> None:
        """``jit_compile="background"``: XLA over bounded shapes, compiled while the TF graph answers
        (``nerservice/model/xla_forward.py``); ~1.3-1.5x faster once warm on large batches (opt-in: the
        API keeps it off by default, see api/settings.py ``xla``)."""
        self.loaded = loaded
        self.max_sentence_tokens = max_sentence_tokens
        self.max_word_length = int(loaded.config.model.max_word_length)
        self.with_scores = with_scores
        self.predictor = loaded.predictor(batch_size=batch_size, token_budget=token_budget, jit_compile=jit_compile)

    @classmethod
    def load(cls, model_dir: str | Path, *, runtime: str = "auto", threads: int | None = None,
             word_cache: int | None = None, head: str | None = None, **kwargs: Any) -> Extractor:
        """``runtime``: "auto" (ONNX Runtime on CPU when installed, else Keras), "onnx" or "keras"
        (nerservice/runtime/select.py; asking for ``jit_compile`` keeps "auto" on Keras, whose compiler it
        is); ``threads`` and ``word_cache`` configure ONNX Runtime.  ``head``: one head (corpus name) of a
        multi-corpus model, served alone — that corpus's types, decoded as its head decodes them
        (``multi/head_view.py``); a coded error for a name the model lacks or a single-corpus model."""
        from nerservice.runtime.select import load_for_inference

        loaded = load_for_inference(model_dir, runtime=runtime, threads=threads, word_cache=word_cache,
                                    xla=bool(kwargs.get("jit_compile")))
        if head is not None:
            from nerservice.multi.head_view import HeadArtifact

            loaded = HeadArtifact(loaded, head)
        return cls(loaded, **kwargs)

    @property
    def runtime(self) -> str:
        """"onnx" or "keras": what computes the emissions."""
        return str(self.predictor.runtime)

    def word_cache_stats(self) -> list[dict[str, Any]]:
        """Entries, hits and bytes of each model's word-feature cache (ONNX runtime; empty for Keras)."""
        members = getattr(self.predictor, "members", [self.predictor])
        forwards: list[Any] = [getattr(m, "_forward", None) for m in members]
        return [f.stats() for f in forwards if hasattr(f, "stats")]

    @property
    def background_xla(self) -> Any:
        """The background XLA compiler of ``jit_compile="background"`` (its counts feed /metrics), else None."""
        return self.predictor.background_xla

    @property
    def labels(self) -> list[str]:
        return self.loaded.vocabs.tags.labels

    def extract(self, texts: Sequence[str]) -> list[list[Entity]]:
        """Entities per text, in order of appearance."""
        return self.run([self.prepare(texts)])[0]

    def prepare(self, texts: Sequence[str], *, budget: Cost | None = None) -> Prepared:
        """Tokenise and cost ``texts``; depends on no weights (a model swapped in later runs it as is).
        With a ``budget``, tokenising stops at the first text that takes the cost past it: the result is
        then ``over_budget`` (its cost a lower bound) and must not be run."""
        max_len = self.max_word_length
        sentences: list[tuple[int, tuple[Token, ...]]] = []
        costs: list[Cost] = []
        tokens = word_chars = 0
        for i, text in enumerate(texts):
            for sent in tokenize_sentences(text, max_tokens=self.max_sentence_tokens):
                cost = Cost(len(sent), sum(min(len(w), max_len) for w in {t.text for t in sent}))
                sentences.append((i, tuple(sent)))
                costs.append(cost)
                tokens, word_chars = tokens + cost.tokens, word_chars + cost.word_chars
            if budget is not None and not Cost(tokens, word_chars).within(budget):
                return Prepared(tuple(texts), tuple(sentences), tuple(costs), over_budget=True)
        return Prepared(tuple(texts), tuple(sentences), tuple(costs))

    def run(self, pieces: Sequence[Prepared]) -> list[list[list[Entity]]]:
        """Entities per text of each piece (texts a piece holds no sentence of get none), all pieces'
        sentences tagged together."""
        if any(p.over_budget for p in pieces):
            raise ValueError("a Prepared made over its budget holds only some of its texts' sentences")
        flat = [(p, i, sent) for p, piece in enumerate(pieces) for i, sent in piece.sentences]
        tagged = self.predictor.tag([[tok.text for tok in sent] for _, _, sent in flat], with_scores=self.with_scores)
        out: list[list[list[Entity]]] = [[[] for _ in piece.texts] for piece in pieces]
        for (p, i, sent), result in zip(flat, tagged):
            text = pieces[p].texts[i]
            for s, e, label in spans(result.tags):
                start, end = sent[s].start, sent[e - 1].end
                score = sum(result.scores[s:e]) / (e - s)
                out[p][i].append(Entity(start, end, label, text[start:end], round(float(score), 6)))
        return out

    def extract_one(self, text: str) -> list[Entity]:
        return self.extract([text])[0]

    def tokenize(self, texts: Sequence[str]) -> list[list[Any]]:
        """Sentences of tokens (with character offsets) per text; independent of the model's weights."""
        return [tokenize_sentences(t, max_tokens=self.max_sentence_tokens) for t in texts]

    def count_tokens(self, texts: Sequence[str]) -> int:
        return count_tokens(self.tokenize(texts))


def count_tokens(per_text: Sequence[Sequence[Any]]) -> int:
    return sum(len(s) for sents in per_text for s in sents)
