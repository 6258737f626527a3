"""PubTator: ``ID|t|title``, ``ID|a|abstract``, then one tab-separated line per annotation
(``ID start end text type [identifier [more columns]]``) or relation (``ID type arg1 arg2 ...``);
documents end at a blank line.  The title passage sits at offset 0, the abstract at ``len(title) + 1``.

Reading checks the layout (title first, every line's ID the document's, integer offsets) and raises
:class:`~nerservice.errors.DocumentFormatError` with file and line; whether an annotation fits its text
is checked later, where strict/lenient applies (``nerservice/documents/align.py``).

Writing: the title is passage 0 (offset 0); later passages become the abstract line, laid at their own
offsets with spaces in any gap, so every offset survives.  Predictions (``score`` set) get the score as
a 7th column after the identifier column (empty when there is none); reading a single numeric 7th
column back gives the score.  Annotations are written in the document's order.
"""
from __future__ import annotations

from collections.abc import Iterable

from nerservice.documents.model import Annotation, Document, Passage, Relation
from nerservice.errors import CorpusError, DocumentFormatError

EXTRA = "pubtator:columns"  # infon key of columns past the identifier, tab-joined


class _Doc:
    def __init__(self, doc_id: str, line: int) -> None:
        self.id, self.line = doc_id, line
        self.title: str | None = None
        self.abstract: str | None = None
        self.annotations: list[Annotation] = []
        self.relations: list[Relation] = []

    def build(self, source: str) -> Document:
        title = self.title or ""
        passages = [Passage(0, title, "title")]
        if self.abstract is not None:
            passages.append(Passage(len(title) + 1, self.abstract, "abstract"))
        return Document(self.id, tuple(passages), tuple(self.annotations), tuple(self.relations),
                        source=source, line=self.line)


def parse_pubtator(text: str, *, source: str) -> list[Document]:
    docs: list[Document] = []
    cur: _Doc | None = None

    def fail(n: int, reason: str, hint: str | None = None) -> DocumentFormatError:
        return DocumentFormatError(reason, file=source, line=n, document=cur.id if cur else None, hint=hint)

    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.removesuffix("\r")
        if not line.strip():
            if cur is not None:
                docs.append(cur.build(source))
                cur = None
            continue
        head = _passage_line(line)
        if head is not None:
            doc_id, kind, body = head
            if kind == "t":
                if cur is not None:  # a new title without a blank line first: the last document ended
                    docs.append(cur.build(source))
                cur = _Doc(doc_id, n)
                cur.title = body
                continue
            if cur is None or cur.id != doc_id:
                raise fail(n, f"abstract line of {doc_id!r} without its title line",
                           "every document starts with an ID|t|title line")
            if cur.abstract is not None:
                raise fail(n, "second abstract line", "one ID|a|abstract line per document")
            if cur.annotations or cur.relations:
                raise fail(n, "abstract line after annotation lines", "title and abstract come first")
            cur.abstract = body
            continue
        cols = line.split("\t")
        if len(cols) < 4:
            raise fail(n, f"line is neither ID|t|title, ID|a|abstract nor a tab-separated annotation "
                       f"(ID start end text type [identifier]) or relation (ID type arg1 arg2): {line[:80]!r}")
        if cur is None:
            raise fail(n, f"annotation line for {cols[0]!r} before any title line",
                       "every document starts with an ID|t|title line")
        if cols[0] != cur.id:
            raise fail(n, f"line names document {cols[0]!r} inside document {cur.id!r}",
                       "separate documents by a blank line")
        if len(cols) >= 5 and _is_int(cols[1]) and _is_int(cols[2]):
            cur.annotations.append(_annotation(cols, index=len(cur.annotations) + 1, line=n))
        elif len(cols) <= 5 and not _number_like(cols[1]) and not _number_like(cols[2]):
            cur.relations.append(Relation("", cols[1], tuple((c, "") for c in cols[2:])))
        else:
            raise fail(n, f"bad annotation offsets {cols[1]!r}, {cols[2]!r}" if len(cols) >= 5 else
                       f"expected ID<TAB>start<TAB>end<TAB>text<TAB>type[<TAB>identifier], got {len(cols)} columns",
                       "offsets are non-negative integers, start before end")
    if cur is not None:
        docs.append(cur.build(source))
    return docs


