"""Rule-based sentence splitter with character offsets, tuned for biomedical abstracts.

A sentence ends at ``.``, ``!`` or ``?`` (optionally followed by closing quotes/brackets) when whitespace
follows and the next text starts like a sentence: an upper-case or uncased letter, a digit, a quote or an
opening bracket.  A paragraph break (a blank line, or U+2029) always ends a sentence.  A lone ``.`` does
not end a sentence after:
  * a known abbreviation (``e.g.``, ``i.e.``, ``et al.``, ``Fig.``, ``vs.``, ``approx.``, ``Dr.`` ...),
  * a dotted abbreviation (``i.v.``, ``p.o.``, ``U.S.``),
  * a reference abbreviation when a number follows (``No. 5``, ``p. 12``, ``Ref. 3``),
  * a single capital letter, read as an initial (``J. Smith``) — unless the word before it is a noun
    that takes letter designators (``type I. We``, ``hepatitis B. The``, ``haplotype A. To``),
  * inside parentheses/brackets that close later in the same paragraph (``(n = 5. P < 0.05)``).
Decimals (``2.5 mg``) never split: no whitespace follows the dot.

The output spans are stripped, ordered, non-overlapping, and every non-whitespace character of the text
lies in exactly one of them: the splitter only chooses cut points and strips the pieces between them.
"""
from __future__ import annotations

import re

from nerservice.text.tokenizer import Token, tokenize

# Abbreviations (lower-cased, without the final dot) after which a dot never ends a sentence.
# "et al." is checked on its own ("al" alone is not an abbreviation); "etc." is left out on purpose: it
# ends sentences as often as not.
ABBREVIATIONS = frozenset("e.g i.e vs approx ca cf viz fig figs dr mr mrs ms prof resp incl esp".split())
# Abbreviations that precede a number; only then is their dot not an end ("No. 5" but "answer is no. The").
NUMBER_ABBREVIATIONS = frozenset("no nos p pp vol ref refs eq eqs tab suppl chap sec".split())
# Nouns followed by a letter designator; "type I." ends a sentence, where "by J." would be an initial.
DESIGNATED_NOUNS = frozenset(
    "type types class grade stage phase factor group haplotype vitamin hepatitis hex complex form site "
    "region domain chain allele subunit subtype strain serotype isoform receptor antigen chromosome".split()
)
_CLOSERS = "\"'”’»)]}"
_OPENERS = "\"'“‘«([{"
_PARAGRAPH_RE = re.compile(r"\n[^\S\n]*\n|\u2029")
# One pass finds both kinds of candidate; the terminator's lookahead keeps the whitespace unconsumed so a
# blank line right after a rejected terminator is still seen by the paragraph branch. A terminator run is
# only tried from its first character (the lookbehind): tried from every character of a run with no
# whitespace after it, the scan was quadratic, ~4 s for one 8,000-character text of "!?" (a request could
# hold the service that way); a later start in the same run can never match where the first did not.
_CANDIDATE_RE = re.compile(
    rf"(?<![.!?])(?P<term>[.!?]+[{re.escape(_CLOSERS)}]*)(?=\s+(?P<next>\S))|(?P<para>{_PARAGRAPH_RE.pattern})"
)
_DOTTED_RE = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")  # i.v / p.o / U.S (the final dot is the terminator)
_LAST_WORD_RE = re.compile(r"(\S*)\Z")
_PAREN_LOOKAHEAD = 300  # chars to look for the closing bracket; bounds the cost of a stray "("


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of ``text``."""
    cuts: list[int] = []
    # Bracket depth since the last cut, updated incrementally so a long run of rejected candidates
    # (abbreviations) stays linear.
    depth, scanned = 0, 0
    for m in _CANDIDATE_RE.finditer(text):
        if m.group("para") is not None:
            cut = m.start()
        else:
            cut = m.end("term")  # closers included: in "(see above.) Next" the ")" closes the bracket
            depth = max(0, depth + _bracket_balance(text, scanned, cut))
            scanned = cut
            if not _is_boundary(text, m.start("term"), m.group("term"), m.group("next"), depth=depth):
                continue
        cuts.append(cut)
        depth, scanned = 0, cut
    cuts.append(len(text))
    spans: list[tuple[int, int]] = []
    prev = 0
    for cut in cuts:
        start, end = _strip(text, prev, cut)
        if start < end:
            spans.append((start, end))
        prev = cut
    return spans


def tokenize_sentences(text: str, *, max_tokens: int | None = None) -> list[list[Token]]:
    """Tokens of each sentence (offsets into ``text``); sentences longer than ``max_tokens`` are cut into
    consecutive chunks of at most ``max_tokens`` tokens so every chunk fits the model."""
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    out: list[list[Token]] = []
    for start, end in split_sentences(text):
        tokens = tokenize(text[start:end], offset=start)
        if not tokens:  # only invisible separators (zero-width space, BOM): nothing for the model
            continue
        if max_tokens is None or len(tokens) <= max_tokens:
            out.append(tokens)
        else:
            out.extend(tokens[i : i + max_tokens] for i in range(0, len(tokens), max_tokens))
    return out


def _is_boundary(text: str, term_start: int, term: str, next_char: str, *, depth: int) -> bool:
    if not (next_char in _OPENERS or next_char.isdigit() or (next_char.isalpha() and not next_char.islower())):
        return False
    if depth > 0 and _closes_ahead(text, term_start + len(term)):
        return False
    if term != ".":  # "?", "!", "..." and ".)" / '."' are unambiguous ends
        return True
    last = _LAST_WORD_RE.search(text, max(0, term_start - 64), term_start)
    word = last.group(1).lstrip(_OPENERS) if last else ""
    lower = word.lower()
    if lower in ABBREVIATIONS or _DOTTED_RE.fullmatch(word):
        return False
    if lower == "al" and _word_before(text, term_start - len(word)) == "et":
        return False
    if lower in NUMBER_ABBREVIATIONS and next_char.isdigit():
        return False
    if len(word) == 1 and word.isupper():  # an initial ("J. Smith"), unless it designates ("type I.")
        return _word_before(text, term_start - 1) in DESIGNATED_NOUNS
    return True


def _word_before(text: str, pos: int) -> str:
    """The lower-cased whitespace-delimited word that ends before ``pos`` (skipping spaces)."""
    words = text[max(0, pos - 40) : pos].split()
    return words[-1].lower() if words else ""


def _bracket_balance(text: str, start: int, end: int) -> int:
    opened = text.count("(", start, end) + text.count("[", start, end)
    return opened - text.count(")", start, end) - text.count("]", start, end)


def _closes_ahead(text: str, pos: int) -> bool:
    """A closing bracket ahead, in the same paragraph: the open one is real, not a stray "(" or "1)"."""
    window = text[pos : pos + _PAREN_LOOKAHEAD]
    para = _PARAGRAPH_RE.search(window)
    if para:
        window = window[: para.start()]
    return ")" in window or "]" in window


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
