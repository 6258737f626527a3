"""Layers: within-length reversal, the length-aware BiLSTM, the char encoder, the residual stack —
padding independence, independent references and config round-trips."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_config_roundtrip

LENGTHS = np.array([5, 1, 3, 4], dtype=np.int32)


def _np(x):
    from keras import ops

    return np.asarray(ops.convert_to_numpy(x))


def _padded(seed: int, lengths: np.ndarray, t: int, f: int = 3) -> np.ndarray:
    """Random features on real steps; distinct, large junk in the padding (it must never leak)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, (len(lengths), t, f)).astype("float32")
    for b, n in enumerate(lengths):
        x[b, n:] = rng.normal(0, 10, (t - n, f))
    return x


def _real(x: np.ndarray, lengths: np.ndarray, t: int) -> np.ndarray:
    """The same sentences re-padded to T (real steps kept, new junk padding)."""
    out = _padded(99, lengths, t, x.shape[-1])
    for b, n in enumerate(lengths):
        out[b, :n] = x[b, :n]
    return out


def test_reverse_within_length_matches_numpy() -> None:
    from nerservice.model.layers import reverse_within_length

    x = _padded(0, LENGTHS, 7)
    got = _np(reverse_within_length(x, LENGTHS))
    for b, n in enumerate(LENGTHS):
        np.testing.assert_array_equal(got[b, :n], x[b, :n][::-1])
        np.testing.assert_array_equal(got[b, n:], x[b, n:])  # padding stays where it is
    np.testing.assert_array_equal(_np(reverse_within_length(got, LENGTHS)), x)  # an involution


def test_sequence_mask() -> None:
    from nerservice.model.layers import sequence_mask

    m = _np(sequence_mask(LENGTHS, 6))
    assert m.tolist() == [[i < n for i in range(6)] for n in LENGTHS]


def _bilstm(units: int = 4, **kw):
    import keras

    from nerservice.model.layers import LengthBiLSTM

    keras.utils.set_random_seed(1)
    layer = LengthBiLSTM(units, **kw)
    layer.build((None, None, 3))
    return layer


def test_bilstm_outputs_on_real_tokens_do_not_depend_on_padding() -> None:
    layer = _bilstm()
    x = _padded(1, LENGTHS, 6)
    short = _np(layer(x, LENGTHS))
    long = _np(layer(_real(x, LENGTHS, 13), LENGTHS))
    assert short.shape == (4, 6, 8) and long.shape == (4, 13, 8)
    for b, n in enumerate(LENGTHS):
        np.testing.assert_allclose(long[b, :n], short[b, :n], atol=1e-6)


def test_bilstm_equals_two_plain_lstms_on_each_unpadded_sentence() -> None:
    """Independent reference: Keras' own LSTM run on each sentence alone, forwards and reversed."""
    layer = _bilstm()
    x = _padded(2, LENGTHS, 6)
    out = _np(layer(x, LENGTHS))
    for b, n in enumerate(LENGTHS):
        seq = x[b:b + 1, :n]
        fwd = _np(layer.forward_lstm(seq))[0]
        bwd = _np(layer.backward_lstm(seq[:, ::-1]))[0][::-1]
        np.testing.assert_allclose(out[b, :n, :4], fwd, atol=1e-6)
        np.testing.assert_allclose(out[b, :n, 4:], bwd, atol=1e-6)


def test_bilstm_return_last_picks_the_state_after_the_last_real_token() -> None:
    seqs = _bilstm()
    last = _bilstm(return_last=True)
    last.set_weights(seqs.get_weights())
    x = _padded(3, LENGTHS, 6)
    full = _np(seqs(x, LENGTHS))
    got = _np(last(x, LENGTHS))
    assert got.shape == (4, 8)
    for b, n in enumerate(LENGTHS):
        np.testing.assert_allclose(got[b, :4], full[b, n - 1, :4], atol=1e-6)  # forward: after token n-1
        np.testing.assert_allclose(got[b, 4:], full[b, 0, 4:], atol=1e-6)  # backward: after token 0
    np.testing.assert_allclose(_np(last(_real(x, LENGTHS, 13), LENGTHS)), got, atol=1e-6)


def _char_encoder(**kw):
    import keras

    from nerservice.model.layers import CharEncoder

    keras.utils.set_random_seed(2)
    enc = CharEncoder(12, embedding_dim=5, cnn_filters=4, cnn_width=3, lstm_units=3, **kw)
    enc.build((None, None))
    return enc


WORDS = np.array([[0, 0, 0, 0, 0],  # the padding word
                  [3, 4, 5, 0, 0],
                  [7, 0, 0, 0, 0],
                  [2, 9, 11, 6, 8]], dtype=np.int32)


