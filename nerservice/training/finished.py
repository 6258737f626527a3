"""A run a recipe already finished, read back from its folder instead of trained again.

A rerun of ``nerservice train --final``, ``--seeds N`` or ``--distil`` with the same OUT resumes every run.
Through ``train()`` a finished run still costs the whole set-up of a run — word vectors read, model built and
traced, checkpoint loaded, test scored again, the kept model written again — ~8 s per run on NCBI-disease on two
CPU cores (a finished two-run ``--final``: 22.3 s to rerun before, 5.7 s read back; BENCHMARKS.md session 29), for a
result already on disk.  Its time was also lost: the resumed
loop trains no epoch, so the recipe recorded phase 1 as taking 0 minutes.

``finished_run`` returns the run's ``RunSummary`` from its folder when all of these hold, and None otherwise
(the caller then trains through ``train()``, which resumes from the checkpoint as before):

- ``OUT/checkpoint``'s loop state has nothing left to train under the request's config: every epoch ran, or
  patience is spent.  A run that a time budget stopped is not finished: a rerun trains on;
- the kept model (model-best, or model-last for ``keep="last"``) was finalised: its metrics hold its epoch and,
  when the request has test data, test scores; its history holds every epoch of the loop state;
- it was trained on the request's data and config: its lineage's corpus fingerprints (train — with dev in it for
  ``train_on_dev`` —, dev, test) and config hash are the request's, and a run with ``model.encoder`` holds the
  same encoder weights (the sha256 in its lineage; the sizes come from the encoder's config.json, the weights
  are hashed, not loaded).  A config with a character LM (``model.char_lm``) is never read back: its hash needs
  the LM loaded, which is most of the set-up saved.

Used by ``training.run_pool.run_spec`` (``nerservice train``, in this process or ``--jobs`` workers) and
``multi.trainer.multi_runner`` (``--corpora``: the lineage names each corpus's splits ``NAME/train`` ...), and on
the Spark driver by ``distributed.train_job.read_back`` (``spark_jobs/train.py --final/--seeds/--distil``: a
finished run starts no barrier stage).

Seconds are the sum of the history's training and dev-evaluation seconds (what the epochs cost; the set-up and
saves are not in the history).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from nerservice.artifacts.files import read_json, readable
from nerservice.artifacts.layout import BEST, CHECKPOINT, HISTORY, LAST, LINEAGE, METRICS, STATE
from nerservice.data import Sentence
from nerservice.training.checkpoint import has_checkpoint
from nerservice.training.recipes import RunRequest, RunSummary


def finished_run(request: RunRequest, train: Sequence[Sentence], dev: Sequence[Sentence],
                 test: Sequence[Sentence] | None, *, progress: bool = False) -> RunSummary | None:
    """The summary of ``request``'s run when its folder holds it finished on this data and config, else None."""
    return finished_from(request, run_corpora(request, train, dev, test), has_test=bool(test), progress=progress)


def run_corpora(request: RunRequest, train: Sequence[Sentence], dev: Sequence[Sentence],
                test: Sequence[Sentence] | None) -> dict[str, list[Sentence]]:
    """The splits ``train()`` fingerprints in the lineage of ``request``'s run (phase 2 trains on train + dev)."""
    from nerservice.training.trainer import lineage_corpora

    return lineage_corpora([*train, *dev] if request.train_on_dev else train, dev, test)


def finished_from(request: RunRequest, corpora: Mapping[str, Sequence[Sentence]], *,
                  has_test: bool, progress: bool = False) -> RunSummary | None:
    """``finished_run`` for any run: ``corpora`` as ``train()`` (or ``train_multi``) names them in the lineage,
    ``has_test``: whether the run scores test; ``progress``: say so when the run is read back."""
    from nerservice.lineage import corpus_fingerprint

    config = request.config
    if config.model.char_lm:  # its hash needs the LM loaded: not worth it here
        return None
    checkpoint = readable(request.out_dir / CHECKPOINT)
    kept = request.out_dir / (LAST if request.keep == "last" else BEST)
    if not has_checkpoint(checkpoint) or not all((kept / n).is_file() for n in (METRICS, HISTORY, LINEAGE)):
        return None
    try:
        state = read_json(checkpoint / STATE)
        metrics, history, lineage = (read_json(kept / n) for n in (METRICS, HISTORY, LINEAGE))
    except (OSError, ValueError):
        return None  # a damaged folder: train() repairs or reports it
    t = config.training
    epochs_done, bad_epochs = int(state.get("epoch", 0)), int(state.get("bad_epochs", 0))
    if epochs_done < t.epochs and bad_epochs < t.patience:
        return None
    if "epoch" not in metrics or (has_test and "test" not in metrics) or len(history) != epochs_done:
        return None
    config_hash, encoder_sha = _saved_config_hash(request)
    if lineage.get("config_hash") != config_hash or \
            (encoder_sha is not None and (lineage.get("encoder") or {}).get("weights_sha256") != encoder_sha) or \
            lineage.get("corpus_fingerprints") != {name: corpus_fingerprint(s) for name, s in corpora.items()}:
        return None
    done = RunSummary(model_dir=kept, best_epoch=int(metrics["epoch"]), epochs_run=epochs_done,
                      stopped_reason="patience" if bad_epochs >= t.patience else "epochs",
                      seconds=sum(float(h.get("train_seconds", 0.0)) + float(h.get("eval_seconds", 0.0))
                                  for h in history),
                      dev=metrics.get("dev") or {}, test=metrics.get("test") if has_test else None)
    if progress:
        print(f"{request.out_dir}: finished earlier ({done.epochs_run} epochs, kept epoch {done.best_epoch}), "
              f"read back from its folder", flush=True)
    return done


def _saved_config_hash(request: RunRequest) -> tuple[str, str | None]:
    """The config hash ``train()`` records — the request's config as the run saves it, with its encoder's sizes —
    and the encoder weights' sha256 its lineage must hold (None: no encoder)."""
    from nerservice.charlm.attach import resolve_char_lm
    from nerservice.encoder.attach import encoder_identity
    from nerservice.training.trainer import config_with_vectors

    config, _, _ = resolve_char_lm(config_with_vectors(request.config, request.config.model.embeddings))
    config, encoder_sha = encoder_identity(config)
    return config.fingerprint(), encoder_sha
