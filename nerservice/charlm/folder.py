"""A pretrained character LM as a folder: ``charlm.json`` (config, character vocabulary, training record),
``weights.npz`` (both directions' embedding, LSTM and output-layer arrays, no pickles) and the checksummed
``manifest.json`` every model folder has.  Written staged, so a reader never sees half a folder."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from nerservice.artifacts.files import check_files, read_json, read_manifest, staged, write_json, write_manifest
from nerservice.charlm.config import CharLMConfig
from nerservice.errors import ModelLoadError
from nerservice.text.vocab import Vocabulary

FORMAT: Final = "nerservice.charlm.v1"
META: Final = "charlm.json"
WEIGHTS: Final = "weights.npz"
DIRECTIONS: Final = ("forward", "backward")


@dataclass
class CharLM:
    config: CharLMConfig
    vocab: Vocabulary
    weights: dict[str, list[np.ndarray]]  # direction -> [embedding, lstm kernel, recurrent kernel, bias, head ...]
    record: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""  # the manifest's sha256 of weights.npz: which LM a tagger was built from

    def encoder_weights(self) -> dict[str, list[np.ndarray]]:
        """Embedding + LSTM arrays per direction (what the tagger's layer holds; the output layer is not)."""
        return {d: w[:4] for d, w in self.weights.items()}


def save_char_lm(out: str | Path, lm: CharLM) -> Path:
    out = Path(out)
    with staged(out) as tmp:
        arrays = {f"{d}_{i}": a for d in DIRECTIONS for i, a in enumerate(lm.weights[d])}
        np.savez(tmp / WEIGHTS, **arrays)  # type: ignore[arg-type]
        write_json(tmp / META, {"format": FORMAT, "config": lm.config.model_dump(mode="json"),
                                "vocab": lm.vocab.to_dict(), "record": lm.record})
        write_manifest(tmp, FORMAT, [META, WEIGHTS])
    return out


def load_char_lm(path: str | Path) -> CharLM:
    d = Path(path)
    if not d.is_dir():
        raise ModelLoadError(f"{d}: no character LM folder here (make one with `nerservice charlm`)", path=str(d))
    manifest = check_files(d, read_manifest(d), required=[META, WEIGHTS])
    if manifest.get("format") != FORMAT:
        raise ModelLoadError(f"{d}: format {manifest.get('format')!r} is not a character LM ({FORMAT})", path=str(d))
    meta = read_json(d / META)
    try:
        config = CharLMConfig.model_validate(meta["config"])
        vocab = Vocabulary.from_dict(meta["vocab"])
        with np.load(d / WEIGHTS, allow_pickle=False) as z:
            weights = {dr: [z[f"{dr}_{i}"] for i in range(sum(k.startswith(f"{dr}_") for k in z.files))]
                       for dr in DIRECTIONS}
    except (KeyError, ValueError, TypeError) as exc:
        raise ModelLoadError(f"{d}: corrupt character LM ({exc})", path=str(d)) from None
    if any(len(w) != 6 for w in weights.values()):
        raise ModelLoadError(f"{d}: {WEIGHTS} does not hold the 6 arrays per direction it should", path=str(d))
    return CharLM(config, vocab, weights, record=meta.get("record", {}),
                  fingerprint=manifest["files"][WEIGHTS]["sha256"])
