import pytest
from hypothesis import given
from hypothesis import strategies as st

from nerservice.data import detect_scheme, from_iob2, spans, to_iob2, validate_tag
from nerservice.errors import ConfigError, CorpusFormatError


@pytest.mark.parametrize("tag", ["O", "B-Disease", "I-Disease", "E-X", "S-X", "B-Gene-or-Protein", "I-a_b"])
def test_validate_tag_accepts(tag):
    assert validate_tag(tag)


@pytest.mark.parametrize("tag", ["", "o", "B_Disease", "X-Foo", "B-", "B", "BDisease", "B-Dis ease", " O", "O ",
                                 "b-Disease", "B-\u00a0"])
def test_validate_tag_rejects(tag):
    assert not validate_tag(tag)


def test_spans_basic():
    tags = ["B-D", "I-D", "O", "B-C", "B-C", "I-C", "O", "B-D"]
    assert spans(tags) == [(0, 2, "D"), (3, 4, "C"), (4, 6, "C"), (7, 8, "D")]


def test_spans_type_change_and_stray_i_start_new_entities():
    assert spans(["O", "I-D", "I-D", "I-C"]) == [(1, 3, "D"), (3, 4, "C")]
    assert spans([]) == []
    assert spans(["O", "O"]) == []


def test_spans_rejects_non_iob2_tag_with_position():
    with pytest.raises(CorpusFormatError) as exc:
        spans(["O", "S-D"])
    assert exc.value.line == 2


def test_iob2_repairs_are_counted():
    tags, repairs = to_iob2(["O", "I-D", "I-D", "O", "B-D", "I-C", "I-C"], "iob2")
    assert tags == ["O", "B-D", "I-D", "O", "B-D", "B-C", "I-C"]
    assert repairs == 2


def test_iob1_to_iob2_is_not_a_repair():
    tags, repairs = to_iob2(["I-D", "I-D", "B-D", "O", "I-C"], "iob1")
    assert tags == ["B-D", "I-D", "B-D", "O", "B-C"]
    assert repairs == 0


def test_iobes_to_iob2():
    tags, repairs = to_iob2(["S-D", "B-C", "I-C", "E-C", "O", "B-D", "E-D", "S-D"], "iobes")
    assert tags == ["B-D", "B-C", "I-C", "I-C", "O", "B-D", "I-D", "B-D"]
    assert repairs == 0


@pytest.mark.parametrize(
    "tags, bad_position",
    [
        (["O", "E-D"], 2),  # E- without B-
        (["O", "I-D", "E-D"], 2),  # I- without B-
        (["B-D", "O"], 2),  # B- not closed before O
        (["B-D", "I-D"], 2),  # not closed at sentence end: reported at the last token
        (["B-D", "E-C"], 2),  # closed with another type
        (["B-D", "S-D"], 2),
    ],
)
def test_inconsistent_iobes_names_the_position(tags, bad_position):
    with pytest.raises(CorpusFormatError) as exc:
        to_iob2(tags, "iobes")
    assert exc.value.line == bad_position
    assert exc.value.file == "<tags>"


def test_to_iob2_rejects_invalid_tag_and_iobes_tags_in_iob2():
    with pytest.raises(CorpusFormatError) as exc:
        to_iob2(["O", "B_D"], "iob2")
    assert exc.value.line == 2
    with pytest.raises(CorpusFormatError):
        to_iob2(["S-D"], "iob2")


def test_unknown_scheme_is_a_config_error():
    with pytest.raises(ConfigError):
        to_iob2(["O"], "bio")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        from_iob2(["O"], "bilou")  # type: ignore[arg-type]


def test_from_iob2_each_scheme():
    iob2 = ["B-D", "I-D", "B-D", "O", "B-C", "B-D", "I-D", "I-D"]
    assert from_iob2(iob2, "iob2") == iob2
    assert from_iob2(iob2, "iob1") == ["I-D", "I-D", "B-D", "O", "I-C", "I-D", "I-D", "I-D"]
    assert from_iob2(iob2, "iobes") == ["B-D", "E-D", "S-D", "O", "S-C", "B-D", "I-D", "E-D"]


@pytest.mark.parametrize(
    "sequences, expected",
    [
        ([["O", "S-D"]], "iobes"),
        ([["B-D", "E-D"]], "iobes"),
        ([["I-D", "I-D", "O"], ["O", "I-C"]], "iob1"),
        ([["I-D", "B-D"], ["I-C"]], "iob1"),  # B- only between adjacent same-type entities
        ([["B-D", "I-D"], ["I-C"]], "iob2"),  # a B- starting from O: IOB2 with a stray I- (repaired later)
        ([["B-D", "I-D"]], "iob2"),
        ([["O", "O"], []], "iob2"),
        ([], "iob2"),
    ],
)
def test_detect_scheme(sequences, expected):
    assert detect_scheme(sequences) == expected


LABELS = st.sampled_from(["D", "C", "Gene"])
IOB2 = st.lists(st.one_of(st.just("O"), LABELS.map(lambda x: "B-" + x), LABELS.map(lambda x: "I-" + x)),
                max_size=30).map(lambda tags: to_iob2(tags, "iob2")[0])


@given(IOB2, st.sampled_from(["iob1", "iob2", "iobes"]))
def test_conversion_round_trip(tags, scheme):
    converted = from_iob2(tags, scheme)
    assert all(validate_tag(t) for t in converted)
    back, repairs = to_iob2(converted, scheme)
    assert back == tags
    assert repairs == 0
    assert spans(back) == spans(tags)


@given(IOB2)
def test_detect_scheme_recognises_written_schemes(tags):
    if spans(tags):
        assert detect_scheme([from_iob2(tags, "iobes")]) == "iobes"
        assert detect_scheme([from_iob2(tags, "iob1")]) == "iob1"
        assert detect_scheme([from_iob2(tags, "iob2")]) == "iob2"
