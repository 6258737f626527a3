"""Documents → IOB2 sentences: tags, label mapping, and each annotation case in strict mode (a coded error
naming file, document, offsets and text) and lenient mode (the documented policy, reported, counts add up)."""
from __future__ import annotations

import pytest

from nerservice.documents import ConvertOptions, documents_to_sentences, parse_label_map
from nerservice.documents.model import Annotation, Document, Passage
from nerservice.errors import AnnotationError, ConfigError

TITLE = "APC2 and colorectal cancer."
ABSTRACT = "Germline APC mutations cause familial adenomatous polyposis. It is rare."


def doc(*anns: Annotation, passages: tuple[Passage, ...] | None = None) -> Document:
    ps = passages or (Passage(0, TITLE, "title"), Passage(len(TITLE) + 1, ABSTRACT, "abstract"))
    return Document("d1", ps, tuple(anns), source="f.pubtator", line=1)


def ann(i: str, start: int, end: int, text: str, label: str = "Disease", spans=None) -> Annotation:
    return Annotation(i, label, spans or ((start, end),), text, identifier="D1", line=int(i) + 2)


def at(text: str, sub: str, base: int = 0) -> tuple[int, int]:
    i = text.index(sub)
    return base + i, base + i + len(sub)


def convert(d: Document, **kw):
    return documents_to_sentences([d], options=ConvertOptions(**kw))


A = len(TITLE) + 1
CRC = ann("1", *at(TITLE, "colorectal cancer"), "colorectal cancer")
FAP = ann("2", *at(ABSTRACT, "familial adenomatous polyposis", A), "familial adenomatous polyposis")


def test_sentences_and_tags_from_a_clean_document() -> None:
    c = convert(doc(CRC, FAP))
    assert [s.tokens for s in c.sentences] == [
        ("APC2", "and", "colorectal", "cancer", "."),
        ("Germline", "APC", "mutations", "cause", "familial", "adenomatous", "polyposis", "."),
        ("It", "is", "rare", ".")]
    assert c.sentences[0].tags == ("O", "O", "B-Disease", "I-Disease", "O")
    assert c.sentences[1].tags[4:7] == ("B-Disease", "I-Disease", "I-Disease")
    r = c.documents_report
    assert (r.documents, r.passages, r.sentences, r.annotations, r.entities, r.cases) == (1, 2, 3, 2, {"Disease": 2}, [])
    assert c.documents[0].annotations[0].identifier == "D1"  # identifiers travel untouched


def test_label_map_renames_and_O_leaves_out_with_counts() -> None:
    m = parse_label_map(["SpecificDisease,DiseaseClass=Disease", "Gene=O"])
    g = Annotation("3", "Gene", (at(TITLE, "APC2"),), "APC2")
    c = convert(doc(Annotation("1", "SpecificDisease", CRC.spans, CRC.text), g), label_map=m)
    r = c.documents_report
    assert r.entities == {"Disease": 1} and r.excluded == {"Gene": 1} and r.relabelled == {"SpecificDisease→Disease": 1}
    assert r.adds_up and c.sentences[0].tags[0] == "O"
    with pytest.raises(ConfigError):
        parse_label_map(["Disease"])


CASES = [  # (kind, annotation, lenient action, tags of the first sentence afterwards or None)
    ("text-mismatch", ann("1", 0, 4, "cancer"), "realigned", None),
    ("text-mismatch", ann("1", 0, 4, "leukemia"), "dropped", None),
    ("outside-passage", ann("1", 20, 40, "x"), "dropped", None),
    ("empty-span", ann("1", 5, 5, ""), "dropped", None),
    ("discontinuous", ann("1", 0, 0, "colorectal cancer", spans=(at(TITLE, "colorectal"), at(TITLE, "cancer"))),
     "covering-span", ("O", "O", "B-Disease", "I-Disease", "O")),
    ("edge-space", ann("1", *at(TITLE, " colorectal"), " colorectal"), "trimmed", ("O", "O", "B-Disease", "O", "O")),
    ("token-boundary", ann("1", 0, 3, "APC"), "tokens-split", ("B-Disease", "O", "O", "O", "O", "O")),
    ("bad-label", Annotation("1", "Bad Label", (at(TITLE, "APC2"),), "APC2"), "dropped", None),
]


