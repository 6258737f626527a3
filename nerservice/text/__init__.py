"""Text processing: tokenizer and sentence splitter with character offsets, and the vocabularies."""
from nerservice.text.sentences import split_sentences, tokenize_sentences
from nerservice.text.tokenizer import Token, tokenize
from nerservice.text.vocab import (
    PAD_ID,
    UNK_ID,
    TagVocabulary,
    Vocabularies,
    Vocabulary,
    normalize_word,
)

__all__ = [
    "PAD_ID",
    "UNK_ID",
    "TagVocabulary",
    "Token",
    "Vocabularies",
    "Vocabulary",
    "normalize_word",
    "split_sentences",
    "tokenize",
    "tokenize_sentences",
]