def test_char_encoder_ignores_padding_characters() -> None:
    enc = _char_encoder()
    out = _np(enc(WORDS))
    assert out.shape == (4, enc.output_dim) == (4, 4 + 2 * 3)
    wider = np.zeros((4, 16), dtype=np.int32)
    wider[:, :5] = WORDS
    np.testing.assert_allclose(_np(enc(wider)), out, atol=1e-6)
    np.testing.assert_allclose(out[0, :4], 0.0)  # the empty word's CNN features are zero, not -1e4


def test_char_encoder_rows_are_independent() -> None:
    """Each distinct word is encoded alone: its vector does not depend on the other words in the batch."""
    enc = _char_encoder()
    out = _np(enc(WORDS))
    for r in range(1, len(WORDS)):
        np.testing.assert_allclose(_np(enc(WORDS[r:r + 1]))[0], out[r], atol=1e-6)


def test_char_cnn_max_pool_excludes_padding() -> None:
    """The pool sees only real characters, and the window at a word's last character reads zeros past
    its end, whatever the batch's char width: compare against the CNN applied to the unpadded word."""
    import keras
    from keras import ops

    from nerservice.model.layers import CharEncoder

    keras.utils.set_random_seed(5)
    enc = CharEncoder(12, embedding_dim=5, cnn_filters=6, cnn_width=3, lstm_units=0)
    out = _np(enc(WORDS))
    assert out.shape == (4, 6)
    for r in range(1, len(WORDS)):
        n = int((WORDS[r] > 0).sum())
        h = _np(enc.conv(enc.embedding(ops.convert_to_tensor(WORDS[r:r + 1, :n]))))[0]
        np.testing.assert_allclose(out[r], h.max(axis=0), atol=1e-6)


def test_residual_stack_is_padding_independent_and_residual() -> None:
    import keras

    from nerservice.model.layers import ResidualBiLSTMStack

    keras.utils.set_random_seed(3)
    stack = ResidualBiLSTMStack(4, 2, dropout=0.5)
    x = _padded(4, LENGTHS, 6, f=8)
    out = _np(stack(x, LENGTHS))
    assert out.shape == (4, 6, 8)
    long = _np(stack(_real(x, LENGTHS, 13), LENGTHS))
    for b, n in enumerate(LENGTHS):
        np.testing.assert_allclose(long[b, :n], out[b, :n], atol=1e-6)
    # Input width == 2*units, so both layers add their output to their input.
    h1 = x + _np(stack.layers_[0](x, LENGTHS))
    np.testing.assert_allclose(out, h1 + _np(stack.layers_[1](h1, LENGTHS)), atol=1e-5)


def test_residual_stack_projects_when_widths_differ() -> None:
    """First layer input (3 features) ≠ 2*units: no residual there, the BiLSTM output is used as is."""
    import keras

    from nerservice.model.layers import ResidualBiLSTMStack

    keras.utils.set_random_seed(3)
    stack = ResidualBiLSTMStack(4, 1, dropout=0.0)
    x = _padded(5, LENGTHS, 6, f=3)
    np.testing.assert_allclose(_np(stack(x, LENGTHS)), _np(stack.layers_[0](x, LENGTHS)), atol=1e-6)


# ---- config round-trips (keras-hub's shared helper) ---------------------------------------------------
def test_config_roundtrip_length_bilstm() -> None:
    from nerservice.model.layers import LengthBiLSTM

    x = _padded(6, LENGTHS, 6)
    for return_last in (False, True):
        assert_config_roundtrip(LengthBiLSTM(4, return_last=return_last, name="b"), lambda layer: layer(x, LENGTHS))


@pytest.mark.parametrize("cnn,lstm", [(4, 3), (0, 3), (4, 0)])
def test_config_roundtrip_char_encoder(cnn: int, lstm: int) -> None:
    from nerservice.model.layers import CharEncoder

    enc = CharEncoder(12, embedding_dim=5, cnn_filters=cnn, cnn_width=2, lstm_units=lstm, name="chars")
    clone = assert_config_roundtrip(enc, lambda layer: layer(WORDS))
    assert clone.output_dim == cnn + 2 * lstm


def test_config_roundtrip_residual_stack() -> None:
    from nerservice.model.layers import ResidualBiLSTMStack

    x = _padded(7, LENGTHS, 6, f=8)
    clone = assert_config_roundtrip(ResidualBiLSTMStack(4, 3, dropout=0.3, name="s"), lambda layer: layer(x, LENGTHS))
    assert (clone.depth, clone.units, clone.dropout_rate) == (3, 4, 0.3)


def test_config_roundtrip_crf() -> None:
    from helpers import random_crf_problem
    from nerservice.model.crf import CRF

    p = random_crf_problem(0)

    def run(layer):
        if not layer.built:
            layer.build()
        return layer.log_likelihood(p["emissions"].astype("float32"), p["tags"], p["lengths"])

    assert_config_roundtrip(CRF(3, name="crf"), run, atol=1e-6)