def _passage_line(line: str) -> tuple[str, str, str] | None:
    """``ID|t|text`` / ``ID|a|text`` → (id, kind, text); anything else None. An ID never holds a tab."""
    first = line.find("|")
    if first <= 0 or "\t" in line[:first] or line[first + 2 : first + 3] != "|":
        return None
    kind = line[first + 1]
    return (line[:first], kind, line[first + 3 :]) if kind in "ta" else None


def _is_int(s: str) -> bool:
    return s.isascii() and s.isdigit()


def _annotation(cols: list[str], *, index: int, line: int) -> Annotation:
    start, end = int(cols[1]), int(cols[2])
    identifier = cols[5] if len(cols) > 5 and cols[5] != "" else None
    rest = cols[6:]
    score = None
    infons: tuple[tuple[str, str], ...] = ()
    if len(rest) == 1 and _is_score(rest[0]):
        score = float(rest[0])
    elif rest:
        infons = ((EXTRA, "\t".join(rest)),)
    return Annotation(str(index), cols[4], ((start, end),), cols[3], identifier, infons, score, line)


def _number_like(s: str) -> bool:
    """Looks like a (broken) offset rather than a relation type: starts with a digit or a sign."""
    return bool(s) and (s[0].isdigit() or s[0] in "+-")


def _is_score(s: str) -> bool:
    try:
        return 0.0 <= float(s) <= 1.0 and s.strip() == s and not s.isdigit()
    except ValueError:
        return False


def format_pubtator(docs: Iterable[Document]) -> str:
    return "".join(format_document(d) for d in docs)


def format_document(doc: Document) -> str:
    title, abstract = _title_abstract(doc)
    out = [f"{doc.id}|t|{title}", f"{doc.id}|a|{abstract}"] if abstract is not None else [f"{doc.id}|t|{title}"]
    for a in doc.annotations:
        if a.discontinuous:
            raise CorpusError(f"document {doc.id!r}: annotation {a.id} is discontinuous {a.spans}; PubTator "
                              "holds one span per annotation", hint="resolve it first (read with --lenient)")
        _check_field(doc, a.text, "annotation text")
        cols = [doc.id, str(a.start), str(a.end), a.text, a.label]
        extra = dict(a.infons).get(EXTRA)
        if a.identifier is not None or extra is not None or a.score is not None:
            cols.append(a.identifier or "")
        if extra is not None:
            cols.append(extra)
        elif a.score is not None:
            cols.append(repr(float(a.score)))
        out.append("\t".join(cols))
    for r in doc.relations:
        out.append("\t".join([doc.id, r.type, *(ref for ref, _ in r.nodes)]))
    return "\n".join(out) + "\n\n"


def _title_abstract(doc: Document) -> tuple[str, str | None]:
    if not doc.passages or doc.passages[0].offset != 0:
        raise CorpusError(f"document {doc.id!r}: PubTator needs a first passage (the title) at offset 0",
                          hint="write BioC for documents laid out otherwise")
    title = doc.passages[0].text
    _check_field(doc, title, "title")
    rest = doc.passages[1:]
    if not rest:
        return title, None
    base = len(title) + 1
    parts: list[str] = []
    pos = base
    for p in rest:
        if p.offset < pos:
            raise CorpusError(f"document {doc.id!r}: passage at offset {p.offset} overlaps the text before it "
                              f"(PubTator's abstract starts at {base})", hint="write BioC instead")
        _check_field(doc, p.text, "passage text")
        parts.append(" " * (p.offset - pos) + p.text)
        pos = p.end
    return title, "".join(parts)


def _check_field(doc: Document, text: str, what: str) -> None:
    if "\n" in text or "\r" in text or ("\t" in text and what == "annotation text"):
        raise CorpusError(f"document {doc.id!r}: {what} {text[:60]!r} holds a line break or tab, which "
                          "PubTator cannot hold", hint="write BioC or BRAT for such text")
