"""The teacher's targets for every training sentence, computed once before training.

For each sentence the teacher (an ensemble: the mean of its members' CRF scores) defines a linear-chain CRF
distribution q(y | x).  Forward-backward over it (NumPy, length-bucketed batches: ``model.decode``) gives
its node marginals q(y_t = k) (T x K) and its pairwise marginals q(y_{t-1} = i, y_t = j) ((T-1) x K x K).
The student's cross-entropy against q needs the pairwise marginals only summed over t (its transition
scores do not depend on t), so a sentence keeps T x K + K x K numbers: on NCBI train+devel plus three
other corpora's train+devel text (~1.2M tokens, K = 3) that is ~15 MB of float32.

Labelled sentences may mix in their gold path: target = w * gold + (1 - w) * q (``DistilConfig.gold_weight``)
— exactly the weighted sum of the two losses, since the cross-entropy is linear in the target's counts.

A multi-corpus teacher (one CRF head per corpus, ``nerservice/multi``) defines one distribution per head, each
over its own tag columns: every sentence gets every head's marginals, side by side in one K-column target
(head h's on its columns, 0 elsewhere). A labelled sentence's gold path belongs to one head (its corpus's),
so its gold is mixed into that head's block only.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nerservice.model.batching import bucketed_batches
from nerservice.model.decode import CrfParams, expected_counts
from nerservice.model.heads import head_crf
from nerservice.model.predictor import TagPredictor
from nerservice.text.inputs import TEACHER_PAIRS, TEACHER_UNARY


def scaled(crf: CrfParams, temperature: float) -> CrfParams:
    return CrfParams(transitions=crf.transitions / temperature, start=crf.start / temperature,
                     end=crf.end / temperature)


def teacher_emissions(teacher: TagPredictor, sentences: Sequence[Sequence[str]], *,
                      chunk: int) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for i in range(0, len(sentences), chunk):
        out.extend(e.astype(np.float32) for e in teacher.emissions(sentences[i:i + chunk]))
    return out


def posteriors(emissions: Sequence[np.ndarray], crf: CrfParams, *, batch_size: int = 256,
               bucket_size: int = 8) -> tuple[list[np.ndarray], np.ndarray]:
    """Per sentence: node marginals (len, K), and the summed pairwise marginals stacked (N, K, K)."""
    k = crf.transitions.shape[0]
    node: list[np.ndarray] = [np.zeros((0, k), np.float32)] * len(emissions)
    pairs = np.zeros((len(emissions), k, k), np.float32)
    lengths = [len(e) for e in emissions]
    for idx in bucketed_batches(lengths, batch_size=batch_size, bucket_size=bucket_size, seed=None):
        lens = np.array([lengths[i] for i in idx])
        em = np.zeros((len(idx), max(int(lens.max()), 1), k))
        for b, i in enumerate(idx):
            em[b, : lens[b]] = emissions[i]
        mu, xi = expected_counts(em, lens, crf)
        for b, i in enumerate(idx):
            node[i] = mu[b, : lens[b]].astype(np.float32)
        pairs[idx] = xi
    return node, pairs


def gold_counts(tag_ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A gold path as a (degenerate) distribution: one-hot node marginals, transition counts."""
    node = np.zeros((len(tag_ids), k), np.float32)
    node[np.arange(len(tag_ids)), tag_ids] = 1.0
    pairs = np.zeros((k, k), np.float32)
    np.add.at(pairs, (tag_ids[:-1], tag_ids[1:]), 1.0)
    return node, pairs


