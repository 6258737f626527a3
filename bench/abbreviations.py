"""Abbreviation definitions as a document-level post-process, measured on saved models: a short form defined in
a document ("spinocerebellar ataxia type 1 ( SCA1 )", Schwartz & Hearst 2003) takes its long form's label at
every occurrence in that document ("add"), and, with "add+remove", loses a predicted label where its long
form is no entity. Why: on NCBI-disease the strings a default model misses or falsely finds most are
abbreviations (SCA1, SCA2, DM, APC, CT: ``nerservice evaluate --errors``).

Measured and not adopted (BENCHMARKS.md, session 21): on a CPU default NCBI-disease model (seed 42) "add" gave
dev +0.37..+0.39 and test -0.08..-0.47, "add+remove" dev -0.08..-0.32 — one seed, dev inside seed noise.

    python bench/abbreviations.py --model RUN/model-best [--model ...] --corpus C --blocks 10 20 0

Documents are approximated by blocks of N consecutive sentences (the benchmark corpora mark no document
boundaries; an NCBI-disease abstract is ~10 sentences). Chosen on dev; test printed beside it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nerservice.artifacts.formats import load_model  # noqa: E402
from nerservice.data.readers import read_corpus  # noqa: E402
from nerservice.data.schemes import spans  # noqa: E402
from nerservice.metrics import entity_scores  # noqa: E402


def long_form_start(words: Sequence[str], short: str) -> int | None:
    """Schwartz & Hearst's match: the index in ``words`` where the long form of ``short`` starts (the long form
    runs to the end of ``words``), or None. Characters of the short form are matched right to left, the first
    one at the start of a word."""
    text = " ".join(words)
    s, l_ = len(short) - 1, len(text) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while l_ >= 0 and (text[l_].lower() != c or (s == 0 and l_ > 0 and text[l_ - 1].isalnum())):
            l_ -= 1
        if l_ < 0:
            return None
        l_ -= 1
        s -= 1
    start = text.rfind(" ", 0, l_ + 1) + 1  # the word the match begins in
    return text[:start].count(" ") if start else 0


def definitions(tokens: Sequence[str]) -> list[tuple[int, int, int, int]]:
    """(long start, long end, short start, short end) token spans of "LONG ( SHORT )" in one sentence."""
    out = []
    for i, tok in enumerate(tokens):
        if tok != "(":
            continue
        j = i + 1
        while j < len(tokens) and j - i <= 3 and tokens[j] != ")":
            j += 1
        if j >= len(tokens) or tokens[j] != ")" or j == i + 1:
            continue
        short = "".join(tokens[i + 1:j])
        if not (2 <= len(short) <= 10 and short[0].isalnum() and any(c.isalpha() for c in short)
                and any(c.isupper() for c in short)):
            continue
        window = min(len(short) + 5, 2 * len(short))
        before = list(tokens[max(0, i - window):i])
        k = long_form_start(before, short)
        if k is not None and len(before) - k >= 1:
            out.append((i - len(before) + k, i, i + 1, j))
    return out


def resolve(tokens: list[list[str]], tags: list[list[str]], *, remove: bool) -> tuple[list[list[str]], int, int]:
    """One document: returns new tags, entities added, entities removed."""
    out = [list(t) for t in tags]
    decided: dict[tuple[str, ...], str | None] = {}  # short form -> label of its long form (None: no entity)
    for si, toks in enumerate(tokens):
        ents = spans(out[si])
        for ls, le, ss, se in definitions(toks):
            covering = [lab for a, b, lab in ents if a < le and b >= le and b <= ss]  # ends on the long form
            short = tuple(toks[ss:se])
            if short not in decided:
                decided[short] = covering[0] if covering else None
    added = removed = 0
    for short, label in decided.items():
        n = len(short)
        for si, toks in enumerate(tokens):
            for p in range(len(toks) - n + 1):
                if tuple(toks[p:p + n]) != short:
                    continue
                here = [(a, b, lab) for a, b, lab in spans(out[si]) if a < p + n and b > p]
                if label is not None and not here:
                    out[si][p:p + n] = [f"B-{label}"] + [f"I-{label}"] * (n - 1)
                    added += 1
                elif label is None and remove and len(here) == 1 and here[0][:2] == (p, p + n):
                    out[si][p:p + n] = ["O"] * n
                    removed += 1
    return out, added, removed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--corpus", required=True, help="folder with devel.tsv and test.tsv")
    ap.add_argument("--blocks", type=int, nargs="+", default=[10, 20, 0])
    ap.add_argument("--json-out")
    args = ap.parse_args()
    result: dict = {"corpus": args.corpus, "models": args.model, "runs": {}}
    for split, name in (("dev", "devel.tsv"), ("test", "test.tsv")):
        corpus = read_corpus(Path(args.corpus) / name).sentences
        tokens = [list(s.tokens) for s in corpus]
        gold = [list(s.tags) for s in corpus]
        n_defs = sum(len(definitions(t)) for t in tokens)
        rows: dict[str, list[float]] = {}
        for model_dir in args.model:
            pred = load_model(model_dir).predictor().predict_tags(tokens)
            rows.setdefault("model", []).append(entity_scores(gold, pred)["micro"]["f1"])
            for size in args.blocks:
                for remove in (False, True):
                    new: list[list[str]] = []
                    added = removed = 0
                    step = size or len(tokens)
                    for a in range(0, len(tokens), step):
                        t, x, y = resolve(tokens[a:a + step], pred[a:a + step], remove=remove)
                        new += t
                        added, removed = added + x, removed + y
                    key = f"blocks={size} {'add+remove' if remove else 'add'}"
                    rows.setdefault(key, []).append(entity_scores(gold, new)["micro"]["f1"])
                    rows.setdefault(key + " changed", []).append(added + removed)
        result["runs"][split] = rows
        base = statistics.mean(rows["model"])
        print(f"\n{split} ({len(corpus)} sentences, {n_defs} definitions found), mean entity F1: {100 * base:.2f}")
        for key, values in rows.items():
            if key == "model" or key.endswith("changed"):
                continue
            mean = statistics.mean(values)
            print(f"  {key:<26} {100 * mean:6.2f} ({100 * (mean - base):+.2f})  per model "
                  + " / ".join(f"{100 * v:.2f}" for v in values)
                  + f"  changed {statistics.mean(rows[key + ' changed']):.0f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
