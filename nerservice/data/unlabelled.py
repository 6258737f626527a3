"""Unlabelled text for distillation: sentences of tokens with no tags (``nerservice distil --unlabelled``).

One token per line, blank lines between sentences, ``-DOCSTART-`` lines skipped — so plain token-per-line
files and the labelled corpora's own files (tsv ``token<TAB>tag``, CoNLL columns) both read, their tags
ignored: the token is the text before the first tab, or (no tab) the first whitespace-separated field.
UTF-8 (BOM and CRLF accepted); an undecodable byte is a ``CorpusEncodingError`` with file and line.

Every input has a bound on its work, checked while reading (so a huge file fails fast, not after it was
parsed): tokens in all (``max_tokens``) and tokens in one sentence (``max_sentence_tokens``: a file with
no blank lines would otherwise be one sentence the size of the file). Both raise ``CorpusTooLargeError``
naming the file, the line and the setting that raises the bound. Nothing is dropped silently: a line whose
first column is empty (a line starting with a tab) is a ``CorpusFormatError``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nerservice.data.readers import _read  # the corpus readers' coded file errors
from nerservice.data.utf8_lines import decode_lines
from nerservice.errors import CorpusError, CorpusFormatError, CorpusTooLargeError, EmptyCorpusError


@dataclass
class UnlabelledText:
    sentences: list[tuple[str, ...]] = field(default_factory=list)
    where: list[tuple[str, int]] = field(default_factory=list)  # (file, 1-based line of the first token)
    files: dict[str, dict[str, int]] = field(default_factory=dict)  # file -> {"sentences", "tokens"}

    @property
    def tokens(self) -> int:
        return sum(len(s) for s in self.sentences)


def read_unlabelled(paths: Sequence[str | Path], *, max_tokens: int, max_sentence_tokens: int,
                    max_tokens_setting: str = "max_tokens",
                    max_sentence_setting: str = "max_sentence_tokens") -> UnlabelledText:
    """Read every file in order into one ``UnlabelledText``. ``*_setting``: the names the errors give for
    the bounds (the caller's config keys, e.g. ``distil.max_unlabelled_tokens``)."""
    if not paths:
        raise CorpusError("no unlabelled files given")
    out = UnlabelledText()
    total = 0
    for item in paths:
        source = str(item)
        lines, _ = decode_lines(_read(Path(item)), source=source, lenient=False)
        n_sent = n_tok = 0
        current: list[str] = []
        first = 0

        def close() -> None:
            nonlocal n_sent, n_tok, current
            if current:
                out.sentences.append(tuple(current))
                out.where.append((source, first))
                n_sent += 1
                n_tok += len(current)
                current = []

        for number, raw in enumerate(lines, start=1):
            line = raw.rstrip("\r")
            if not line.strip():
                close()
                continue
            token = line.split("\t", 1)[0] if "\t" in line else line.split()[0]
            if token == "-DOCSTART-":
                close()
                continue
            if not token:
                raise CorpusFormatError(file=source, line=number, text=line, expected="a token in the first column",
                                        reason="empty token")
            if not current:
                first = number
            current.append(token)
            total += 1
            if len(current) > max_sentence_tokens:
                raise CorpusTooLargeError(
                    f"{source}:{first}: sentence longer than {max_sentence_tokens} tokens (still going at line "
                    f"{number})", hint=f"separate sentences with blank lines, or raise {max_sentence_setting}",
                    file=source, line=first, bound=max_sentence_tokens, setting=max_sentence_setting)
            if total > max_tokens:
                raise CorpusTooLargeError(
                    f"{source}:{number}: unlabelled text over {max_tokens:,} tokens in all",
                    hint=f"pass less text, or raise {max_tokens_setting}", file=source, line=number,
                    bound=max_tokens, setting=max_tokens_setting)
        close()
        if n_sent == 0:
            raise EmptyCorpusError(f"{source}: no tokens", hint="an unlabelled file holds one token per line",
                                   file=source)
        out.files[source] = {"sentences": n_sent, "tokens": n_tok}
    return out

