"""A Keras ``NerTagger``'s weights as named NumPy arrays: the form the ONNX graphs are built from."""
from __future__ import annotations

from typing import Any

import numpy as np

from nerservice.runtime.graph import NetworkShape


def _np(v: Any) -> np.ndarray:
    from keras import ops

    return np.asarray(ops.convert_to_numpy(v), dtype=np.float32)


def _lstm(prefix: str, layer: Any, out: dict[str, np.ndarray]) -> None:
    for direction, lstm in (("forward", layer.forward_lstm), ("backward", layer.backward_lstm)):
        cell = lstm.cell
        out[f"{prefix}.{direction}.kernel"] = _np(cell.kernel)
        out[f"{prefix}.{direction}.recurrent"] = _np(cell.recurrent_kernel)
        out[f"{prefix}.{direction}.bias"] = _np(cell.bias)


def tagger_weights(model: Any) -> tuple[dict[str, np.ndarray], NetworkShape]:
    """Every inference weight of ``model`` (a built ``NerTagger``) and the graph shape they need."""
    enc = model.char_encoder
    w: dict[str, np.ndarray] = {"word_embedding": _np(model.word_embedding.embeddings)}
    if enc.output_dim:
        w["char_embedding"] = _np(enc.embedding.embeddings)
    if enc.conv is not None:
        w["char_cnn.kernel"], w["char_cnn.bias"] = _np(enc.conv.kernel), _np(enc.conv.bias)
    if enc.bilstm is not None:
        _lstm("char_lstm", enc.bilstm, w)
    w["dense.kernel"], w["dense.bias"] = _np(model.dense.kernel), _np(model.dense.bias)
    gazetteer = getattr(model, "gazetteer_embedding", None)
    if gazetteer is not None:
        w["gazetteer_embedding"] = _np(gazetteer.embeddings)
    for i, layer in enumerate(model.stack.layers_):
        _lstm(f"stack.{i}", layer, w)
    w["emissions.kernel"], w["emissions.bias"] = _np(model.emission.kernel), _np(model.emission.bias)
    shape = NetworkShape(char_cnn_width=enc.cnn_width, has_char_cnn=enc.conv is not None,
                         has_char_lstm=enc.bilstm is not None, lstm_layers=len(model.stack.layers_),
                         gazetteer_dim=int(w["gazetteer_embedding"].shape[1]) if gazetteer is not None else 0)
    return w, shape
