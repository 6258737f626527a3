"""Evaluate trained models alone and as ensembles (mean CRF scores, ``nerservice/model/ensemble.py``).

    python bench/gpu/ensemble_eval.py --corpus DIR --member NAME=MODEL_DIR ... [--sizes 3 5] [--json-out F]

For each member: dev and test entity F1.  For each ensemble size k in --sizes: every k-subset of the members
(or the first --max-subsets of them, in a fixed order) is evaluated, and the mean, min and max F1 over
subsets are printed — one subset would say as much about seed luck as about ensembling.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="folder with devel.tsv and test.tsv")
    ap.add_argument("--member", action="append", required=True, metavar="NAME=MODEL_DIR")
    ap.add_argument("--sizes", type=int, nargs="+", default=[3, 5])
    ap.add_argument("--max-subsets", type=int, default=10)
    ap.add_argument("--json-out")
    args = ap.parse_args()

    from nerservice.artifacts.formats import load_model
    from nerservice.data import read_corpus
    from nerservice.metrics import evaluate_tags
    from nerservice.model.ensemble import mean_crf
    from nerservice.model.predictor import decode_emissions

    splits = {name: read_corpus(os.path.join(args.corpus, f"{name}.tsv")).sentences for name in ("devel", "test")}
    names, preds = [], []
    for spec in args.member:
        name, _, path = spec.partition("=")
        names.append(name)
        preds.append(load_model(path).predictor(batch_size=256))
    # Emissions once per member and split; every subset reuses them.
    ems = {split: [p.emissions([s.tokens for s in sents]) for p in preds] for split, sents in splits.items()}

    def f1(members: tuple[int, ...], split: str) -> float:
        """What EnsemblePredictor.tag computes (mean emissions, mean CRF, one exact decode), from the cache."""
        mean = [sum(ems[split][i][j] for i in members) / len(members) for j in range(len(splits[split]))]
        tagged = decode_emissions(mean, mean_crf([preds[i].crf_params() for i in members]), preds[0].vocabs.tags.tag,
                                  with_scores=False, batch_size=256, bucket_size=preds[0].bucket_size)
        return evaluate_tags([list(s.tags) for s in splits[split]], [t.tags for t in tagged])["micro"]["f1"]

    result: dict[str, object] = {"members": {}, "ensembles": {}}
    for i, name in enumerate(names):
        row = {split: f1((i,), split) for split in splits}
        result["members"][name] = row  # type: ignore[index]
        print(f"member {name:<24} dev {row['devel']:.4f} test {row['test']:.4f}", flush=True)
    for k in args.sizes:
        if k > len(names):
            continue
        subsets = list(itertools.combinations(range(len(names)), k))[: args.max_subsets]
        rows = [{"members": [names[i] for i in s], **{split: f1(s, split) for split in splits}} for s in subsets]
        tests = [r["test"] for r in rows]
        result["ensembles"][str(k)] = rows  # type: ignore[index]
        print(f"ensemble k={k}: {len(rows)} subsets, test F1 mean {statistics.mean(tests):.4f} "
              f"min {min(tests):.4f} max {max(tests):.4f}; dev mean {statistics.mean(r['devel'] for r in rows):.4f}",
              flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
