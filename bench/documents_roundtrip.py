"""IOB2 corpora → documents in every format → files → read back → IOB2 sentences; do they come back the same?

    python bench/documents_roundtrip.py --corpora /data/corpora [--export DIR] [--json-out FILE]

Each split of each corpus (``CORPUS/{train,devel,test}.tsv``) becomes documents of 10 sentences
(``nerservice.documents.from_sentences``): title = sentence 1, abstract = the rest for PubTator, BioC and
JSON lines; one sentence per line for BRAT (read back with ``sentences="lines"``).  Everything is read
back in strict mode, so any annotation that does not fit stops the run.  Reported per corpus/split/format:
sentences in and out, whether the sentence lists are identical, how many input sentences come back
exactly, whether every document's token/tag stream is identical, seconds.  ``--export DIR`` also keeps
the PubTator files (DIR/CORPUS/SPLIT.pubtator) for training from documents.  Corpus data never goes into
the repository: DIR and the temporary files live outside it.
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
from nerservice.documents.from_sentences import sentences_to_documents

FORMATS = {"pubtator": "title-abstract", "bioc-xml": "title-abstract", "bioc-json": "title-abstract",
           "jsonl": "title-abstract", "brat": "lines"}


def streams(sentences, per_document: list[int]):
    """Token/tag stream per document, for comparisons that do not depend on sentence boundaries."""
    out, pos = [], 0
    for n in per_document:
        out.append(tuple(p for s in sentences[pos : pos + n] for p in zip(s.tokens, s.tags)))
        pos += n
    return out


def run_one(sentences, fmt: str, tmp: Path) -> dict:
    t0 = time.perf_counter()
    docs = sentences_to_documents(sentences, layout=FORMATS[fmt])  # type: ignore[arg-type]
    target = tmp / (fmt if fmt == "brat" else f"corpus.{fmt}")
    write_documents(docs, target, fmt)
    back = read_documents(target, fmt=fmt)
    corpus = documents_to_sentences(back, options=ConvertOptions(sentences="lines" if fmt == "brat" else "split"))
    got = corpus.sentences
    want_streams = [tuple(p for s in sentences[i : i + 10] for p in zip(s.tokens, s.tags))
                    for i in range(0, len(sentences), 10)]
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
    p.add_argument("--export", help="also write DIR/CORPUS/SPLIT.pubtator")
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
                write_documents(sentences_to_documents(sentences), out / f"{split}.pubtator", "pubtator")
            for fmt in FORMATS:
                with tempfile.TemporaryDirectory() as tmp:
                    row = {"corpus": cdir.name, "split": split, "format": fmt, **run_one(sentences, fmt, Path(tmp))}
                results.append(row)
                print(f"{row['corpus']:<15}{split:<7}{fmt:<10} in {row['sentences_in']:>6} out "
                      f"{row['sentences_out']:>6} identical {row['identical']!s:<6} back-exactly "
                      f"{row['sentences_back_exactly']:>6} streams-identical {row['document_streams_identical']!s:<6}"
                      f" entities {row['entities_in']}→{row['entities_out']} merges {row['sentence_merges']} "
                      f"{row['seconds']}s", flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
