"""Format detection and reading from paths: content sniffing, BRAT folders, unique ids, bad UTF-8."""
from __future__ import annotations

from pathlib import Path

import pytest

from nerservice.documents import detect_path, read_documents, sniff
from nerservice.errors import CorpusEncodingError, CorpusError, DocumentFormatError


@pytest.mark.parametrize("head, fmt", [
    (b"123|t|A title\n", "pubtator"),
    (b"\xef\xbb\xbf  <?xml version='1.0'?><collection>", "bioc-xml"),
    (b'{"source": "x", "documents": []}', "bioc-json"),
    (b'{\n "source": "x",\n "documents": []}', "bioc-json"),
    (b'{"id": "1", "passages": []}\n', "jsonl"),
    (b"Aspirin\tB-Chemical\n", None),
    (b"-DOCSTART- -X- O O\n", None),
])
def test_sniff(head: bytes, fmt: str | None) -> None:
    assert sniff(head) == fmt


def test_detect_path_and_brat_folders(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "a.ann").write_text("")
    (tmp_path / "c.tsv").write_text("x\tO\n")
    assert detect_path(tmp_path) == "brat" and detect_path(tmp_path / "a.txt") == "brat"
    assert detect_path(tmp_path / "c.tsv") is None


def test_bad_utf8_in_pubtator_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "x.pubtator"
    f.write_bytes(b"1|t|ok\n1|a|caf\xe9\n")
    with pytest.raises(CorpusEncodingError) as exc:
        read_documents(f)
    assert f"{f}:2" in str(exc.value) and exc.value.code == "NER202"


def test_repeated_document_ids_are_refused(tmp_path: Path) -> None:
    f = tmp_path / "x.pubtator"
    f.write_text("1|t|a\n\n1|t|b\n", encoding="utf-8")
    with pytest.raises(DocumentFormatError, match="document id repeats"):
        read_documents(f)


def test_undetectable_input_asks_for_a_format(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("just text\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="--format"):
        read_documents(f)


def test_the_cli_lists_the_same_document_formats() -> None:
    from nerservice.cli.common import DOCUMENT_FORMATS as CLI
    from nerservice.documents import DOCUMENT_FORMATS

    assert CLI == DOCUMENT_FORMATS
