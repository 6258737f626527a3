"""Property tests: random documents with random annotations (clean, mismatching, overlapping, crossing
passages, empty, discontinuous) survive write → read unchanged in every format, and turning them into
sentences (lenient, every sentence and token mode) accounts for every annotation: tagged + excluded +
dropped = read, every drop and every changed span has a reported case.  The document-level identity does
not depend on the conversion options; ``test_from_sentences.py`` checks IOB2 → documents → IOB2 identity
under them."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nerservice.documents import (
    ConvertOptions,
    documents_to_sentences,
    read_documents,
    write_documents,
)
from nerservice.documents.model import Annotation, Document, Passage
from nerservice.errors import EmptyCorpusError

ALPHABET = "abcXYZ019 .,-()/éα"
words = st.text(alphabet=ALPHABET, min_size=0, max_size=40)
LABELS = ["Disease", "Chemical", "SpecificDisease", "Gene"]


@st.composite
def documents(draw, fmt: str) -> Document:
    title = draw(st.text(alphabet=ALPHABET, min_size=1, max_size=40))
    abstract = draw(st.one_of(st.none(), words))
    if fmt == "brat":
        passages: tuple[Passage, ...] = (Passage(0, title + ("\n" + abstract if abstract is not None else "")),)
    else:
        passages = (Passage(0, title, "title"),) + (
            (Passage(len(title) + 1, abstract, "abstract"),) if abstract is not None else ())
    full = "\n".join(p.text for p in passages) if fmt != "brat" else passages[0].text
    n = len(full)
    anns = []
    for i in range(draw(st.integers(0, 6))):
        s = draw(st.integers(0, n))
        e = draw(st.integers(s, min(n, s + 15)))
        spans = ((s, e),)
        if fmt != "pubtator" and e + 2 < n and draw(st.booleans()):
            s2 = draw(st.integers(e + 1, n - 1))
            spans = ((s, e), (s2, draw(st.integers(s2 + 1, n))))
        clean = " ".join(full[a:b] for a, b in spans)
        text = clean if draw(st.booleans()) else draw(st.text(alphabet=ALPHABET.replace(" ", ""), max_size=8))
        if "\n" in text:
            text = text.replace("\n", " ")
        ident = draw(st.sampled_from([None, "D001", "MESH:D002", "D1|D2", "NCBIGene:672|NCBIGene:675"]))
        score = draw(st.one_of(st.none(), st.floats(0.0, 1.0)))
        aid = str(i + 1) if fmt == "pubtator" else f"T{i + 1}"
        anns.append(Annotation(aid, draw(st.sampled_from(LABELS)), spans, text, ident, (), score))
    return Document("doc-1", passages, tuple(anns))


def _roundtrip(doc: Document, fmt: str) -> Document:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / ("out" if fmt == "brat" else f"out.{fmt}")
        write_documents([doc], target, fmt)
        (back,) = read_documents(target, fmt=fmt)
    return back


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.sampled_from(["pubtator", "bioc-xml", "bioc-json", "brat", "jsonl"]).flatmap(
    lambda f: st.tuples(st.just(f), documents(f))))
def test_write_then_read_is_the_identity(case) -> None:
    """read → write → read gives the same document; and the first write keeps everything generated
    (BioC files group annotations by passage, so there only the order may differ)."""
    fmt, doc = case
    once = _roundtrip(doc, fmt)
    assert _roundtrip(once, fmt) == once
    if fmt.startswith("bioc"):
        assert sorted(once.annotations, key=lambda a: a.id) == sorted(doc.annotations, key=lambda a: a.id)
        assert once.with_annotations(doc.annotations) == doc
    else:
        assert once == doc


@SETTINGS
@given(documents("bioc-json"), st.booleans(), st.sampled_from(["split", "lines"]),
       st.sampled_from(["words", "whitespace"]))
def test_nothing_is_dropped_or_changed_without_a_report(doc: Document, leave_out_genes: bool, sentences: str,
                                                        tokens: str) -> None:
    """In every sentence mode and token mode (the file's whitespace tokens split at more annotation edges)."""
    label_map = {"SpecificDisease": "Disease", **({"Gene": "O"} if leave_out_genes else {})}
    options = ConvertOptions(lenient=True, label_map=label_map, sentences=sentences, tokens=tokens)  # type: ignore[arg-type]
    if not "".join(p.text for p in doc.passages).strip():  # nothing to tokenise: a coded error, not a corpus
        with pytest.raises(EmptyCorpusError):
            documents_to_sentences([doc], options=options)
        return
    c = documents_to_sentences([doc], options=options)
    r = c.documents_report
    assert r.annotations == len(doc.annotations)
    assert r.adds_up
    assert r.dropped == sum(1 for x in r.cases if x.action == "dropped")
    assert sum(r.entities.values()) == sum(1 for s in c.sentences for t in s.tags if t.startswith("B-"))
    original = {a.id: a for a in doc.annotations}
    reported = {x.annotation for x in r.cases}
    for a in c.documents[0].annotations:
        o = original[a.id]
        if a.spans != o.spans or a.text != o.text and o.text:
            assert a.id in reported, (o, a)
    if not leave_out_genes:
        assert not r.excluded


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["id", "passages", "offset", "text", "entities", "start", "end", "label",
                                         "spans", "sentences", "score", "identifier", "infons", "documents",
                                         "locations", "length", "annotations", "type"]), inner, max_size=5),
                    max_leaves=30))
def test_any_json_is_a_document_or_a_coded_error(obj) -> None:
    """What a client may send as JSON lines or BioC JSON: never anything but a DocumentFormatError."""
    import json

    from nerservice.documents.bioc_read import parse_bioc_json
    from nerservice.documents.jsonl import parse_jsonl
    from nerservice.errors import DocumentFormatError

    text = json.dumps(obj)
    for parse in (parse_jsonl, parse_bioc_json):
        try:
            parse(text, source="x")
        except DocumentFormatError:
            pass
