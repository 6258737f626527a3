"""The pretrained encoder: its folder, the safetensors reader and the Keras layer against BERT's forward
written plainly in NumPy (fast)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from encoder.encoder_fixture import HIDDEN, LAYERS, PIECES, numpy_bert, write_encoder, write_safetensors
from nerservice.errors import EmbeddingsError


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("encoder") / "bert"
    write_encoder(folder)
    return folder


@pytest.fixture(scope="module")
def layer(encoder_dir: Path):  # type: ignore[no-untyped-def]
    from nerservice.encoder.folder import load_text_encoder
    from nerservice.model.encoder_layer import FrozenTransformer

    enc = load_text_encoder(str(encoder_dir))
    s = enc.shape
    built = FrozenTransformer(vocab_size=s.vocab_size, hidden=s.hidden, layers=s.layers, heads=s.heads,
                              intermediate=s.intermediate, max_positions=s.max_positions, eps=s.eps)
    built.build()
    built.set_arrays(enc.layer_arrays())
    return built


def run(layer, rows: list[list[int]], index: list[list[int]]) -> np.ndarray:  # type: ignore[no-untyped-def]
    p, t = max(len(r) for r in rows), max(len(i) for i in index)
    ids = np.zeros((len(rows), p), np.int32)
    idx = np.zeros((len(rows), t), np.int32)
    for r, (a, b) in enumerate(zip(rows, index)):
        ids[r, : len(a)] = a
        idx[r, : len(b)] = b
    return np.asarray(layer(ids, idx))


def test_safetensors_reader_reads_both_float_widths_and_refuses_broken_files(tmp_path: Path) -> None:
    from nerservice.encoder.safetensors_file import read_safetensors

    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([0.5, -2.0], dtype=np.float32)}
    for dtype in ("F32", "F16"):
        write_safetensors(tmp_path / f"{dtype}.safetensors", arrays, dtype)
        got = read_safetensors(tmp_path / f"{dtype}.safetensors")
        for k, v in arrays.items():
            np.testing.assert_array_equal(got[k].astype(np.float32), v)
    (tmp_path / "short").write_bytes(b"\x01\x02")
    (tmp_path / "huge").write_bytes((10**12).to_bytes(8, "little") + b"{}")
    good = (tmp_path / "F32.safetensors").read_bytes()
    (tmp_path / "cut").write_bytes(good[:-4])
    for name, message in (("short", "shorter"), ("huge", "header length"), ("cut", "range"),
                          ("absent", "cannot read")):
        with pytest.raises(EmbeddingsError, match=message) as err:
            read_safetensors(tmp_path / name)
        assert err.value.code == "NER300"


def test_folder_loads_sizes_tokenizer_and_fingerprint(encoder_dir: Path) -> None:
    from nerservice.encoder.folder import load_text_encoder

    enc = load_text_encoder(str(encoder_dir))
    assert (enc.shape.hidden, enc.shape.layers, enc.shape.vocab_size) == (HIDDEN, LAYERS, len(PIECES))
    assert enc.tokenizer().vocab["cancer"] == PIECES.index("cancer") and len(enc.fingerprint) == 64


def test_bad_folders_and_a_missing_package_are_coded_errors(encoder_dir: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from nerservice.encoder import folder as folder_mod

    monkeypatch.setitem(folder_mod.PACKAGES, "missing-model", "no_such_package_for_nerservice")
    cases = {}
    for name, change in (("vocab", lambda d: (d / "vocab.txt").write_text("[PAD]\n")),
                         ("arch", lambda d: (d / "config.json").write_text(json.dumps(
                             {**json.loads((d / "config.json").read_text()), "hidden_act": "relu"}))),
                         ("tensor", lambda d: write_safetensors(d / "model.safetensors", {"x": np.zeros(2)})),
                         ("config", lambda d: (d / "config.json").unlink())):
        d = tmp_path / name
        shutil.copytree(encoder_dir, d)
        change(d)
        cases[str(d)] = {"vocab": "pieces", "arch": "GELU", "tensor": "lacks tensor", "config": "cannot read"}[name]
    cases["missing-model"] = "needs the no-such-package-for-nerservice package"
    for ref, message in cases.items():
        with pytest.raises(EmbeddingsError, match=message) as err:
            folder_mod.load_text_encoder(ref)
        assert err.value.code == "NER300"
    # what a finished run's read-back asks of the folder (its sizes, its weights' sha256): the same coded errors
    weightless = tmp_path / "weightless"
    shutil.copytree(encoder_dir, weightless)
    (weightless / "model.safetensors").unlink()
    from nerservice.config import NerConfig
    from nerservice.encoder.attach import encoder_identity

    for ref, message in ((str(weightless), "cannot read the encoder's weights"), (str(tmp_path / "arch"), "GELU")):
        with pytest.raises(EmbeddingsError, match=message) as err:
            encoder_identity(NerConfig().with_overrides({"model.encoder": ref}))
        assert err.value.code == "NER300"


def test_layer_matches_bert_written_in_numpy(layer, encoder_dir: Path) -> None:  # type: ignore[no-untyped-def]
    from nerservice.encoder.folder import load_text_encoder

    enc = load_text_encoder(str(encoder_dir))
    wp = enc.tokenizer()
    sentences = [["Acute", "renal", "failure", "."], ["cancer", "of", "the", "BRCA1", "gene", "(", "x", ")"]]
    encoded = [wp.encode(s) for s in sentences]
    out = run(layer, [i.tolist() for i, _ in encoded], [f.tolist() for _, f in encoded])
    assert out.shape == (2, 8, LAYERS + 1, HIDDEN)
    for r, (ids, first) in enumerate(encoded):
        want = numpy_bert(enc.weights, ids.tolist())  # (L + 1, P, H)
        np.testing.assert_allclose(out[r, : len(first)], want[:, first].transpose(1, 0, 2), atol=2e-5)


def test_padding_and_other_sentences_do_not_change_a_sentence(layer) -> None:  # type: ignore[no-untyped-def]
    short, long = [2, 7, 8, 9, 3], [2] + list(range(10, 30)) + [3]
    alone = run(layer, [short], [[1, 2, 3]])
    beside = run(layer, [long, short], [list(range(1, 21)), [1, 2, 3]])
    np.testing.assert_allclose(beside[1, :3], alone[0], atol=1e-5)


def test_a_sentence_longer_than_the_positions_is_read_in_blocks(layer, encoder_dir: Path) -> None:  # type: ignore[no-untyped-def]
    from nerservice.encoder.folder import load_text_encoder

    enc = load_text_encoder(str(encoder_dir))
    positions = enc.shape.max_positions
    ids = [2] + [10 + i % 40 for i in range(positions + 9)] + [3]  # 2 blocks
    out = run(layer, [ids], [list(range(len(ids)))])[0]
    for start in (0, positions):
        block = ids[start: start + positions]
        want = numpy_bert(enc.weights, block).transpose(1, 0, 2)
        np.testing.assert_allclose(out[start: start + len(block)], want, atol=2e-5)


@pytest.mark.parametrize("extra", [0, 9])  # one block; two blocks (longer than the positions)
def test_a_graph_with_unknown_lengths_reads_a_batch_at_its_own_width(layer, extra: int) -> None:  # type: ignore[no-untyped-def]
    """Training and serving on TensorFlow trace the layer with the piece axis unknown: a batch no longer than
    the positions must still be encoded at its own width (not padded to ``max_positions``), and the graph
    must give what eager gives, blocks included."""
    tf = pytest.importorskip("tensorflow")
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("the symbolic width is TensorFlow's: JAX traces every shape statically")
    positions = layer.max_positions
    n = (positions + extra) if extra else 11
    ids = np.array([[2] + [10 + i % 40 for i in range(n)] + [3], [2, 7, 8, 9, 3] + [0] * (n - 3)], np.int32)
    index = np.array([list(range(1, 6)), [1, 2, 3, 0, 0]], np.int32)
    widths: list = []
    encode = layer.encode

    def spy(rows, width):  # type: ignore[no-untyped-def]
        widths.append(tf.shape(rows)[1])
        return encode(rows, width)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2)
    def graph(i, x):  # type: ignore[no-untyped-def]
        return layer(i, x), widths[-1]

    layer.encode = spy
    try:
        out, width = graph(tf.constant(ids), tf.constant(index))
    finally:
        del layer.encode
    assert int(width) == min(ids.shape[1], positions)
    np.testing.assert_allclose(np.asarray(out), np.asarray(layer(ids, index)), atol=1e-5)
