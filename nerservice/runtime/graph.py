"""The tagger's network as two ONNX graphs, built from its weights with the ``onnx`` helper API.

    words.onnx    word_ids (U,) int32, word_chars (U, C) int32  ->  features (U, dense_units) float32
    context.onnx  features (U, D) float32, word_index (B, T) int32, lengths (B,) int32
                  [, gazetteer (B, T) int32: a model with ``model.gazetteer`` only]  ->  emissions (B, T, K)

Why two graphs: everything below the first BiLSTM (word vector, char-CNN, char-BiLSTM, dense) depends on
the word alone, not on its sentence, so it runs once per distinct word of a batch (and a runtime may keep
it per word type across batches); the context graph gathers those rows per token and runs the residual
BiLSTM stack and the emission layer.  Together they compute exactly ``NerTagger.call`` at inference.

A gazetteer (``model.gazetteer``, nerservice/text/gazetteer.py) is the one per-token input of the dense
layer: its embedding is concatenated last, after the per-word parts.  Dense is linear before its ReLU, so
its kernel splits by rows: the words graph computes ``word_part @ W[:-G] + bias`` (no ReLU: still a function
of the word alone, so the per-word run and its cache stay valid), and the context graph adds each token's
row of ``table = gazetteer_embedding @ W[-G:]`` (n_ids x dense_units, computed here once) before the ReLU.
Models without a gazetteer get the graphs they always had (ReLU in the words graph, three context inputs).

The recurrent layers are native ONNX ``LSTM`` ops, bidirectional with ``sequence_lens``: the reverse
direction of an ONNX LSTM starts at each row's own last real step, which is what the Keras layers get by
reversing within the length (nerservice/model/layers.py), so no gathers are needed around them.  Keras
keeps gates in the order i, f, c, o; ONNX wants i, o, f, c (weights are re-ordered here).

This module needs ``onnx`` (an export-time dependency) and NumPy weights only, never Keras.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from nerservice.runtime.forward import WORD_TABLE

OPSET = 17
KERAS_TO_ONNX_GATES = (0, 3, 1, 2)  # Keras i,f,c,o blocks -> ONNX i,o,f,c


@dataclass(frozen=True)
class NetworkShape:
    """What the graphs need beyond the weight arrays' own shapes."""

    char_cnn_width: int
    has_char_cnn: bool
    has_char_lstm: bool
    lstm_layers: int
    gazetteer_dim: int = 0  # G: the gazetteer embedding's width, the dense kernel's last G rows; 0 = none


class _Graph:
    """A list of nodes and initializers with generated value names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def const(self, name: str, value: Any) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], n_out: int = 1, **attrs: Any) -> list[str]:
        self._n += 1
        outs = [f"{op_type.lower()}{self._n}_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, **attrs))
        return outs

    def one(self, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        return self.op(op_type, inputs, **attrs)[0]

    def model(self, name: str, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
              final: str) -> onnx.ModelProto:
        self.nodes.append(helper.make_node("Identity", [final], [outputs[0].name]))
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="nerservice")
        model.ir_version = 8  # readable by every ONNX Runtime since 1.10
        onnx.checker.check_model(model)
        return model


def _reorder_gates(m: np.ndarray) -> np.ndarray:
    blocks = np.split(m, 4, axis=-1)
    return np.concatenate([blocks[j] for j in KERAS_TO_ONNX_GATES], axis=-1)


def lstm_weights(fwd: Sequence[np.ndarray], bwd: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX W (2, 4H, I), R (2, 4H, H), B (2, 8H) from Keras (kernel (I, 4H), recurrent (H, 4H), bias (4H,))
    of the forward and backward LSTMs.  ONNX adds a separate recurrent bias: zeros."""
    ws, rs, bs = [], [], []
    for kernel, recurrent, bias in (fwd, bwd):
        ws.append(_reorder_gates(np.asarray(kernel, np.float32)).T)
        rs.append(_reorder_gates(np.asarray(recurrent, np.float32)).T)
        b = _reorder_gates(np.asarray(bias, np.float32))
        bs.append(np.concatenate([b, np.zeros_like(b)]))
    return np.stack(ws), np.stack(rs), np.stack(bs)


