"""IOB2 corpora → documents in every format → files → read back → IOB2 sentences; do they come back the same?

    python bench/documents_roundtrip.py --corpora /data/corpora [--tokens words whitespace] [--export DIR]
                                        [--export-layout title-abstract|sentence] [--json-out FILE]

Each split of each corpus (``CORPUS/{train,devel,test}.tsv``) becomes documents
(``nerservice.documents.from_sentences``), one variant per row:
  * ``pubtator``: documents of 10 sentences (title = sentence 1, abstract = the rest), read back with the
    sentence splitter: PubTator holds no sentence boundaries, so this measures the re-split;
  * ``pubtator-sentence``: one PubTator document per sentence (the title), read with ``sentences="lines"``;
  * ``bioc-xml``, ``bioc-json``, ``jsonl``: documents of 10 sentences with their sentence spans;
  * ``brat``: one sentence per line, read back with ``sentences="lines"``.
Each variant is read with every ``--tokens`` mode (``words``: the project's tokenizer; ``whitespace``: the
file's own space-separated tokens).  Everything is read back in strict mode, so any annotation that does
not fit stops the run.  Reported per corpus/split/variant/tokens: sentences in and out, whether the
sentence lists are identical, how many input sentences come back exactly, whether every document's
token/tag stream is identical, seconds.  Per corpus/split, ``causes`` counts why the splitter and the
tokenizer cannot give the corpus back by themselves: tokens the tokenizer splits differently, sentences
the splitter cuts inside, boundaries between consecutive sentences it does not cut.  ``--export DIR``
also keeps the PubTator files (DIR/CORPUS/SPLIT.pubtator) for training from documents.  Corpus data never
goes into the repository: DIR and the temporary files live outside it.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from nerservice.data import read_corpus
from nerservice.documents import ConvertOptions, documents_to_sentences, read_documents, write_documents
from nerservice.documents.from_sentences import EXACT_LAYOUTS, sentences_to_documents
from nerservice.text.sentences import split_sentences
from nerservice.text.tokenizer import tokenize

# variant → (format, layout, sentence mode when reading back): PubTator re-split, then every format in the
# layout that keeps its sentence boundaries
VARIANTS = {"pubtator": ("pubtator", "title-abstract", "split"),
            **{("pubtator-sentence" if f == "pubtator" else f): (f, *how) for f, how in EXACT_LAYOUTS.items()}}


def causes(sentences) -> dict:
    """Why splitter + tokenizer alone do not give these sentences back from their space-joined text:
    tokens the tokenizer splits; sentences the splitter cuts inside (a cut at "digit . digit" is a decimal
    written "2 . 5" by the corpus's tokenisation); corpus boundaries it does not cut (the sentence has no
    final . ! ?, e.g. a heading; the next one starts lower-case or with a symbol; else one of its rules)."""
    texts = [" ".join(s.tokens) for s in sentences]
    split_tokens: Counter[str] = Counter()
    for s in sentences:
        for tok in s.tokens:
            if len(tokenize(tok)) != 1:
                split_tokens[tok] += 1
    inside: Counter[str] = Counter()
    for t in texts:
        cuts = [e for _, e in split_sentences(t)][:-1]
        if cuts:
            decimal = any(t[c - 3 : c - 2].isdigit() and t[c + 1 : c + 2].isdigit() for c in cuts if c >= 3)
            inside["decimal" if decimal else "other"] += 1
    not_cut: Counter[str] = Counter()
    for a, b in zip(texts, texts[1:]):
        if len(a) in {e for _, e in split_sentences(f"{a} {b}")}:
            continue
        not_cut["no_final_stop" if a[-1] not in ".!?" else
                "next_not_upper" if not (b[0].isupper() or b[0].isdigit()) else "rule"] += 1
    return {"tokens_split_differently": sum(split_tokens.values()),
            "sentences_with_such_tokens": sum(1 for s in sentences if any(split_tokens[t] for t in s.tokens)),
            "top_split_tokens": split_tokens.most_common(12), "sentences_cut_inside": sum(inside.values()),
            "cut_inside_at_a_decimal": inside["decimal"], "boundaries": max(0, len(texts) - 1),
            "boundaries_not_cut": sum(not_cut.values()), **{f"not_cut_{k}": v for k, v in sorted(not_cut.items())}}


def streams(sentences, per_document: list[int]):
    """Token/tag stream per document, for comparisons that do not depend on sentence boundaries."""
    out, pos = [], 0
    for n in per_document:
        out.append(tuple(p for s in sentences[pos : pos + n] for p in zip(s.tokens, s.tags)))
        pos += n
    return out


def run_one(sentences, variant: str, tokens: str, tmp: Path) -> dict:
    t0 = time.perf_counter()
    fmt, layout, mode = VARIANTS[variant]
    docs = sentences_to_documents(sentences, layout=layout)  # type: ignore[arg-type]
    target = tmp / (fmt if fmt == "brat" else f"corpus.{fmt}")
    write_documents(docs, target, fmt)
    back = read_documents(target, fmt=fmt)
    corpus = documents_to_sentences(back, options=ConvertOptions(sentences=mode, tokens=tokens))  # type: ignore[arg-type]
    got = corpus.sentences
    size = 1 if layout == "sentence" else 10
    want_streams = [tuple(p for s in sentences[i : i + size] for p in zip(s.tokens, s.tags))
                    for i in range(0, len(sentences), size)]
    found = Counter(got)
    exact = 0
    for s in sentences:
        if found[s] > 0:
            found[s] -= 1
            exact += 1
    r = corpus.documents_report
    return {"sentences_in": len(sentences), "sentences_out": len(got), "identical": got == list(sentences),
            "sentences_back_exactly": exact, "document_streams_identical": streams(got, corpus.per_document) == want_streams,
            "documents": r.documents, "entities_in": sum(len(d.annotations) for d in docs),
            "entities_out": sum(r.entities.values()), "sentence_merges": r.merged_sentences,
            "adds_up": r.adds_up, "seconds": round(time.perf_counter() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", required=True, help="folder of CORPUS/{train,devel,test}.tsv")
    p.add_argument("--only", nargs="+", help="corpus names (default: all)")
    p.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    p.add_argument("--tokens", nargs="+", choices=["words", "whitespace"], default=["words", "whitespace"])
    p.add_argument("--export", help="also write DIR/CORPUS/SPLIT.pubtator")
    p.add_argument("--export-layout", choices=["title-abstract", "sentence"], default="title-abstract",
                   help="documents of 10 sentences (re-split on reading) or one per sentence (read with "
                   "--sentences lines)")
    p.add_argument("--json-out", help="write all figures as JSON")
    args = p.parse_args(argv)
    root = Path(args.corpora)
    results = []
    for cdir in sorted(d for d in root.iterdir() if d.is_dir() and (not args.only or d.name in args.only)):
        for split in ("train", "devel", "test"):
            path = cdir / f"{split}.tsv"
            if not path.exists():
                continue
            sentences = read_corpus(path).sentences
            if args.export:
                out = Path(args.export) / cdir.name
                write_documents(sentences_to_documents(sentences, layout=args.export_layout),
                                out / f"{split}.pubtator", "pubtator")
            why = causes(sentences)
            results.append({"corpus": cdir.name, "split": split, "causes": why})
            print(f"{cdir.name:<15}{split:<7}causes {json.dumps(why)}", flush=True)
            for variant in args.variants:
                for tokens in args.tokens:
                    with tempfile.TemporaryDirectory() as tmp:
                        row = {"corpus": cdir.name, "split": split, "format": variant, "tokens": tokens,
                               **run_one(sentences, variant, tokens, Path(tmp))}
                    results.append(row)
                    print(f"{row['corpus']:<15}{split:<7}{variant:<18}{tokens:<11} in {row['sentences_in']:>6} out "
                          f"{row['sentences_out']:>6} identical {row['identical']!s:<6} back-exactly "
                          f"{row['sentences_back_exactly']:>6} streams-identical "
                          f"{row['document_streams_identical']!s:<6} entities {row['entities_in']}→"
                          f"{row['entities_out']} merges {row['sentence_merges']} {row['seconds']}s", flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
