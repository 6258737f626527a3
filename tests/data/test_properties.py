"""Mutated corpora: whatever the damage, reading either succeeds or fails with a located CorpusError, and
lenient reading accounts for every sentence block of the input."""
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nerservice.data import Sentence, format_corpus, parse_bytes, spans, to_iob2
from nerservice.errors import CorpusEncodingError, CorpusError, CorpusFormatError, EmptyCorpusError

BOM = b"\xef\xbb\xbf"
SOURCE = "mut.tsv"
TOKENS = st.sampled_from(["the", "APC", "gene", "tumour", "(", ")", "naïve", "β-catenin", "Ca²⁺", "-", "."])
RAW_TAGS = st.sampled_from(["O", "O", "O", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical"])
BAD_TAGS = st.sampled_from([b"B_Disease", b"X-Foo", b"B-", b"o", b"S-Disease", b"E-Disease", b"I-Disease",
                            b"B-Disease", b"", b"O O"])
STRAY = st.one_of(st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\x00", b"\r", b"\t", b" ", b"\n", BOM,
                                   b"\xa0", b"\xed\xa0\x80"]), st.binary(min_size=1, max_size=4))


@st.composite
def sentence(draw):
    n = draw(st.integers(1, 8))
    tokens = draw(st.lists(TOKENS, min_size=n, max_size=n))
    tags = to_iob2(draw(st.lists(RAW_TAGS, min_size=n, max_size=n)), "iob2")[0]
    return Sentence(tuple(tokens), tuple(tags))


@st.composite
def mutated_corpus(draw):
    fmt = draw(st.sampled_from(["tsv", "conll"]))
    text = format_corpus(draw(st.lists(sentence(), min_size=1, max_size=5)), fmt=fmt,
                         scheme=draw(st.sampled_from(["iob1", "iob2", "iobes"])))
    sep = b"\t" if fmt == "tsv" else b" "
    lines = text.encode().split(b"\n")
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        line = lines[i] if lines else b""
        op = draw(st.sampled_from(["cut", "truncate", "bad_tag", "add_column", "drop_column", "stray", "long",
                                   "blank", "docstart", "duplicate"]))
        if op == "cut" and lines:
            del lines[i]
        elif op == "truncate" and lines:  # may cut a multi-byte character in half
            lines[i] = line[: draw(st.integers(0, len(line)))]
        elif op == "bad_tag" and lines:
            lines[i] = line.rsplit(sep, 1)[0] + sep + draw(BAD_TAGS)
        elif op == "add_column" and lines:
            lines[i] = line.replace(sep, sep + b"NN" + sep, 1) if sep in line else line + sep + b"NN"
        elif op == "drop_column" and lines:
            lines[i] = line.rsplit(sep, 1)[0]
        elif op == "stray":
            at = draw(st.integers(0, len(line)))
            lines[i:i + 1] = [line[:at] + draw(STRAY) + line[at:]]
        elif op == "long":
            lines.insert(i, b"x" * draw(st.sampled_from([1000, 200_000])) + sep + b"O")
        elif op == "blank":
            lines.insert(i, draw(st.sampled_from([b"", b" ", b"\t \t"])))
        elif op == "docstart":
            lines.insert(i, b"-DOCSTART-" + draw(st.sampled_from([b"", b" -X- O", b"\tO"])))
        elif op == "duplicate" and lines:
            lines.insert(i, line)
    data = b"\n".join(lines)
    if draw(st.booleans()):
        data = data.replace(b"\n", b"\r\n")
    if draw(st.booleans()):
        data = BOM + data
    return data, draw(st.sampled_from(["auto", fmt]))


def input_lines(data: bytes) -> list[bytes]:
    return (data[3:] if data.startswith(BOM) else data).split(b"\n")


def is_content(raw: bytes) -> bool:
    s = raw.rstrip(b"\r").strip(b" \t")
    return bool(s) and re.split(rb"[ \t]+", s)[0] != b"-DOCSTART-"


def count_blocks(data: bytes) -> int:
    """Independent count of sentence blocks: runs of lines that are neither blank nor -DOCSTART-."""
    blocks, inside = 0, False
    for raw in input_lines(data):
        content = is_content(raw)
        blocks += content and not inside
        inside = content
    return blocks


def check_kept(corpus) -> None:
    r = corpus.report
    assert r.sentences == len(corpus.sentences)
    assert r.tokens == sum(len(s.tokens) for s in corpus.sentences)
    assert sum(r.entities.values()) == sum(len(spans(s.tags)) for s in corpus.sentences)
    for s in corpus.sentences:
        assert s.tokens and to_iob2(s.tags, "iob2") == (list(s.tags), 0)  # valid, already-repaired IOB2


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_corpus())
def test_mutated_corpora_parse_or_fail_with_a_location(case):
    data, fmt = case
    lines = input_lines(data)
    blocks = count_blocks(data)

    strict = None
    try:
        strict = parse_bytes(data, source=SOURCE, fmt=fmt)
    except CorpusFormatError as err:
        assert f"{SOURCE}:{err.line}:" in str(err)
        assert is_content(lines[err.line - 1])  # the named line is a real data line
    except CorpusEncodingError as err:
        line = err.context["line"]
        assert f"{SOURCE}:{line}:" in str(err)
        bad = lines[line - 1]
        try:
            bad.decode("utf-8")
            raise AssertionError(f"line {line} decodes fine: {bad!r}")
        except UnicodeDecodeError:
            pass
    except EmptyCorpusError:
        assert blocks == 0
    if strict is not None:
        check_kept(strict)
        assert strict.report.total_sentences == blocks and not strict.report.skipped

    try:
        lenient = parse_bytes(data, source=SOURCE, fmt=fmt, lenient=True)
    except EmptyCorpusError:
        assert blocks == 0
        return
    except CorpusError as err:  # pragma: no cover - any other error in lenient mode is a bug
        raise AssertionError(f"lenient mode raised {err!r}") from err
    check_kept(lenient)
    r = lenient.report
    assert r.sentences + len(r.skipped) == blocks
    assert len({k.line for k in r.skipped}) == len(r.skipped)
    assert all(k.file == SOURCE and is_content(lines[k.line - 1]) for k in r.skipped)
    if strict is not None:
        assert lenient.sentences == strict.sentences and not r.skipped
