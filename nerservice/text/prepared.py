"""Texts prepared for tagging (``Extractor.prepare``), with what tagging them costs, and cut into pieces.

Kept apart from ``inference.py`` (which loads Keras) so that schedulers and settings can reason about cost
without importing a backend.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from nerservice.text.tokenizer import Token


class Cost(NamedTuple):
    """What the forward pass pays for a piece of work. ``tokens``: the word embedding, the BiLSTM and the
    CRF run per token. ``word_chars``: the char CNN + BiLSTM run over the characters of each *distinct*
    word of a model call (clipped to the model's max_word_length); counted per sentence, so an upper bound
    of what a call over several sentences pays."""

    tokens: int = 0
    word_chars: int = 0

    def __add__(self, other: object) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(self.tokens + other.tokens, self.word_chars + other.word_chars)

    def within(self, budget: Cost) -> bool:
        return self.tokens <= budget.tokens and self.word_chars <= budget.word_chars


@dataclass(frozen=True, eq=False)
class Prepared:
    """Texts split into sentences of tokens, ready for ``Extractor.run``; made by ``Extractor.prepare``.
    ``sentences`` holds (text index, tokens) in text order; a piece made by ``split`` keeps all the texts
    (for the offsets) and some of the sentences."""

    texts: tuple[str, ...]
    sentences: tuple[tuple[int, tuple[Token, ...]], ...]
    costs: tuple[Cost, ...]  # one per sentence
    over_budget: bool = False  # tokenising stopped early (``prepare(budget=...)``): not all sentences are here

    @property
    def cost(self) -> Cost:
        return Cost(sum(c.tokens for c in self.costs), sum(c.word_chars for c in self.costs))

    def split(self, budget: Cost) -> list[Prepared]:
        """Consecutive pieces, each within ``budget`` (a single sentence over it is a piece of its own);
        always at least one piece, so a request of empty texts still gets its answer."""
        pieces: list[Prepared] = []
        start, acc = 0, Cost()
        for i, c in enumerate(self.costs):
            if i > start and not (acc + c).within(budget):
                pieces.append(self._piece(start, i))
                start, acc = i, Cost()
            acc = acc + c
        if start < len(self.costs) or not pieces:
            pieces.append(self._piece(start, len(self.costs)))
        return pieces

    def _piece(self, start: int, end: int) -> Prepared:
        return Prepared(self.texts, self.sentences[start:end], self.costs[start:end])
