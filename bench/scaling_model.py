"""The cost model of synchronous data-parallel training (issue 19), fitted to our measurements.

    .venv/bin/python bench/scaling_model.py --results bench/results/scaling [--spark spark-grow-s6.json] \
        [--plot F.png] [--json-out F]

Per step of ``--scaling grow`` (every worker a full batch of b = 32 sentences, N workers):

    t_step(N)  = c0 + c1 * P(N) + k * AR(N, G)
    P(N)       padded tokens (rows x padded time steps) of the busiest worker's slice, averaged over the real
               epoch plan (cpu-step.json "plan": a synchronous step waits for its slowest worker)
    AR(N, G)   = 2 (N-1) alpha + 2 (N-1)/N * G / beta      (ring all-reduce of G gradient bytes)
    k          all-reduces of the gradients per step: 1 (the job summary's step.allreduces_per_step; it was 2
               before the Keras optimizer's own all-reduce was switched off)

c0, c1 are fitted on every timed step of ``scaling_bench.py step`` (one core); alpha, beta on two workers over
loopback (``scaling_bench.py allreduce``); both by relative least squares (each point's error counts in
percent, so the small sizes are not ignored). Per job of E epochs:

    T_job(N) = F_job + W(N) + E * (steps(N) * t_step(N) + V(N) + S)
    V(N)     = v1 / N + v0       dev evaluation, sharded across the workers: v1 = the 1-worker run's, v0 = what
             sharding adds (from the 2-worker run: V(2) - v1/2, at least 0; V(1) = v1). Since session 6 the
             shards' counts are summed on the training collective (milliseconds); in session 5 they were
             all-gathered through Spark's barrier allGather, v0 = 1.33 s (spark-grow.json, the
             "session 5" scenario)
    S        the chief's saves and checkpoint per epoch (the other workers wait for it in the next step)
    W(N)     the one-time warm-up step (trace, graph optimisation, collectives' setup, waiting for the slowest
             peer): W(1), W(2) measured; W(N > 2) = W(2) (one ring, set up by all workers at once: assumed)
    F_job    everything else (spark-submit and session, splits, Python workers, imports, vectors, model build,
             predictor trace, final test evaluation and save): wall time of the 1-worker run minus the rest

All of F_job, W, V, S come from real ``spark_jobs/train.py --scaling grow`` runs (``--spark``); the
epoch times of those runs are *predicted* from the component benchmarks and compared with what they measured.
Efficiency(N) = T_job(1) / (N * T_job(N)) at equal epochs; "training efficiency" is the steps only.

Scenarios for prediction: CPU workers (our step, one core each) and GPU workers (the H200's measured step
at a per-worker batch of 256) on 10 GbE (1.17 GB/s payload, +25 us per message on top of the loopback
software latency) — stated assumptions, not measurements.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

TEN_GBE_BYTES_PER_S = 1.17e9  # 10 Gb/s minus Ethernet/IP/TCP framing
NET_LATENCY_S = 25e-6  # switch + NIC per message, on top of the software latency measured on loopback


def fit_relative(x: list[float], y: list[float]) -> tuple[float, float]:
    """y = a + b x minimising the squared *relative* errors ((a + b x - y) / y)^2."""
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    w = 1.0 / ys
    design = np.stack([w, xs * w], axis=1)
    (a, b), *_ = np.linalg.lstsq(design, np.ones_like(ys), rcond=None)
    return float(a), float(b)


def allreduce_s(n: int, grad_bytes: float, alpha: float, beta: float) -> float:
    if n <= 1:
        return 0.0
    return 2 * (n - 1) * alpha + 2 * (n - 1) / n * grad_bytes / beta


def _mean(xs: list[float]) -> float:
    return float(np.mean(xs)) if xs else 0.0


class Model:
    def __init__(self, step: dict[str, Any], allreduce: dict[str, Any], spark: dict[str, Any]) -> None:
        xs = [p for r in step["rows"] for p in r["padded_tokens"]]
        ys = [t for r in step["rows"] for t in r["step_s"]]
        self.c0, self.c1 = fit_relative(xs, ys)
        a, inv_beta = fit_relative([r["bytes"] for r in allreduce["rows"]], [r["median_s"] for r in allreduce["rows"]])
        self.alpha, self.beta = max(a / 2, 1e-6), 1.0 / max(inv_beta, 1e-15)
        self.grad_bytes = step["gradient_bytes"]
        self.plan = {p["workers"]: p for p in step["plan"]}
        self.n_sentences = step["train_sentences"]
        w1, w2 = spark["w1"], spark["w2"]
        self.k = (w2.get("step") or {}).get("allreduces_per_step", 1)
        self.epochs_measured = len(w1["epoch_seconds"])
        ev1, ev2 = _mean(w1["eval_seconds"]), _mean(w2["eval_seconds"])
        self.v1 = ev1  # one worker decodes all of dev
        # What sharding adds per evaluation: the sum of the shards' counts on the ring (ms) and the slower
        # shard; session 5's barrier allGather made it 1.33 s. Not below 0 (2 workers on 2 shared cores).
        self.v0 = max(ev2 - ev1 / 2, 0.0)
        self.save_s = _mean([r["phases"]["rank0"]["epoch_other_s"] / len(r["epoch_seconds"]) for r in (w1, w2)])
        self.warmup = {1: w1["training_phase"]["warmup_s"], 2: w2["training_phase"]["warmup_s"]}
        self.f_job = (w1["wall_s"] - self.warmup[1] - sum(w1["epoch_seconds"]) - sum(w1["eval_seconds"])
                      - self.save_s * self.epochs_measured)
        self.spark_submit_s = w1["wall_s"] - w1["job_s"]  # spark-submit, JVM and session around the job

    def steps(self, n: int, b: int = 32) -> int:
        if b == 32 and n in self.plan:
            return int(self.plan[n]["steps"])
        return math.ceil(self.n_sentences / (b * n))

    def padded(self, n: int, b: int = 32) -> float:
        if b == 32 and n in self.plan:
            return float(self.plan[n]["padded_tokens_busiest"])
        if 1 not in self.plan:  # a step cost given per step (GPU scenario: c1 = 0)
            return 0.0
        return float(self.plan[1]["padded_tokens_busiest"]) * b / 32  # same length mix, b rows

    def compute_s(self, n: int, b: int = 32) -> float:
        return self.c0 + self.c1 * self.padded(n, b)

    def step_s(self, n: int, *, b: int = 32, alpha: float | None = None, beta: float | None = None,
               k: int | None = None) -> float:
        ar = allreduce_s(n, self.grad_bytes, self.alpha if alpha is None else alpha, self.beta if beta is None else beta)
        return self.compute_s(n, b) + (self.k if k is None else k) * ar

    def epoch_train_s(self, n: int, **kw: Any) -> float:
        return self.steps(n, kw.get("b", 32)) * self.step_s(n, **kw)

    def eval_s(self, n: int) -> float:
        return self.v1 if n == 1 else self.v0 + self.v1 / n

    def warmup_s(self, n: int) -> float:
        return self.warmup[min(n, 2)]

    def job_s(self, n: int, epochs: int, *, f_job: float | None = None, **kw: Any) -> float:
        fixed = self.f_job if f_job is None else f_job
        return fixed + self.warmup_s(n) + epochs * (self.epoch_train_s(n, **kw) + self.eval_s(n) + self.save_s)


def _err(pred: float, meas: float) -> float:
    return pred / meas - 1


def check_components(m: Model, step: dict[str, Any], allreduce: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    steps = [{"batch": r["batch"], "measured_mean_s": r["mean_step_s"],
              "predicted_s": m.c0 + m.c1 * r["padded_tokens_per_step"],
              "error": _err(m.c0 + m.c1 * r["padded_tokens_per_step"], r["mean_step_s"])} for r in step["rows"]]
    ars = [{"bytes": r["bytes"], "measured_s": r["median_s"],
            "predicted_s": 2 * m.alpha + r["bytes"] / m.beta,  # N = 2: 2 (N-1) alpha + 2 (N-1)/N G / beta
            "error": _err(2 * m.alpha + r["bytes"] / m.beta, r["median_s"])} for r in allreduce["rows"]]
    return {"step": steps, "allreduce": ars}


def check_against_spark(m: Model, spark: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's figures for the measured Spark runs (1 and 2 workers, grow mode): every epoch's training
    seconds (predicted from the component benchmarks alone), the training-phase throughput and the job."""
    out = []
    runs = [(k, int(k[1])) for k in spark if k[:2] in ("w1", "w2") and isinstance(spark[k], dict)]
    for key, n in runs:  # w1, w2 (the fit's runs) and any repeats (w1_run2, ...): checked, not fitted
        run = spark[key]
        epochs = len(run["epoch_seconds"])
        pred_epoch = m.epoch_train_s(n)
        phase = run["training_phase"]
        pred_tps = phase["tokens"] / (epochs * pred_epoch)
        out.append({"run": key, "workers": n, "epochs": epochs, "steps_per_epoch": run["steps_epoch1"],
                    "steps_per_epoch_model": m.steps(n),
                    "measured_epoch_train_s": run["epoch_seconds"], "predicted_epoch_train_s": pred_epoch,
                    "epoch_errors": [_err(pred_epoch, e) for e in run["epoch_seconds"]],
                    "measured_training_tokens_per_s": phase["tokens_per_s"], "predicted_training_tokens_per_s": pred_tps,
                    "training_tokens_per_s_error": _err(pred_tps, phase["tokens_per_s"]),
                    "measured_eval_s": run["eval_seconds"], "predicted_eval_s": m.eval_s(n),
                    "measured_job_s": run["wall_s"], "predicted_job_s": m.job_s(n, epochs),
                    "job_error": _err(m.job_s(n, epochs), run["wall_s"])})
    return out


