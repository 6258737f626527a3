"""The unit every reader produces and every writer consumes."""
from __future__ import annotations

from dataclasses import dataclass, field

from nerservice.errors import CorpusError


@dataclass(frozen=True)
class Sentence:
    """One sentence: parallel tokens and tags (always IOB2 once read).

    ``file`` and ``line`` say where the sentence came from (``line`` is the 1-based line of its first
    token).  They are excluded from equality and hashing on purpose: two sentences with the same tokens
    and tags are the same sentence wherever they were read from, which is what round-trip checks and
    train/test overlap checks need.
    """

    tokens: tuple[str, ...]
    tags: tuple[str, ...]
    file: str = field(default="", compare=False)
    line: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        # Accept lists for convenience but store tuples, so a frozen Sentence really is immutable/hashable.
        if not isinstance(self.tokens, tuple):
            object.__setattr__(self, "tokens", tuple(self.tokens))
        if not isinstance(self.tags, tuple):
            object.__setattr__(self, "tags", tuple(self.tags))
        if len(self.tokens) != len(self.tags):
            where = f"{self.file}:{self.line}: " if self.file else ""
            raise CorpusError(
                f"{where}sentence has {len(self.tokens)} tokens but {len(self.tags)} tags",
                hint="every token needs exactly one tag",
                file=self.file,
                line=self.line,
            )