def _bilstm(g: _Graph, prefix: str, x: str, seq_lens: str, w: Mapping[str, np.ndarray]) -> tuple[str, str]:
    """(Y (T, 2, B, H), Y_h (2, B, H)) of a bidirectional LSTM over time-major x."""
    big_w, big_r, big_b = lstm_weights([w[f"{prefix}.forward.{n}"] for n in ("kernel", "recurrent", "bias")],
                                       [w[f"{prefix}.backward.{n}"] for n in ("kernel", "recurrent", "bias")])
    hidden = big_r.shape[2]
    y, y_h, _ = g.op("LSTM", [x, g.const(f"{prefix}.W", big_w), g.const(f"{prefix}.R", big_r),
                              g.const(f"{prefix}.B", big_b), seq_lens], n_out=3,
                     hidden_size=hidden, direction="bidirectional")
    return y, y_h


def gazetteer_table(w: Mapping[str, np.ndarray], gazetteer_dim: int) -> np.ndarray:
    """Each gazetteer id's share of the dense pre-activation: ``embedding @ W[-G:]`` (n_ids, dense_units).
    Products in float64, one rounding to float32: within float rounding of Keras' own float32 matmul."""
    emb = np.asarray(w["gazetteer_embedding"], np.float64)
    rows = np.asarray(w["dense.kernel"], np.float64)[-gazetteer_dim:]
    return (emb @ rows).astype(np.float32)


