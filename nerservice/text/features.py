"""Sentences → the named arrays the model consumes.

Arrays cross module boundaries as a dict of named int32 arrays, listed in ``text/inputs.py``.

Why distinct words: the char encoders (CNN + BiLSTM over characters) dominate CPU time, and a batch of
biomedical text repeats words heavily ("the", "of", "cancer"), so encoding each distinct word once and
gathering is 2-4x cheaper than encoding every token, with identical results.

A corpus is encoded once (``EncodedCorpus``); building a batch is then pure NumPy (no per-token Python),
which keeps the host ahead of a GPU.  A ``ShapePolicy`` decides how shapes are padded: dynamic shapes suit
TensorFlow (``tf.function`` with ``None`` dimensions never retraces); XLA/JAX compile once per shape, so
there batch size is fixed, word rows round up to a power of two and the char axis is fixed.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nerservice.encoder.wordpiece import WordPiece
from nerservice.text.char_stream import sentence_positions
from nerservice.text.inputs import TAG_IDS
from nerservice.text.vocab import Vocabularies, Vocabulary, normalize_word


def clip_word(word: str, max_len: int) -> str:
    """Keep prefix and suffix of very long words: both carry the morphology (-itis, -ase, 5-...)."""
    if len(word) <= max_len:
        return word
    head = max_len // 2
    return word[:head] + word[len(word) - (max_len - head):]


def round_up(n: int, multiple: int) -> int:
    return max(multiple, -(-n // multiple) * multiple)


def flat_offsets(sizes: Sequence[int]) -> np.ndarray:
    """Start of each item in a flat concatenation, and the total at the end."""
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(np.asarray(sizes, dtype=np.int64), out=offsets[1:])
    return offsets


def padded_rows(flat: np.ndarray, offsets: np.ndarray, idx: np.ndarray, b: int, multiple: int) -> np.ndarray:
    """Sentences ``idx`` of a flat per-sentence array as (b, width) rows, right-padded with 0; the width is
    rounded up to ``multiple`` so that few distinct shapes reach a compiler."""
    starts, ends = offsets[idx], offsets[idx + 1]
    out = np.zeros((b, round_up(int((ends - starts).max(initial=1)), multiple)), dtype=np.int32)
    for r, (a, e) in enumerate(zip(starts, ends)):
        out[r, : e - a] = flat[a:e]
    return out


def token_grid(values: np.ndarray, b: int, t: int, rows: np.ndarray, within: np.ndarray,
               src: np.ndarray) -> np.ndarray:
    """A flat per-token array's batch tokens (``src``) placed in the (b, t) grid, 0 at padding."""
    grid = np.zeros((b, t), dtype=np.int32)
    grid[rows, within] = values[src]
    return grid


@dataclass(frozen=True)
class ShapePolicy:
    time_multiple: int = 8
    char_multiple: int = 4
    fixed_batch: int | None = None  # pad the batch axis with empty sentences up to this size
    fixed_chars: bool = False  # char axis = max_word_length (rounded to char_multiple)
    rows_pow2: bool = False  # distinct-word rows rounded up to a power of two (min 64)
    batch_pow2: bool = False  # sentence rows rounded up to 1, 2, 4, .. 32, then multiples of 32 (empty sentences)

    @classmethod
    def for_backend(cls, backend: str, *, batch_size: int, time_multiple: int = 8) -> ShapePolicy:
        if backend == "jax":
            # Measured on the H200 (bench/gpu/profile_step.py): encoding every token's chars (rows = B*T)
            # made the char BiLSTM 80% of the step; distinct words rounded to a power of two cost a few
            # more compiles and keep the step 4x cheaper.
            return cls(time_multiple=time_multiple, fixed_batch=batch_size, fixed_chars=True, rows_pow2=True)
        return cls(time_multiple=time_multiple)

    @classmethod
    def bounded(cls, *, time_multiple: int = 8) -> ShapePolicy:
        """Few distinct shapes for compiled (XLA) inference whatever the batch: distinct words and chars
        bounded as for JAX, the batch axis rounded (``batch_pow2``) instead of padded to the full size."""
        return cls(time_multiple=time_multiple, fixed_chars=True, rows_pow2=True, batch_pow2=True)


