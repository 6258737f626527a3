"""IOB2 sentences → documents: token-per-line corpora exported as documents (tokens joined by single
spaces, which the tokenizer splits back into the same tokens), and the round-trip benchmark.

``layout="title-abstract"``: sentence 1 is the title passage, the rest the abstract (PubTator's shape);
``layout="lines"``: one passage, one sentence per line (pre-split BRAT text);
``layout="sentence"``: one document per sentence, the sentence its title (the shape of sentence-level
corpora such as BioCreative II GM), so a format without sentence boundaries (PubTator) still keeps them:
read it back with ``sentences="lines"`` (each title line is one sentence, not re-split).
Every passage records its sentence spans, so formats that hold them (BioC, JSON lines) give back exactly
the input sentences; PubTator cannot hold them: in ``title-abstract`` documents the sentence splitter
re-splits the abstract.  Tokens are joined by single spaces, so reading with ``tokens="whitespace"`` gives
back any corpus's tokens; the project's tokenizer gives back those it would produce itself.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from nerservice.data.schemes import spans
from nerservice.data.sentence import Sentence
from nerservice.documents.align import SentenceMode
from nerservice.documents.model import Annotation, Document, Passage

Layout = Literal["title-abstract", "lines", "sentence"]
# Per format: the layout whose sentence boundaries the format keeps, and the sentence mode reading it back.
EXACT_LAYOUTS: dict[str, tuple[Layout, SentenceMode]] = {
    "pubtator": ("sentence", "lines"), "bioc-xml": ("title-abstract", "split"),
    "bioc-json": ("title-abstract", "split"), "jsonl": ("title-abstract", "split"), "brat": ("lines", "lines")}


def sentences_to_documents(sentences: Sequence[Sentence], *, per_document: int = 10,
                           layout: Layout = "title-abstract", id_prefix: str = "doc") -> list[Document]:
    """Groups of ``per_document`` sentences (1 with ``layout="sentence"``) → documents ``PREFIX000001``..."""
    if layout == "sentence":
        per_document, layout = 1, "title-abstract"  # a title without an abstract
    docs = []
    for n, i in enumerate(range(0, len(sentences), per_document), 1):
        docs.append(_document(f"{id_prefix}{n:06d}", sentences[i : i + per_document], layout))
    return docs


def _document(doc_id: str, group: Sequence[Sentence], layout: Layout) -> Document:
    groups = [group] if layout == "lines" else [group[:1], group[1:]]
    kinds = [""] if layout == "lines" else ["title", "abstract"]
    sep = "\n" if layout == "lines" else " "
    passages: list[Passage] = []
    anns: list[Annotation] = []
    offset = 0
    for kind, sents in zip(kinds, groups):
        if not sents:
            continue
        texts, sent_spans, pos = [], [], offset
        for s in sents:
            starts = []
            for t in s.tokens:
                starts.append(pos)
                pos += len(t) + 1
            text = " ".join(s.tokens)
            sent_spans.append((starts[0], starts[0] + len(text)))
            for a, b, label in spans(s.tags):
                start, end = starts[a], starts[b - 1] + len(s.tokens[b - 1])
                anns.append(Annotation(f"T{len(anns) + 1}", label, ((start, end),), " ".join(s.tokens[a:b])))
            texts.append(text)
            pos = sent_spans[-1][1] + len(sep)
        body = sep.join(texts)
        passages.append(Passage(offset, body, kind, sentences=tuple(sent_spans)))
        offset += len(body) + 1
    return Document(doc_id, tuple(passages), tuple(anns))