def words_graph(w: Mapping[str, np.ndarray], shape: NetworkShape, *, table_input: bool = False) -> onnx.ModelProto:
    """``table_input``: the word-vector table is an input (fed by the caller on every run, which costs no copy
    on CPU) instead of an initializer — the in-memory conversion of a loaded Keras model, so the process holds
    the table once rather than in a serialized graph and again in the session (nerservice/runtime/select.py)."""
    g = _Graph()
    def i64(name: str, v: Any) -> Any:
        return g.const(name, np.asarray(v, np.int64))

    table = WORD_TABLE if table_input else g.const(WORD_TABLE, w["word_embedding"])
    parts = [g.one("Gather", [table, "word_ids"])]
    if shape.has_char_cnn or shape.has_char_lstm:
        valid = g.one("Greater", ["word_chars", g.const("zero_i32", np.int32(0))])  # (U, C)
        emb = g.one("Gather", [g.const("char_embedding", w["char_embedding"]), "word_chars"])  # (U, C, E)
        # Padding chars embed as zeros, as in the Keras CharEncoder (and what the CNN's "same" padding reads).
        x = g.one("Where", [g.one("Unsqueeze", [valid, i64("axis2", [2])]), emb, g.const("zero_f", np.float32(0))])
        lens = g.one("ReduceSum", [g.one("Cast", [valid], to=TensorProto.INT32), i64("axis1", [1])], keepdims=0)
        if shape.has_char_cnn:
            width = shape.char_cnn_width
            kernel = np.transpose(w["char_cnn.kernel"], (2, 1, 0))  # Keras (w, E, F) -> ONNX (F, E, w)
            h = g.one("Conv", [g.one("Transpose", [x], perm=[0, 2, 1]), g.const("char_cnn.W", kernel),
                               g.const("char_cnn.B", w["char_cnn.bias"])],
                      kernel_shape=[width], pads=[(width - 1) // 2, width // 2])  # Keras "same"
            h = g.one("Tanh", [h])  # (U, F, C)
            h = g.one("Where", [g.one("Unsqueeze", [valid, i64("axis1b", [1])]), h,
                                g.const("minus_1e4", np.float32(-1e4))])
            pooled = g.one("ReduceMax", [h], axes=[2], keepdims=0)
            has_chars = g.one("Unsqueeze", [g.one("Greater", [lens, "zero_i32"]), "axis1b"])
            parts.append(g.one("Where", [has_chars, pooled, "zero_f"]))  # the padding word gets zeros
        if shape.has_char_lstm:
            seq = g.one("Max", [lens, g.const("one_i32", np.int32(1))])
            _, y_h = _bilstm(g, "char_lstm", g.one("Transpose", [x], perm=[1, 0, 2]), seq, w)
            units = w["char_lstm.forward.recurrent"].shape[0]
            parts.append(g.one("Reshape", [g.one("Transpose", [y_h], perm=[1, 0, 2]),
                                           i64("char_lstm_out", [-1, 2 * units])]))
    feats = g.one("Concat", parts, axis=1) if len(parts) > 1 else parts[0]
    kernel = w["dense.kernel"]
    if shape.gazetteer_dim:
        # The per-word rows only; the ReLU waits for the gazetteer's share (context graph).
        out = g.one("Gemm", [feats, g.const("dense.kernel", kernel[:-shape.gazetteer_dim]),
                             g.const("dense.bias", w["dense.bias"])])
    else:
        out = g.one("Relu", [g.one("Gemm", [feats, g.const("dense.kernel", kernel),
                                            g.const("dense.bias", w["dense.bias"])])])
    dim = kernel.shape[1]
    inputs = [helper.make_tensor_value_info("word_ids", TensorProto.INT32, ["U"]),
              helper.make_tensor_value_info("word_chars", TensorProto.INT32, ["U", "C"])]
    if table_input:
        inputs.append(helper.make_tensor_value_info(WORD_TABLE, TensorProto.FLOAT, list(w["word_embedding"].shape)))
    features = helper.make_tensor_value_info("features", TensorProto.FLOAT, ["U", dim])
    return g.model("nerservice_words", inputs, [features], out)


def context_graph(w: Mapping[str, np.ndarray], shape: NetworkShape) -> onnx.ModelProto:
    g = _Graph()
    dim = w["dense.kernel"].shape[1]
    # Gathering with the transposed index gives the time-major (T, B, D) layout ONNX LSTMs read.
    x = g.one("Gather", ["features", g.one("Transpose", ["word_index"], perm=[1, 0])])
    inputs = [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["U", dim]),
              helper.make_tensor_value_info("word_index", TensorProto.INT32, ["B", "T"]),
              helper.make_tensor_value_info("lengths", TensorProto.INT32, ["B"])]
    if shape.gazetteer_dim:
        x = g.one("Relu", [g.one("Add", [x, g.one("Gather", [
            g.const("gazetteer_table", gazetteer_table(w, shape.gazetteer_dim)),
            g.one("Transpose", ["gazetteer"], perm=[1, 0])])])])
        inputs.append(helper.make_tensor_value_info("gazetteer", TensorProto.INT32, ["B", "T"]))
    seq = g.one("Max", ["lengths", g.const("one_i32", np.int32(1))])  # empty padding rows: outputs unused
    merge = g.const("merge_dirs", np.asarray([0, 0, -1], np.int64))
    width = dim
    for i in range(shape.lstm_layers):
        y, _ = _bilstm(g, f"stack.{i}", x, seq, w)
        h = g.one("Reshape", [g.one("Transpose", [y], perm=[0, 2, 1, 3]), merge])  # (T, B, 2H): [fwd ; bwd]
        units = w[f"stack.{i}.forward.recurrent"].shape[0]
        x = g.one("Add", [x, h]) if width == 2 * units else h  # the residual rule of ResidualBiLSTMStack
        width = 2 * units
    em = g.one("Add", [g.one("MatMul", [x, g.const("emissions.kernel", w["emissions.kernel"])]),
                       g.const("emissions.bias", w["emissions.bias"])])
    k = w["emissions.kernel"].shape[1]
    return g.model("nerservice_context", inputs,
                   [helper.make_tensor_value_info("emissions", TensorProto.FLOAT, ["B", "T", k])],
                   g.one("Transpose", [em], perm=[1, 0, 2]))