class EncodedCorpus:
    """Sentences encoded once into flat arrays; ``batch(indices)`` assembles padded batches with NumPy."""

    def __init__(self, sentences: Sequence[Sequence[str]], vocabs: Vocabularies, *, max_word_length: int,
                 tags: Sequence[Sequence[str]] | None = None, gazetteer_ids: np.ndarray | None = None) -> None:
        """``gazetteer_ids``: every token's dictionary feature, flat, when the caller computed them (training
        text: ``GazetteerBuild.training_ids``); otherwise a model with a gazetteer matches ``vocabs.gazetteer``."""
        self.max_word_length = max_word_length
        self.lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        self.offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=self.offsets[1:])
        # Work per *distinct* token, not per token: a corpus repeats its tokens heavily, and this is the
        # host's main cost in front of a GPU (NCBI test: 0.54 us per token with a per-token loop, 0.10
        # this way). Types are numbered in order of first occurrence, as a per-token loop would.
        index: dict[str, int] = {}
        flat = np.fromiter((index.setdefault(tok, len(index)) for sent in sentences for tok in sent),
                           dtype=np.int64, count=int(self.offsets[-1]))
        norms = [normalize_word(tok) for tok in index]  # per distinct token, in first-occurrence order
        word_of = np.asarray(vocabs.words.ids(norms), dtype=np.int32).reshape(len(index))
        types: dict[str, int] = {"": 0}
        type_of = np.fromiter((types.setdefault(clip_word(tok, max_word_length), len(types)) for tok in index),
                              dtype=np.int32, count=len(index))
        self.token_ids = word_of[flat]
        self.type_ids = type_of[flat]  # distinct clipped surface forms; 0 = padding word
        self.type_lengths = np.zeros(len(types), dtype=np.int32)
        self.type_chars = np.zeros((len(types), max_word_length), dtype=np.int32)
        chars_id = vocabs.chars.id
        for w, t in types.items():
            if w:
                self.type_chars[t, : len(w)] = [chars_id(ch) for ch in w]
                self.type_lengths[t] = len(w)
        self.lm_offsets: np.ndarray | None = None
        if vocabs.lm_chars is not None:
            self._encode_lm(sentences, vocabs.lm_chars)
        self.wp_offsets: np.ndarray | None = None
        if vocabs.word_pieces is not None:
            self._encode_wp(sentences, vocabs.word_pieces)
        self.gazetteer_ids: np.ndarray | None = None
        if vocabs.gazetteer is not None:
            self.gazetteer_ids = (vocabs.gazetteer.ids_of_keys([norms[i] for i in flat], self.offsets.tolist())
                                  if gazetteer_ids is None else np.asarray(gazetteer_ids, dtype=np.int32))
            if self.gazetteer_ids.size != self.offsets[-1]:
                raise ValueError(f"{self.gazetteer_ids.size} gazetteer ids for {self.offsets[-1]} tokens")
        self.tag_ids: np.ndarray | None = None
        if tags is not None:
            tag_id = vocabs.tags.id
            self.tag_ids = np.fromiter((tag_id(x) for ts in tags for x in ts), dtype=np.int32,
                                       count=int(self.offsets[-1]))

    def _encode_lm(self, sentences: Sequence[Sequence[str]], lm_chars: Vocabulary) -> None:
        """Each sentence's characters as the character LM reads them, flat, and per token its two feature
        positions (``text/char_stream.py``)."""
        texts, fwd, bwd = [], [], []
        for sent in sentences:
            text, f, b = sentence_positions(sent)
            texts.append(text)
            fwd.append(f)
            bwd.append(b)
        self.lm_offsets = flat_offsets([len(t) for t in texts])
        self.lm_ids = np.asarray(lm_chars.ids("".join(texts)), dtype=np.int32)
        empty = np.zeros(0, dtype=np.int32)
        self.lm_forward = np.concatenate(fwd) if fwd else empty
        self.lm_backward = np.concatenate(bwd) if bwd else empty

    def _lm_arrays(self, idx: np.ndarray, b: int, t: int, rows: np.ndarray, within: np.ndarray,
                   src: np.ndarray, policy: ShapePolicy) -> dict[str, np.ndarray]:
        if self.lm_offsets is None:  # a model without a character LM: placeholders of (almost) no size
            zeros = np.zeros((b, t), dtype=np.int32)
            return {"lm_chars": np.zeros((b, 1), dtype=np.int32), "lm_forward": zeros, "lm_backward": zeros}
        # Rounded like the time axis, coarser.
        return {"lm_chars": padded_rows(self.lm_ids, self.lm_offsets, idx, b, 8 * policy.time_multiple),
                "lm_forward": token_grid(self.lm_forward, b, t, rows, within, src),
                "lm_backward": token_grid(self.lm_backward, b, t, rows, within, src)}

    def _encode_wp(self, sentences: Sequence[Sequence[str]], pieces: WordPiece) -> None:
        """Each sentence's word pieces for the encoder, flat, and per token its first piece's position."""
        ids, first = [], []
        for sent in sentences:
            i, f = pieces.encode(sent)
            ids.append(i)
            first.append(f)
        self.wp_offsets = flat_offsets([a.size for a in ids])
        empty = np.zeros(0, dtype=np.int32)
        self.wp_ids = np.concatenate(ids) if ids else empty
        self.wp_first = np.concatenate(first) if first else empty

    def _wp_arrays(self, idx: np.ndarray, b: int, t: int, rows: np.ndarray, within: np.ndarray,
                   src: np.ndarray, policy: ShapePolicy) -> dict[str, np.ndarray]:
        if self.wp_offsets is None:  # a model without an encoder: placeholders of (almost) no size
            return {"wp_ids": np.zeros((b, 1), dtype=np.int32), "wp_index": np.zeros((b, t), dtype=np.int32)}
        return {"wp_ids": padded_rows(self.wp_ids, self.wp_offsets, idx, b, 2 * policy.time_multiple),
                "wp_index": token_grid(self.wp_first, b, t, rows, within, src)}

    def __len__(self) -> int:
        return int(self.lengths.size)

    def batch(self, indices: Sequence[int] | np.ndarray, policy: ShapePolicy = ShapePolicy(),
              *, with_tags: bool = True) -> dict[str, np.ndarray]:
        idx = np.asarray(indices, dtype=np.int64)
        n_real = idx.size
        b = max(policy.fixed_batch or n_real, n_real)
        if policy.batch_pow2:  # powers of two up to 32, then multiples of 32: at most 1/8 of the rows padding
            b = round_up(b, 32) if b > 32 else (1 << (b - 1).bit_length() if b > 1 else 1)
        lengths = np.zeros(b, dtype=np.int32)
        lengths[:n_real] = self.lengths[idx]
        t = round_up(int(lengths.max(initial=1)), policy.time_multiple)
        # Flat positions of every real token, and where each goes in the (B, T) grid.
        rows = np.repeat(np.arange(n_real), lengths[:n_real])
        starts = self.offsets[idx]
        within = np.arange(rows.size) - np.repeat(np.cumsum(lengths[:n_real]) - lengths[:n_real], lengths[:n_real])
        src = np.repeat(starts, lengths[:n_real]) + within
        token_ids = np.zeros((b, t), dtype=np.int32)
        token_ids[rows, within] = self.token_ids[src]
        uniq, inverse = np.unique(self.type_ids[src], return_inverse=True)
        # Row 0 of word_chars is the padding word; shift real types by one unless type 0 is absent.
        types = np.concatenate([[0], uniq[uniq != 0]])
        index_of = np.searchsorted(types, self.type_ids[src])
        n_rows = types.size
        if policy.rows_pow2:
            n_rows = max(64, 1 << (n_rows - 1).bit_length())
        c_real = int(self.type_lengths[types].max(initial=1))
        c = (round_up(self.max_word_length, policy.char_multiple) if policy.fixed_chars
             else min(round_up(c_real, policy.char_multiple), round_up(self.max_word_length, policy.char_multiple)))
        word_chars = np.zeros((n_rows, c), dtype=np.int32)
        width = min(c, self.max_word_length)
        word_chars[: types.size, :width] = self.type_chars[types, :width]
        word_index = np.zeros((b, t), dtype=np.int32)
        word_index[rows, within] = index_of
        del inverse
        gazetteer = np.zeros((b, t), dtype=np.int32)
        if self.gazetteer_ids is not None:
            gazetteer[rows, within] = self.gazetteer_ids[src]
        out = {"token_ids": token_ids, "lengths": lengths, "word_chars": word_chars, "word_index": word_index,
               **self._lm_arrays(idx, b, t, rows, within, src, policy), "gazetteer": gazetteer,
               **self._wp_arrays(idx, b, t, rows, within, src, policy)}
        if with_tags and self.tag_ids is not None:
            tag_ids = np.zeros((b, t), dtype=np.int32)
            tag_ids[rows, within] = self.tag_ids[src]
            out[TAG_IDS] = tag_ids
        return out

