"""Corpus readers and writers (tsv / CoNLL-2003), tag schemes (IOB1 / IOB2 / IOBES) and entity spans.

Everything past this package sees IOB2 ``Sentence`` objects; other schemes live only in files.
"""
from nerservice.data.readers import Corpus, ReadReport, SkippedSentence, parse_bytes, parse_text, read_corpus
from nerservice.data.schemes import Scheme, detect_scheme, from_iob2, spans, to_iob2, validate_tag
from nerservice.data.sentence import Sentence
from nerservice.data.writers import format_corpus, write_corpus

__all__ = [
    "Corpus", "ReadReport", "Scheme", "Sentence", "SkippedSentence", "detect_scheme", "format_corpus",
    "from_iob2", "parse_bytes", "parse_text", "read_corpus", "spans", "to_iob2", "validate_tag", "write_corpus",
]
