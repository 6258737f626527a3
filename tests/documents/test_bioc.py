"""BioC XML and JSON: reading (hardened XML, sentences, discontinuous locations, infons), writing through
the ``bioc`` package, and errors that name the line (XML) or the JSON path."""
from __future__ import annotations

import json

import pytest

from nerservice.documents.bioc_read import parse_bioc_json, parse_bioc_xml
from nerservice.documents.bioc_write import format_bioc_json, format_bioc_xml
from nerservice.documents.model import Annotation, Document, Passage, Relation
from nerservice.errors import DocumentFormatError

XML = b"""<?xml version='1.0' encoding='UTF-8'?>
<!DOCTYPE collection SYSTEM "BioC.dtd">
<collection><source>PubTator</source><date>2024</date><key>BioC.key</key>
<document><id>3</id>
<passage><infon key="type">title</infon><offset>0</offset><text>Naloxone reverses clonidine.</text>
<annotation id="0"><infon key="type">Chemical</infon><infon key="MESH">D009270</infon>
<location offset="0" length="8"/><text>Naloxone</text></annotation></passage>
<passage><infon key="type">abstract</infon><offset>29</offset>
<sentence><offset>29</offset><text>Blood pressure fell.</text></sentence>
<sentence><offset>50</offset><text>No hypotension.</text></sentence>
<annotation id="1"><infon key="type">Disease</infon><infon key="identifier">D007022</infon>
<location offset="53" length="11"/><text>hypotension</text></annotation>
<annotation id="2"><infon key="type">Disease</infon><location offset="29" length="5"/><location offset="44" length="4"/>
<text>Blood fell</text></annotation>
</passage>
<relation id="R0"><infon key="type">CID</infon><node refid="0" role="Chemical"/><node refid="1" role="Disease"/></relation>
</document></collection>"""


def test_reads_passages_sentences_infons_and_discontinuous_locations() -> None:
    (d,) = parse_bioc_xml(XML, source="c.xml")
    assert d.id == "3" and [p.kind for p in d.passages] == ["title", "abstract"]
    abstract = d.passages[1]
    assert abstract.text == "Blood pressure fell. No hypotension." and abstract.sentences == ((29, 49), (50, 65))
    a0, a1, a2 = d.annotations
    assert a0.label == "Chemical" and a0.infons == (("MESH", "D009270"),) and a0.identifier is None
    assert a1.identifier == "D007022" and d.text_at(a1.start, a1.end) == "hypotension"
    assert a2.spans == ((29, 34), (44, 48)) and a2.discontinuous
    assert d.relations == (Relation("R0", "CID", (("0", "Chemical"), ("1", "Disease"))),)


@pytest.mark.parametrize("fmt", ["xml", "json"])
def test_write_then_read_is_the_identity(fmt: str) -> None:
    docs = parse_bioc_xml(XML, source="c.xml")
    if fmt == "xml":
        back = parse_bioc_xml(format_bioc_xml(docs).encode(), source="w.xml")
    else:
        back = parse_bioc_json(format_bioc_json(docs), source="w.json")
    assert back == docs


def test_scores_and_identifiers_become_infons() -> None:
    d = Document("1", (Passage(0, "aspirin", "title"),),
                 (Annotation("T1", "Chemical", ((0, 7),), "aspirin", "D001241", score=0.9375),))
    out = json.loads(format_bioc_json([d]))
    infons = out["documents"][0]["passages"][0]["annotations"][0]["infons"]
    assert infons == {"type": "Chemical", "identifier": "D001241", "score": "0.9375"}
    assert parse_bioc_json(json.dumps(out), source="x")[0] == d


def test_entities_are_not_expanded_and_the_dtd_is_not_loaded(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    evil = (f'<?xml version="1.0"?><!DOCTYPE collection [<!ENTITY x SYSTEM "file://{secret}">]>'
            '<collection><document><id>1</id><passage><offset>0</offset><text>a &x; b</text></passage>'
            '</document></collection>').encode()
    (d,) = parse_bioc_xml(evil, source="evil.xml")
    assert "TOPSECRET" not in d.passages[0].text


@pytest.mark.parametrize("data, line, reason", [
    (b"<collection><document><id>1</id><passage><offset>0</offset>\n<text>a</passage></collection>", 2, "broken XML"),
    (b"<collection><document><id>1</id>\n<passage><offset>x</offset></passage></document></collection>", 2,
     "offset must be a non-negative integer"),
    (b"<collection><document><id>1</id><passage><offset>0</offset><text>ab</text>\n<annotation id='a'>"
     b"<location offset='0' length='1'/></annotation></passage></document></collection>", 2, "no 'type' infon"),
    (b"<collection>\n<document><passage><offset>0</offset></passage></document></collection>", 2, "no id"),
    (b"<document/>", 1, "expected <collection>"),
])
def test_malformed_xml_names_the_line(data: bytes, line: int, reason: str) -> None:
    with pytest.raises(DocumentFormatError) as exc:
        parse_bioc_xml(data, source="bad.xml")
    assert exc.value.line == line and reason in str(exc.value) and exc.value.code == "NER210"


@pytest.mark.parametrize("text, reason", [
    ('{"documents": [', "broken JSON"),
    ('{"documents": [{"id": "1", "passages": [{"offset": -1, "text": "a"}]}]}', "documents[0].passages[0]"),
    ('{"documents": [{"id": "1", "passages": [{"offset": 0, "text": "a", "annotations": [{"id": "1", '
     '"infons": {"type": "X"}, "text": "a", "locations": []}]}]}]}', "no location"),
    ('[1, 2]', "expected a BioC JSON collection"),
])
def test_malformed_json_names_the_path(text: str, reason: str) -> None:
    with pytest.raises(DocumentFormatError, match="NER210") as exc:
        parse_bioc_json(text, source="bad.json")
    assert reason in str(exc.value)
