import json

import pytest

from nerservice.data import ReadReport, Sentence, SkippedSentence, parse_bytes, parse_text, read_corpus
from nerservice.errors import ConfigError, CorpusEncodingError, CorpusError, CorpusFormatError, EmptyCorpusError

TSV = "Famil\tO\nadenomatous\tB-Disease\npolyposis\tI-Disease\n.\tO\n\nAPC\tO\nmutations\tO\n"
CONLL = (
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "EU NNP B-NP B-ORG\n"
    "rejects VBZ B-VP O\n"
    "German JJ B-NP B-MISC\n"
    "\n"
    "\n"
    "Peter NNP B-NP B-PER\n"
    "Blackburn NNP I-NP I-PER\n"
    "-DOCSTART- -X- -X- O\n"
    "BRUSSELS NNP B-NP B-LOC\n"
)


def write(tmp_path, content, name="c.tsv"):
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def strict_error(text, **kw):
    with pytest.raises(CorpusFormatError) as exc:
        parse_text(text, source="f.tsv", **kw)
    assert f"f.tsv:{exc.value.line}:" in str(exc.value)
    return exc.value


# --- formats -----------------------------------------------------------------------------------------
def test_tsv_sentences_lines_and_counts(tmp_path):
    corpus = read_corpus(write(tmp_path, TSV))
    s0, s1 = corpus.sentences
    assert s0.tokens == ("Famil", "adenomatous", "polyposis", ".")
    assert s0.tags == ("O", "B-Disease", "I-Disease", "O")
    assert (s0.line, s1.line) == (1, 6)
    assert s1.file == str(tmp_path / "c.tsv")
    r = corpus.report
    assert (r.sentences, r.tokens, r.entities, r.format, r.scheme) == (2, 6, {"Disease": 1}, "tsv", "iob2")
    assert r.total_sentences == 2 and not r.skipped and not r.warnings


def test_conll_docstart_skipped_tag_is_last_column():
    corpus = parse_text(CONLL, source="c.conll")
    assert [s.tokens for s in corpus.sentences] == [("EU", "rejects", "German"), ("Peter", "Blackburn"),
                                                     ("BRUSSELS",)]
    assert [s.line for s in corpus.sentences] == [3, 8, 11]
    assert corpus.sentences[0].tags == ("B-ORG", "O", "B-MISC")
    assert corpus.report.format == "conll"
    assert corpus.report.entities == {"LOC": 1, "MISC": 1, "ORG": 1, "PER": 1}


def test_conll_accepts_tabs_between_columns_when_forced():
    corpus = parse_text("a\tNN\tO\nb\tNN\tB-X\n", source="x", fmt="conll")
    assert corpus.sentences[0].tags == ("O", "B-X")


def test_blank_lines_runs_and_missing_final_newline():
    corpus = parse_text("\n\n  \na\tO\n\n\n\t\nb\tB-X", source="x")
    assert [(s.tokens, s.line) for s in corpus.sentences] == [(("a",), 4), (("b",), 8)]


def test_auto_detect_uses_first_data_line():
    assert parse_text("-DOCSTART-\tO\n\na b O\n", source="x").report.format == "conll"
    assert parse_text("\n-DOCSTART- O\n\na\tO\n", source="x").report.format == "tsv"


def test_bom_and_crlf_are_accepted_silently():
    plain = parse_bytes(TSV.encode(), source="x")
    messy = parse_bytes(b"\xef\xbb\xbf" + TSV.replace("\n", "\r\n").encode(), source="x")
    assert messy.sentences == plain.sentences
    assert [s.line for s in messy.sentences] == [1, 6]
    assert messy.report.warnings == []
    assert parse_text("\ufeff" + TSV, source="x").sentences == plain.sentences


def test_fields_keep_inner_spaces_but_lose_outer_ones():
    corpus = parse_text("a b \t B-X \n", source="x")
    assert corpus.sentences[0].tokens == ("a b",)
    assert corpus.sentences[0].tags == ("B-X",)


