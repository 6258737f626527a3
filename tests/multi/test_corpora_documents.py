"""A multi-corpus config may name document files (PubTator here, detected): they are read through
nerservice.documents and the corpus's label map applies to the converted labels."""
from __future__ import annotations

import json
from pathlib import Path

from nerservice.multi.config import CorporaConfig
from nerservice.multi.corpora import read_corpora


def test_a_pubtator_corpus_in_a_corpora_config(tmp_path: Path) -> None:
    doc = ("1|t|Aspirin causes colorectal cancer.\n1\t0\t7\tAspirin\tChemical\tD001241\n"
           "1\t15\t32\tcolorectal cancer\tSpecificDisease\tD015179\n\n")
    for split in ("train", "dev"):
        (tmp_path / f"{split}.pubtator").write_text(doc, encoding="utf-8")
    (tmp_path / "corpora.json").write_text(json.dumps({"version": "nerservice.corpora.v1", "corpora": [
        {"name": "cdr", "train": "train.pubtator", "dev": "dev.pubtator",
         "label_map": {"SpecificDisease": "Disease"}}]}), encoding="utf-8")
    (c,) = read_corpora(CorporaConfig.load(tmp_path / "corpora.json"))
    assert c.train[0].tokens == ("Aspirin", "causes", "colorectal", "cancer", ".")
    assert c.train[0].tags == ("B-Chemical", "O", "B-Disease", "I-Disease", "O") and c.labels == ["Chemical", "Disease"]


def test_a_document_corpus_takes_its_sentence_and_token_modes_from_the_config(tmp_path: Path) -> None:
    doc = "1|t|Mean +/- SD . Fig . 2 of IL-2\n1\t25\t29\tIL-2\tGene\n\n"
    for split in ("train", "dev"):
        (tmp_path / f"{split}.pubtator").write_text(doc, encoding="utf-8")
    spec = {"name": "g", "train": "train.pubtator", "dev": "dev.pubtator"}
    (tmp_path / "corpora.json").write_text(json.dumps({"version": "nerservice.corpora.v1", "corpora": [
        {**spec, "sentences": "lines", "tokens": "whitespace"}]}), encoding="utf-8")
    (c,) = read_corpora(CorporaConfig.load(tmp_path / "corpora.json"))
    assert [s.tokens for s in c.train] == [("Mean", "+/-", "SD", ".", "Fig", ".", "2", "of", "IL-2")]
    assert c.train[0].tags[-1] == "B-Gene"
    (tmp_path / "corpora.json").write_text(json.dumps({"version": "nerservice.corpora.v1", "corpora": [spec]}),
                                           encoding="utf-8")
    (d,) = read_corpora(CorporaConfig.load(tmp_path / "corpora.json"))
    assert len(d.train) == 3 and d.train[0].tokens[1:4] == ("+", "/", "-")  # the defaults: re-split, tokenizer
