"""Word tokenizer with character offsets, matching the PubTator-style tokenisation of the biomedical
corpora we train on (NCBI-disease, BC5CDR as distributed by Crichton et al. 2017).

What those corpora do, checked on every token of their train/devel/test files:
  * a token is either a run of letters and digits (``APC2``, ``3beta``, ``15q11``, ``C282Y``), or
  * exactly one other non-space character: punctuation, brackets, hyphens, slashes, quotes, ``%``, ``+``,
    ``=``, ``<``, ``>``, ``_`` ... never two of them together.
So ``5-fluorouracil`` -> ``5 - fluorouracil`` and decimals are split too: ``2.5`` -> ``2 . 5`` (the corpora
write ``0 . 01``).  Matching this matters: a model trained on corpus tokens sees the same units at serving
time.

Unicode: combining marks (and ZWNJ/ZWJ, which sit inside words in several scripts) stay attached to the
word they follow, so NFD text (``cafe`` + U+0301) is one token; any other character that is not whitespace
(emoji, CJK ideographs are letters and form runs, symbols, control characters) is a one-char token.
Whitespace is what ``str.isspace`` says (incl. NBSP, U+2028, U+3000).  A few invisible format characters
(ZWSP, word joiner, BOM) separate tokens like spaces do: as tokens they would only be noise.

Invariant, for any input: ``text[t.start - offset:t.end - offset] == t.text``.

:func:`tokenize_whitespace` is the other choice, for documents whose text is already tokenised (tokens
joined by spaces, as a token-per-line corpus exported to documents is): every whitespace-delimited run
is one token, so a corpus's own tokens (``+/-``, ``>=``, ``(R)`` in linnaeus) come back as they were.
It is a reader option for training/evaluation documents only; raw text at inference always goes
through :func:`tokenize`.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    start: int
    end: int


def _mark_ranges(limits: tuple[tuple[int, int], ...]) -> str:
    """Regex char-class body for every combining mark (categories Mn, Mc, Me) inside ``limits``."""
    parts: list[str] = []
    run_start = prev = -2
    for lo, hi in limits:
        for cp in range(lo, hi):
            if unicodedata.category(chr(cp))[0] != "M":
                continue
            if cp != prev + 1:
                if run_start >= 0:
                    parts.append(_range(run_start, prev))
                run_start = cp
            prev = cp
    if run_start >= 0:
        parts.append(_range(run_start, prev))
    return "".join(parts)


def _range(lo: int, hi: int) -> str:
    return re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"


# Combining marks live only in planes 0-1 and the variation-selector supplement (U+E0100..U+E01EF);
# scanning just those keeps import at ~15 ms instead of ~90 ms for all of Unicode (a test checks the
# restriction loses nothing for the running Python's Unicode version).
MARK_PLANES: tuple[tuple[int, int], ...] = ((0, 0x20000), (0xE0000, 0xE1000))
_MARKS = _mark_ranges(MARK_PLANES)
_SEPARATORS = "\u200b\u2060\ufeff"  # zero-width space, word joiner, BOM: invisible, separate like spaces
# One compiled alternation; the word branch comes first so a run is never cut into one-char tokens.
_TOKEN_RE = re.compile(rf"(?:[^\W_]|[{_MARKS}\u200c\u200d])+|[^\s{_SEPARATORS}]")


def tokenize(text: str, *, offset: int = 0) -> list[Token]:
    """Split ``text`` into tokens; offsets are shifted by ``offset`` (a sentence's start in its document)."""
    return [Token(m.group(), m.start() + offset, m.end() + offset) for m in _TOKEN_RE.finditer(text)]



_WHITESPACE_TOKEN_RE = re.compile(r"\S+")  # \s is str.isspace's whitespace for str patterns


def tokenize_whitespace(text: str, *, offset: int = 0) -> list[Token]:
    """Pre-tokenised text: each maximal run of non-whitespace characters is one token."""
    return [Token(m.group(), m.start() + offset, m.end() + offset) for m in _WHITESPACE_TOKEN_RE.finditer(text)]
