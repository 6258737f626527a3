"""Documents → IOB2 sentences with the project's sentence splitter and tokenizer (``nerservice/text/``).

Per document: (1) each annotation is label-mapped and checked (text, span, passage, fragments, edges);
(2) overlapping mentions are resolved; (3) each passage is cut into sentences (the file's own sentence
spans when it has them, e.g. BioC ``<sentence>``; else one sentence per line with ``sentences="lines"``;
else :func:`~nerservice.text.sentences.split_sentences`) and tokenised (the project's tokenizer, or
with ``tokens="whitespace"`` the file's own whitespace-separated tokens); (4) mentions are put on token
boundaries and sentences a mention crosses are merged; (5) tags.  What each check does in strict and
lenient mode is listed in ``nerservice/documents/report.py``; every case is recorded there.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from nerservice.data.schemes import validate_tag
from nerservice.data.sentence import Sentence
from nerservice.documents.model import Annotation, Document, Passage, Span, fragments_text
from nerservice.documents.report import Case, DocumentCorpus, DocumentReport
from nerservice.errors import AnnotationError, ConfigError, EmptyCorpusError
from nerservice.text.sentences import split_sentences
from nerservice.text.tokenizer import Token, tokenize, tokenize_whitespace

SentenceMode = Literal["split", "lines"]
TokenMode = Literal["words", "whitespace"]
SENTENCE_MODES: tuple[SentenceMode, ...] = ("split", "lines")
TOKEN_MODES: tuple[TokenMode, ...] = ("words", "whitespace")


@dataclass(frozen=True)
class ConvertOptions:
    lenient: bool = False
    label_map: Mapping[str, str] = field(default_factory=dict)  # file label → model label ("O" = leave out)
    # Sentences of passages without spans of their own: "split" = the sentence splitter; "lines" = one
    # sentence per line (pre-split BRAT text; in PubTator, whose passages are lines, each title and
    # abstract line is one sentence).
    sentences: SentenceMode = "split"
    # "words" = the project's tokenizer (what inference uses); "whitespace" = the text is pre-tokenised,
    # every whitespace-delimited run is a token (a corpus's own multi-character tokens such as "+/-").
    tokens: TokenMode = "words"
    realign_window: int = 20  # characters searched either side for a mismatching mention's text

    def __post_init__(self) -> None:
        if self.sentences not in SENTENCE_MODES:
            raise ConfigError(f"unknown sentence mode {self.sentences!r}",
                              hint=f"use one of {', '.join(SENTENCE_MODES)}")
        if self.tokens not in TOKEN_MODES:
            raise ConfigError(f"unknown token mode {self.tokens!r}", hint=f"use one of {', '.join(TOKEN_MODES)}")


def parse_label_map(specs: Iterable[str]) -> dict[str, str]:
    """``["SpecificDisease,Modifier,DiseaseClass,CompositeMention=Disease", "Species=O"]`` → a map."""
    out: dict[str, str] = {}
    for spec in specs:
        left, sep, target = spec.rpartition("=")
        sources = [s.strip() for s in left.split(",") if s.strip()]
        if not sep or not sources or not target.strip():
            raise ConfigError(f"bad label mapping {spec!r}", hint="write FROM[,FROM...]=TO, e.g. "
                              "SpecificDisease,Modifier=Disease (TO=O leaves those annotations out)")
        for s in sources:
            out[s] = target.strip()
    return out


class _Converter:
    def __init__(self, options: ConvertOptions, report: DocumentReport) -> None:
        self.o, self.r = options, report
        self.tagged: list[Annotation] = []  # of the current document, in tagging order

    def case(self, doc: Document, a: Annotation, kind: str, action: str, detail: str, span: Span | None = None) -> None:
        s, e = span or (a.start, a.end)
        c = Case(kind, action, doc.source, a.line or doc.line, doc.id, a.id, s, e, a.text, detail)
        if not self.o.lenient and kind != "sentence-merge":
            raise AnnotationError(kind, detail, file=c.file if not c.line else f"{c.file}:{c.line}",
                                  document=doc.id, annotation=a.id, start=s, end=e, text=a.text)
        self.r.add(c)
        if action == "dropped":
            self.r.dropped += 1

    def check(self, doc: Document, a: Annotation) -> Annotation | None:
        """One annotation, label-mapped and made a single clean span, or None (excluded / dropped)."""
        label = self.o.label_map.get(a.label, a.label)
        if label == "O":
            self.r.excluded[a.label] = self.r.excluded.get(a.label, 0) + 1
            return None
        if label != a.label:
            key = f"{a.label}→{label}"
            self.r.relabelled[key] = self.r.relabelled.get(key, 0) + 1
        if not validate_tag(f"B-{label}"):
            self.case(doc, a, "bad-label", "dropped", f"label {label!r} cannot be an IOB2 tag")
            return None
        if any(s >= e for s, e in a.spans):
            self.case(doc, a, "empty-span", "dropped", "start is not before end")
            return None
        found = fragments_text(doc, a.spans)
        if found is None:
            self.case(doc, a, "outside-passage", "dropped", "offsets are not inside one passage of the text")
            return None
        spans = a.spans
        if a.text and found != a.text:
            moved = self.realign(doc, a)
            if moved is None:
                self.case(doc, a, "text-mismatch", "dropped", f"document text there is {found!r}")
                return None
            self.case(doc, a, "text-mismatch", "realigned", f"document text there is {found!r}; found the "
                      f"mention at [{moved[0]}, {moved[1]})")
            spans = (moved,)
            self.r.changed += 1
        if len(spans) > 1:
            spans = ((spans[0][0], spans[-1][1]),)
            if doc.passage_at(*spans[0]) is None:
                self.case(doc, a, "discontinuous", "dropped", f"fragments {a.spans} lie in different passages")
                return None
            self.case(doc, a, "discontinuous", "covering-span", f"fragments {a.spans} → [{spans[0][0]}, "
                      f"{spans[0][1]}) {doc.text_at(*spans[0])!r}")
            self.r.changed += 1
        s, e = spans[0]
        text = doc.text_at(s, e) or ""
        ts, te = s + len(text) - len(text.lstrip()), e - (len(text) - len(text.rstrip()))
        if ts >= te:
            self.case(doc, a, "empty-span", "dropped", "the span holds only whitespace")
            return None
        if (ts, te) != (s, e):
            self.case(doc, a, "edge-space", "trimmed", f"→ [{ts}, {te})")
            self.r.changed += 1
        return replace(a, label=label, spans=((ts, te),), text=doc.text_at(ts, te) or "")

    def realign(self, doc: Document, a: Annotation) -> Span | None:
        w = self.o.realign_window
        best: Span | None = None
        for p in doc.passages:
            lo, hi = max(p.offset, a.start - w), min(p.end, a.end + w + len(a.text))
            i = p.text.find(a.text, lo - p.offset, hi - p.offset)
            while i >= 0:
                cand = (p.offset + i, p.offset + i + len(a.text))
                if best is None or abs(cand[0] - a.start) < abs(best[0] - a.start):
                    best = cand
                i = p.text.find(a.text, i + 1, hi - p.offset)
        return best

    def resolve_overlaps(self, doc: Document, anns: list[Annotation]) -> list[Annotation]:
        kept: list[Annotation] = []
        for a in sorted(anns, key=lambda x: (x.start, -(x.end - x.start))):
            last = kept[-1] if kept else None
            if last is None or a.start >= last.end:
                kept.append(a)
                continue
            what = ("duplicates" if (a.start, a.end) == (last.start, last.end) else
                    "is nested in" if a.end <= last.end else "crosses")
            longer_is_new = (a.end - a.start) > (last.end - last.start)
            loser, winner = (last, a) if longer_is_new else (a, last)
            self.case(doc, loser, "overlap", "dropped",
                      f"{'annotation ' + a.id if loser is last else 'it'} {what} annotation "
                      f"{last.id if loser is a else a.id} [{winner.start}, {winner.end}) {winner.text!r} "
                      f"({winner.label}), which is kept", span=(loser.start, loser.end))
            if longer_is_new:
                kept[-1] = a
        return kept

    def sentences(self, doc: Document, p: Passage, anns: list[Annotation]) -> list[Sentence]:
        spans = p.sentences if p.sentences is not None else self.sentence_spans(p)
        cuts: set[int] = set()
        for a in anns:
            cuts.update((a.start, a.end))
        split_words = tokenize_whitespace if self.o.tokens == "whitespace" else tokenize
        sents: list[list[Token]] = []
        for s, e in spans:
            toks = []
            for t in split_words(p.text[s - p.offset : e - p.offset], offset=s):
                toks.extend(self.split_token(doc, t, cuts, anns))
            if toks:
                sents.append(toks)
        sents = self.merge(doc, sents, anns)
        out = []
        for toks in sents:
            tags = ["O"] * len(toks)
            index = {t.start: i for i, t in enumerate(toks)}
            ends = {t.end: i for i, t in enumerate(toks)}
            for a in anns:
                i, j = index.get(a.start), ends.get(a.end)
                if i is None or j is None:
                    continue
                tags[i] = f"B-{a.label}"
                for k in range(i + 1, j + 1):
                    tags[k] = f"I-{a.label}"
                self.r.entities[a.label] = self.r.entities.get(a.label, 0) + 1
                self.tagged.append(a)
            out.append(Sentence(tuple(t.text for t in toks), tuple(tags), doc.source, doc.line))
        return out

    def sentence_spans(self, p: Passage) -> list[Span]:
        if self.o.sentences == "lines":
            spans, pos = [], 0
            for line in p.text.split("\n"):
                spans.append((p.offset + pos, p.offset + pos + len(line)))
                pos += len(line) + 1
            return spans
        return [(p.offset + s, p.offset + e) for s, e in split_sentences(p.text)]

    def split_token(self, doc: Document, t: Token, cuts: set[int], anns: list[Annotation]) -> list[Token]:
        inner = sorted(c for c in cuts if t.start < c < t.end)
        if not inner:
            return [t]
        for a in anns:
            if any(a.start == c or a.end == c for c in inner):
                self.case(doc, a, "token-boundary", "tokens-split",
                          f"an edge falls inside token {t.text!r} [{t.start}, {t.end}); split there")
        out, prev = [], t.start
        for c in inner + [t.end]:
            out.append(Token(t.text[prev - t.start : c - t.start], prev, c))
            prev = c
        return out

    def merge(self, doc: Document, sents: list[list[Token]], anns: list[Annotation]) -> list[list[Token]]:
        where = {tok.start: i for i, s in enumerate(sents) for tok in s}
        ends = {tok.end: i for i, s in enumerate(sents) for tok in s}
        join_to = list(range(len(sents)))  # join_to[i] = first sentence of the merged group holding i
        for a in anns:
            i, j = where.get(a.start), ends.get(a.end)
            if i is None or j is None:
                self.case(doc, a, "token-boundary", "dropped", "no token starts/ends at its edges (only "
                          "invisible separators there)")
                continue
            if i != j:
                self.case(doc, a, "sentence-merge", "merged", f"crosses {j - i} sentence boundar"
                          f"{'y' if j - i == 1 else 'ies'}; the sentences are merged")
                for k in range(i + 1, j + 1):
                    join_to[k] = join_to[i]
        out: list[list[Token]] = []
        for i, s in enumerate(sents):
            if join_to[i] != i and out:
                out[-1] = out[-1] + s
                self.r.merged_sentences += 1
            else:
                out.append(list(s))
        return out

    def document(self, doc: Document) -> tuple[list[Sentence], Document]:
        self.r.documents += 1
        self.r.passages += len(doc.passages)
        self.r.annotations += len(doc.annotations)
        checked = [c for c in (self.check(doc, a) for a in doc.annotations) if c is not None]
        kept = self.resolve_overlaps(doc, checked)
        self.tagged = []
        out: list[Sentence] = []
        for p in doc.passages:
            mine = [a for a in kept if p.offset <= a.start and a.end <= p.end]
            out.extend(self.sentences(doc, p, mine))
        tagged = sorted(self.tagged, key=lambda a: (a.start, a.end))
        self.r.sentences += len(out)
        self.r.tokens += sum(len(s.tokens) for s in out)
        return out, doc.with_annotations(tagged)


def read_document_corpus(paths: str | Sequence[str], *, fmt: str = "auto",
                         options: ConvertOptions | None = None) -> DocumentCorpus:
    """Read document files (any format, detected with ``auto``) and convert them to sentences."""
    from nerservice.documents.formats import read_documents

    items = [paths] if isinstance(paths, str) else [str(p) for p in paths]
    return documents_to_sentences(read_documents(items, fmt=fmt), options=options, files=items)


def documents_to_sentences(docs: Iterable[Document], *, options: ConvertOptions | None = None,
                           files: list[str] | None = None) -> DocumentCorpus:
    report = DocumentReport(files=list(files or []))
    conv = _Converter(options or ConvertOptions(), report)
    sentences: list[Sentence] = []
    resolved: list[Document] = []
    counts: list[int] = []
    for d in docs:
        s, r = conv.document(d)
        sentences.extend(s)
        resolved.append(r)
        counts.append(len(s))
        if d.source and d.source not in report.files and not files:
            report.files.append(d.source)
    if not sentences:
        raise EmptyCorpusError(f"{', '.join(report.files) or 'input'}: no sentences: the documents hold no text",
                               hint="check the path and --format")
    report.entities = dict(sorted(report.entities.items()))
    assert report.adds_up, report.to_dict()  # every annotation is tagged, excluded or dropped with a case
    return DocumentCorpus(sentences, report, resolved, counts)
