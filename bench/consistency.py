"""Document-level label consistency, measured on saved models (BENCHMARKS.md, session 21: not adopted — on
dev it changed nothing on linnaeus and at most +0.12 on NCBI-disease): entity F1 of the model's own tags and of
the harmonised tags, per split, per pseudo-document size and ``min_share``.

The rule (``harmonize``): every predicted entity of at most ``max_tokens`` tokens votes for its
exact token sequence and label. A sequence takes the label most of its predictions carry (ties: the label
that sorts first). If at least ``min_share`` of the sequence's occurrences in the document are predicted as
that label, each other occurrence becomes an entity of that label — unless it overlaps a predicted entity or
one added before it; longer sequences go first, so "pileated woodpeckers" is settled before "woodpeckers". An
occurrence inside a longer predicted entity is part of another name and is not counted.
Predictions are only ever added, never removed. Work is bounded by the document's tokens times the number of
distinct predicted sequences that start with each token, and the caller bounds the document.

Why it was tried: biomedical documents repeat their entities, and a BiLSTM-CRF tags each sentence alone. What
the measurement showed: the models already tag a string the same way nearly everywhere — most mentions they miss
(linnaeus: "L . whitmani", "Pileated Woodpecker") are missed at every occurrence (``nerservice evaluate --errors``).

The benchmark corpora keep sentences in document order but mark no document boundaries,
so a document is approximated by blocks of N consecutive sentences (a block may straddle two documents or cut
one; an abstract is ~10 sentences, a linnaeus full text ~100s). Settings are chosen on dev; test is printed
beside them for the record.

    python bench/consistency.py --model RUN/model-best [--model ...] --corpus C --blocks 10 25 50 --shares 0.25 0.5

Each model is tagged once per split; the grid is pure post-processing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nerservice.artifacts.formats import load_model  # noqa: E402
from nerservice.data.readers import read_corpus  # noqa: E402
from nerservice.data.schemes import spans  # noqa: E402
from nerservice.metrics import entity_scores  # noqa: E402

Key = tuple[str, ...]


@dataclass(frozen=True)
class Added:
    """An entity the rule added: sentence index in the document, token span, label, and the predicted
    entities of the same string it follows."""

    sentence: int
    start: int
    end: int
    label: str
    sources: tuple[tuple[int, int, int], ...]  # (sentence, start, end) of the predictions it follows


def harmonize(tokens: Sequence[Sequence[str]], tags: Sequence[Sequence[str]], *, min_share: float = 0.5,
              max_tokens: int = 8) -> tuple[list[list[str]], list[Added]]:
    """One document's sentences (tokens) and predicted IOB2 tags → the tags with the added entities, and
    the entities added (in document order)."""
    if len(tokens) != len(tags):
        raise ValueError(f"{len(tokens)} sentences of tokens but {len(tags)} of tags")
    if not 0.0 < min_share <= 1.0:
        raise ValueError(f"min_share {min_share} not in (0, 1]")
    taken: list[list[bool]] = []  # token positions inside a predicted or added entity
    predicted: dict[tuple[int, int, int], str] = {}
    votes: dict[Key, Counter[str]] = defaultdict(Counter)
    where: dict[Key, list[tuple[int, int, int]]] = defaultdict(list)
    for si, (toks, tgs) in enumerate(zip(tokens, tags)):
        if len(toks) != len(tgs):
            raise ValueError(f"sentence {si}: {len(toks)} tokens but {len(tgs)} tags")
        taken.append([False] * len(toks))
        for s, e, label in spans(tgs):
            taken[si][s:e] = [True] * (e - s)
            predicted[(si, s, e)] = label
            if e - s <= max_tokens:
                key = tuple(toks[s:e])
                votes[key][label] += 1
                where[key].append((si, s, e))
    if not votes:
        return [list(t) for t in tags], []
    by_first: dict[str, list[Key]] = defaultdict(list)
    for key in votes:
        by_first[key[0]].append(key)
    occurrences: dict[Key, list[tuple[int, int]]] = defaultdict(list)
    for si, toks in enumerate(tokens):
        for p, tok in enumerate(toks):
            for key in by_first.get(tok, ()):
                if tuple(toks[p:p + len(key)]) == key:
                    occurrences[key].append((si, p))
    out = [list(t) for t in tags]
    added: list[Added] = []
    for key in sorted(votes, key=lambda k: (-len(k), k)):
        label = min(votes[key], key=lambda lab: (-votes[key][lab], lab))
        n = len(key)
        # An occurrence inside a longer (or shifted) predicted entity is part of another name: it neither
        # counts against the share nor gets a label.
        occ = [(si, p) for si, p in occurrences[key]
               if (si, p, p + n) in predicted or not any(taken[si][p:p + n])]
        agreeing = [(si, p) for si, p in occ if predicted.get((si, p, p + n)) == label]
        if len(agreeing) == len(occ) or len(agreeing) < min_share * len(occ):
            continue
        sources = tuple((si, s, e) for si, s, e in where[key] if predicted[(si, s, e)] == label)
        for si, p in occ:
            if any(taken[si][p:p + n]):
                continue
            taken[si][p:p + n] = [True] * n
            out[si][p:p + n] = [f"B-{label}"] + [f"I-{label}"] * (n - 1)
            added.append(Added(si, p, p + n, label, sources))
    added.sort(key=lambda a: (a.sentence, a.start))
    return out, added


def blocks(n_sentences: int, size: int) -> list[range]:
    """Consecutive blocks of ``size`` sentences (0 = one block of everything)."""
    size = size or n_sentences
    return [range(a, min(a + size, n_sentences)) for a in range(0, n_sentences, size)]


def harmonized(tokens: list[list[str]], tags: list[list[str]], size: int, share: float) -> tuple[list[list[str]], int]:
    out: list[list[str]] = []
    added = 0
    for block in blocks(len(tokens), size):
        new, extra = harmonize([tokens[i] for i in block], [tags[i] for i in block], min_share=share)
        out += new
        added += len(extra)
    return out, added


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", required=True, help="model folder (repeat for seeds)")
    ap.add_argument("--corpus", required=True, help="folder with devel.tsv and test.tsv")
    ap.add_argument("--blocks", type=int, nargs="+", default=[10, 25, 50, 100])
    ap.add_argument("--shares", type=float, nargs="+", default=[0.01, 0.25, 0.5])
    ap.add_argument("--json-out")
    args = ap.parse_args()
    result: dict = {"corpus": args.corpus, "models": args.model, "runs": {}}
    for split, name in (("dev", "devel.tsv"), ("test", "test.tsv")):
        corpus = read_corpus(Path(args.corpus) / name).sentences
        tokens = [list(s.tokens) for s in corpus]
        gold = [list(s.tags) for s in corpus]
        rows: dict[str, list[float]] = {}
        for model_dir in args.model:
            clock = time.perf_counter()
            pred = load_model(model_dir).predictor().predict_tags(tokens)
            tag_s = time.perf_counter() - clock
            rows.setdefault("model", []).append(entity_scores(gold, pred)["micro"]["f1"])
            for size in args.blocks:
                for share in args.shares:
                    new, added = harmonized(tokens, pred, size, share)
                    f1 = entity_scores(gold, new)["micro"]["f1"]
                    rows.setdefault(f"blocks={size} share={share}", []).append(f1)
                    rows.setdefault(f"blocks={size} share={share} added", []).append(added)
            print(f"{split} {model_dir}: tagged in {tag_s:.1f} s", file=sys.stderr)
        result["runs"][split] = rows
        base = statistics.mean(rows["model"])
        print(f"\n{split} ({len(corpus)} sentences), mean entity F1 over {len(args.model)} model(s): {100 * base:.2f}")
        for key, values in rows.items():
            if key == "model" or key.endswith("added"):
                continue
            mean = statistics.mean(values)
            print(f"  {key:<28} {100 * mean:6.2f} ({100 * (mean - base):+.2f})  per model "
                  + " / ".join(f"{100 * v:.2f}" for v in values)
                  + f"  added {statistics.mean(rows[key + ' added']):.0f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
