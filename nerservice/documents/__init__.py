"""Biomedical documents in and out: PubTator, BioC (XML and JSON), BRAT standoff and JSON lines.

A :class:`Document` is an id, passages with document-level offsets and annotations (label, spans,
identifier, score).  ``formats`` reads/writes every format, ``align`` turns documents into IOB2
sentences for training and evaluation (strict or lenient, every case reported), ``annotate`` puts an
``Extractor``'s predictions onto documents, ``scoring`` computes character-offset P/R/F1.
"""
from nerservice.documents.align import (
    ConvertOptions,
    documents_to_sentences,
    parse_label_map,
    read_document_corpus,
)
from nerservice.documents.formats import (
    DOCUMENT_FORMATS,
    detect_path,
    document_format,
    format_documents,
    parse_bytes,
    read_documents,
    sniff,
    write_documents,
)
from nerservice.documents.model import Annotation, Document, Passage, Relation
from nerservice.documents.report import Case, DocumentCorpus, DocumentReport

__all__ = [
    "DOCUMENT_FORMATS", "Annotation", "Case", "ConvertOptions", "Document", "DocumentCorpus", "DocumentReport",
    "Passage", "Relation", "detect_path", "document_format", "documents_to_sentences", "format_documents",
    "parse_bytes", "parse_label_map", "read_document_corpus", "read_documents", "sniff", "write_documents",
]
