"""Synthetic transfer text for distillation (``nerservice/distil/augment.py``) and how ``plan_distillation``
uses it: mentions swapped within their type, words outside mentions swapped, nothing else touched; each variant
carries the tags of its construction, and a cross-fitted fold's variants take that fold's teacher."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import save_random_model
from nerservice.data import Sentence
from nerservice.data.schemes import spans
from nerservice.distil.augment import augment

SENTENCES = [
    Sentence(("Cisplatin", "caused", "renal", "failure", "in", "rats", "."),
             ("B-Chemical", "O", "B-Disease", "I-Disease", "O", "O", "O")),
    Sentence(("Asthma", "was", "treated", "with", "oral", "prednisone", "."),
             ("B-Disease", "O", "O", "O", "O", "B-Chemical", "O")),
    Sentence(("Lithium", "induced", "tremor", "."), ("B-Chemical", "O", "B-Disease", "O")),
]
MENTIONS = {"Chemical": {("Cisplatin",), ("prednisone",), ("Lithium",)},
            "Disease": {("renal", "failure"), ("Asthma",), ("tremor",)}}
WORDS = {t for s in SENTENCES for t, tag in zip(s.tokens, s.tags) if tag == "O"}


def pieces(source: Sentence, variant: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """The variant cut along its source's layout: ("O", (word,)) per outside word, (type, mention) per mention
    (a swapped mention may be longer or shorter than the one it replaced)."""
    out, at, shift = [], 0, 0
    for a, b, label in [*spans(source.tags), (len(source.tokens), len(source.tokens), "")]:
        for j in range(at, a):
            out.append(("O", (variant[j + shift],)))
        if label:
            n = next(len(m) for m in sorted(MENTIONS[label], key=len, reverse=True)
                     if tuple(variant[a + shift:a + shift + len(m)]) == m)
            out.append((label, tuple(variant[a + shift:a + shift + n])))
            shift += n - (b - a)
        at = b
    assert a + shift == len(variant)
    return out


def test_mentions_are_swapped_within_their_type_and_words_stay() -> None:
    out = augment(SENTENCES, copies=4, mention_swap=1.0, word_swap=0.0, seed=3)
    assert out and all(0 <= v.source < 3 for v in out) and [v.source for v in out] == sorted(v.source for v in out)
    for variant, tags, i in out:
        assert len(tags) == len(variant)
        assert variant != SENTENCES[i].tokens
        for kind, toks in pieces(SENTENCES[i], variant):
            if kind == "O":
                continue
            assert toks in MENTIONS[kind], (kind, toks)  # never a mention of the other type
        # the tags of the construction: each mention, wherever it came from, is one span of its type
        assert [(label, variant[a:b]) for a, b, label in spans(tags)] == [
            (k, t) for k, t in pieces(SENTENCES[i], variant) if k != "O"]
        src_words = [t for t, tag in zip(SENTENCES[i].tokens, SENTENCES[i].tags) if tag == "O"]
        assert [t[0] for k, t in pieces(SENTENCES[i], variant) if k == "O"] == src_words


def test_words_are_swapped_and_mentions_stay() -> None:
    out = augment(SENTENCES, copies=3, mention_swap=0.0, word_swap=1.0, seed=5)
    assert len(out) >= 7  # a variant equal to its source is dropped; with every word redrawn few are
    for variant, tags, i in out:
        src = SENTENCES[i]
        assert len(variant) == len(src.tokens) and tags == src.tags
        for t, (orig, tag) in zip(variant, zip(src.tokens, src.tags)):
            assert t == orig if tag != "O" else t in WORDS


def test_deterministic_for_a_seed_and_nothing_when_nothing_swaps() -> None:
    a = augment(SENTENCES, copies=2, mention_swap=0.5, word_swap=0.3, seed=11)
    assert a == augment(SENTENCES, copies=2, mention_swap=0.5, word_swap=0.3, seed=11)
    assert a != augment(SENTENCES, copies=2, mention_swap=0.5, word_swap=0.3, seed=12)
    assert augment(SENTENCES, copies=3, mention_swap=0.0, word_swap=0.0, seed=1) == []


def test_a_multi_corpus_corpus_swaps_only_its_own_mentions() -> None:
    # namespaced tags: two corpora with the same type name keep separate pools (bc5cdr's holds only its own
    # mention, so its variants equal their source and are dropped; ncbi's never receive "tremor")
    ncbi = [Sentence((d, "flares"), ("ncbi|B-Disease", "ncbi|O")) for d in ("gout", "asthma")]
    bc5 = Sentence(("tremor", "rose"), ("bc5cdr|B-Disease", "bc5cdr|O"))
    out = augment([*ncbi, bc5], copies=6, mention_swap=1.0, word_swap=0.0, seed=2)
    assert out and all(i < 2 and v[0] in {"gout", "asthma"} and v[0] != ncbi[i].tokens[0] for v, _, i in out)
    assert all(tags == ("ncbi|B-Disease", "ncbi|O") for _, tags, _ in out)
    # a single corpus's label may hold the separator: its tags are still bare
    odd = [Sentence(("p53", "binds"), ("B-Gene|Protein", "O")), Sentence(("Tp53", "binds"), ("B-Gene|Protein", "O"))]
    assert {v for v, _, _ in augment(odd, copies=4, mention_swap=1.0, word_swap=0.0, seed=1)} == {
        ("Tp53", "binds"), ("p53", "binds")}


def test_plan_distillation_gives_the_variants_teacher_targets(tmp_path: Path) -> None:
    """The variants follow the labelled sentences, get the teacher's targets and their own confidence figures
    and lineage entry; they point at their source's file and line; an augment over the token bound is a coded
    error before the teacher runs."""
    from nerservice.artifacts.formats import load_model
    from nerservice.demo_corpus import generate
    from nerservice.distil.config import DistilConfig
    from nerservice.distil.run import plan_distillation, teacher_from
    from nerservice.distil.student import StudentTagger
    from nerservice.errors import ConfigError

    folder = save_random_model(tmp_path / "teacher", {})
    loaded = load_model(folder)
    teacher = teacher_from(loaded, ref=str(folder), path=folder, name="t", version="1")
    labelled = [Sentence(s.tokens, s.tags, file="train.tsv", line=10 * k + 1) for k, s in enumerate(generate(30, seed=1))]
    dconfig = DistilConfig().with_overrides({"augment": 2})
    plan = plan_distillation(teacher, loaded.predictor(), loaded.config, dconfig, labelled=labelled, unlabelled=None,
                             loss="x", progress=False, tagger_cls=StudentTagger)
    n = len(plan.unlabelled)
    assert 30 < n <= 60 and len(plan.targets) == 30 + n and plan.labelled == 30
    rec = plan.record
    assert rec["augmented"]["sentences"] == n and rec["unlabelled"] is None
    assert rec["augmented"]["tokens"] == sum(len(s.tokens) for s in plan.unlabelled)
    assert set(rec["target_confidence"]) == {"soft_below", "labelled", "augmented"}
    assert rec["target_confidence"]["augmented"]["tokens"] == rec["augmented"]["tokens"]
    assert rec["settings"]["augment"] == 2
    sources = {(s.file, s.line): s for s in labelled}
    assert all((s.file, s.line) in sources for s in plan.unlabelled)
    variants = augment(labelled, copies=2, mention_swap=dconfig.augment_mention_swap,
                       word_swap=dconfig.augment_word_swap, seed=loaded.config.training.seed)
    assert [(s.tokens, s.tags) for s in plan.unlabelled] == [(v.tokens, v.tags) for v in variants]
    with pytest.raises(ConfigError, match="distil.augment=8 would make"):
        plan_distillation(teacher, loaded.predictor(), loaded.config,
                          DistilConfig().with_overrides({"augment": 8, "max_unlabelled_tokens": 1000}),
                          labelled=labelled, unlabelled=None, loss="x", progress=False, tagger_cls=StudentTagger)


def test_a_cross_fitted_folds_variants_take_its_teacher_and_every_variant_its_gold_mix(tmp_path: Path) -> None:
    """With cross-fitting, a variant of a fold's row is text that fold's teacher never saw (recombined): it
    takes that teacher's targets; the other variants take the main teacher's; both mix in the gold path of
    their construction, as labelled sentences do; the lineage counts each fold's variants."""
    import numpy as np

    from nerservice.artifacts.formats import load_model
    from nerservice.demo_corpus import generate
    from nerservice.distil.config import DistilConfig
    from nerservice.distil.run import FoldTeacher, plan_distillation, teacher_from
    from nerservice.distil.student import StudentTagger
    from nerservice.distil.targets import build_targets

    def teacher(path: Path) -> object:
        return teacher_from(load_model(path), ref=str(path), path=path, name="t", version="1")

    main_t = teacher(save_random_model(tmp_path / "main", {}, seed=3))
    fold_t = teacher(save_random_model(tmp_path / "fold", {}, seed=7))
    labelled = generate(24, seed=2)
    rows = list(range(8, 16))
    dconfig = DistilConfig(augment=2, gold_weight=0.3)
    config = main_t.loaded.config  # type: ignore[attr-defined]
    plan = plan_distillation(main_t, main_t.loaded.predictor(), config, dconfig,  # type: ignore[attr-defined]
                             labelled=labelled, unlabelled=None, loss="x", progress=False, tagger_cls=StudentTagger,
                             cross_fit=[FoldTeacher(fold_t, rows)])  # type: ignore[arg-type]
    variants = augment(labelled, copies=2, mention_swap=dconfig.augment_mention_swap,
                       word_swap=dconfig.augment_word_swap, seed=config.training.seed)
    tags = main_t.tags  # type: ignore[attr-defined]
    mine = [k for k, v in enumerate(variants) if v.source in rows]
    others = [k for k, v in enumerate(variants) if v.source not in rows]
    assert mine and others
    for idx, t in ((mine, fold_t), (others, main_t)):
        ref = build_targets(t.loaded.predictor(), [variants[k].tokens for k in idx], temperature=1.0,  # type: ignore[attr-defined]
                            gold=[np.array([tags.id(x) for x in variants[k].tags]) for k in idx],
                            gold_weight=0.3, chunk=64)[0]
        for j, k in enumerate(idx):
            i = len(labelled) + k
            got = plan.targets.unary[plan.targets.offsets[i]:plan.targets.offsets[i + 1]]
            np.testing.assert_allclose(got, ref.unary[ref.offsets[j]:ref.offsets[j + 1]], atol=1e-6)
    # the fold's variants really changed teacher (the two random teachers disagree)
    k = mine[0]
    i = len(labelled) + k
    main_only = build_targets(main_t.loaded.predictor(), [variants[k].tokens], temperature=1.0,  # type: ignore[attr-defined]
                              gold=[np.array([tags.id(x) for x in variants[k].tags])], gold_weight=0.3, chunk=64)[0]
    assert not np.allclose(main_only.unary, plan.targets.unary[plan.targets.offsets[i]:plan.targets.offsets[i + 1]])
    assert plan.record["cross_fit"][0]["augmented_sentences"] == len(mine)