# --- strict errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("a\tO\nb\tNN\tO\n", 2, "3 tab-separated"),
        ("a\tO\n\nb O\n", 3, "1 tab-separated"),
        ("a\tO\n\tB-X\n", 2, "empty token"),
        ("a\tO\nb\tB_Disease\n", 2, "invalid tag"),
        ("a\tO\n\nb\tX-Foo\n", 3, "invalid tag"),
        ("a\tB-\n", 1, "invalid tag"),
        ("a\tO\nb\tO\t\n", 2, "3 tab-separated"),
    ],
)
def test_tsv_errors_name_the_line(text, line, fragment):
    err = strict_error(text, fmt="tsv")
    assert err.line == line
    assert fragment in str(err)


def test_conll_column_count_change_is_an_error():
    err = strict_error("a NN B-X\nb NN O\n\nc O\n")
    assert err.line == 4 and "column count changed" in str(err)
    assert strict_error("a\n", fmt="conll").line == 1


@pytest.mark.parametrize(
    "text, line",
    [
        ("a\tS-X\nb\tO\n\nc\tO\nd\tE-X\n", 5),  # E- without B-
        ("a\tS-Y\n\nb\tB-X\nc\tO\n", 4),  # B- never closed
        ("a\tS-X\n\nb\tO\nc\tB-X\nd\tI-X\n", 5),  # still open when the sentence ends
    ],
)
def test_inconsistent_iobes_errors_name_the_line(text, line):
    assert strict_error(text).line == line
    assert strict_error(text, scheme="iobes").line == line


def test_strict_reports_the_first_problem_in_file_order():
    # a scheme error on line 2 comes before a column error on line 4, though columns are checked first
    assert strict_error("a\tS-X\nb\tE-Y\n\nc\tO\tO\n").line == 2


def test_iobes_tags_with_explicit_iob2_scheme_are_errors():
    err = strict_error("a\tO\nb\tS-X\n", scheme="iob2")
    assert err.line == 2 and "iobes" in str(err)


def test_encoding_error_names_line_and_byte_offset(tmp_path):
    data = "a\tO\n\nb\tB-X\n".encode() + b"caf\xe9\tO\n"
    with pytest.raises(CorpusEncodingError) as exc:
        read_corpus(write(tmp_path, data))
    err = exc.value
    assert err.context["line"] == 4 and err.context["offset"] == 14 and err.context["column"] == 4
    assert f"{tmp_path / 'c.tsv'}:4:" in str(err) and "0xe9" in str(err)


def test_encoding_error_offset_counts_the_bom_and_utf16_gets_a_hint():
    with pytest.raises(CorpusEncodingError) as exc:
        parse_bytes(b"\xef\xbb\xbfa\tO\n\xff\tO\n", source="x")
    assert exc.value.context["offset"] == 7 and exc.value.context["line"] == 2
    with pytest.raises(CorpusEncodingError) as exc:
        parse_bytes("a\tO\n".encode("utf-16"), source="x")
    assert exc.value.context["line"] == 1 and "UTF-16" in str(exc.value)


@pytest.mark.parametrize("data", [b"", b"\n\n \n", b"\xef\xbb\xbf", b"\r\n\r\n", b"-DOCSTART- O\n\n"])
def test_empty_corpus(data, tmp_path):
    with pytest.raises(EmptyCorpusError) as exc:
        read_corpus(write(tmp_path, data))
    assert "c.tsv" in str(exc.value)
    with pytest.raises(EmptyCorpusError):
        parse_bytes(data, source="x", lenient=True)


def test_missing_file_and_directory_are_clear_errors(tmp_path):
    with pytest.raises(CorpusError, match="not found: .*nope.tsv"):
        read_corpus(tmp_path / "nope.tsv")
    with pytest.raises(CorpusError, match="is a directory"):
        read_corpus(tmp_path)
    with pytest.raises(CorpusError, match="no corpus files"):
        read_corpus([])


