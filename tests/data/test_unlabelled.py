"""Unlabelled text for distillation: token-per-line and IOB files (tags ignored), bounds, coded errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from nerservice.data.unlabelled import read_unlabelled
from nerservice.errors import CorpusEncodingError, CorpusError, CorpusFormatError, CorpusTooLargeError, EmptyCorpusError


def _read(*paths: Path, max_tokens: int = 1000, max_sentence_tokens: int = 50):
    return read_unlabelled(list(paths), max_tokens=max_tokens, max_sentence_tokens=max_sentence_tokens)


def test_token_lines_iob_and_conll_files_read_alike(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_bytes("\ufeffAspirin\ncauses\n\n\n  \nasthma\r\n.\n".encode())
    iob = tmp_path / "c.tsv"
    iob.write_text("-DOCSTART-\tO\n\nBRCA1 gene\tB-Gene\nmutations\tO\n", encoding="utf-8")
    conll = tmp_path / "c.conll"
    conll.write_text("-DOCSTART- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n", encoding="utf-8")
    text = _read(plain, iob, conll)
    assert text.sentences == [("Aspirin", "causes"), ("asthma", "."), ("BRCA1 gene", "mutations"), ("EU", "rejects")]
    assert text.where == [(str(plain), 1), (str(plain), 6), (str(iob), 3), (str(conll), 3)]
    assert text.files[str(plain)] == {"sentences": 2, "tokens": 4} and text.tokens == 8


def test_bounds_name_file_line_and_setting(tmp_path: Path) -> None:
    f = tmp_path / "long.txt"
    f.write_text("\n".join(["w"] * 60) + "\n", encoding="utf-8")
    with pytest.raises(CorpusTooLargeError, match="long.txt:1: sentence longer than 50") as e:
        read_unlabelled([f], max_tokens=1000, max_sentence_tokens=50, max_sentence_setting="distil.max_sentence_tokens")
    assert e.value.code == "NER204" and "distil.max_sentence_tokens" in str(e.value)
    with pytest.raises(CorpusTooLargeError, match="long.txt:31: unlabelled text over 30 tokens"):
        _read(f, max_tokens=30, max_sentence_tokens=100)


def test_bad_input_is_a_coded_error(tmp_path: Path) -> None:
    empty_token = tmp_path / "tab.tsv"
    empty_token.write_text("ok\tO\n\tB-X\n", encoding="utf-8")
    with pytest.raises(CorpusFormatError) as e:
        _read(empty_token)
    assert (e.value.file, e.value.line) == (str(empty_token), 2)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"ok\ncaf\xe9\n")
    with pytest.raises(CorpusEncodingError, match="latin.txt:2"):
        _read(latin)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n-DOCSTART-\n", encoding="utf-8")
    with pytest.raises(EmptyCorpusError):
        _read(blank)
    with pytest.raises(CorpusError, match="not found"):
        _read(tmp_path / "missing.txt")
    with pytest.raises(CorpusError, match="directory"):
        _read(tmp_path)
