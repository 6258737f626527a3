"""spaCy's side of ``bench/peer_speed.py``; runs inside spaCy's own virtualenv (it imports nothing of ours).

    python peer_spacy.py train --train TSV --dev TSV --out DIR      # one-epoch efficiency NER
    python peer_spacy.py serve --model DIR --data JSON               # timing worker, commands on stdin

``serve`` reads one JSON command per line ({"mode": "pretok" | "raw", "n_process": N, "batch_size": B}) and
answers ``RESULT {"seconds": ..., "tokens": ..., "entities": ...}``: ``pretok`` runs the pipeline on Docs
built from the given tokens (``Doc(vocab, words=...)``, timed too), ``raw`` on the texts (spaCy's tokenizer).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def read_iob2(path: Path) -> list[tuple[list[str], list[str]]]:
    """IOB2 TSV (token<TAB>tag, blank line between sentences) → (words, tags); an I- tag that does not
    continue an entity of its type becomes B- (spaCy rejects ill-formed IOB)."""
    out: list[tuple[list[str], list[str]]] = []
    words: list[str] = []
    tags: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if not line.strip():
            if words:
                out.append((words, tags))
            words, tags = [], []
            continue
        tok, tag = line.split("\t")[:2]
        if tag.startswith("I-") and (not tags or tags[-1] == "O" or tags[-1][2:] != tag[2:]):
            tag = "B-" + tag[2:]
        words.append(tok)
        tags.append(tag)
    return out


def to_docbin(src: Path, dst: Path) -> int:
    import spacy
    from spacy.tokens import Doc, DocBin

    nlp = spacy.blank("en")
    db = DocBin()
    sents = read_iob2(src)
    for words, tags in sents:
        db.add(Doc(nlp.vocab, words=words, ents=tags))
    db.to_disk(dst)
    return len(sents)


def train(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    n_train = to_docbin(Path(args.train), out / "train.spacy")
    n_dev = to_docbin(Path(args.dev), out / "dev.spacy")
    print(f"spaCy DocBins: train {n_train} sentences, dev {n_dev}", flush=True)
    spacy_cli = [sys.executable, "-m", "spacy"]
    subprocess.run(spacy_cli + ["init", "config", str(out / "config.cfg"), "--lang", "en", "--pipeline", "ner",
                                "--optimize", "efficiency", "--force"], check=True)
    subprocess.run(spacy_cli + ["train", str(out / "config.cfg"), "--output", str(out / "trained"),
                                "--paths.train", str(out / "train.spacy"), "--paths.dev", str(out / "dev.spacy"),
                                "--training.max_epochs", str(args.epochs)], check=True)


def serve(args: argparse.Namespace) -> None:
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.load(args.model)
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    sentences, texts = data["sentences"], data["texts"]

    def run(mode: str, n_process: int, batch_size: int) -> dict[str, float]:
        t0 = time.perf_counter()
        inputs = [Doc(nlp.vocab, words=s) for s in sentences] if mode == "pretok" else texts
        tokens = entities = 0
        for doc in nlp.pipe(inputs, batch_size=batch_size, n_process=n_process):
            tokens += len(doc)
            entities += len(doc.ents)
        return {"seconds": time.perf_counter() - t0, "tokens": tokens, "entities": entities}

    for mode in ("pretok", "raw"):  # warm-up (first-call allocations, lazy tables)
        run(mode, 1, 256)
    print("READY", flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        print("RESULT " + json.dumps(run(cmd["mode"], cmd.get("n_process", 1), cmd.get("batch_size", 256))),
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--train", required=True)
    t.add_argument("--dev", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--epochs", type=int, default=1)
    s = sub.add_parser("serve")
    s.add_argument("--model", required=True)
    s.add_argument("--data", required=True)
    args = ap.parse_args()
    train(args) if args.cmd == "train" else serve(args)


if __name__ == "__main__":
    main()
