"""An export in the model store: `nerservice export --register --promote` stores it checksummed like any
model; resolving serves it on ONNX Runtime; a stored file changed afterwards is refused before serving."""
from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_export_registers_promotes_and_serves_from_the_store(random_models, tmp_path, monkeypatch, capsys) -> None:
    from nerservice.cli.main import main
    from nerservice.errors import IntegrityError
    from nerservice.inference import Extractor
    from nerservice.store import ModelStore

    monkeypatch.setenv("NERSERVICE_STORE_URI", f"sqlite:///{(tmp_path / 'store' / 'mlflow.db').as_posix()}")
    monkeypatch.setenv("NERSERVICE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "store").mkdir()
    assert main(["models", "register", str(random_models["tiny"]), "ner"]) == 0
    assert main(["export", "ner/1", "--format", "onnx", "--out", str(tmp_path / "onnx"),
                 "--register", "ner", "--promote", "production"]) == 0
    out = capsys.readouterr().out
    assert "registered ner/2" in out and "ner@production -> 2" in out
    store = ModelStore.from_env()
    path = store.resolve("ner@production")
    manifest = json.loads((Path(path) / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == "nerservice.onnx.v1" and manifest["source"]["ref"] == "ner/1"
    ex = Extractor.load(path)
    assert ex.runtime == "onnx"
    text = ["Patients with asthma were treated with lithium."]
    want = Extractor.load(random_models["tiny"], runtime="keras").extract(text)
    assert [(e.start, e.end, e.label) for e in ex.extract(text)[0]] == [(e.start, e.end, e.label) for e in want[0]]
    # The cached copy is re-verified on every resolve: a changed graph never reaches ONNX Runtime.
    graph = Path(path) / "context.onnx"
    graph.write_bytes(graph.read_bytes()[:-1] + b"\0")
    with pytest.raises(IntegrityError):
        store.resolve("ner@production")
