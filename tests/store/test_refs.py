"""Names, aliases and references are validated before anything reaches MLflow or the disk."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nerservice.errors import InvalidModelRefError
from nerservice.store import ModelRef, ModelStore, parse_ref, validate_alias, validate_name


@pytest.mark.parametrize("ref, want", [
    ("ner", ModelRef("ner")),
    ("ner@latest", ModelRef("ner")),
    ("ner@production", ModelRef("ner", alias="production")),
    ("ner/3", ModelRef("ner", version=3)),
    ("bc5cdr.glove-50d_v2", ModelRef("bc5cdr.glove-50d_v2")),
    ("  ner@staging ", ModelRef("ner", alias="staging")),
])
def test_parse_ref(ref, want):
    assert parse_ref(ref) == want


@pytest.mark.parametrize("ref", [
    "", " ", "../ner", "ner/../x", "a/b/c", "..", ".ner", "ner/0", "ner/-1", "ner/3.0", "ner/x", "ner@",
    "@prod", "ner@pro/d", "ner@v3", "ner@1abc", "ner@@x", "n" * 65, "ner name", "ner'x", "ner\x00", "né",
    "ner\\x",
])
def test_bad_refs_are_refused_with_a_coded_error(ref):
    with pytest.raises(InvalidModelRefError) as err:
        parse_ref(ref)
    assert err.value.code == "NER503"
    assert "name@alias" in (err.value.hint or "")


def test_names_and_aliases():
    assert validate_name("a") == "a"
    for bad in ("a..b", "x/y", "-lead", "", None):
        with pytest.raises(InvalidModelRefError):
            validate_name(bad)  # type: ignore[arg-type]
    assert validate_alias("production") == "production"
    for bad in ("latest", "LATEST", "v12", "9x", "has space", ""):
        with pytest.raises(InvalidModelRefError):
            validate_alias(bad)


def test_str_round_trips():
    for ref in ("ner@latest", "ner@production", "ner/12"):
        assert str(parse_ref(ref)) == ref


def test_store_locations_from_env(monkeypatch, tmp_path):
    monkeypatch.delenv("NERSERVICE_STORE_URI", raising=False)
    monkeypatch.delenv("NERSERVICE_CACHE_DIR", raising=False)
    monkeypatch.setenv("NERSERVICE_STORE_DIR", str(tmp_path / "st"))
    s = ModelStore.from_env()
    assert s.tracking_uri == f"sqlite:///{(tmp_path / 'st' / 'mlflow.db').as_posix()}"
    assert s.artifact_root == (tmp_path / "st" / "artifacts").as_uri()
    assert s.cache.root.parent == tmp_path / "st" / "cache"

    monkeypatch.setenv("NERSERVICE_STORE_URI", "http://127.0.0.1:5000")
    monkeypatch.setenv("NERSERVICE_CACHE_DIR", str(tmp_path / "c"))
    s = ModelStore.from_env()
    assert s.tracking_uri == s.registry_uri == "http://127.0.0.1:5000"
    assert s.artifact_root is None  # the server decides
    assert s.cache.root.parent == tmp_path / "c"
    # different stores never share cached bytes
    assert ModelStore.from_env(uri="http://127.0.0.1:5001").cache.root != s.cache.root


def test_importing_the_store_does_not_import_mlflow():
    code = "import sys, nerservice.store, nerservice.cli.models_cmd; print('mlflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False"


def test_reading_an_empty_embedded_store_creates_nothing(tmp_path):
    from nerservice.errors import ModelNotFoundError

    store = ModelStore.embedded(tmp_path / "none")
    assert store.list() == []
    for ref in ("ner", "ner@production", "ner/1"):
        with pytest.raises(ModelNotFoundError, match="is empty"):
            store.resolve(ref)
    assert not (tmp_path / "none").exists()
