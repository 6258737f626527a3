"""BRAT standoff: T/N/#/R lines, discontinuous fragments, carried event lines, identifiers, errors."""
from __future__ import annotations

import pytest

from nerservice.documents import read_documents, write_documents
from nerservice.documents.brat import format_brat, parse_brat
from nerservice.documents.model import Annotation, Document, Passage
from nerservice.errors import DocumentFormatError

TEXT = "Aspirin causes ulcers.\nColon and breast cancer.\n"
ANN = ("T1\tChemical 0 7\tAspirin\n"
       "T2\tDisease 15 21\tulcers\n"
       "T3\tDisease 23 28;40 46\tColon cancer\n"
       "N1\tReference T1 MeSH:D001241\taspirin\n"
       "#1\tAnnotatorNotes T2\tgastric?\n"
       "R1\tCauses Arg1:T1 Arg2:T2\n"
       "E1\tTreat:T1 Theme:T2\n")


def test_reads_annotations_identifiers_notes_relations_and_keeps_other_lines() -> None:
    d = parse_brat("doc1", TEXT, ANN, source="doc1.ann")
    t1, t2, t3 = d.annotations
    assert t1.identifier == "MeSH:D001241" and ("brat:norm_name", "aspirin") in t1.infons
    assert t2.infons == (("note", "gastric?"),) and t2.line == 2
    assert t3.spans == ((23, 28), (40, 46)) and t3.text == "Colon cancer"
    assert d.relations[0].type == "Causes" and d.relations[0].nodes == (("T1", "Arg1"), ("T2", "Arg2"))
    assert d.extra == ("E1\tTreat:T1 Theme:T2",)


def test_write_then_read_is_the_identity(tmp_path) -> None:
    d = parse_brat("doc1", TEXT, ANN, source="doc1.ann")
    write_documents([d], tmp_path, "brat")
    (back,) = read_documents(tmp_path, fmt="brat")
    assert back == d
    assert (tmp_path / "doc1.txt").read_text() == TEXT


def test_identifiers_without_a_db_prefix_and_scores_travel_in_notes() -> None:
    d = Document("x", (Passage(0, "aspirin"),),
                 (Annotation("T1", "Chemical", ((0, 7),), "aspirin", "D001241|D002", score=0.5),))
    txt, ann = format_brat(d)
    assert "identifier=D001241|D002" in ann and "score=0.5" in ann
    assert parse_brat("x", txt, ann, source="x.ann") == d


@pytest.mark.parametrize("ann, line, reason", [
    ("T1\tChemical 0 x\tAspirin\n", 1, "bad type/offsets"),
    ("T1\tChemical 7 0\tAspirin\n", 1, "bad type/offsets"),
    ("T1\tChemical 0 7\n", 1, "text-bound annotation needs"),
    ("T1\tChemical 0 7\tAspirin\nT1\tChemical 0 7\tAspirin\n", 2, "duplicate annotation id"),
    ("Q1\twhat\n", 1, "unknown annotation line"),
])
def test_malformed_ann_lines_name_file_and_line(ann: str, line: int, reason: str) -> None:
    with pytest.raises(DocumentFormatError) as exc:
        parse_brat("d", TEXT, ann, source="d.ann")
    assert exc.value.line == line and exc.value.file == "d.ann" and reason in str(exc.value)


def test_ann_without_txt_and_txt_without_ann_are_errors(tmp_path) -> None:
    (tmp_path / "a.ann").write_text("T1\tX 0 1\ta\n")
    with pytest.raises(DocumentFormatError, match=".ann file without its .txt"):
        read_documents(tmp_path, fmt="brat")
    (tmp_path / "a.ann").unlink()
    (tmp_path / "b.txt").write_text("b")
    with pytest.raises(DocumentFormatError, match=".txt file without its .ann"):
        read_documents(tmp_path, fmt="brat")
    assert read_documents(tmp_path, fmt="brat", need_ann=False)[0].id == "b"  # prediction input needs no .ann


def test_bad_utf8_names_file_line_and_byte(tmp_path) -> None:
    (tmp_path / "a.txt").write_bytes(b"ok\nbad \xff byte\n")
    (tmp_path / "a.ann").write_text("")
    with pytest.raises(Exception) as exc:
        read_documents(tmp_path, fmt="brat")
    assert getattr(exc.value, "code", "") == "NER202" and "a.txt:2" in str(exc.value)
