"""The CLI on documents: train/evaluate read PubTator/BioC/BRAT (detected), predict writes every document
format with the same ids, passages and offsets, evaluate adds character-offset scores."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import TINY_OVERRIDES
from nerservice.cli.main import main
from nerservice.data import read_corpus
from nerservice.documents import read_documents, write_documents
from nerservice.documents.from_sentences import sentences_to_documents


@pytest.fixture(scope="module")
def demo_docs(demo_corpus, tmp_path_factory) -> dict[str, Path]:
    """The demo corpus as PubTator documents of 8 sentences (title + abstract)."""
    out = tmp_path_factory.mktemp("demo-pubtator")
    paths = {}
    for split in ("train", "dev", "test"):
        docs = sentences_to_documents(read_corpus(demo_corpus[split]).sentences, per_document=8, id_prefix=split)
        paths[split] = write_documents(docs, out / f"{split}.pubtator", "pubtator")[0]
    return paths


def test_a_malformed_document_file_is_exit_code_2_naming_file_and_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.pubtator"
    bad.write_text("1|t|Aspirin helps.\n1\t0\tseven\tAspirin\tChemical\n", encoding="utf-8")
    assert main(["train", "--train", str(bad), "--dev", str(bad), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "NER210" in err and f"{bad}:2" in err and "bad annotation offsets" in err


def test_a_strict_annotation_error_names_document_offsets_and_text(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.pubtator"
    bad.write_text("7|t|Aspirin helps.\n7\t0\t6\tAspiri\tChemical\n", encoding="utf-8")
    assert main(["train", "--train", str(bad), "--dev", str(bad), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "NER211" in err and "document '7'" in err and "[0, 6) 'Aspiri'" in err and "token-boundary" in err


def test_label_map_is_refused_for_token_files(demo_corpus, tmp_path: Path, capsys) -> None:
    assert main(["train", "--train", str(demo_corpus["test"]), "--dev", str(demo_corpus["test"]), "--out",
                 str(tmp_path / "o"), "--label-map", "A=B", "--quiet"]) == 2
    assert "--label-map applies to document formats" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["pubtator", "bioc-xml", "bioc-json", "brat", "jsonl"])
def test_predict_writes_documents_back_with_ids_passages_and_document_offsets(fmt: str, tiny_model_dir: Path,
                                                                              demo_docs, tmp_path: Path) -> None:
    out = tmp_path / ("out" if fmt == "brat" else f"out.{fmt}")
    assert main(["predict", str(tiny_model_dir), str(demo_docs["test"]), "--format", fmt, "--out", str(out)]) == 0
    gold = read_documents(demo_docs["test"])
    got = read_documents(out, fmt=fmt)
    assert [d.id for d in got] == [d.id for d in gold]
    for g, d in zip(gold, got):
        if fmt == "brat":  # one passage: the title and abstract laid at their offsets
            assert d.passages[0].text == g.passages[0].text + "\n" + g.passages[1].text
        else:
            assert [(p.offset, p.text) for p in d.passages] == [(p.offset, p.text) for p in g.passages]
        for a in d.annotations:
            assert d.text_at(a.start, a.end) == a.text and a.score is not None and 0.0 <= a.score <= 1.0
    found = {(d.id, a.start, a.end, a.label) for d in got for a in d.annotations}
    wanted = {(d.id, a.start, a.end, a.label) for d in gold for a in d.annotations}
    assert len(found & wanted) >= 0.9 * len(wanted)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json", "brat"])
def test_documents_in_a_format_come_back_in_it_with_predictions(fmt: str, tiny_model_dir: Path, demo_docs,
                                                                tmp_path: Path) -> None:
    """BioC / BRAT in (detected), the same format out: ids, passages (kinds, offsets, text) unchanged."""
    src = tmp_path / ("in" if fmt == "brat" else f"in.{fmt}")
    write_documents(read_documents(demo_docs["test"]), src, fmt)
    out = tmp_path / ("out" if fmt == "brat" else f"out.{fmt}")
    assert main(["predict", str(tiny_model_dir), str(src), "--format", fmt, "--out", str(out)]) == 0
    given, got = read_documents(src, fmt=fmt), read_documents(out, fmt=fmt)
    assert [(d.id, d.passages) for d in got] == [(d.id, d.passages) for d in given]
    g = {(d.id, a.start, a.end, a.label) for d in given for a in d.annotations}
    p = {(d.id, a.start, a.end, a.label) for d in got for a in d.annotations}
    assert len(g & p) >= 0.9 * len(g) and all(a.score is not None for d in got for a in d.annotations)


@pytest.mark.slow
def test_evaluate_on_documents_adds_character_offset_scores(tiny_model_dir: Path, demo_docs, capsys) -> None:
    assert main(["evaluate", str(tiny_model_dir), str(demo_docs["test"]), "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)  # --json: the document alone; the conversion summary is on stderr
    assert f"{demo_docs['test']} (pubtator): " in captured.err
    doc = out["document_level"]
    assert doc["documents"] == 10 and set(doc["per_type"]) == {"Chemical", "Disease"}
    assert doc["micro"]["support"] == sum(v["support"] for v in doc["per_type"].values())
    assert doc["micro"]["f1"] >= 0.9 and out["micro"]["f1"] >= 0.9


@pytest.mark.slow
def test_pubtator_train_predict_pubtator_round_trip(demo_docs, tmp_path: Path, capsys) -> None:
    sets = [x for k, v in TINY_OVERRIDES.items() for x in ("--set", f"{k}={v}")]
    assert main(["train", "--train", str(demo_docs["train"]), "--dev", str(demo_docs["dev"]), "--out",
                 str(tmp_path / "run"), "--quiet", *sets]) == 0
    lineage = json.loads(next((tmp_path / "run").rglob("lineage.json")).read_text(encoding="utf-8"))
    assert lineage["corpus_sources"]["reading"] == {"format": "auto", "scheme": "auto", "lenient": False,
                                                    "label_map": [], "sentences": "split", "tokens": "words"}
    out = tmp_path / "pred.pubtator"
    assert main(["predict", str(tmp_path / "run"), str(demo_docs["test"]), "--format", "pubtator", "--out",
                 str(out)]) == 0
    lines_in = demo_docs["test"].read_text(encoding="utf-8").splitlines()
    lines_out = out.read_text(encoding="utf-8").splitlines()
    assert [x for x in lines_out if "|t|" in x or "|a|" in x] == [x for x in lines_in if "|t|" in x or "|a|" in x]
    gold, got = read_documents(demo_docs["test"]), read_documents(out)
    g = {(d.id, a.start, a.end, a.label) for d in gold for a in d.annotations}
    p = {(d.id, a.start, a.end, a.label) for d in got for a in d.annotations}
    assert len(g & p) >= 0.9 * len(g) and len(g & p) >= 0.9 * len(p)


def test_lenient_read_writes_every_case_to_the_report(tmp_path: Path, capsys) -> None:
    import argparse

    from nerservice.cli.common import read

    f = tmp_path / "c.pubtator"
    f.write_text("7|t|Aspirin and APC2 helps.\n7\t0\t7\tAspirin\tDrug\n7\t12\t15\tAPC\tGene\n"
                 "7\t0\t3\tAsp\tDrug\n\n", encoding="utf-8")
    report = tmp_path / "report.jsonl"
    args = argparse.Namespace(fmt="auto", scheme="auto", lenient=True, label_map=["Drug=Chemical"],
                              sentences="split", tokens="words", report=str(report))
    corpus = read([str(f)], args)
    assert corpus.sentences[0].tokens[:5] == ("Aspirin", "and", "APC", "2", "helps")
    assert corpus.sentences[0].tags[:4] == ("B-Chemical", "O", "B-Gene", "O")
    (r,) = [json.loads(line) for line in report.read_text().splitlines()]
    assert r["adds_up"] and r["annotations"] == 3 and r["dropped"] == 1
    assert sorted((c["kind"], c["action"]) for c in r["cases"]) == [("overlap", "dropped"),
                                                                    ("token-boundary", "tokens-split")]
    assert "3 annotations = 2 tagged" in capsys.readouterr().out


def test_sentences_and_tokens_options_reach_the_document_reader(tmp_path: Path, capsys) -> None:
    import argparse

    from nerservice.cli.common import add_corpus_options, read

    f = tmp_path / "c.pubtator"
    f.write_text("1|t|Dose 2 . 5 mg +/- 1 . Then more\n1\t0\t4\tDose\tChemical\n\n", encoding="utf-8")
    p = argparse.ArgumentParser()
    add_corpus_options(p)
    got = read([str(f)], p.parse_args(["--sentences", "lines", "--tokens", "whitespace"]))
    assert [s.tokens for s in got.sentences] == [("Dose", "2", ".", "5", "mg", "+/-", "1", ".", "Then", "more")]
    assert len(read([str(f)], p.parse_args([])).sentences) == 3  # re-split: "2 . 5" and ". Then"; +/- split
    assert "1 document" in capsys.readouterr().out
