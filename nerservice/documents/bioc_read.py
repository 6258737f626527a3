"""BioC XML and BioC JSON → documents.

XML is parsed by lxml with a hardened parser (no DTD loading, no entity expansion, no network), because
the API reads client files and the PyPI ``bioc`` package's decoder uses lxml's permissive default; the
tree is then walked here so every error names the element's line.  JSON goes through the same walk
(shapes as ``bioc.biocjson`` writes them), errors naming the JSON path.

Mapping: annotation infon ``type`` → label, ``identifier`` → identifier, ``score`` → score, every other
infon kept in order; several ``location`` elements → a discontinuous annotation; passage infon ``type``
→ passage kind; ``<sentence>`` elements → the passage's sentence spans (a passage with sentences but no
``<text>`` gets its text from the sentences, spaces in gaps).  Annotations and relations of passages and
sentences are gathered at document level (offsets are document-level in BioC already).
"""
from __future__ import annotations

import json
from typing import Any

from nerservice.documents.model import Annotation, Document, Passage, Relation
from nerservice.errors import ConfigError, DocumentFormatError

Node = dict[str, Any]  # one BioC element as a dict, JSON-shaped, with "_line" from XML


def _etree() -> Any:
    try:
        from lxml import etree
    except ImportError:
        raise ConfigError("BioC XML needs lxml", hint="pip install 'nerservice[documents]'") from None
    return etree


def _parser() -> Any:
    etree = _etree()
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                           huge_tree=False, remove_comments=True, remove_pis=True)


def parse_bioc_xml(data: bytes, *, source: str) -> list[Document]:
    etree = _etree()

    try:
        root = etree.fromstring(data, parser=_parser())
    except etree.XMLSyntaxError as exc:
        line = exc.lineno or 0
        raise DocumentFormatError(f"broken XML: {exc.msg}", file=source, line=int(line),
                                  hint="the file must be well-formed BioC XML") from None
    if root.tag != "collection":
        raise DocumentFormatError(f"root element is <{root.tag}>, expected <collection>", file=source,
                                  line=root.sourceline or 0)
    return _documents(_xml_collection(root), source=source)


def parse_bioc_json(text: str, *, source: str) -> list[Document]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentFormatError(f"broken JSON: {exc.msg} (column {exc.colno})", file=source, line=exc.lineno,
                                  hint="the file must be one BioC JSON collection") from None
    if isinstance(obj, dict) and "documents" not in obj and "passages" in obj:
        obj = {"documents": [obj]}  # one bare document (what bioc's JSON-lines writer emits per line)
    if not isinstance(obj, dict) or not isinstance(obj.get("documents"), list):
        raise DocumentFormatError("expected a BioC JSON collection: an object with a 'documents' list",
                                  file=source)
    return _documents(obj, source=source)


# --- XML element → JSON-shaped dict ----------------------------------------------------------------------
def _xml_infons(el: Any) -> list[tuple[str, str]]:
    return [(c.get("key", ""), c.text or "") for c in el.findall("infon")]


def _xml_int(el: Any, tag: str) -> Any:
    t = el.findtext(tag)
    return t.strip() if t is not None else None


def _xml_annotation(el: Any) -> Node:
    return {"_line": el.sourceline, "id": el.get("id"), "infons": _xml_infons(el), "text": el.findtext("text"),
            "locations": [{"offset": c.get("offset"), "length": c.get("length"), "_line": c.sourceline}
                          for c in el.findall("location")]}


def _xml_relation(el: Any) -> Node:
    return {"_line": el.sourceline, "id": el.get("id", ""), "infons": _xml_infons(el),
            "nodes": [{"refid": c.get("refid", ""), "role": c.get("role", "")} for c in el.findall("node")]}


def _xml_container(el: Any) -> Node:
    return {"_line": el.sourceline, "offset": _xml_int(el, "offset"), "infons": _xml_infons(el),
            "text": el.findtext("text"), "sentences": [_xml_container(s) for s in el.findall("sentence")],
            "annotations": [_xml_annotation(a) for a in el.findall("annotation")],
            "relations": [_xml_relation(r) for r in el.findall("relation")]}


def _xml_collection(root: Any) -> Node:
    return {"documents": [{"_line": d.sourceline, "id": d.findtext("id"), "infons": _xml_infons(d),
                           "passages": [_xml_container(p) for p in d.findall("passage")],
                           "annotations": [_xml_annotation(a) for a in d.findall("annotation")],
                           "relations": [_xml_relation(r) for r in d.findall("relation")]}
                          for d in root.findall("document")]}