@dataclass
class TeacherTargets:
    """Flat per-token node targets (tokens, K) with sentence offsets, and per-sentence pair targets."""

    unary: np.ndarray  # (total tokens, K) float32
    offsets: np.ndarray  # (N + 1,)
    pairs: np.ndarray  # (N, K, K) float32

    @classmethod
    def build(cls, node: Sequence[np.ndarray], pairs: np.ndarray) -> "TeacherTargets":
        lengths = np.array([len(n) for n in node], dtype=np.int64)
        offsets = np.zeros(len(node) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        k = pairs.shape[1]
        unary = np.concatenate(list(node)).astype(np.float32) if len(node) else np.zeros((0, k), np.float32)
        return cls(unary=unary, offsets=offsets, pairs=pairs.astype(np.float32))

    @classmethod
    def assemble(cls, parts: Sequence[tuple[Sequence[int], "TeacherTargets"]], n: int) -> "TeacherTargets":
        """One set of targets for sentences 0..n-1 from parts that each cover some of them (``rows[j]`` is the
        sentence of the part's j-th target), e.g. cross-fitted teachers, each for the sentences it was not
        trained on.  Every sentence must be covered exactly once."""
        k = parts[0][1].n_tags
        node: list[np.ndarray | None] = [None] * n
        pairs = np.zeros((n, k, k), np.float32)
        for rows, part in parts:
            for j, i in enumerate(rows):
                if node[i] is not None:
                    raise ValueError(f"sentence {i} has targets from two parts")
                node[i] = part.unary[part.offsets[j]:part.offsets[j + 1]]
                pairs[i] = part.pairs[j]
        missing = [i for i, x in enumerate(node) if x is None]
        if missing:
            raise ValueError(f"{len(missing)} sentence(s) without targets, the first {missing[0]}")
        return cls.build([x for x in node if x is not None], pairs)

    def __len__(self) -> int:
        return int(self.pairs.shape[0])

    @property
    def n_tags(self) -> int:
        return int(self.pairs.shape[1])

    def batch(self, rows: np.ndarray, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Targets of sentences ``rows`` padded to ``batch``'s (B, T): padding rows and positions are 0."""
        b, t = batch["token_ids"].shape
        k = self.n_tags
        unary = np.zeros((b, t, k), np.float32)
        pairs = np.zeros((b, k, k), np.float32)
        for r, i in enumerate(rows):
            s, e = self.offsets[i], self.offsets[i + 1]
            unary[r, : e - s] = self.unary[s:e]
        pairs[: len(rows)] = self.pairs[rows]
        return {TEACHER_UNARY: unary, TEACHER_PAIRS: pairs}


def build_targets(teacher: TagPredictor, sentences: Sequence[Sequence[str]], *, temperature: float,
                  gold: Sequence[np.ndarray | None], gold_weight: float, chunk: int,
                  batch_size: int = 256,
                  heads: Sequence[slice] | None = None) -> tuple[TeacherTargets, list[np.ndarray]]:
    """The targets of every sentence (``gold[i]``: its tag ids, or None for unlabelled text), and the
    teacher's emissions (float32), which callers reuse (e.g. to decode the teacher's own tags).
    ``heads``: a multi-corpus teacher's column slices (``MultiTagVocabulary.slices``); None = one head."""
    emissions = teacher_emissions(teacher, sentences, chunk=chunk)
    crf = scaled(teacher.crf_params(), temperature)
    k = crf.transitions.shape[0]
    blocks = list(heads) if heads is not None else [slice(0, k)]
    node = [np.zeros((len(e), k), np.float32) for e in emissions]
    pairs = np.zeros((len(emissions), k, k), np.float32)
    for cols in blocks:
        h_node, h_pairs = posteriors([e[:, cols] / temperature for e in emissions], head_crf(crf, cols),
                                     batch_size=batch_size)
        for i, n in enumerate(h_node):
            node[i][:, cols] = n
        pairs[:, cols, cols] = h_pairs
    if gold_weight > 0:
        for i, tags in enumerate(gold):
            if tags is None or len(tags) == 0:
                continue
            tags = np.asarray(tags)
            cols = next(c for c in blocks if c.start <= tags[0] < c.stop)  # the gold path's head
            g_node, g_pairs = gold_counts(tags - cols.start, cols.stop - cols.start)
            node[i][:, cols] = gold_weight * g_node + (1 - gold_weight) * node[i][:, cols]
            pairs[i][cols, cols] = gold_weight * g_pairs + (1 - gold_weight) * pairs[i][cols, cols]
    return TeacherTargets.build(node, pairs), emissions