@pytest.mark.parametrize("kind, a, action, tags", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_each_case_is_an_error_in_strict_mode_and_a_reported_policy_in_lenient(kind, a, action, tags) -> None:
    with pytest.raises(AnnotationError) as exc:
        convert(doc(a))
    e = exc.value
    assert e.code == "NER211" and e.kind == kind
    assert e.context["document"] == "d1" and e.context["start"] == a.start and e.context["text"] == a.text
    assert "f.pubtator" in e.context["file"]
    c = convert(doc(a), lenient=True)
    r = c.documents_report
    assert [(x.kind, x.action) for x in r.cases] == [(kind, action)]
    assert r.adds_up and r.dropped == (action == "dropped")
    if tags is not None:
        assert c.sentences[0].tags == tags
    if action == "tokens-split":
        assert c.sentences[0].tokens[:2] == ("APC", "2")


def test_overlaps_keep_the_outer_mention_and_report_the_other() -> None:
    inner = ann("2", *at(TITLE, "cancer"), "cancer")
    crossing = ann("3", *at(TITLE, "and colorectal"), "and colorectal")
    with pytest.raises(AnnotationError, match="overlap"):
        convert(doc(CRC, inner))
    c = convert(doc(inner, CRC, crossing), lenient=True)
    r = c.documents_report
    assert sorted(x.annotation for x in r.cases) == ["2", "3"] and all(x.kind == "overlap" for x in r.cases)
    assert c.sentences[0].tags == ("O", "O", "B-Disease", "I-Disease", "O")
    assert r.annotations == 3 and r.entities == {"Disease": 1} and r.dropped == 2 and r.adds_up


def test_a_mention_across_a_sentence_boundary_merges_the_sentences_even_in_strict_mode() -> None:
    text = "It binds. Brca1 here."  # the splitter cuts after "binds."
    a = ann("1", *at(text, "binds. Brca1"), "binds. Brca1")
    c = convert(doc(a, passages=(Passage(0, text),)))
    assert len(c.sentences) == 1 and c.documents_report.merged_sentences >= 1
    assert [x.kind for x in c.documents_report.cases] == ["sentence-merge"]


def test_sentence_spans_from_the_file_and_one_sentence_per_line() -> None:
    text = "One. Two\nthree four.\nFive"
    assert len(convert(doc(passages=(Passage(0, text, sentences=((0, 4), (5, 20), (21, 25))),))).sentences) == 3
    assert [s.tokens for s in convert(doc(passages=(Passage(0, text),)), sentences="lines").sentences] == [
        ("One", ".", "Two"), ("three", "four", "."), ("Five",)]


PRE = "Mean +/- SD of IL-2 >= 5 ."  # pre-tokenised text: the corpus's own tokens, joined by spaces


def test_whitespace_tokens_keep_the_file_tokens_and_the_tokenizer_splits_them() -> None:
    il2 = ann("1", *at(PRE, "IL-2"), "IL-2", label="Gene")
    d = doc(il2, passages=(Passage(0, PRE),))
    own = convert(d, tokens="whitespace").sentences[0]
    assert own.tokens == ("Mean", "+/-", "SD", "of", "IL-2", ">=", "5", ".")
    assert own.tags == ("O", "O", "O", "O", "B-Gene", "O", "O", "O")
    words = convert(d).sentences[0]
    assert words.tokens[:4] == ("Mean", "+", "/", "-") and words.tags[6:9] == ("B-Gene", "I-Gene", "I-Gene")


def test_an_edge_inside_a_whitespace_token_is_strict_error_or_reported_split() -> None:
    il = ann("1", *at(PRE, "IL"), "IL", label="Gene")  # "IL-2" is one whitespace token
    d = doc(il, passages=(Passage(0, PRE),))
    with pytest.raises(AnnotationError, match="token-boundary"):
        convert(d, tokens="whitespace")
    c = convert(d, tokens="whitespace", lenient=True)
    assert c.sentences[0].tokens[4:6] == ("IL", "-2") and c.sentences[0].tags[4:6] == ("B-Gene", "O")
    assert [(x.kind, x.action) for x in c.documents_report.cases] == [("token-boundary", "tokens-split")]
    assert c.documents_report.adds_up and c.documents_report.entities == {"Gene": 1}


@pytest.mark.parametrize("bad", [{"tokens": "chars"}, {"sentences": "paragraphs"}])
def test_an_unknown_sentence_or_token_mode_is_a_config_error(bad) -> None:
    with pytest.raises(ConfigError):
        ConvertOptions(**bad)


def test_pubtator_lines_keep_title_and_abstract_one_sentence_each() -> None:
    from nerservice.documents.pubtator import parse_pubtator

    title, abstract = "Dose 2 . 5 mg . Fig . 1 shows it", "Abstract Background the von Willebrand factor ."
    s, e = at(abstract, "von Willebrand", len(title) + 1)
    (d,) = parse_pubtator(f"9|t|{title}\n9|a|{abstract}\n9\t{s}\t{e}\tvon Willebrand\tDisease\n\n",
                          source="x.pubtator")
    assert len(convert(d).sentences) > 2  # the splitter cuts "2 . 5" and ". Fig"
    got = convert(d, sentences="lines").sentences
    assert [" ".join(s.tokens) for s in got] == [title, abstract]
    assert got[1].tags[3:5] == ("B-Disease", "I-Disease")
