"""A tiny random BERT folder in the real layout (config.json, vocab.txt, model.safetensors) for tests."""
from __future__ import annotations

import json
import string
import struct
from pathlib import Path

import numpy as np

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHARS = list(string.ascii_lowercase + string.digits + string.punctuation)
PIECES = SPECIAL + ["cancer", "disease", "renal", "failure", "acute", "the", "of", "and", "in"] + CHARS + \
    ["##" + c for c in string.ascii_lowercase + string.digits]
HIDDEN, LAYERS, HEADS, FF, POSITIONS = 8, 2, 2, 16, 32


def bert_arrays(vocab_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.5, size=shape).astype(np.float32)
    w = {"embeddings.word_embeddings.weight": r(vocab_size, HIDDEN),
         "embeddings.position_embeddings.weight": r(POSITIONS, HIDDEN),
         "embeddings.token_type_embeddings.weight": r(2, HIDDEN),
         "embeddings.LayerNorm.weight": 1 + r(HIDDEN), "embeddings.LayerNorm.bias": r(HIDDEN)}
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for n in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            w[p + n + ".weight"], w[p + n + ".bias"] = r(HIDDEN, HIDDEN), r(HIDDEN)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = r(FF, HIDDEN), r(FF)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = r(HIDDEN, FF), r(HIDDEN)
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + n + ".weight"], w[p + n + ".bias"] = 1 + r(HIDDEN), r(HIDDEN)
    return w


def write_safetensors(path: Path, arrays: dict[str, np.ndarray], dtype: str = "F32") -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, arr in arrays.items():
        data = np.ascontiguousarray(arr.astype("<f4" if dtype == "F32" else "<f2")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def write_encoder(folder: Path, *, seed: int = 0) -> dict[str, np.ndarray]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(PIECES) + "\n", encoding="utf-8")
    (folder / "config.json").write_text(json.dumps({
        "model_type": "bert", "hidden_act": "gelu", "vocab_size": len(PIECES), "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "intermediate_size": FF,
        "max_position_embeddings": POSITIONS, "layer_norm_eps": 1e-12}), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}), encoding="utf-8")
    arrays = bert_arrays(len(PIECES), np.random.default_rng(seed))
    write_safetensors(folder / "model.safetensors", arrays)
    return arrays


def numpy_bert(arrays: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """Every hidden state (L + 1, P, H) of one unpadded sequence: BERT's forward written plainly."""
    from math import erf, sqrt

    def norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * g + b

    def linear(x: np.ndarray, name: str) -> np.ndarray:
        return x @ arrays[name + ".weight"].T + arrays[name + ".bias"]

    gelu = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / sqrt(2))))
    n = len(ids)
    x = arrays["embeddings.word_embeddings.weight"][ids] + arrays["embeddings.position_embeddings.weight"][:n] \
        + arrays["embeddings.token_type_embeddings.weight"][0]
    x = norm(x, arrays["embeddings.LayerNorm.weight"], arrays["embeddings.LayerNorm.bias"])
    states = [x]
    d = HIDDEN // HEADS
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        heads = []
        q, k, v = (linear(x, p + "attention.self." + m) for m in ("query", "key", "value"))
        for h in range(HEADS):
            s = slice(h * d, (h + 1) * d)
            a = q[:, s] @ k[:, s].T / np.sqrt(d)
            a = np.exp(a - a.max(-1, keepdims=True))
            heads.append((a / a.sum(-1, keepdims=True)) @ v[:, s])
        x = norm(linear(np.concatenate(heads, -1), p + "attention.output.dense") + x,
                 arrays[p + "attention.output.LayerNorm.weight"], arrays[p + "attention.output.LayerNorm.bias"])
        ff = linear(gelu(linear(x, p + "intermediate.dense")), p + "output.dense")
        x = norm(ff + x, arrays[p + "output.LayerNorm.weight"], arrays[p + "output.LayerNorm.bias"])
        states.append(x)
    return np.stack(states)
