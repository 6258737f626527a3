"""Abbreviation definitions (``bench/abbreviations.py``, measured and not adopted: BENCHMARKS.md, session 21):
which "LONG ( SHORT )" pairs are found, and what the post-process adds or removes in a document."""
from __future__ import annotations

import importlib.util
import sys

from helpers import REPO

# loaded by path: bench is no package
_spec = importlib.util.spec_from_file_location("bench_abbreviations", REPO / "bench" / "abbreviations.py")
assert _spec is not None and _spec.loader is not None
abbreviations = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = abbreviations
_spec.loader.exec_module(abbreviations)


def test_definitions_follow_schwartz_and_hearst() -> None:
    def pairs(text: str) -> list[tuple[str, str]]:
        t = text.split()
        return [(" ".join(t[a:b]), " ".join(t[c:d])) for a, b, c, d in abbreviations.definitions(t)]

    assert pairs("patients with spinocerebellar ataxia type 1 ( SCA1 ) were") == [
        ("spinocerebellar ataxia type 1", "SCA1")]
    assert pairs("the adenomatous polyposis coli ( APC ) gene") == [("adenomatous polyposis coli", "APC")]
    assert pairs("myotonic dystrophy ( DM ) is") == []  # D-M cannot be matched right to left in order
    assert pairs("a dose ( 10 mg ) of") == []  # no capital letter: not an abbreviation
    assert pairs("unclosed ( SCA1 and more words") == []


def test_a_defined_short_form_takes_its_long_forms_label_or_loses_one() -> None:
    tokens = [["spinocerebellar", "ataxia", "type", "1", "(", "SCA1", ")", "patients"], ["SCA1", "is", "rare"],
              ["the", "adenomatous", "polyposis", "coli", "(", "APC", ")", "gene"], ["APC", "mutations"]]
    tags = [["B-Disease", "I-Disease", "I-Disease", "I-Disease", "O", "O", "O", "O"], ["O", "O", "O"],
            ["O"] * 8, ["B-Disease", "O"]]
    out, added, removed = abbreviations.resolve(tokens, tags, remove=False)
    assert out[0][5] == "B-Disease" and out[1][0] == "B-Disease" and added == 2 and removed == 0
    assert out[3] == ["B-Disease", "O"]  # "add" never removes
    out, added, removed = abbreviations.resolve(tokens, tags, remove=True)
    assert out[3] == ["O", "O"] and removed == 1  # APC's long form is no entity here
