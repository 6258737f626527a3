"""BRAT standoff: ``NAME.txt`` holds the text, ``NAME.ann`` the annotations; the document id is NAME and the
whole text is one passage at offset 0.

``.ann`` lines read: ``T`` text-bound annotations (``T1<TAB>Label 0 5;9 12<TAB>text``, fragments joined
by a space in the text column), ``N`` normalisations (``N1<TAB>Reference T1 MeSH:D003920<TAB>name``:
every reference of a T in order becomes its ``identifier``, ``|``-joined), ``#`` AnnotatorNotes (kept
as ``note`` infons; ``score=0.97`` and ``identifier=D003920`` notes are what our writer puts there for a
score and for an identifier without the ``DB:`` prefix BRAT requires), ``R`` relations.  Events,
attributes and equivalences (``E``, ``A``/``M``, ``*``) are carried verbatim in ``Document.extra``.
"""
from __future__ import annotations

from dataclasses import replace

from nerservice.documents.model import Annotation, Document, Passage, Relation
from nerservice.errors import CorpusError, DocumentFormatError

NOTE, NORM_NAME = "note", "brat:norm_name"


def parse_brat(doc_id: str, text: str, ann: str, *, source: str) -> Document:
    """``source`` names the .ann file in errors (its lines are the ones counted)."""
    anns: dict[str, Annotation] = {}
    order: list[str] = []
    relations: list[Relation] = []
    extra: list[str] = []
    refs: dict[str, list[tuple[str, str]]] = {}
    notes: dict[str, list[str]] = {}

    def fail(n: int, reason: str) -> DocumentFormatError:
        return DocumentFormatError(reason, file=source, line=n, document=doc_id,
                                   hint="see https://brat.nlplab.org/standoff.html")

    for n, raw in enumerate(ann.split("\n"), 1):
        line = raw.removesuffix("\r")
        if not line.strip():
            continue
        cols = line.split("\t")
        ident = cols[0]
        kind = ident[:1]
        if kind == "T":
            if len(cols) < 3:
                raise fail(n, f"text-bound annotation needs ID<TAB>Type start end<TAB>text, got {line[:80]!r}")
            label, _, offsets = cols[1].partition(" ")
            spans = _spans(offsets)
            if not label or spans is None:
                raise fail(n, f"bad type/offsets {cols[1]!r}: expected 'Type start end[;start end...]' with "
                           "integer offsets, start <= end")
            if ident in anns:
                raise fail(n, f"duplicate annotation id {ident}")
            anns[ident] = Annotation(ident, label, spans, "\t".join(cols[2:]), line=n)
            order.append(ident)
        elif kind in "N#":
            parts = cols[1].split(" ") if len(cols) > 1 else []
            if len(parts) < 2 or (kind == "N" and len(parts) != 3):
                raise fail(n, f"bad {'normalization' if kind == 'N' else 'note'} line {line[:80]!r}")
            target = parts[1]
            if not target.startswith("T"):  # notes/normalizations of relations or events: not for NER
                extra.append(line)
            elif kind == "N":
                refs.setdefault(target, []).append((parts[2], cols[2] if len(cols) > 2 else ""))
            else:
                notes.setdefault(target, []).append("\t".join(cols[2:]))
        elif kind == "R":
            parts = cols[1].split(" ") if len(cols) > 1 else []
            args = [p.partition(":") for p in parts[1:]]
            if not parts or not args or any(not sep for _, sep, _ in args):
                raise fail(n, f"bad relation line {line[:80]!r}: expected R1<TAB>Type Arg1:T1 Arg2:T2")
            relations.append(Relation(ident, parts[0], tuple((ref, role) for role, _, ref in args)))
        elif kind in "EAM*":
            extra.append(line)
        else:
            raise fail(n, f"unknown annotation line {line[:80]!r} (expected T, N, #, R, E, A, M or *)")
    for target in list(refs) + list(notes):
        if target not in anns:
            raise DocumentFormatError(f"normalization or note refers to {target}, which is not a T annotation",
                                      file=source, document=doc_id)
    out = [_attach(anns[i], refs.get(i, []), notes.get(i, [])) for i in order]
    return Document(doc_id, (Passage(0, text),), tuple(out), tuple(relations), extra=tuple(extra),
                    source=source, line=0)


