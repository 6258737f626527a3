"""Write sentences as tsv or CoNLL in any scheme, so that reading the output gives the same sentences.

A token that could not survive the round trip (empty, a line break, a column separator, blanks at its
edges, a leading BOM, or a ``-DOCSTART-`` marker) is refused with an error naming the sentence, rather than written
into a file that would later read back differently.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable, Literal

from nerservice.data.schemes import Scheme, from_iob2
from nerservice.data.sentence import Sentence
from nerservice.errors import ConfigError, CorpusError

_SEPARATOR = {"tsv": "\t", "conll": " "}
_FORBIDDEN = {"tsv": ("\n", "\t"), "conll": ("\n", "\t", " ")}


def _check_token(token: str, *, fmt: str, where: str) -> None:
    problem = None
    if not token:
        problem = "is empty"
    elif any(ch in token for ch in _FORBIDDEN[fmt]):
        problem = f"contains a line break or a {fmt} column separator"
    elif token != token.strip(" \t"):
        problem = "starts or ends with a blank"
    elif token[0] == "\ufeff":  # at the start of a file it would be taken for (and dropped as) a BOM
        problem = "starts with a byte-order mark"
    elif token.startswith("-DOCSTART-"):
        problem = "would be read as a -DOCSTART- marker"
    if problem:
        raise CorpusError(f"{where}: cannot write token {token!r}: it {problem}",
                          hint="clean the token (or use fmt='tsv', which allows inner spaces)", token=token)


def _format_sentence(sentence: Sentence, *, fmt: str, scheme: Scheme, index: int) -> str:
    where = f"sentence {index}" + (f" ({sentence.file}:{sentence.line})" if sentence.file else "")
    if not sentence.tokens:
        raise CorpusError(f"{where}: cannot write an empty sentence", hint="drop empty sentences first")
    sep = _SEPARATOR[fmt]
    for token in sentence.tokens:
        _check_token(token, fmt=fmt, where=where)
    tags = from_iob2(sentence.tags, scheme)
    return "\n".join(token + sep + tag for token, tag in zip(sentence.tokens, tags))


def format_corpus(sentences: Iterable[Sentence], *, fmt: Literal["tsv", "conll"] = "tsv",
                  scheme: Scheme = "iob2") -> str:
    """Sentences (IOB2) -> file text in ``fmt`` and ``scheme``: one token per line, a blank line after
    each sentence. CoNLL output has two columns, ``token tag``."""
    if fmt not in _SEPARATOR:
        raise ConfigError(f"unknown corpus format {fmt!r} for writing", hint="use 'tsv' or 'conll'", fmt=fmt)
    blocks = [_format_sentence(s, fmt=fmt, scheme=scheme, index=i) for i, s in enumerate(sentences)]
    return "".join(block + "\n\n" for block in blocks)


def write_corpus(sentences: Iterable[Sentence], path: str | Path, *, fmt: Literal["tsv", "conll"] = "tsv",
                 scheme: Scheme = "iob2") -> None:
    """Write atomically: a reader (or a crashed writer) never leaves or sees a half-written file."""
    path = Path(path)
    data = format_corpus(sentences, fmt=fmt, scheme=scheme).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    # The temporary file sits in the target directory so os.replace is a same-filesystem rename.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; give the corpus the usual readable mode (or keep the replaced file's).
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
