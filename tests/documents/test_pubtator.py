"""PubTator reading and writing: layout, offsets, identifiers, extra columns, relations, scores, errors."""
from __future__ import annotations

import pytest

from nerservice.documents.model import Annotation, Document, Passage
from nerservice.documents.pubtator import format_pubtator, parse_pubtator
from nerservice.errors import CorpusError, DocumentFormatError

TITLE = "BRCA1 mutations in breast cancer."
ABSTRACT = "Ovarian cancer and colorectal, breast and ovarian tumours."
DOC = (f"101|t|{TITLE}\n101|a|{ABSTRACT}\n"
       "101\t19\t32\tbreast cancer\tSpecificDisease\tD001943\n"
       f"101\t{len(TITLE) + 1}\t{len(TITLE) + 15}\tOvarian cancer\tSpecificDisease\tD010051\n"
       "101\t40\t90\tcolorectal, breast and ovarian tumours\tCompositeMention\tD015179|D001943\tcolorectal|breast\n"
       "101\tCID\tD001\tD002\n\n"
       "102|t|No entities here.\n102|a|\n\n")


def test_reads_passages_at_pubtator_offsets_with_identifiers_and_extras() -> None:
    docs = parse_pubtator(DOC, source="f.pubtator")
    assert [d.id for d in docs] == ["101", "102"]
    d = docs[0]
    assert d.passages[0] == Passage(0, TITLE, "title")
    assert d.passages[1] == Passage(len(TITLE) + 1, ABSTRACT, "abstract")
    a1, a2, a3 = d.annotations
    assert (a1.start, a1.end, a1.label, a1.identifier) == (19, 32, "SpecificDisease", "D001943")
    assert d.text_at(a2.start, a2.end) == "Ovarian cancer" and a2.line == 4
    assert a3.identifier == "D015179|D001943" and dict(a3.infons) == {"pubtator:columns": "colorectal|breast"}
    assert d.relations[0].type == "CID" and [r for r, _ in d.relations[0].nodes] == ["D001", "D002"]
    assert docs[1].passages[1].text == ""


def test_write_then_read_is_the_identity_and_writes_the_same_text() -> None:
    docs = parse_pubtator(DOC, source="f")
    text = format_pubtator(docs)
    assert parse_pubtator(text, source="g") == docs
    assert text == DOC


def test_scores_go_to_a_seventh_column_and_come_back() -> None:
    d = Document("7", (Passage(0, "aspirin", "title"),), (Annotation("1", "Chemical", ((0, 7),), "aspirin", score=0.875),))
    text = format_pubtator([d])
    assert text.splitlines()[1] == "7\t0\t7\taspirin\tChemical\t\t0.875"
    assert parse_pubtator(text, source="x")[0] == d


def test_later_passages_keep_their_offsets_in_the_abstract_line() -> None:
    d = Document("9", (Passage(0, "Title."), Passage(7, "One."), Passage(15, "Two.")),
                 (Annotation("1", "X", ((15, 18),), "Two"),))
    back = parse_pubtator(format_pubtator([d]), source="x")[0]
    assert back.passages[1].offset == 7 and back.text_at(15, 18) == "Two"


@pytest.mark.parametrize("text, line, reason", [
    ("101|a|abstract first\n", 1, "without its title line"),
    ("101\t0\t3\tabc\tX\n", 1, "before any title line"),
    ("101|t|Title\n101\tx\t3\tabc\tX\tD1\n", 2, "bad annotation offsets"),
    ("101|t|Title\n101\t0\t-3\tabc\tX\n", 2, "bad annotation offsets"),
    ("101|t|Title\n102\t0\t3\tabc\tX\n", 2, "names document '102'"),
    ("101|t|Title\njust some words\n", 2, "neither ID|t|title"),
    ("101|t|Title\n101|a|A\n101|a|B\n", 3, "second abstract line"),
])
def test_malformed_files_name_file_line_and_document(text: str, line: int, reason: str) -> None:
    with pytest.raises(DocumentFormatError) as exc:
        parse_pubtator(text, source="bad.pubtator")
    e = exc.value
    assert e.code == "NER210" and e.file == "bad.pubtator" and e.line == line and reason in str(e)


def test_writer_refuses_what_pubtator_cannot_hold() -> None:
    with pytest.raises(CorpusError, match="line break"):
        format_pubtator([Document("1", (Passage(0, "a\nb"),))])
    with pytest.raises(CorpusError, match="discontinuous"):
        format_pubtator([Document("1", (Passage(0, "ab cd"),), (Annotation("1", "X", ((0, 2), (3, 5)), "ab cd"),))])