def _spans(offsets: str) -> tuple[tuple[int, int], ...] | None:
    spans = []
    for frag in offsets.split(";"):
        bits = frag.split(" ")
        if len(bits) != 2 or not all(b.isascii() and b.isdigit() for b in bits):
            return None
        s, e = int(bits[0]), int(bits[1])
        if s > e:
            return None
        spans.append((s, e))
    return tuple(spans) if spans else None


def _attach(a: Annotation, refs: list[tuple[str, str]], notes: list[str]) -> Annotation:
    identifier = "|".join(r for r, _ in refs) or None
    infons: list[tuple[str, str]] = [(NORM_NAME, name) for _, name in refs]
    score = None
    for note in notes:
        if note.startswith("score=") and _float(note[6:]) is not None and score is None:
            score = _float(note[6:])
        elif note.startswith("identifier=") and identifier is None:
            identifier = note[len("identifier="):]
        else:
            infons.append((NOTE, note))
    if all(name == "" for k, name in infons if k == NORM_NAME):
        infons = [(k, v) for k, v in infons if k != NORM_NAME]
    return replace(a, identifier=identifier, infons=tuple(infons), score=score)


def _float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def format_brat(doc: Document) -> tuple[str, str]:
    """(txt, ann) file contents. The text must be one passage at offset 0, as BRAT has no passages; other
    layouts are laid out at their offsets with newlines in the gaps (offsets survive)."""
    text = _text(doc)
    lines: list[str] = []
    n_norm = n_note = 0
    ids = _brat_ids(doc)
    for a, tid in zip(doc.annotations, ids):
        if "\n" in a.text or "\t" in a.text:
            raise CorpusError(f"document {doc.id!r}: annotation {a.id} text {a.text!r} holds a line break or tab",
                              hint="BRAT splits such mentions into fragments; fix the annotation")
        offsets = ";".join(f"{s} {e}" for s, e in a.spans)
        lines.append(f"{tid}\t{a.label} {offsets}\t{a.text}")
        names = [v for k, v in a.infons if k == NORM_NAME]
        parts = a.identifier.split("|") if a.identifier else []
        if parts and all(":" in p and " " not in p for p in parts):
            for i, part in enumerate(parts):
                n_norm += 1
                lines.append(f"N{n_norm}\tReference {tid} {part}\t{names[i] if i < len(names) else ''}")
        elif a.identifier is not None:
            n_note += 1
            lines.append(f"#{n_note}\tAnnotatorNotes {tid}\tidentifier={a.identifier}")
        for k, v in a.infons:
            if k == NOTE:
                n_note += 1
                lines.append(f"#{n_note}\tAnnotatorNotes {tid}\t{v}")
        if a.score is not None:
            n_note += 1
            lines.append(f"#{n_note}\tAnnotatorNotes {tid}\tscore={float(a.score)!r}")
    for r in doc.relations:
        rid = r.id if r.id.startswith("R") else f"R{len(lines) + 1}"
        lines.append(f"{rid}\t{r.type} " + " ".join(f"{role or 'Arg'}:{ref}" for ref, role in r.nodes))
    lines += list(doc.extra)
    return text, "".join(x + "\n" for x in lines)


def _brat_ids(doc: Document) -> list[str]:
    """Keep T ids when every annotation has a distinct one; otherwise number them T1, T2, ..."""
    ids = [a.id for a in doc.annotations]
    ok = all(i.startswith("T") and i[1:].isdigit() for i in ids) and len(set(ids)) == len(ids)
    return ids if ok else [f"T{i}" for i in range(1, len(ids) + 1)]


def _text(doc: Document) -> str:
    out: list[str] = []
    pos = 0
    for p in doc.passages:
        if p.offset < pos:
            raise CorpusError(f"document {doc.id!r}: passages overlap at offset {p.offset}")
        out.append("\n" * (p.offset - pos) + p.text)
        pos = p.end
    return "".join(out)
