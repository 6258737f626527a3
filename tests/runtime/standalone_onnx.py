"""Runs an ONNX export the way its README.md tells a user to, with ONNX Runtime and NumPy only.

    python standalone_onnx.py EXPORT_DIR < sentences.json  ->  {"emissions": [...], "tags": [...]}

The test runs it in a subprocess where importing ``nerservice`` (or TensorFlow/Keras) fails, so it proves
the export is self-contained: nothing here may come from the package.
"""
from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import numpy as np
import onnxruntime as ort


def normalize(word: str) -> str:
    return "".join("0" if unicodedata.category(c) == "Nd" else c for c in word.lower())


def clip(word: str, n: int) -> str:
    return word if len(word) <= n else word[: n // 2] + word[len(word) - (n - n // 2):]


def gazetteer_ids(tokens: list[str], gaz: dict) -> list[int]:
    """The README's matching: longest entry first, left to right; 2 + 2k begins one of type k, 3 + 2k continues."""
    entries = {tuple(k): v for k, v in gaz["entries"]}
    keys, out, i = [normalize(t) for t in tokens], [1] * len(tokens), 0
    while i < len(keys):
        for width in range(min(gaz["max_tokens"], len(keys) - i), 0, -1):
            k = entries.get(tuple(keys[i:i + width]))
            if k is not None:
                out[i:i + width] = [2 + 2 * k] + [3 + 2 * k] * (width - 1)
                i += width
                break
        else:
            i += 1
    return out


def viterbi(em: np.ndarray, start: np.ndarray, trans: np.ndarray, end: np.ndarray) -> list[int]:
    score, back = start + em[0], []
    for t in range(1, len(em)):
        cand = score[:, None] + trans
        back.append(cand.argmax(0))
        score = cand.max(0) + em[t]
    path = [int((score + end).argmax())]
    for b in reversed(back):
        path.append(int(b[path[-1]]))
    return path[::-1]


def main(folder: str) -> None:
    d = Path(folder)
    vocab = json.loads((d / "vocab.json").read_text(encoding="utf-8"))
    crf = json.loads((d / "crf.json").read_text(encoding="utf-8"))
    maxlen = json.loads((d / "config.json").read_text(encoding="utf-8"))["model"]["max_word_length"]
    words = {w: i + 2 for i, w in enumerate(vocab["words"]["items"])}  # 0 = padding, 1 = unknown
    chars = {c: i + 2 for i, c in enumerate(vocab["chars"]["items"])}
    sentences = json.loads(sys.stdin.read())
    rows: dict[tuple[int, str], int] = {}
    index = np.zeros((len(sentences), max(len(s) for s in sentences)), dtype=np.int32)
    for b, sent in enumerate(sentences):
        for t, tok in enumerate(sent):
            key = (words.get(normalize(tok), 1), clip(tok, maxlen))
            index[b, t] = rows.setdefault(key, len(rows))
    width = max(len(c) for _, c in rows)
    word_ids = np.array([w for w, _ in rows], dtype=np.int32)
    word_chars = np.zeros((len(rows), width), dtype=np.int32)
    for u, (_, c) in enumerate(rows):
        word_chars[u, : len(c)] = [chars.get(ch, 1) for ch in c]
    w_sess = ort.InferenceSession(str(d / "words.onnx"), providers=["CPUExecutionProvider"])
    c_sess = ort.InferenceSession(str(d / "context.onnx"), providers=["CPUExecutionProvider"])
    feats = w_sess.run(None, {"word_ids": word_ids, "word_chars": word_chars})[0]
    lengths = np.array([len(s) for s in sentences], dtype=np.int32)
    feed = {"features": feats, "word_index": index, "lengths": lengths}
    result: dict = {}
    if "gazetteer" in vocab:  # a model with a gazetteer: one more context input, 0 at padding
        ids = [gazetteer_ids(s, vocab["gazetteer"]) for s in sentences]
        feed["gazetteer"] = np.zeros(index.shape, dtype=np.int32)
        for b, row in enumerate(ids):
            feed["gazetteer"][b, : len(row)] = row
        result["gazetteer"] = ids
    em = c_sess.run(None, feed)[0].astype(np.float64)
    start, trans, end = (np.asarray(crf[k]) for k in ("start", "transitions", "end"))
    tags = [[crf["tags"][k] for k in viterbi(em[b, :n], start, trans, end)] for b, n in enumerate(lengths)]
    print(json.dumps({**result, "emissions": [em[b, :n].tolist() for b, n in enumerate(lengths)], "tags": tags}))


if __name__ == "__main__":
    main(sys.argv[1])
