"""The gazetteer feature (``model.gazetteer``): which strings enter, how text is matched, the jackknife for
training text, its saved form, and that the ids reach the batch arrays and the network."""
from __future__ import annotations

import numpy as np
import pytest

from nerservice.data import Sentence
from nerservice.errors import ModelLoadError
from nerservice.text.features import EncodedCorpus
from nerservice.text.gazetteer import NO_MATCH, Gazetteer, build_for_training, build_gazetteer
from nerservice.text.vocab import Vocabularies


def S(text: str, tags: str) -> Sentence:
    return Sentence(tuple(text.split()), tuple(tags.split()))


CORPUS = [
    S("acute renal failure after cisplatin", "B-Disease I-Disease I-Disease O B-Chemical"),
    S("renal failure was seen", "B-Disease I-Disease O O"),
    S("the renal cortex was normal", "O O O O O"),
    S("Cisplatin and development", "B-Chemical O O"),
    S("development of renal failure", "O O B-Disease I-Disease"),
    S("development stopped", "O O"),
]


def ids_of(g: Gazetteer, text: str) -> list[int]:
    return g.token_ids(text.split())


def b(g: Gazetteer, label: str) -> int:
    return 2 + 2 * g.types.index(label)


def test_strings_enter_when_most_occurrences_are_annotated() -> None:
    g = build_gazetteer(CORPUS, min_ratio=0.5, max_tokens=8)
    assert g.types == ("Chemical", "Disease")
    keys = set(g.entries)
    assert ("acute", "renal", "failure") in keys and ("renal", "failure") in keys and ("cisplatin",) in keys
    # "renal" alone is never annotated; "development" is annotated nowhere: neither enters
    assert ("renal",) not in keys and ("development",) not in keys
    # a stricter ratio drops a string annotated 1 of 2 times
    half = [S("aspirin helped", "B-Chemical O"), S("aspirin tablets", "O O")]
    assert ("aspirin",) in build_gazetteer(half, min_ratio=0.5, max_tokens=8).entries
    assert ("aspirin",) not in build_gazetteer(half, min_ratio=0.6, max_tokens=8).entries
    # strings longer than max_tokens are not kept
    assert ("acute", "renal", "failure") not in build_gazetteer(CORPUS, min_ratio=0.5, max_tokens=2).entries


def test_matching_is_longest_first_and_case_and_digit_insensitive() -> None:
    g = build_gazetteer(CORPUS + [S("BRCA1 mutation", "B-Chemical O")], min_ratio=0.5, max_tokens=8)
    d, c = b(g, "Disease"), b(g, "Chemical")
    assert ids_of(g, "Acute renal failure and CISPLATIN") == [d, d + 1, d + 1, NO_MATCH, c]
    assert ids_of(g, "chronic renal failure") == [NO_MATCH, d, d + 1]
    assert ids_of(g, "brca2 here") == [c, NO_MATCH]  # normalize_word: digits -> 0
    assert ids_of(g, "") == [] and g.n_ids == 6


def test_the_most_frequent_type_wins_and_ties_go_by_name() -> None:
    sents = [S("lead", "B-Chemical"), S("lead", "B-Chemical"), S("lead", "B-Disease"),
             S("zinc", "B-Disease"), S("zinc", "B-Chemical")]
    g = build_gazetteer(sents, min_ratio=0.5, max_tokens=8)
    assert g.entries[("lead",)] == g.types.index("Chemical")
    assert g.entries[("zinc",)] == g.types.index("Chemical")


def test_jackknife_hides_each_block_its_own_annotations() -> None:
    # sentence 0's string occurs nowhere else: matched against the other folds, it must not fire; the
    # shared string ("renal failure", annotated in folds 1 and 4) still fires in every fold.
    sents = [S("zzz syndrome", "B-Disease I-Disease"), S("renal failure", "B-Disease I-Disease"),
             S("nothing here", "O O"), S("more text", "O O"), S("renal failure again", "B-Disease I-Disease O")]
    built = build_for_training([("", sents)], min_ratio=0.5, max_tokens=8, folds=5)
    g, jack = built.gazetteer, built.training_ids
    assert g == build_gazetteer(sents, min_ratio=0.5, max_tokens=8) and ("zzz", "syndrome") in g.entries
    full = g.flat_ids([s.tokens for s in sents])
    assert full.shape == jack.shape == (11,)
    d = b(g, "Disease")
    assert list(full[:2]) == [d, d + 1] and list(jack[:2]) == [NO_MATCH, NO_MATCH]
    assert list(jack[2:4]) == [d, d + 1] and list(jack[8:10]) == [d, d + 1]


