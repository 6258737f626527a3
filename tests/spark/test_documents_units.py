"""Executor-side document work without Spark: PubTator/BRAT files → rows, quarantine and a report whose
annotation counts add up (whole documents go to one split); a prediction partition formatted as Spark writes it."""
from __future__ import annotations

import pytest

from nerservice.distributed.preprocess import account, parse_file
from nerservice.distributed.preprocess_docs import brat_key, parse_brat_group
from nerservice.documents import ConvertOptions

PUBTATOR = (b"1|t|Aspirin causes ulcers.\n1|a|Ulcers heal. Lithium is toxic.\n"
            b"1\t0\t7\tAspirin\tChemical\tD001241\n1\t15\t21\tulcers\tDisease\n"
            b"1\t36\t43\tLithium\tChemical\n1\t39\t43\tXium\tChemical\n\n"  # a text mismatch: realigned or dropped
            b"2|t|Nothing here.\n\n")


def test_a_pubtator_file_is_detected_converted_and_accounted() -> None:
    res = parse_file("train", "file:/data/c.pubtator", PUBTATOR, options=ConvertOptions(label_map={"Disease": "O"}))
    r = res.report
    assert r["format"] == "pubtator" and r["documents"] == 2 and r["annotations"] == 4
    assert r["tagged"] + r["excluded"] + r["dropped"] == 4 and r["excluded"] == 1
    assert [x["kind"] for x in res.rejected] == ["annotation"] and "Xium" in res.rejected[0]["reason"]
    assert len(res.rows) == r["sentences"] == 4 and res.rows[0]["tags"][0] == "B-Chemical"
    acc = account([r], {"train": len(res.rows)}, quarantined=len(res.rejected))
    assert acc["adds_up"] and acc["annotation_cases"] == 1 and acc["annotations"] == 4


def test_a_broken_document_file_is_one_file_row_in_the_quarantine() -> None:
    res = parse_file("dev", "file:/d/bad.pubtator", b"1|t|T\n1\tx\t1\ta\tB\n")
    assert res.rows == [] and res.rejected[0]["kind"] == "file" and "NER210" in res.rejected[0]["reason"]
    assert res.rejected[0]["line"] == 2


def test_split_by_document_keeps_a_document_together() -> None:
    res = parse_file("train", "file:/c.pubtator", PUBTATOR, ratios=(0.5, 0.5), seed=3)
    by_file_line = {}
    for row in res.rows:
        by_file_line.setdefault(row["line"], set()).add(row["split"])
    assert all(len(s) == 1 for s in by_file_line.values())


def test_brat_pairs_group_by_name_and_a_lone_ann_is_a_file_error() -> None:
    assert brat_key("file:/x/a.ann") == ("/x/a", (".ann", "file:/x/a.ann")) and brat_key("file:/x/a.conf") is None
    ok = parse_brat_group("train", "/x/a", {".txt": b"Aspirin.", ".ann": b"T1\tChemical 0 7\tAspirin\n"},
                          options=ConvertOptions())
    assert ok.rows[0]["tags"] == ["B-Chemical", "O"] and ok.report["tagged"] == 1
    lone = parse_brat_group("train", "/x/b", {".ann": b""}, options=ConvertOptions())
    assert lone.rejected[0]["kind"] == "file" and ".ann file without its .txt" in lone.rejected[0]["reason"]


class _Sum:
    """Stands in for a Spark accumulator (what annotate_partition adds to)."""

    def __init__(self, zero):
        self.value = zero

    def add(self, v) -> None:
        if isinstance(self.value, list):
            self.value.extend(v)
        else:
            for k, n in v.items():
                self.value[k] = self.value.get(k, 0) + n


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["pubtator", "bioc-json", "bioc-xml", "jsonl"])
def test_a_partition_formats_to_a_file_that_reads_back_as_the_extractors_predictions(fmt, tiny_model_dir,
                                                                                     tmp_path) -> None:
    from nerservice.distributed.predict_docs import annotate_partition, parse_input
    from nerservice.documents import read_documents
    from nerservice.documents.annotate import annotate
    from nerservice.inference import Extractor

    text = ("1|t|Patients with breast cancer took cisplatin.\n1|a|Asthma after aspirin.\n\n"
            "2|t|Nothing here.\n\n")
    items = parse_input(("file:/in/a.pubtator", text.encode()), fmt="auto")
    items += parse_input(("file:/in/bad.pubtator", b"1|a|no title\n"), fmt="pubtator")
    errors, counts = _Sum([]), _Sum({})
    out = list(annotate_partition(iter(items), model_dir=str(tiny_model_dir), out_format=fmt, output="",
                                  options={}, errors=errors, counts=counts, batch=1))
    part = tmp_path / f"part-00000.{fmt}"
    part.write_text("".join(x + "\n" for x in out), encoding="utf-8")  # what saveAsTextFile writes
    got = read_documents(part, fmt=fmt)
    want = annotate(Extractor.load(tiny_model_dir), read_documents_from_text(text, tmp_path))
    assert [d.id for d in got] == ["1", "2"]
    assert [[(a.start, a.end, a.label) for a in d.annotations] for d in got] == \
           [[(a.start, a.end, a.label) for a in d.annotations] for d in want]
    assert counts.value == {"documents": 2, "entities": sum(len(d.annotations) for d in want)}
    assert [e["file"] for e in errors.value] == ["/in/bad.pubtator"] and errors.value[0]["code"] == "NER210"


def read_documents_from_text(text: str, tmp_path):
    from nerservice.documents import read_documents

    f = tmp_path / "in.pubtator"
    f.write_text(text, encoding="utf-8")
    return read_documents(f)


def test_sentence_and_token_modes_reach_the_executor_conversion() -> None:
    """The executors convert leniently but keep every other option: ``--sentences lines`` leaves the
    PubTator title and abstract whole, ``--tokens whitespace`` keeps the file's ``+/-`` token."""
    data = (b"5|t|Mean +/- SD . Fig . 2 shows it\n5|a|Abstract Background the IL-2 gene\n"
            b"5\t55\t59\tIL-2\tGene\n\n")
    res = parse_file("train", "file:/d/p.pubtator", data, options=ConvertOptions(sentences="lines", tokens="whitespace"))
    assert [r["tokens"] for r in res.rows] == [["Mean", "+/-", "SD", ".", "Fig", ".", "2", "shows", "it"],
                                              ["Abstract", "Background", "the", "IL-2", "gene"]]
    assert res.rows[1]["tags"] == ["O", "O", "O", "B-Gene", "O"] and res.report["tagged"] == 1 and not res.rejected
    default = parse_file("train", "file:/d/p.pubtator", data)  # re-split at ". Fig" and "Fig . 2"; +/- split
    assert len(default.rows) == 4 and default.rows[0]["tokens"][1:4] == ["+", "/", "-"] and not default.rejected
