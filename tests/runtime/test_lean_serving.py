"""An exported model serves through CLI ``predict``, the REST API and the Spark predict body in a process
where TensorFlow, Keras, JAX and ``onnx`` cannot be imported (an import hook refuses them), with the
entities of the Keras path."""
from __future__ import annotations

import json

from helpers import last_json_line, run_python

TEXTS = ["Patients with asthma were treated with lithium. BRCA1 mutations cause breast cancer.",
         "", "Cisplatin-induced nephrotoxicity in 12 patients (٣ cases).", "x " * 300]
FORBID = """
import importlib.abc, sys
FORBIDDEN = ("tensorflow", "keras", "jax", "onnx", "tf2onnx", "h5py", "seqeval", "tqdm", "matplotlib")
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in FORBIDDEN:
            raise ImportError("forbidden on the inference path: " + name)
sys.meta_path.insert(0, Block())
"""


def _keras_entities(model_dir):
    from nerservice.inference import Extractor

    return [[e.to_dict() for e in es] for es in Extractor.load(model_dir, runtime="keras").extract(TEXTS)]


def _same(got, want) -> None:
    assert [[(e["start"], e["end"], e["label"]) for e in es] for es in got] == \
        [[(e["start"], e["end"], e["label"]) for e in es] for es in want]
    for a, b in zip(got, want):
        for x, y in zip(a, b):
            assert abs(x["score"] - y["score"]) <= 1e-4


def test_cli_api_and_spark_predict_run_without_tensorflow(random_models, exports, tmp_path) -> None:
    want = _keras_entities(random_models["tiny"])
    assert any(want)
    texts_file = tmp_path / "texts.txt"
    texts_file.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    export = str(exports["tiny"])
    code = FORBID + f"""
import contextlib, io, json, os
import pandas as pd
from nerservice.cli.main import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    assert main(["predict", {export!r}, {str(texts_file)!r}]) == 0
cli = [json.loads(line)["entities"] for line in buf.getvalue().splitlines()]

from fastapi.testclient import TestClient
from api.main import create_app
from api.settings import load_settings
import time
with TestClient(create_app(load_settings(model={export!r}))) as client:
    deadline = time.time() + 60
    while client.get("/readyz").status_code != 200 and time.time() < deadline:
        time.sleep(0.05)
    r = client.post("/v1/extract", json={{"texts": {TEXTS!r}}})
    assert r.status_code == 200, r.text
    api = [res["entities"] for res in r.json()["results"]]
    info = client.get("/v1/models").json()["model"]

from nerservice.distributed.batch_predict import predict_frames
frames = [pd.DataFrame({{"id": list(range(len({TEXTS!r}))), "text": {TEXTS!r}}})]
out = next(predict_frames(iter(frames), model_dir={export!r}, id_col="id", text_col="text"))
spark = [list(e) for e in out["entities"]]
heavy = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
print(json.dumps({{"cli": cli, "api": api, "spark": spark, "runtime": info["runtime"], "heavy": heavy,
                  "cache": info["word_cache"]}}))
"""
    out = last_json_line(run_python(code).stdout)
    assert out["heavy"] == [] and out["runtime"] == "onnx"
    assert out["cache"][0]["entries"] > 0
    for path in ("cli", "api", "spark"):
        _same(out[path], want)


def test_the_whole_package_imports_without_tensorflow() -> None:
    """Every module of the inference path imports with TensorFlow and Keras unavailable."""
    code = FORBID + """
import importlib, json
for name in ["nerservice.inference", "nerservice.artifacts.formats", "nerservice.artifacts.ensemble_folder",
             "nerservice.artifacts.onnx_folder", "nerservice.runtime.forward", "nerservice.runtime.predictor",
             "nerservice.runtime.select", "nerservice.model.predictor", "nerservice.model.ensemble",
             "nerservice.cli.main", "nerservice.cli.predict_cmd", "nerservice.cli.serve_cmd",
             "nerservice.distributed.batch_predict", "nerservice.store", "api.main", "spark_jobs.predict"]:
    importlib.import_module(name)
print(json.dumps({"ok": True}))
"""
    assert json.loads(run_python(code).stdout.strip().splitlines()[-1]) == {"ok": True}