def test_corpora_choose_their_own_strings_and_the_first_keeps_a_shared_one() -> None:
    # "lead" is a Chemical in corpus a; corpus b (diseases only) mentions it unannotated, which must not push
    # it out of a's selection. "fever" is annotated in both: the first corpus keeps it.
    a = [S("lead poisoning", "B-Chemical O"), S("lead levels", "B-Chemical O"), S("fever", "B-Disease")]
    b_ = [S("lead was found", "O O O"), S("lead again", "O O"), S("lead once more", "O O O"), S("fever", "B-Disease"),
          S("gout", "B-Disease")]
    built = build_for_training([("a|", a), ("b|", b_)], min_ratio=0.5, max_tokens=8, folds=2)
    g = built.gazetteer
    assert g.types == ("a|Chemical", "a|Disease", "b|Disease")
    assert g.types[g.entries[("lead",)]] == "a|Chemical" and g.types[g.entries[("fever",)]] == "a|Disease"
    assert g.types[g.entries[("gout",)]] == "b|Disease"
    # b's sentences see a's strings whole: "lead" fires in b's text; b's own "gout" (its only mention) does not
    ids = built.training_ids
    assert ids.size == sum(len(s.tokens) for s in a + b_)
    b_start = sum(len(s.tokens) for s in a)
    assert ids[b_start] == 2 + 2 * g.types.index("a|Chemical") and ids[-1] == NO_MATCH


def test_saved_form_round_trips_and_bad_forms_are_coded_errors() -> None:
    g = build_gazetteer(CORPUS, min_ratio=0.5, max_tokens=8)
    again = Gazetteer.from_dict(g.to_dict())
    assert again == g and ids_of(again, "renal failure") == ids_of(g, "renal failure")
    with pytest.raises(ModelLoadError, match="version"):
        Gazetteer.from_dict({"version": "other"})
    bad = {**g.to_dict(), "entries": [[["x"], 5]]}
    with pytest.raises(ModelLoadError, match="type index"):
        Gazetteer.from_dict(bad)


def test_vocabularies_save_it_only_when_present(tmp_path) -> None:
    from nerservice.training.trainer import build_vocabularies

    vocabs = build_vocabularies(CORPUS)
    assert "gazetteer" not in vocabs.to_dict()
    with_g = Vocabularies(vocabs.words, vocabs.chars, vocabs.tags,
                          gazetteer=build_gazetteer(CORPUS, min_ratio=0.5, max_tokens=8))
    with_g.save(tmp_path / "vocab.json")
    assert Vocabularies.load(tmp_path / "vocab.json").gazetteer == with_g.gazetteer


def test_batches_carry_the_ids_and_zeros_without_a_gazetteer() -> None:
    from nerservice.training.trainer import build_vocabularies

    plain = build_vocabularies(CORPUS)
    g = build_gazetteer(CORPUS, min_ratio=0.5, max_tokens=8)
    vocabs = Vocabularies(plain.words, plain.chars, plain.tags, gazetteer=g)
    texts = [("renal", "failure", "x"), ("cisplatin",)]
    batch = EncodedCorpus(texts, vocabs, max_word_length=12).batch([0, 1])
    d, c = b(g, "Disease"), b(g, "Chemical")
    assert batch["gazetteer"][0, :3].tolist() == [d, d + 1, NO_MATCH]
    assert batch["gazetteer"][1, :2].tolist() == [c, 0]  # 0 at padding
    given = EncodedCorpus(texts, vocabs, max_word_length=12, gazetteer_ids=np.array([1, 1, 1, 1]))
    assert given.batch([0, 1])["gazetteer"][0, :3].tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="gazetteer ids"):
        EncodedCorpus(texts, vocabs, max_word_length=12, gazetteer_ids=np.array([1, 1]))
    assert not EncodedCorpus(texts, plain, max_word_length=12).batch([0, 1])["gazetteer"].any()


