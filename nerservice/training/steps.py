"""One optimisation step per backend, behind one small interface.

TensorFlow: a ``tf.function`` with ``GradientTape`` that also runs under ``tf.distribute`` strategies
(docs/ARCHITECTURE.md, platform facts: Keras 3 ``fit`` fails under MultiWorkerMirroredStrategy, a custom
loop works).  Gradients are
summed across replicas *before* clipping, so a 2-worker step clips exactly what a single process would, and
only there: one all-reduce of the gradients per step (Keras' optimizer would add a second one).
JAX: a jitted stateless step (``StatelessScope`` + ``optimizer.stateless_apply``); the state lives in
JAX arrays during an epoch and is written back to the Keras variables by ``sync_to_model``.  Under
``keras.distribution.DataParallel`` (``nerservice.training.parallel``) the same step runs over several
local devices: state replicated, batches sharded on their batch axis, the all-reduce inserted by XLA;
with a ``ProcessPlacement`` (``jax.distributed``, the Spark JAX path) the same step spans the devices of
several processes, and every process feeds the whole global batch (``global_batch``).

The loss of a step is sum(NLL of its sentences) / n_global, where n_global counts the sentences of the
whole (global) batch, so per-worker shards add up to the single-process loss.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from nerservice.config import TrainingConfig
from nerservice.model.tagger import NerTagger
from nerservice.text.inputs import ENCODER_STATES, TRAIN_RANKS
from nerservice.text.inputs import TRAIN_NAMES as TRAIN_KEYS

# TensorFlow also takes the batch's place in the global batch (training/loop.py ``replica_rows``) so that
# MultiWorkerMirroredStrategy workers draw the single process's dropout masks. JAX does not need them:
# its multi-device path shards one global batch inside one jitted step.
ROW_RANKS = {"row_ids": 1, "rows_total": 0, "time_total": 0}
ROW_KEYS = tuple(ROW_RANKS)


def loss_inputs(model: NerTagger) -> dict[str, int]:
    """Float32 arrays the model's training loss reads besides ``TRAIN_KEYS`` (name -> rank): a pretrained
    encoder's frozen states (``training/encoder_cache.py``) and a distillation student's teacher targets
    (``nerservice/distil/student.py``); none for a plain tagger trained on gold tags."""
    extra = dict(getattr(model, "LOSS_INPUTS", {}))
    if model.text_encoder is not None:
        extra[ENCODER_STATES] = 4
    return extra


class TrainStep(Protocol):
    model: NerTagger
    # True when every worker passes the whole global batch (the step keeps its own rows); False when each
    # worker passes its slice ``global_batch[rank::world]``.
    global_batch: bool

    # Returns the loss as a backend scalar, not a float: converting would block on every step and stall
    # asynchronous dispatch (the host could not prepare batch n+1 while the device runs batch n).
    def __call__(self, batch: dict[str, np.ndarray], n_global: int) -> Any: ...

    def set_learning_rate(self, lr: float) -> None: ...

    def sync_to_model(self) -> None: ...

    def reload_from_model(self) -> None: ...

    # Run the step once on ``batch`` and put every variable back as it was: the first call's one-time costs
    # (tracing, graph optimisation, the collectives' setup, waiting for the slowest peer) are paid before the
    # timed epoch, and training continues exactly as if it had not run.
    def warm_up(self, batch: dict[str, np.ndarray], n_global: int) -> None: ...

    # What the compiled step looks like, for the job summary and the cost model (empty where unknown).
    def stats(self) -> dict[str, int]: ...

    @property
    def optimizer(self) -> Any: ...


def make_train_step(model: NerTagger, config: TrainingConfig, *, strategy: Any = None) -> TrainStep:
    from nerservice import backend

    if backend.current() == "tensorflow":
        return TensorFlowStep(model, config, strategy=strategy)
    from nerservice.training.parallel import ProcessPlacement

    if strategy is not None and not isinstance(strategy, ProcessPlacement):
        raise ValueError("tf.distribute strategies need KERAS_BACKEND=tensorflow")
    return JaxStep(model, config, placement=strategy)


class TensorFlowStep:
    global_batch = False

    def __init__(self, model: NerTagger, config: TrainingConfig, *, strategy: Any = None) -> None:
        import keras
        import tensorflow as tf

        self.model, self.clip = model, config.clip_norm
        self.strategy = strategy
        scope = strategy.scope() if strategy is not None else _null()
        with scope:
            self._optimizer = keras.optimizers.Adam(learning_rate=config.learning_rate)
            self._optimizer.build(model.trainable_variables)
        n_replicas = strategy.num_replicas_in_sync if strategy is not None else 1
        if n_replicas > 1:
            _sum_gradients_once(self._optimizer)
        from nerservice.backend import tf_signature

        spec = tf_signature({**TRAIN_RANKS, **ROW_RANKS})
        self._loss_keys = tuple(loss_inputs(model))
        spec.update({k: tf.TensorSpec((None,) * r, tf.float32) for k, r in loss_inputs(model).items()})

        def replica_step(batch: dict[str, Any], n_global: Any) -> Any:
            variables = model.trainable_variables
            with tf.GradientTape() as tape:
                nll = model.negative_log_likelihood(batch, training=True)
                loss = tf.reduce_sum(nll) / n_global
            grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
            if n_replicas > 1:  # one collective per step: the loss rides in the gradients' pack
                summed = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, [*grads, loss])
                grads, loss = summed[:-1], summed[-1]
            grads, _ = tf.clip_by_global_norm(grads, self.clip)
            self._optimizer.apply(grads, variables)  # already summed: apply() does not all-reduce again
            return loss

        if strategy is None:
            self._fn = tf.function(replica_step, input_signature=[spec, tf.TensorSpec((), tf.float32)])
        else:
            @tf.function(input_signature=[spec, tf.TensorSpec((), tf.float32)])
            def distributed(batch: dict[str, Any], n_global: Any) -> Any:
                per = strategy.run(replica_step, args=(batch, n_global))
                # Every replica holds the summed global loss already: no further cross-worker reduce.
                return strategy.experimental_local_results(per)[0]

            self._fn = distributed

    @property
    def optimizer(self) -> Any:
        return self._optimizer

    def __call__(self, batch: dict[str, np.ndarray], n_global: int) -> Any:
        inputs: dict[str, np.ndarray | np.int32] = {k: batch[k] for k in (*TRAIN_KEYS, *self._loss_keys)}
        if "row_ids" in batch:
            inputs.update({k: batch[k] for k in ROW_KEYS})
        else:  # a batch that is its own global batch
            b, t = batch["token_ids"].shape
            inputs.update(row_ids=np.arange(b, dtype=np.int32), rows_total=np.int32(b), time_total=np.int32(t))
        return self._fn(inputs, np.float32(n_global))

    def set_learning_rate(self, lr: float) -> None:
        self._optimizer.learning_rate.assign(lr)

    def warm_up(self, batch: dict[str, np.ndarray], n_global: int) -> None:
        # Every variable the step touches: weights, dropout seed states, Adam's moments and iteration count.
        variables = [*self.model.variables, *self._optimizer.variables]
        saved = [np.array(v.numpy(), copy=True) for v in variables]
        float(self(batch, n_global))  # float() waits for the step (and, across workers, for every peer)
        for var, value in zip(variables, saved):
            var.assign(value)

    @property
    def traces(self) -> int:
        """How many times the step function was traced (1 whatever the batch shapes: dynamic signature)."""
        return int(self._fn.experimental_get_tracing_count())

    def stats(self) -> dict[str, int]:
        """Traces so far and the cross-worker all-reduces in one step (counted in the traced graph, nested
        functions included); call after training (an untraced step would be traced here)."""
        if not self.traces:
            return {"traces": 0}
        graph = self._fn.get_concrete_function().graph
        ops = [op.type for op in graph.get_operations()]
        ops += [node.op for f in graph.as_graph_def().library.function for node in f.node_def]
        return {"traces": self.traces,
                "allreduces_per_step": sum(t.startswith("CollectiveReduce") or t == "CollectiveAllReduceV2"
                                           for t in ops)}

    def sync_to_model(self) -> None:  # variables are updated in place
        return None

    def reload_from_model(self) -> None:
        return None


class JaxStep:
    def __init__(self, model: NerTagger, config: TrainingConfig, *, placement: Any = None) -> None:
        import jax
        import keras

        from nerservice.training.parallel import Placement

        self.model, self.clip = model, config.clip_norm
        self._placement = placement if placement is not None else Placement.current(config.batch_size)
        self.global_batch = bool(self._placement is not None and self._placement.global_batch)
        self._optimizer = keras.optimizers.Adam(learning_rate=config.learning_rate)
        self._optimizer.build(model.trainable_variables)
        self._keys = (*TRAIN_KEYS, *loss_inputs(model))
        tv_vars, ntv_vars = model.trainable_variables, model.non_trainable_variables

        def loss_fn(tv: Any, ntv: Any, batch: Any, n_global: Any) -> Any:
            mapping = list(zip(tv_vars, tv)) + list(zip(ntv_vars, ntv))
            with keras.StatelessScope(state_mapping=mapping) as scope:
                nll = model.negative_log_likelihood(batch, training=True)
            new_ntv = [scope.get_current_value(v) if scope.get_current_value(v) is not None else old
                       for v, old in zip(ntv_vars, ntv)]
            return jax.numpy.sum(nll) / n_global, new_ntv

        grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
        clip = self.clip

        def step(tv: Any, ntv: Any, ov: Any, batch: Any, n_global: Any) -> Any:
            (loss, ntv), grads = grad_fn(tv, ntv, batch, n_global)
            norm = jax.numpy.sqrt(sum(jax.numpy.sum(g * g) for g in grads))
            scale = jax.numpy.minimum(1.0, clip / jax.numpy.maximum(norm, 1e-12))
            grads = [g * scale for g in grads]
            tv, ov = self._optimizer.stateless_apply(ov, grads, tv)
            return loss, tv, ntv, ov

        self._step = jax.jit(step, donate_argnums=(0, 1, 2))
        self.reload_from_model()

    def reload_from_model(self) -> None:
        import jax.numpy as jnp

        # Copies: the step donates its state buffers, which must never be the Keras variables' own arrays.
        self._tv = [jnp.array(v.value, copy=True) for v in self.model.trainable_variables]
        self._ntv = [jnp.array(v.value, copy=True) for v in self.model.non_trainable_variables]
        self._ov = [jnp.array(v.value, copy=True) for v in self._optimizer.variables]
        if self._placement is not None:
            self._tv, self._ntv, self._ov = (self._placement.state(x) for x in (self._tv, self._ntv, self._ov))

    @property
    def optimizer(self) -> Any:
        return self._optimizer

    def __call__(self, batch: dict[str, np.ndarray], n_global: int) -> Any:
        inputs = {k: batch[k] for k in self._keys}
        if self._placement is not None:
            inputs = self._placement.batch(inputs)
        loss, self._tv, self._ntv, self._ov = self._step(self._tv, self._ntv, self._ov, inputs,
                                                         np.float32(n_global))
        return loss

    def sync_to_model(self) -> None:
        local = self._placement.local if self._placement is not None else (lambda v: v)
        for var, val in zip(self.model.trainable_variables, self._tv):
            var.assign(local(val))
        for var, val in zip(self.model.non_trainable_variables, self._ntv):
            var.assign(local(val))
        for var, val in zip(self._optimizer.variables, self._ov):
            var.assign(local(val))
        self.reload_from_model()

    def set_learning_rate(self, lr: float) -> None:
        self.sync_to_model()
        self._optimizer.learning_rate.assign(lr)
        self.reload_from_model()

    def warm_up(self, batch: dict[str, np.ndarray], n_global: int) -> None:
        # XLA compiles once per batch shape (several per epoch), so one warm-up call would buy little; the
        # compiles stay in the first epoch's time on this backend.
        return None

    def stats(self) -> dict[str, int]:
        return {}


def _sum_gradients_once(optimizer: Any) -> None:
    """Keras' TF optimizer all-reduces the gradients inside ``apply()`` when it runs in a replica context
    (``_all_reduce_sum_gradients``). Our step has already summed them before clipping (clipping needs the
    global norm), so a second all-reduce would double every step's traffic for nothing: this optimizer
    applies what it is given. Fails loudly if a Keras upgrade renames the hook (the 2-worker tests would
    then see the sum of sums)."""
    if not callable(getattr(optimizer, "_all_reduce_sum_gradients", None)):
        raise RuntimeError(f"{type(optimizer).__name__} has no _all_reduce_sum_gradients: this Keras version "
                           "aggregates gradients differently; re-check TensorFlowStep's all-reduce")
    optimizer._all_reduce_sum_gradients = lambda grads_and_vars: list(grads_and_vars)


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None