def predictions(m: Model, gpu: dict[str, Any], *, epochs: int, workers: list[int],
                session5_v0: float | None = None) -> list[dict[str, Any]]:
    alpha_net = m.alpha + NET_LATENCY_S
    beta_net = 1.0 / (1.0 / m.beta + 1.0 / TEN_GBE_BYTES_PER_S)  # software copy and wire in series
    net = {"alpha": alpha_net, "beta": beta_net}
    # GPU workers: the H200's step and its own fixed costs (compiles, dev evaluation on the GPU) plus
    # Spark's submission overhead measured here; one all-reduce per step (XLA inserts it).
    g = copy.copy(m)
    g.c0, g.c1, g.grad_bytes, g.k = gpu["tokens_per_step"] / gpu["tokens_per_s"], 0.0, gpu["gradient_bytes"], 1
    g.plan = {}
    g.v0, g.v1, g.save_s, g.warmup = gpu["f_epoch_s"], 0.0, 0.0, {1: 0.0, 2: 0.0}
    g.f_job = gpu["f_job_s"] + m.spark_submit_s
    scenarios: list[tuple[str, Model, dict[str, Any]]] = [("CPU workers (1 core), 10 GbE", m, {**net})]
    if session5_v0 is not None:  # the same job with session 5's dev gather through Spark's barrier allGather
        m5 = copy.copy(m)
        m5.v0 = session5_v0
        scenarios += [("CPU workers, 10 GbE, as in session 5 (dev shards gathered by Spark's allGather)", m5, {**net}),
                      ("CPU workers, 10 GbE, before session 5 (and 2 all-reduces per step)", m5, {**net, "k": 2})]
    scenarios += [
        ("GPU workers (H200, batch 256 each), 10 GbE", g, {"alpha": NET_LATENCY_S + 20e-6,
                                                          "beta": TEN_GBE_BYTES_PER_S, "b": gpu["batch"]}),
    ]
    rows = []
    for name, model, kw in scenarios:
        t1, e1 = model.job_s(1, epochs, **kw), model.epoch_train_s(1, **kw)
        for n in workers:
            tn, en = model.job_s(n, epochs, **kw), model.epoch_train_s(n, **kw)
            st = model.step_s(n, **kw)
            rows.append({"scenario": name, "workers": n, "per_worker_batch": kw.get("b", 32),
                         "global_batch": kw.get("b", 32) * n, "job_s": tn, "speedup": t1 / tn,
                         "efficiency": t1 / (n * tn), "training_efficiency": e1 / (n * en),
                         "allreduce_share": 1 - model.compute_s(n, kw.get("b", 32)) / st})
    return rows


