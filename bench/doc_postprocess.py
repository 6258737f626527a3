"""Document-level post-processes of a model's tags, measured on saved models; neither was adopted
(BENCHMARKS.md, session 21).

``--method consistency``: label consistency — a string the model tags in one place of a document is tagged at
its other occurrences there. Why it was tried: biomedical documents repeat their entities, and a BiLSTM-CRF
tags each sentence alone. What the measurement showed: the models already tag a string the same way nearly
everywhere — most mentions they miss (linnaeus: "L . whitmani", "Pileated Woodpecker") are missed at every
occurrence (``nerservice evaluate --errors``); dev F1 moved by 0.00 on linnaeus and -0.71..+0.12 on
NCBI-disease. The rule (``harmonize``): every predicted entity of at most ``max_tokens`` tokens votes for its
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

``--method abbreviations``: a short form defined in a document ("spinocerebellar ataxia type 1 ( SCA1 )",
Schwartz & Hearst 2003) takes its long form's label at every occurrence in that document ("add"), and, with
"add+remove", loses a predicted label where its long form is no entity. Why: on NCBI-disease the strings a
default model misses or falsely finds most are abbreviations (SCA1, SCA2, DM, APC, CT).

Documents are approximated by blocks of N consecutive sentences: the benchmark corpora keep sentences in
document order but mark no document boundaries (a block may straddle two documents or cut one; an abstract is
~10 sentences, a linnaeus full text ~100s). Settings are chosen on dev; test is printed beside them.

    python bench/doc_postprocess.py --method consistency --model RUN/model-best [--model ...] --corpus C \
        --blocks 10 50 200 0 --shares 0.01 0.25 0.5
    python bench/doc_postprocess.py --method abbreviations --model RUN/model-best --corpus C --blocks 10 20 0

Each model is tagged once per split; the grid is pure post-processing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
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

Tags = list[list[str]]
# one document's tokens and tags -> new tags and the number of entities changed
PostProcess = Callable[[Tags, Tags], tuple[Tags, int]]


def variants(args: argparse.Namespace) -> dict[str, PostProcess]:
    """The settings of ``--method``, each as one document's tags -> (new tags, entities changed)."""
    def consistency(share: float) -> PostProcess:
        def fn(tokens: Tags, tags: Tags) -> tuple[Tags, int]:
            new, added = harmonize(tokens, tags, min_share=share)
            return new, len(added)
        return fn

    def abbreviations(remove: bool) -> PostProcess:
        def fn(tokens: Tags, tags: Tags) -> tuple[Tags, int]:
            new, added, removed = resolve(tokens, tags, remove=remove)
            return new, added + removed
        return fn

    if args.method == "consistency":
        return {f"share={share}": consistency(share) for share in args.shares}
    return {"add": abbreviations(False), "add+remove": abbreviations(True)}


def by_blocks(fn: PostProcess, tokens: Tags, tags: Tags, size: int) -> tuple[Tags, int]:
    """``fn`` over consecutive blocks of ``size`` sentences (0 = one block of everything)."""
    out: Tags = []
    changed = 0
    step = size or max(len(tokens), 1)
    for a in range(0, len(tokens), step):
        new, n = fn(tokens[a:a + step], tags[a:a + step])
        out += new
        changed += n
    return out, changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", choices=["consistency", "abbreviations"], required=True)
    ap.add_argument("--model", action="append", required=True, help="model folder (repeat for seeds)")
    ap.add_argument("--corpus", required=True, help="folder with devel.tsv and test.tsv")
    ap.add_argument("--blocks", type=int, nargs="+", default=[10, 50, 0])
    ap.add_argument("--shares", type=float, nargs="+", default=[0.01, 0.25, 0.5], help="consistency: min_share")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    result: dict = {"method": args.method, "corpus": args.corpus, "models": args.model, "runs": {}}
    for split, name in (("dev", "devel.tsv"), ("test", "test.tsv")):
        corpus = read_corpus(Path(args.corpus) / name).sentences
        tokens = [list(s.tokens) for s in corpus]
        gold = [list(s.tags) for s in corpus]
        rows: dict[str, list[float]] = {}
        for model_dir in args.model:
            pred = load_model(model_dir).predictor().predict_tags(tokens)
            rows.setdefault("model", []).append(entity_scores(gold, pred)["micro"]["f1"])
            for size in args.blocks:
                for label, fn in variants(args).items():
                    new, changed = by_blocks(fn, tokens, pred, size)
                    rows.setdefault(f"blocks={size} {label}", []).append(entity_scores(gold, new)["micro"]["f1"])
                    rows.setdefault(f"blocks={size} {label} changed", []).append(changed)
        result["runs"][split] = rows
        base = statistics.mean(rows["model"])
        print(f"\n{split} ({len(corpus)} sentences), mean entity F1 over {len(args.model)} model(s): {100 * base:.2f}"
              " (per model " + " / ".join(f"{100 * v:.2f}" for v in rows["model"]) + ")")
        for key, values in rows.items():
            if key == "model" or key.endswith("changed"):
                continue
            mean = statistics.mean(values)
            print(f"  {key:<28} {100 * mean:6.2f} ({100 * (mean - base):+.2f})  per model "
                  + " / ".join(f"{100 * v:.2f}" for v in values)
                  + f"  changed {statistics.mean(rows[key + ' changed']):.0f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