# --- the one walk ----------------------------------------------------------------------------------------
class _Walk:
    def __init__(self, source: str) -> None:
        self.source = source
        self.doc_id: str | None = None

    def fail(self, node: Any, path: str, reason: str) -> DocumentFormatError:
        line = node.get("_line", 0) if isinstance(node, dict) else 0
        where = "" if line else f" at {path}"
        return DocumentFormatError(f"{reason}{where}", file=self.source, line=int(line or 0), document=self.doc_id)

    def int_of(self, node: Node, key: str, path: str) -> int:
        v = node.get(key)
        if isinstance(v, bool) or not (isinstance(v, int) and v >= 0 or isinstance(v, str) and v.isascii()
                                       and v.isdigit()):
            raise self.fail(node, path, f"{key} must be a non-negative integer, got {v!r}")
        return int(v)

    def infons(self, node: Node, path: str) -> list[tuple[str, str]]:
        raw = node.get("infons") or []
        pairs = list(raw.items()) if isinstance(raw, dict) else raw
        if not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
            raise self.fail(node, path, "infons must be key/value pairs")
        return [(str(k), "" if v is None else str(v)) for k, v in pairs]

    def items(self, node: Node, key: str, path: str) -> list[Node]:
        v = node.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise self.fail(node, path, f"{key} must be a list of objects")
        return v

    def annotation(self, node: Node, path: str) -> Annotation:
        infons = self.infons(node, path)
        ident = node.get("id")
        label = next((v for k, v in infons if k == "type"), None)
        if not label:
            raise self.fail(node, path, f"annotation {ident!r} has no 'type' infon (its label)")
        identifier = next((v for k, v in infons if k == "identifier"), None)
        score_text = next((v for k, v in infons if k == "score"), None)
        score = _float(score_text)
        rest = tuple((k, v) for k, v in infons if k not in ("type", "identifier") and not (k == "score" and
                                                                                          score is not None))
        locs = self.items(node, "locations", path)
        if not locs:
            raise self.fail(node, path, f"annotation {ident!r} has no location")
        spans = []
        for j, loc in enumerate(locs):
            off = self.int_of(loc, "offset", f"{path}.locations[{j}]")
            spans.append((off, off + self.int_of(loc, "length", f"{path}.locations[{j}]")))
        text = node.get("text")
        if text is not None and not isinstance(text, str):
            raise self.fail(node, path, f"annotation {ident!r} text must be a string")
        return Annotation(str(ident if ident is not None else ""), label, tuple(spans),
                          "" if text is None else str(text), identifier, rest, score, int(node.get("_line") or 0))

    def relation(self, node: Node) -> Relation:
        infons = self.infons(node, "relation")
        rtype = next((v for k, v in infons if k == "type"), "")
        nodes = tuple((str(n.get("refid", "")), str(n.get("role", ""))) for n in self.items(node, "nodes", "relation"))
        return Relation(str(node.get("id") or ""), rtype, nodes, tuple((k, v) for k, v in infons if k != "type"))

    def passage(self, node: Node, path: str, anns: list[Annotation], rels: list[Relation]) -> Passage:
        offset = self.int_of(node, "offset", path)
        infons = self.infons(node, path)
        kind = next((v for k, v in infons if k == "type"), "")
        sentences = []
        for j, s in enumerate(self.items(node, "sentences", path)):
            sp = f"{path}.sentences[{j}]"
            so = self.int_of(s, "offset", sp)
            stext = s.get("text") or ""
            if not isinstance(stext, str):
                raise self.fail(s, sp, "sentence text must be a string")
            sentences.append((so, stext))
            self.collect(s, sp, anns, rels)
        text = node.get("text")
        if text is None:
            text = _from_sentences(offset, sentences)
        elif not isinstance(text, str):
            raise self.fail(node, path, "passage text must be a string")
        for so, stext in sentences:
            if stext and text[so - offset : so - offset + len(stext)] != stext:
                raise self.fail(node, path, f"sentence at offset {so} does not match the passage text there")
        self.collect(node, path, anns, rels)
        spans = tuple((so, so + len(st)) for so, st in sentences) if sentences else None
        return Passage(offset, text, kind, tuple((k, v) for k, v in infons if k != "type"), spans)

    def collect(self, node: Node, path: str, anns: list[Annotation], rels: list[Relation]) -> None:
        for j, a in enumerate(self.items(node, "annotations", path)):
            anns.append(self.annotation(a, f"{path}.annotations[{j}]"))
        rels.extend(self.relation(r) for r in self.items(node, "relations", path))

    def document(self, node: Node, index: int) -> Document:
        path = f"documents[{index}]"
        raw_id = node.get("id")
        self.doc_id = None if raw_id is None or isinstance(raw_id, (dict, list)) else str(raw_id)
        if not self.doc_id:
            raise self.fail(node, path, "document has no id")
        anns: list[Annotation] = []
        rels: list[Relation] = []
        passages = [self.passage(p, f"{path}.passages[{j}]", anns, rels)
                    for j, p in enumerate(self.items(node, "passages", path))]
        self.collect(node, path, anns, rels)
        return Document(self.doc_id, tuple(passages), tuple(anns), tuple(rels), tuple(self.infons(node, path)),
                        source=self.source, line=int(node.get("_line") or 0))


def _documents(collection: Node, *, source: str) -> list[Document]:
    walk = _Walk(source)
    return [walk.document(d, i) if isinstance(d, dict) else _bad(walk, i) for i, d in
            enumerate(collection["documents"])]


def _bad(walk: _Walk, i: int) -> Document:
    raise walk.fail({}, f"documents[{i}]", "document must be an object")


def _from_sentences(offset: int, sentences: list[tuple[int, str]]) -> str:
    out, pos = [], offset
    for so, st in sorted(sentences):
        out.append(" " * max(0, so - pos) + st)
        pos = max(pos, so + len(st))
    return "".join(out)


def _float(s: str | None) -> float | None:
    if s is None:
        return None
    try:
        return float(s)
    except ValueError:
        return None