def efficiency(m: Model, n: int, epochs: int, **kw: Any) -> float:
    return m.job_s(1, epochs, **kw) / (n * m.job_s(n, epochs, **kw))


def fixed_cost_for(m: Model, target: float, n: int, epochs: int, **kw: Any) -> float | None:
    """The per-job fixed cost F_job at which N workers reach ``target`` efficiency (None: not even at 0)."""
    def eff(f: float) -> float:
        return efficiency(m, n, epochs, f_job=f, **kw)

    if eff(0.0) < target:
        return None
    lo, hi = 0.0, 10_000.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if eff(mid) >= target else (lo, mid)
    return lo


def scaled_corpus(m: Model, factor: float) -> Model:
    """The same model for a corpus ``factor`` times larger (train and dev alike; same length mix): steps and
    dev decode scale, the fixed costs, warm-up and saves per epoch do not."""
    big = copy.copy(m)
    big.n_sentences = int(m.n_sentences * factor)
    big.plan = {n: {**p, "steps": math.ceil(p["steps"] * factor)} for n, p in m.plan.items()}
    big.v1 = m.v1 * factor
    return big


def breakdown(m: Model, n: int, epochs: int, **kw: Any) -> dict[str, float]:
    """Where a predicted job's seconds go."""
    return {"fixed": m.f_job, "warmup": m.warmup_s(n), "train_steps": epochs * m.epoch_train_s(n, **kw),
            "of_which_allreduce": epochs * m.steps(n) * (m.step_s(n, **kw) - m.compute_s(n)),
            "dev_eval": epochs * m.eval_s(n), "saves": epochs * m.save_s, "total": m.job_s(n, epochs, **kw)}


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    drawn: list[list[float]] = []
    for scenario in dict.fromkeys(r["scenario"] for r in rows):
        rs = [r for r in rows if r["scenario"] == scenario]
        line = ax.plot([r["workers"] for r in rs], [r["efficiency"] for r in rs], marker="o", label=f"{scenario}: job")
        steps = [r["training_efficiency"] for r in rs]
        if steps not in drawn:  # scenarios that differ only outside the steps share one steps line
            drawn.append(steps)
            ax.plot([r["workers"] for r in rs], steps, marker=".", linestyle="--", color=line[0].get_color(),
                    label=f"{scenario}: training steps only")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers (--scaling grow)")
    ax.set_ylabel("efficiency = T(1) / (N T(N))")
    ax.set_ylim(0, 1.05)
    ax.axhline(0.8, color="grey", linewidth=0.5)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1, frameon=False)
    ax.set_title("Predicted scaling (cost model fitted on this machine, quiet)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, default=Path(__file__).parent / "results" / "scaling")
    ap.add_argument("--spark", default="spark-grow-s6.json", help="the grow-mode Spark runs (under --results) the "
                    "model is fitted on and checked against (bench/scaling_collect.py); spark-grow.json = session 5")
    ap.add_argument("--epochs", type=int, default=40, help="epochs of the predicted jobs (default config: 40)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    r = args.results
    step = json.loads((r / "cpu-step.json").read_text())
    allreduce = json.loads((r / "cpu-allreduce.json").read_text())
    spark = json.loads((r / args.spark).read_text())
    gpu = json.loads((r / "gpu-step.json").read_text())
    m = Model(step, allreduce, spark)
    session5 = r / "spark-grow.json"  # dev shards gathered through Spark's barrier allGather
    session5_v0 = Model(step, allreduce, json.loads(session5.read_text())).v0 if args.spark != session5.name \
        and session5.exists() else None
    fitted = {"c0_s": m.c0, "c1_s_per_padded_token": m.c1, "alpha_s": m.alpha, "beta_bytes_per_s": m.beta,
              "gradient_bytes": m.grad_bytes, "allreduces_per_step": m.k, "F_job_s": m.f_job,
              "warmup_s": m.warmup, "eval_v0_s": m.v0, "eval_v1_s": m.v1, "save_per_epoch_s": m.save_s,
              "spark_submit_s": m.spark_submit_s, "eval_v0_session5_s": session5_v0, "steps_per_epoch": {n: p["steps"] for n, p in m.plan.items()}}
    components = check_components(m, step, allreduce)
    check = check_against_spark(m, spark)
    preds = predictions(m, gpu, epochs=args.epochs, workers=args.workers, session5_v0=session5_v0)
    net = {"alpha": m.alpha + NET_LATENCY_S, "beta": 1.0 / (1.0 / m.beta + 1.0 / TEN_GBE_BYTES_PER_S)}
    levers = {"F_job_for_0.8_at_8": fixed_cost_for(m, 0.8, 8, args.epochs, **net),
              "F_job_for_0.8_at_8_b64": fixed_cost_for(m, 0.8, 8, args.epochs, b=64, **net),
              "breakdown_8_workers_s": breakdown(m, 8, args.epochs, **net),
              "breakdown_1_worker_s": breakdown(m, 1, args.epochs, **net),
              # a per-worker batch of 64 (global 512 at N = 8): the learning-rate rule was measured to N = 8 only
              "efficiency_8": efficiency(m, 8, args.epochs, **net),
              "training_efficiency_8": m.epoch_train_s(1, **net) / (8 * m.epoch_train_s(8, **net)),
              "efficiency_8_b64": efficiency(m, 8, args.epochs, b=64, **net),
              "training_efficiency_8_b64": m.epoch_train_s(1, b=64, **net) / (8 * m.epoch_train_s(8, b=64, **net)),
              # the all-reduce made free (an ideal collective): what the step itself then allows
              "efficiency_8_free_allreduce": efficiency(m, 8, args.epochs, **{**net, "k": 0}),
              "efficiency_8_free_allreduce_b64": efficiency(m, 8, args.epochs, **{**net, "k": 0, "b": 64})}
    for factor in (10, 30):
        big = scaled_corpus(m, factor)
        levers[f"efficiency_8_corpus_x{factor}"] = efficiency(big, 8, args.epochs, **net)
        levers[f"efficiency_8_corpus_x{factor}_b64"] = efficiency(big, 8, args.epochs, b=64, **net)
    if session5_v0 is not None:
        m5 = copy.copy(m)
        m5.v0 = session5_v0
        levers["efficiency_8_session5_gather"] = efficiency(m5, 8, args.epochs, **net)
    out = {"fitted": fitted, "components": components, "check": check, "predictions": preds, "levers": levers}
    print(json.dumps(fitted, indent=1))
    for name, rows in components.items():
        print(f"{name}: errors " + ", ".join(f"{100 * x['error']:+.1f}%" for x in rows))
    for c in check:
        print(f"{c['run']}: {c['workers']} worker(s): epochs {', '.join(f'{e:.1f}' for e in c['measured_epoch_train_s'])} s "
              f"measured, {c['predicted_epoch_train_s']:.1f} s predicted "
              f"({', '.join(f'{100 * e:+.1f}%' for e in c['epoch_errors'])}); training "
              f"{c['measured_training_tokens_per_s']:.0f} / {c['predicted_training_tokens_per_s']:.0f} tokens/s "
              f"({100 * c['training_tokens_per_s_error']:+.1f}%); job {c['measured_job_s']:.0f} / "
              f"{c['predicted_job_s']:.0f} s ({100 * c['job_error']:+.1f}%)")
    print(f"| scenario | N | global batch | job ({args.epochs} epochs) | speedup | efficiency | training efficiency "
          "| all-reduce share |")
    print("|---|---|---|---|---|---|---|---|")
    for p in preds:
        print(f"| {p['scenario']} | {p['workers']} | {p['global_batch']} | {p['job_s'] / 60:.1f} min | "
              f"{p['speedup']:.2f} | {p['efficiency']:.2f} | {p['training_efficiency']:.2f} | "
              f"{100 * p['allreduce_share']:.1f} % |")
    print(json.dumps(levers))
    if args.plot:
        plot(preds, args.plot)
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=2))
    assert all(math.isfinite(p["job_s"]) for p in preds)


if __name__ == "__main__":
    main()