def test_bad_arguments_are_config_errors():
    with pytest.raises(ConfigError):
        parse_text(TSV, source="x", fmt="csv")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        parse_text(TSV, source="x", scheme="bilou")  # type: ignore[arg-type]


# --- schemes, repairs, warnings ----------------------------------------------------------------------
def test_iob2_repairs_counted_and_warned():
    corpus = parse_text("a\tO\nb\tI-X\nc\tI-X\n\nd\tB-X\ne\tI-Y\n", source="f.tsv")
    assert corpus.report.repaired == 2
    assert corpus.sentences[0].tags == ("O", "B-X", "I-X")
    assert corpus.sentences[1].tags == ("B-X", "B-Y")
    assert any("repaired 2" in w and "line 1" in w for w in corpus.report.warnings)
    assert corpus.report.scheme == "iob2"


def test_iob1_is_detected_and_converted_without_repairs():
    corpus = parse_text("a\tI-X\nb\tI-X\nc\tB-X\n\nd\tI-Y\n", source="f.tsv")
    assert corpus.report.scheme == "iob1" and corpus.report.repaired == 0
    assert corpus.sentences[0].tags == ("B-X", "I-X", "B-X")
    assert corpus.report.entities == {"X": 2, "Y": 1}
    assert any("IOB1" in w for w in corpus.report.warnings)


def test_iobes_is_detected_and_converted():
    corpus = parse_text("a\tB-X\nb\tE-X\nc\tS-Y\n", source="f.tsv")
    assert corpus.report.scheme == "iobes"
    assert corpus.sentences[0].tags == ("B-X", "I-X", "B-Y")


def test_no_entities_is_a_warning_not_an_error():
    corpus = parse_text("a\tO\nb\tO\n", source="f.tsv")
    assert corpus.report.sentences == 1 and corpus.report.entities == {}
    assert any("no entities" in w and "f.tsv" in w for w in corpus.report.warnings)


# --- lenient mode ------------------------------------------------------------------------------------
LENIENT = (
    "a\tB-X\nb\tI-X\n\n"  # 1-2 good
    "c\tO\nd\tO\tO\ne\tB-X\n\n"  # 4-6: bad at 5
    "f\tB-Y\n\n"  # 8 good
    "g\tS-X\n\n"  # 10: iobes tag in iob2 input (scheme given explicitly)
    "h\tBAD\ni\t\n\n"  # 12-13: bad at 12 (first bad line wins)
    "j\tI-X\n"  # 15: good, repaired
)


def test_lenient_skips_whole_sentences_and_records_the_bad_line():
    corpus = parse_text(LENIENT, source="f.tsv", scheme="iob2", lenient=True)
    r = corpus.report
    assert [s.line for s in corpus.sentences] == [1, 8, 15]
    assert [(k.file, k.line) for k in r.skipped] == [("f.tsv", 5), ("f.tsv", 10), ("f.tsv", 12)]
    assert "3 tab-separated" in r.skipped[0].reason and "BAD" in r.skipped[2].reason
    assert (r.sentences, r.tokens, r.entities, r.repaired) == (3, 4, {"X": 2, "Y": 1}, 1)
    assert r.total_sentences == 6
    assert any("skipped 3 of 6" in w for w in r.warnings)
    with pytest.raises(CorpusFormatError) as exc:
        parse_text(LENIENT, source="f.tsv", scheme="iob2")
    assert exc.value.line == 5


def test_lenient_skips_sentences_with_undecodable_bytes():
    data = b"a\tB-X\n\nb\tO\n\xff\xfe\tO\n\nc\tO\n"
    corpus = parse_bytes(data, source="f.tsv", lenient=True)
    assert [s.tokens for s in corpus.sentences] == [("a",), ("c",)]
    assert corpus.report.skipped == [SkippedSentence("f.tsv", 4, corpus.report.skipped[0].reason)]
    assert "byte offset 11" in corpus.report.skipped[0].reason