def test_the_feature_reaches_the_network_and_survives_save_and_load(tmp_path) -> None:
    from helpers import tiny_model_config
    from nerservice.artifacts.model_folder import load_model_folder, save_model
    from nerservice.config import NerConfig
    from nerservice.model.tagger import build_tagger
    from nerservice.training.trainer import build_vocabularies, gazetteer_arguments

    plain = build_vocabularies(CORPUS)
    vocabs = Vocabularies(plain.words, plain.chars, plain.tags,
                          gazetteer=build_gazetteer(CORPUS, min_ratio=0.5, max_tokens=8))
    config = NerConfig().model_copy(update={"model": tiny_model_config(gazetteer=True, embeddings=[])})
    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars), n_tags=len(vocabs.tags),
                         **gazetteer_arguments(vocabs))
    batch = EncodedCorpus([("renal", "failure", "was", "seen")], vocabs, max_word_length=12).batch([0])
    inputs = {k: v for k, v in batch.items() if k != "tag_ids"}
    emissions = np.asarray(model(inputs))
    flipped = {**inputs, "gazetteer": np.where(inputs["gazetteer"] > 0, 1, 0).astype(np.int32)}
    assert not np.allclose(emissions, np.asarray(model(flipped)))  # the ids change the emissions
    folder = save_model(tmp_path / "m", model=model, vocabs=vocabs, config=config, metrics={})
    loaded = load_model_folder(folder)
    assert loaded.vocabs.gazetteer == vocabs.gazetteer
    np.testing.assert_allclose(np.asarray(loaded.model(inputs)), emissions, atol=1e-6)


def test_training_ids_jackknife_the_labelled_text_and_match_unlabelled_text_whole() -> None:
    from nerservice.config import NerConfig
    from nerservice.errors import ConfigError
    from nerservice.training.trainer import build_vocabularies, with_gazetteer

    vocabs = build_vocabularies(CORPUS)
    extra = [S("renal failure", "O O")]  # a distillation student's unlabelled text: tags are placeholders
    out, ids, record = with_gazetteer(vocabs, NerConfig(), [("", CORPUS)], unlabelled=extra)
    g = out.gazetteer
    assert g is not None and ids is not None and record["strings"] == len(g)
    assert ids.size == sum(len(s.tokens) for s in CORPUS + extra)
    d = b(g, "Disease")
    assert list(ids[-2:]) == [d, d + 1]  # matched against the whole gazetteer
    assert record["training_tokens_matched"] == int((ids > 1).sum())
    off = NerConfig().with_overrides({"model.gazetteer": False})
    assert with_gazetteer(vocabs, off, [("", CORPUS)]) == (vocabs, None, {})
    with pytest.raises(ConfigError, match="no entity annotations"):
        with_gazetteer(vocabs, NerConfig(), [("", [S("nothing at all", "O O O")])])


def test_a_model_saved_without_a_gazetteer_says_so_in_its_config(tmp_path) -> None:
    """Random models (no training data) and folders saved before the setting existed (their config lacks the
    key, which reads as the default, true) load as gazetteer=false: the config tells what the model has."""
    import json

    from helpers import save_random_model
    from nerservice.artifacts.model_folder import load_model_folder

    folder = save_random_model(tmp_path / "m", {})
    assert json.loads((folder / "config.json").read_text())["model"]["gazetteer"] is False
    assert load_model_folder(folder).model.gazetteer_embedding is None
    old = json.loads((folder / "config.json").read_text())
    del old["model"]["gazetteer"]  # as written before session 9
    (folder / "config.json").write_text(json.dumps(old))
    loaded = load_model_folder(folder, verify=False)
    assert loaded.config.model.gazetteer is False and loaded.model.gazetteer_embedding is None
