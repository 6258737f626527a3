"""Ensembles: the mean of the members' CRF scores decoded exactly (checked against brute force), a
one-member ensemble is the model itself, and an ensemble folder saves, verifies, loads, serves through the
Extractor and the CLI like a single model."""
from __future__ import annotations

import itertools
import json
import shutil

import numpy as np
import pytest

from nerservice.model.decode import path_log_score

pytestmark = pytest.mark.slow  # needs the tiny model (trained once per session)

SENTENCES = [["Patients", "with", "asthma", "were", "treated", "with", "lithium", "."],
             ["Cisplatin", "nephrotoxicity", "."], [], ["zzqx", "ÿ", "😀", "leukemia"]]
TEXTS = ["Patients with breast cancer were treated with cisplatin. No asthma was seen.", "", "Leukemia."]


def test_ensemble_decodes_the_argmax_of_the_summed_member_scores(tiny_model_dir, contrary_member_dir) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.model.ensemble import EnsemblePredictor

    members = [load_model(d).predictor() for d in (tiny_model_dir, contrary_member_dir)]
    ens = EnsemblePredictor(members)
    short = [s for s in SENTENCES if 0 < len(s) <= 4]
    tagged = ens.tag(short)
    k = len(ens.tag_labels)
    for i, sent in enumerate(short):
        per_member = [(m.emissions([sent])[0], m.crf_params()) for m in members]
        best = max(itertools.product(range(k), repeat=len(sent)),
                   key=lambda path: sum(path_log_score(em, np.array(path), crf) for em, crf in per_member))
        assert tagged[i].tags == [ens.tag_labels[t] for t in best]
    # ... and that is neither member's own answer (the test would not notice a member being ignored else).
    paths = [t.tags for t in tagged]
    assert paths != members[0].predict_tags(short) and paths != members[1].predict_tags(short)


def test_a_one_member_ensemble_is_the_model_itself(tiny_model_dir) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.model.ensemble import EnsemblePredictor

    single = load_model(tiny_model_dir).predictor()
    ens = EnsemblePredictor([single])
    a, b = single.tag(SENTENCES), ens.tag(SENTENCES)
    assert [t.tags for t in a] == [t.tags for t in b]
    np.testing.assert_allclose([s for t in a for s in t.scores], [s for t in b for s in t.scores], rtol=1e-9)
    assert b[2].tags == [] and b[2].scores == []


def test_members_must_share_the_tag_set(tiny_model_dir, tmp_path) -> None:
    from nerservice.artifacts.ensemble_folder import save_ensemble
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.model_folder import save_model
    from nerservice.errors import ModelLoadError
    from nerservice.model.tagger import build_tagger
    from nerservice.text.vocab import TagVocabulary, Vocabularies

    base = load_model(tiny_model_dir)
    vocabs = Vocabularies(words=base.vocabs.words, chars=base.vocabs.chars,
                          tags=TagVocabulary([*base.vocabs.tags.tags, "B-Extra", "I-Extra"]))
    assert len(vocabs.tags) == len(base.vocabs.tags) + 2
    model = build_tagger(base.config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags))
    other = save_model(tmp_path / "other-tags", model=model, vocabs=vocabs, config=base.config)
    with pytest.raises(ModelLoadError, match="tag"):
        save_ensemble(tmp_path / "ens", [tiny_model_dir, other])
    assert not (tmp_path / "ens").exists() and not list(tmp_path.glob(".ens.*"))  # nothing half-written


def test_saved_ensemble_loads_verifies_and_extracts_like_its_predictor(tiny_model_dir, contrary_member_dir,
                                                                        tmp_path) -> None:
    from nerservice.artifacts.ensemble_folder import LoadedEnsemble, save_ensemble
    from nerservice.artifacts.formats import load_model, verify_manifest
    from nerservice.errors import IntegrityError
    from nerservice.inference import Extractor
    from nerservice.model.ensemble import EnsemblePredictor

    out = save_ensemble(tmp_path / "ens", [tiny_model_dir, contrary_member_dir], metrics={"test": {"micro": {"f1": 0.5}}})
    assert sorted(p.name for p in out.iterdir()) == ["ensemble.json", "lineage.json", "manifest.json",
                                                     "member-0", "member-1", "metrics.json"]
    verify_manifest(out)  # what the store's cache runs on every download
    loaded = load_model(out)
    assert isinstance(loaded, LoadedEnsemble) and len(loaded.members) == 2
    assert loaded.metrics["test"]["micro"]["f1"] == 0.5
    assert [m["source"] for m in loaded.lineage["members"]] == [str(tiny_model_dir.resolve()),
                                                                str(contrary_member_dir.resolve())]
    direct = EnsemblePredictor([load_model(tiny_model_dir).predictor(), load_model(contrary_member_dir).predictor()])
    assert loaded.predictor().predict_tags(SENTENCES) == direct.predict_tags(SENTENCES)
    ex = Extractor.load(out)
    got = ex.extract(TEXTS)
    assert got[1] == [] and all(TEXTS[i][e.start:e.end] == e.text for i, ents in enumerate(got) for e in ents)

    # Tampering with a member's weights, or swapping a member's manifest, is caught.
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    with open(broken / "member-1" / "model.weights.h5", "r+b") as fh:
        fh.seek(-8, 2)
        fh.write(b"\x00" * 8)
    with pytest.raises(IntegrityError, match="member-1"):
        load_model(broken)
    swapped = tmp_path / "swapped"
    shutil.copytree(out, swapped)
    shutil.rmtree(swapped / "member-1")
    shutil.copytree(tiny_model_dir, swapped / "member-1")  # a valid model, but not the one pinned
    with pytest.raises(IntegrityError, match="member replaced"):
        load_model(swapped)


def test_cli_ensemble_evaluates_and_writes_a_folder_evaluate_reads(tiny_model_dir, contrary_member_dir, demo_corpus,
                                                                   tmp_path, capsys) -> None:
    from nerservice.cli.main import main

    out = tmp_path / "ens"
    assert main(["ensemble", str(tiny_model_dir), str(contrary_member_dir), "--out", str(out),
                 "--test", str(demo_corpus["test"]), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["test"]["micro"] == printed["test"]["micro"]
    assert main(["evaluate", str(out), str(demo_corpus["test"]), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["micro"] == printed["test"]["micro"]
    assert main(["ensemble", str(tiny_model_dir), "--out", str(tmp_path / "one")]) == 2  # needs two
    assert not (tmp_path / "one").exists()
    assert main(["ensemble", str(out), str(tiny_model_dir), "--out", str(tmp_path / "nested")]) == 2
    assert "already an ensemble" in capsys.readouterr().err and not (tmp_path / "nested").exists()


def test_background_xla_members_are_counted_and_agree_with_the_graph(tiny_ensemble_dir) -> None:
    from nerservice.artifacts.formats import load_model

    loaded = load_model(tiny_ensemble_dir)
    graph = loaded.predictor()
    assert graph.background_xla is None
    xla = loaded.predictor(jit_compile="background")
    want = graph.predict_tags(SENTENCES)
    assert xla.predict_tags(SENTENCES) == want  # answered by the graph functions while compiling
    compiled = xla.background_xla.wait()
    assert compiled == sum(m.background_xla.compiled for m in xla.members) >= len(xla.members)
    assert xla.background_xla.pending == 0
    before = xla.background_xla.xla_calls
    assert xla.predict_tags(SENTENCES) == want
    assert xla.background_xla.xla_calls == before + len(xla.members)  # now every member runs its XLA program
