"""One head of a multi-corpus model served alone (``Extractor.load(..., head=NAME)``, ``nerservice predict
--head``): that corpus's types, exactly as the multi-corpus model decodes that head, on Keras and on ONNX
Runtime; a head the model lacks, or a single-corpus model, is a coded error."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the session's multi-corpus model is trained for real

TEXTS = ["Patients with breast cancer were treated with cisplatin .", "",
         "No cases of asthma were reported after doxorubicin and tamoxifen . Cisplatin nephrotoxicity was rare ."]


def head_spans(model: Path, name: str, texts: list[str]) -> list[list[tuple[int, int, str]]]:
    """What the multi-corpus model's own decode of head ``name`` finds (``decode_head``), as character spans."""
    from nerservice.artifacts.formats import load_model
    from nerservice.data.schemes import spans
    from nerservice.inference import Extractor
    from nerservice.model.heads import decode_head

    loaded = load_model(model)
    pred = loaded.predictor()
    full = Extractor(loaded)
    out = []
    for sents in full.tokenize(texts):
        tagged = decode_head(pred.emissions([[t.text for t in s] for s in sents]), pred.crf_params(),
                             loaded.vocabs.tags, name, with_scores=False, batch_size=16, bucket_size=8)
        out.append([(s[a].start, s[b - 1].end, label) for s, t in zip(sents, tagged) for a, b, label in spans(t.tags)])
    return out


@pytest.mark.parametrize("runtime", ["keras", "auto"])
def test_a_head_extracts_what_the_models_decode_of_that_head_finds(tiny_multi_run: Path, runtime: str) -> None:
    from nerservice.inference import Extractor

    model = tiny_multi_run / "model-best"
    full = Extractor.load(model, runtime="keras")
    assert sorted(full.labels) == ["Disease", "Drug"]
    for name, label in (("chem", "Drug"), ("dis", "Disease")):
        one = Extractor.load(model, runtime=runtime, head=name)
        assert one.labels == [label]
        got = [[(e.start, e.end, e.label) for e in ents] for ents in one.extract(TEXTS)]
        assert got == head_spans(model, name, TEXTS)
        assert any(got), f"the tiny model finds no {label} in the texts: the comparison would prove nothing"
        assert {lab for ents in got for _, _, lab in ents} == {label}
        # the served model is still the folder's: its lineage and metrics pass through
        assert one.loaded.lineage == full.loaded.lineage and one.loaded.metrics == full.loaded.metrics


def test_a_head_the_model_lacks_or_a_single_corpus_model_is_a_coded_error(tiny_multi_run: Path,
                                                                         tiny_model_dir: Path) -> None:
    from nerservice.errors import ConfigError
    from nerservice.inference import Extractor

    with pytest.raises(ConfigError, match=r"its heads are \['dis', 'chem'\]") as err:
        Extractor.load(tiny_multi_run / "model-best", head="genes")
    assert err.value.code == "NER100"
    with pytest.raises(ConfigError, match="single-corpus model has no heads"):
        Extractor.load(tiny_model_dir, head="dis")


def test_predict_head_on_the_command_line(tiny_multi_run: Path, tmp_path: Path, capsys) -> None:
    from nerservice.cli.main import main

    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    assert main(["predict", str(tiny_multi_run / "model-best"), str(texts), "--head", "chem"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == len(TEXTS)
    labels = {e["label"] for line in lines for e in line["entities"]}
    assert labels == {"Drug"}
    assert main(["predict", str(tiny_multi_run / "model-best"), str(texts), "--head", "genes"]) == 2
    assert "its heads are ['dis', 'chem']" in capsys.readouterr().err