def test_lenient_can_skip_everything_without_raising():
    corpus = parse_text("a\tB_X\n\nb\tO O\n", source="f.tsv", lenient=True)
    assert corpus.sentences == [] and corpus.report.total_sentences == 2


# --- several files, reports --------------------------------------------------------------------------
def test_read_corpus_merges_files_and_reports(tmp_path):
    one = write(tmp_path, TSV, "one.tsv")
    two = write(tmp_path, "x I-C\ny I-C\n\nz O\n", "two.conll")
    corpus = read_corpus([one, str(two)])
    r = corpus.report
    assert r.files == [str(one), str(two)]
    assert [s.file for s in corpus.sentences] == [str(one)] * 2 + [str(two)] * 2
    assert (r.sentences, r.tokens, r.entities) == (4, 9, {"C": 1, "Disease": 1})
    assert (r.scheme, r.format) == ("iob1,iob2", "conll,tsv")
    json.dumps(r.to_dict())
    assert r.to_dict()["total_sentences"] == 4


def test_report_merge_adds_up():
    a = ReadReport(files=["a"], sentences=2, tokens=5, entities={"X": 1}, repaired=1, scheme="iob2", format="tsv",
                   skipped=[SkippedSentence("a", 3, "r")], warnings=["w"])
    b = ReadReport(files=["b"], sentences=1, tokens=2, entities={"X": 2, "Y": 1}, scheme="iob2", format="tsv")
    m = a.merge(b)
    assert (m.sentences, m.tokens, m.entities, m.repaired) == (3, 7, {"X": 3, "Y": 1}, 1)
    assert (m.total_sentences, m.scheme, m.format, m.files, m.warnings) == (4, "iob2", "tsv", ["a", "b"], ["w"])
    assert a.entities == {"X": 1}  # merge does not mutate its inputs


def test_sentence_equality_ignores_origin_and_checks_lengths():
    assert Sentence(("a",), ("O",), "f", 3) == Sentence(["a"], ["O"])  # type: ignore[arg-type]
    with pytest.raises(CorpusError):
        Sentence(("a", "b"), ("O",))


def test_reading_a_corpus_of_ncbi_size():
    # NCBI-disease train size: ~135k tokens in ~5.4k sentences. Speed is a benchmark matter (BENCHMARKS.md),
    # not a timed assertion: this checks only that every token and entity is counted.
    sentence = "".join(f"tok{i}\t{'B-Disease' if i == 3 else 'I-Disease' if i == 4 else 'O'}\n" for i in range(25))
    data = ((sentence + "\n") * 5424).encode()
    corpus = parse_bytes(data, source="big.tsv")
    assert corpus.report.tokens == 135_600 and corpus.report.entities == {"Disease": 5424}
    assert len(corpus.sentences) == 5424


def test_a_stray_e_tag_in_iob2_names_its_own_line_and_hints_name_cli_flags() -> None:
    text = "a\tB-D\nb\tI-D\n\nc\tO\nd\tB-D\n\ne\tE-D\nf\tO\n\ng\tB-C\nh\tI-C\n"
    err = strict_error(text)
    assert err.line == 7 and "--scheme iobes" in str(err)
    assert "--format conll" in str(strict_error("a\tO\nb\tO\tX\n"))
    with pytest.raises(CorpusEncodingError) as enc:
        parse_bytes(b"a\tO\n\xff\tO\n", source="f.tsv")
    assert "--lenient" in str(enc.value)
    # strict: the column error on line 2 comes before the bad byte on line 4
    with pytest.raises(CorpusFormatError) as first:
        parse_bytes(b"a\tO\nb\tO\tX\n\nc\t\xff\n", source="f.tsv")
    assert first.value.line == 2
