"""The lookup form of a word, shared by the vocabularies and the gazetteer."""
from __future__ import annotations

# Every Unicode decimal digit (category Nd: Arabic-Indic, Devanagari, full-width ...) maps to "0".  They
# all live below U+20000 (a test checks it against the whole range), which keeps import fast.
DIGIT_SCAN_LIMIT = 0x20000
_DIGITS_TO_ZERO = {cp: "0" for cp in range(DIGIT_SCAN_LIMIT) if chr(cp).isdecimal()}


def normalize_word(word: str) -> str:
    """Lookup form of a word: lower-cased, every decimal digit replaced by "0" ("BRCA1" → "brca0").

    ``str.lower`` rather than ``casefold``: GloVe/word2vec files are lower-cased, not case-folded (they
    keep "ß"), and lower() never changes what a word looks like beyond case.  Digits collapse because the
    exact number rarely matters to the tag while it splits counts over many rare forms.
    """
    return word.lower().translate(_DIGITS_TO_ZERO)
