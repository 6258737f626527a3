"""Bad multi-corpus configs fail with a coded error before anything trains, and nothing is written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import write_two_corpora
from nerservice.errors import ConfigError, DuplicateCorpusError, EmptyLabelSetError, LabelMapError, MissingSplitError
from nerservice.multi.config import CorporaConfig
from nerservice.multi.corpora import read_corpora


@pytest.fixture()
def corpora_file(tmp_path: Path) -> Path:
    return write_two_corpora(tmp_path / "c", sizes=(30, 10, 10))


def edit(path: Path, change) -> Path:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


def test_good_config_reads_relabelled_corpora(corpora_file: Path) -> None:
    config = CorporaConfig.load(corpora_file)
    assert config.names == ["dis", "chem"] and config.batching == "per-corpus"
    assert Path(config.corpora[0].train).is_absolute()  # relative to the config file
    corpora = read_corpora(config)
    assert [c.labels for c in corpora] == [["Disease"], ["Drug"]]  # chem's Chemical renamed to Drug


def test_missing_split_file(corpora_file: Path) -> None:
    edit(corpora_file, lambda d: d["corpora"][1].update(dev="chem/nope.tsv"))
    with pytest.raises(MissingSplitError, match="chem.*dev split") as e:
        CorporaConfig.load(corpora_file)
    assert e.value.code == "NER111" and e.value.context["split"] == "dev"


def test_missing_required_split_key(corpora_file: Path) -> None:
    edit(corpora_file, lambda d: d["corpora"][0].pop("dev"))
    with pytest.raises(ConfigError, match=r"corpora\.0\.dev"):
        CorporaConfig.load(corpora_file)


def test_two_corpora_with_one_name(corpora_file: Path) -> None:
    edit(corpora_file, lambda d: d["corpora"][1].update(name="DIS"))
    with pytest.raises(DuplicateCorpusError) as e:
        CorporaConfig.load(corpora_file)
    assert e.value.code == "NER112"


def test_corpus_without_entities(corpora_file: Path, tmp_path: Path) -> None:
    empty = tmp_path / "c" / "empty.tsv"
    empty.write_text("a\tO\nb\tO\n\n", encoding="utf-8")
    edit(corpora_file, lambda d: d["corpora"][0].update(train=str(empty)))
    with pytest.raises(EmptyLabelSetError, match="no entity labels") as e:
        read_corpora(CorporaConfig.load(corpora_file))
    assert e.value.code == "NER113"


@pytest.mark.parametrize("label_map, where", [
    ({"Chemical": "X", "Other": "X"}, "load"),  # two targets alike in one map
    ({"Chemical": "A|B"}, "load"),  # not a label
    ({"Nope": "X"}, "read"),  # the corpus has no such label
])
def test_colliding_or_wrong_label_maps(corpora_file: Path, label_map: dict, where: str) -> None:
    edit(corpora_file, lambda d: d["corpora"][1].update(label_map=label_map))
    with pytest.raises(LabelMapError) as e:
        read_corpora(CorporaConfig.load(corpora_file))
    assert e.value.code == "NER114"


def test_label_map_onto_a_label_the_corpus_keeps(corpora_file: Path, tmp_path: Path) -> None:
    both = tmp_path / "c" / "both.tsv"
    both.write_text("aspirin\tB-Chemical\ncauses\tO\nasthma\tB-Disease\n\n", encoding="utf-8")
    edit(corpora_file, lambda d: d["corpora"][1].update(train=str(both), label_map={"Chemical": "Disease"}))
    with pytest.raises(LabelMapError, match="both 'Disease'"):
        read_corpora(CorporaConfig.load(corpora_file))


def test_across_corpora_one_name_merges(corpora_file: Path) -> None:
    edit(corpora_file, lambda d: d["corpora"][1].update(label_map={"Chemical": "Disease"}))
    corpora = read_corpora(CorporaConfig.load(corpora_file))
    assert [c.labels for c in corpora] == [["Disease"], ["Disease"]]


def test_bad_input_from_the_cli_writes_nothing(corpora_file: Path, tmp_path: Path) -> None:
    from nerservice.cli.main import main

    edit(corpora_file, lambda d: d["corpora"][1].update(name="dis"))
    out = tmp_path / "run"
    assert main(["train", "--corpora", str(corpora_file), "--out", str(out), "--quiet"]) == 2
    assert not out.exists()


def test_corpus_weights_are_bounded_and_need_per_corpus_batching(corpora_file: Path) -> None:
    edit(corpora_file, lambda d: d["corpora"][1].update(weight=2.5))
    assert CorporaConfig.load(corpora_file).weights == [1.0, 2.5]
    for bad in (0, -1, 9):
        edit(corpora_file, lambda d: d["corpora"][1].update(weight=bad))
        with pytest.raises(ConfigError, match=r"corpora\.1\.weight"):
            CorporaConfig.load(corpora_file)
    edit(corpora_file, lambda d: (d["corpora"][1].update(weight=2), d.update(batching="mixed")))
    with pytest.raises(ConfigError, match="per-corpus batching"):
        CorporaConfig.load(corpora_file)
