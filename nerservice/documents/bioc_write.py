"""Documents → BioC XML / BioC JSON, through the PyPI ``bioc`` package's data structures and encoders.

Each annotation goes into the passage that holds its first span (document level when none does), with
its label as the ``type`` infon, its identifier as ``identifier`` and a prediction's score as ``score``;
passage kinds become the passage ``type`` infon; sentence spans become ``<sentence>`` elements.  BioC
infons are a map, so a key that repeats in a document (BRAT notes) is written as ``key``, ``key_2``, ...
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nerservice.documents.model import Annotation, Document, Pairs
from nerservice.errors import ConfigError, CorpusError


def _bioc() -> Any:
    try:
        import bioc
    except ImportError:
        raise ConfigError("writing BioC needs the bioc package", hint="pip install 'nerservice[documents]'") from None
    return bioc


def _infons(pairs: Pairs) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in pairs:
        key, n = k, 1
        while key in out:
            n += 1
            key = f"{k}_{n}"
        out[key] = v
    return out


def _annotation(a: Annotation) -> Any:
    bioc = _bioc()

    ann = bioc.BioCAnnotation()
    ann.id = a.id
    head: list[tuple[str, str]] = [("type", a.label)]
    if a.identifier is not None:
        head.append(("identifier", a.identifier))
    if a.score is not None:
        head.append(("score", repr(float(a.score))))
    ann.infons = _infons(tuple(head) + a.infons)
    ann.text = a.text
    for s, e in a.spans:
        ann.add_location(bioc.BioCLocation(s, e - s))
    return ann


def to_bioc(docs: Iterable[Document], *, source: str = "nerservice") -> Any:
    bioc = _bioc()

    collection = bioc.BioCCollection()
    collection.source, collection.date, collection.key = source, "", "nerservice.key"
    for d in docs:
        out = bioc.BioCDocument()
        out.id = d.id
        out.infons = _infons(d.infons)
        passages = []
        for p in d.passages:
            bp = bioc.BioCPassage()
            bp.offset, bp.text = p.offset, p.text
            bp.infons = _infons(((("type", p.kind),) if p.kind else ()) + p.infons)
            for s, e in p.sentences or ():
                bs = bioc.BioCSentence()
                bs.offset, bs.text = s, p.text[s - p.offset : e - p.offset]
                bp.add_sentence(bs)
            out.add_passage(bp)
            passages.append((p, bp))
        for a in d.annotations:
            home = next((bp for p, bp in passages if p.offset <= a.start < p.end or p.offset == a.start), out)
            home.add_annotation(_annotation(a))
        for r in d.relations:
            rel = bioc.BioCRelation()
            rel.id = r.id
            rel.infons = _infons(((("type", r.type),) if r.type else ()) + r.infons)
            for ref, role in r.nodes:
                rel.add_node(bioc.BioCNode(ref, role))
            out.add_relation(rel)
        collection.add_document(out)
    return collection


def format_bioc_xml(docs: Iterable[Document]) -> str:
    from bioc import biocxml

    try:
        return str(biocxml.dumps(to_bioc(docs)))
    except ValueError as exc:  # lxml refuses text XML 1.0 cannot hold (NUL, most control characters)
        raise CorpusError(f"cannot write BioC XML: {exc}", hint="XML 1.0 cannot hold control characters; "
                          "write BioC JSON instead") from None


def format_bioc_json(docs: Iterable[Document]) -> str:
    from bioc import biocjson

    return str(biocjson.dumps(to_bioc(docs), indent=1, ensure_ascii=False)) + "\n"
