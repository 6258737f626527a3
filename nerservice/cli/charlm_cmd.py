"""nerservice charlm"""
from __future__ import annotations

import argparse

from nerservice.json_stdout import emit_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "charlm", help="pretrain a character language model on unlabelled text (tagger feature model.char_lm)",
        description="Pretrain a forward and a backward character LSTM language model on unlabelled text "
        "(contextual string embeddings, Akbik et al. 2018). Train a tagger with it: `nerservice train ... "
        "--char-lm OUT` (its weights are copied into the tagger, frozen). Text: one token per line, blank lines "
        "between sentences (labelled corpora's files read too, their tags ignored). Use only text you may "
        "train on: never a test split.")
    p.add_argument("--text", nargs="+", required=True, metavar="FILE", help="training text file(s)")
    p.add_argument("--dev", nargs="+", default=[], metavar="FILE", help="held-out text: bits per character "
                   "reported after every epoch; the folder keeps the epoch with the lowest, and training stops "
                   "after `patience` epochs without a new low")
    p.add_argument("--out", required=True, help="output folder (written whole or not at all)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="setting, e.g. units=256, "
                   "epochs=4, max_minutes=30 (see nerservice/charlm/config.py; repeatable)")
    p.add_argument("--json", action="store_true", help="print the training record as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nerservice.charlm.config import CharLMConfig
    from nerservice.charlm.folder import save_char_lm
    from nerservice.charlm.pretrain import pretrain
    from nerservice.data.unlabelled import read_unlabelled

    cfg = CharLMConfig().with_overrides(list(args.set))

    def text(paths: list[str]) -> list[tuple[str, ...]]:
        # The bounds' names in errors are the defaults, max_tokens / max_sentence_tokens: this config's keys.
        return read_unlabelled(paths, max_tokens=cfg.max_tokens,
                               max_sentence_tokens=cfg.max_sentence_tokens).sentences if paths else []

    lm = pretrain(text(args.text), cfg, dev=text(args.dev), log=lambda line: print(line, flush=True))
    lm.record["text"] = list(args.text)
    lm.record["dev_text"] = list(args.dev)
    save_char_lm(args.out, lm)
    if args.json:
        emit_json(lm.record)
    print(f"character LM written to {args.out} ({len(lm.vocab)} characters, {lm.record['train_chars']:,} "
          f"training characters, {lm.record['minutes']:.1f} min; kept epoch {lm.record['kept_epoch']} of "
          f"{len(lm.record['history'])}, stopped by {lm.record['stopped']})")
    return 0
