"""The cost model of synchronous data-parallel training (issue 19), fitted to our measurements.

    .venv/bin/python bench/scaling_model.py --results bench/results/scaling [--plot F.png] [--json-out F]

Per step of ``--scaling grow`` (every worker a full batch of b sentences):

    t_step(N) = t_compute(b) + t_allreduce(N, G)
    t_compute(b)      = c0 + c1 * b                              (fitted: cpu-step.json, one core per worker)
    t_allreduce(N, G) = 2 (N-1) alpha + 2 (N-1)/N * G / beta     (ring all-reduce of G gradient bytes;
                        alpha, beta fitted on two workers over loopback: cpu-allreduce.json)

and per job of E epochs over a corpus with S_1 global batches of 32 per epoch:

    T_job(N) = F_job + E * (S_1 / N * t_step(N) + F_epoch)

F_job (Spark session, executors, broadcast, imports, model build, final evaluation and save) and F_epoch
(dev evaluation, which every worker runs on the whole dev set, plus the chief's saves and checkpoint) come
from real ``spark_jobs/train.py --scaling grow`` runs (spark-grow.json). Efficiency(N) =
T_job(1) / (N * T_job(N)) at equal epochs; "training efficiency" leaves F_job and F_epoch out.

Scenarios for prediction: CPU workers (our step, one core each) and GPU workers (the H200's measured step
time at a per-worker batch of 256) on 10 GbE (1.17 GB/s payload, +25 us per message on top of the loopback
software latency) — stated assumptions, not measurements.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

TEN_GBE_BYTES_PER_S = 1.17e9  # 10 Gb/s minus Ethernet/IP/TCP framing
NET_LATENCY_S = 25e-6  # switch + NIC per message, on top of the software latency measured on loopback


def fit_line(x: list[float], y: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    b, a = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    return float(a), float(b)


def allreduce_s(n: int, grad_bytes: float, alpha: float, beta: float) -> float:
    if n <= 1:
        return 0.0
    return 2 * (n - 1) * alpha + 2 * (n - 1) / n * grad_bytes / beta


class Model:
    def __init__(self, step: dict[str, Any], allreduce: dict[str, Any], spark: dict[str, Any]) -> None:
        rows = step["rows"]
        self.c0, self.c1 = fit_line([r["batch"] for r in rows], [r["median_step_s"] for r in rows])
        a, inv_beta = fit_line([r["bytes"] for r in allreduce["rows"]], [r["median_s"] for r in allreduce["rows"]])
        self.alpha, self.beta = max(a / 2, 1e-6), 1.0 / max(inv_beta, 1e-15)
        self.grad_bytes = step["gradient_bytes"]
        w1 = spark["w1"]
        # The Spark runs' corpus (steps of global batch 32 per epoch, tokens) ...
        self.steps_32, self.tokens = w1["steps_epoch1"], w1["train_tokens"]
        self.f_epoch = float(np.mean(w1["eval_seconds"]))
        self.f_job = w1["wall_s"] - sum(w1["epoch_seconds"]) - sum(w1["eval_seconds"])
        self.spark_submit_s = w1["wall_s"] - w1["job_s"]  # spark-submit, JVM and session around the job
        # ... and the corpus the predictions are for (the step benchmark's: all of NCBI-disease); dev
        # evaluation time grows with the dev set, the per-job costs are taken as they were measured.
        self.full_steps_32 = step["steps_per_epoch_at_32"]
        self.full_eval_scale = step.get("dev_tokens", w1["dev_tokens"]) / w1["dev_tokens"]

    def for_full_corpus(self) -> Model:
        import copy

        m = copy.copy(self)
        m.steps_32, m.f_epoch = self.full_steps_32, self.f_epoch * self.full_eval_scale
        return m

    def compute_s(self, b: int) -> float:
        return self.c0 + self.c1 * b

    def epoch_train_s(self, n: int, *, b: int = 32, alpha: float | None = None, beta: float | None = None,
                      compute_s: float | None = None, grad_bytes: float | None = None) -> float:
        steps = self.steps_32 * 32 / (b * n)
        t = (compute_s if compute_s is not None else self.compute_s(b)) + allreduce_s(
            n, grad_bytes if grad_bytes is not None else self.grad_bytes, alpha if alpha is not None else self.alpha,
            beta if beta is not None else self.beta)
        return steps * t

    def job_s(self, n: int, epochs: int, *, f_job: float | None = None, f_epoch: float | None = None,
              shard_eval: bool = False, **kw: Any) -> float:
        fe = self.f_epoch if f_epoch is None else f_epoch
        return (self.f_job if f_job is None else f_job) + epochs * (
            self.epoch_train_s(n, **kw) + (fe / n if shard_eval else fe))


def check_against_spark(m: Model, spark: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's figures for the measured Spark runs (1 and 2 workers, grow mode)."""
    out = []
    for key, n in (("w1", 1), ("w2", 2)):
        run = spark[key]
        epochs = len(run["epoch_seconds"])
        pred_epoch = m.epoch_train_s(n)
        meas_epoch = float(run["epoch_seconds"][-1])  # steady state: epoch 1 also traces the step graph
        pred_job = m.job_s(n, epochs)
        out.append({"workers": n, "epochs": epochs, "measured_last_epoch_train_s": meas_epoch,
                    "predicted_epoch_train_s": pred_epoch, "epoch_error": pred_epoch / meas_epoch - 1,
                    "measured_job_s": run["wall_s"], "predicted_job_s": pred_job,
                    "job_error": pred_job / run["wall_s"] - 1,
                    "measured_train_tokens_per_s": run["train_tokens_per_s"],
                    "predicted_train_tokens_per_s": m.tokens / pred_epoch})
    return out


def predictions(m: Model, gpu: dict[str, Any], *, epochs: int, workers: list[int]) -> list[dict[str, Any]]:
    alpha_net = m.alpha + NET_LATENCY_S
    beta_net = 1.0 / (1.0 / m.beta + 1.0 / TEN_GBE_BYTES_PER_S)  # software copy and wire in series
    gpu_step = gpu["tokens_per_step"] / gpu["tokens_per_s"]
    cpu = {"alpha": alpha_net, "beta": beta_net}
    # GPU workers: their own measured fixed costs (the task body on the H200: compiles, dev evaluation on the
    # GPU) plus Spark's submission overhead measured here.
    gpu_kw = {"alpha": NET_LATENCY_S + 20e-6, "beta": TEN_GBE_BYTES_PER_S, "compute_s": gpu_step,
              "grad_bytes": gpu["gradient_bytes"], "f_job": gpu["f_job_s"] + m.spark_submit_s, "f_epoch": gpu["f_epoch_s"]}
    rows = []
    for scenario, kw, b, job_kw in (
        ("CPU workers (1 core), 10 GbE", cpu, 32, {}),
        ("CPU workers, 10 GbE, dev evaluation sharded", cpu, 32, {"shard_eval": True}),
        ("GPU workers (H200), 10 GbE", gpu_kw, gpu["batch"], {}),
    ):
        step_kw = {k: v for k, v in kw.items() if k not in ("f_job", "f_epoch")}
        job_kw = {**job_kw, **{k: v for k, v in kw.items() if k in ("f_job", "f_epoch")}}
        t1 = m.job_s(1, epochs, b=b, **step_kw, **job_kw)
        e1 = m.epoch_train_s(1, b=b, **step_kw)
        for n in workers:
            tn, en = m.job_s(n, epochs, b=b, **step_kw, **job_kw), m.epoch_train_s(n, b=b, **step_kw)
            rows.append({"scenario": scenario, "workers": n, "per_worker_batch": b, "global_batch": b * n,
                         "job_s": tn, "speedup": t1 / tn, "efficiency": t1 / (n * tn),
                         "training_efficiency": e1 / (n * en),
                         "allreduce_share": allreduce_s(n, kw.get("grad_bytes", m.grad_bytes), kw["alpha"], kw["beta"])
                         / (kw.get("compute_s", m.compute_s(b)) + allreduce_s(n, kw.get("grad_bytes", m.grad_bytes),
                                                                               kw["alpha"], kw["beta"]))})
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4))
    for scenario in dict.fromkeys(r["scenario"] for r in rows):
        rs = [r for r in rows if r["scenario"] == scenario]
        ax.plot([r["workers"] for r in rs], [r["efficiency"] for r in rs], marker="o", label=f"{scenario}: job")
        ax.plot([r["workers"] for r in rs], [r["training_efficiency"] for r in rs], marker=".", linestyle="--",
                label=f"{scenario}: training steps only")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers (--scaling grow)")
    ax.set_ylabel("efficiency = T(1) / (N T(N))")
    ax.set_ylim(0, 1.05)
    ax.axhline(0.8, color="grey", linewidth=0.5)
    ax.legend(fontsize=7)
    ax.set_title("Predicted scaling (cost model fitted on this machine)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, default=Path(__file__).parent / "results" / "scaling")
    ap.add_argument("--epochs", type=int, default=30, help="epochs of the predicted jobs (default config: 30)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    r = args.results
    step = json.loads((r / "cpu-step.json").read_text())
    allreduce = json.loads((r / "cpu-allreduce.json").read_text())
    spark = json.loads((r / "spark-grow.json").read_text())
    gpu = json.loads((r / "gpu-step.json").read_text())
    m = Model(step, allreduce, spark)
    fitted = {"c0_s": m.c0, "c1_s_per_sentence": m.c1, "alpha_s": m.alpha, "beta_bytes_per_s": m.beta,
              "gradient_bytes": m.grad_bytes, "F_job_s": m.f_job, "F_epoch_s": m.f_epoch,
              "steps_per_epoch_at_32": m.steps_32, "spark_submit_s": m.spark_submit_s}
    check = check_against_spark(m, spark)
    preds = predictions(m.for_full_corpus(), gpu, epochs=args.epochs, workers=args.workers)
    out = {"fitted": fitted, "check": check, "predictions": preds}
    print(json.dumps(fitted, indent=1))
    for c in check:
        print(f"{c['workers']} worker(s): last epoch {c['measured_last_epoch_train_s']:.1f}s measured, "
              f"{c['predicted_epoch_train_s']:.1f}s predicted ({100 * c['epoch_error']:+.1f}%); job "
              f"{c['measured_job_s']:.0f}s / {c['predicted_job_s']:.0f}s ({100 * c['job_error']:+.1f}%)")
    print("| scenario | N | global batch | job (30 epochs) | speedup | efficiency | training efficiency | all-reduce share |")
    print("|---|---|---|---|---|---|---|---|")
    for p in preds:
        print(f"| {p['scenario']} | {p['workers']} | {p['global_batch']} | {p['job_s'] / 60:.1f} min | "
              f"{p['speedup']:.2f} | {p['efficiency']:.2f} | {p['training_efficiency']:.2f} | "
              f"{100 * p['allreduce_share']:.1f} % |")
    if args.plot:
        plot(preds, args.plot)
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=2))
    assert all(math.isfinite(p["job_s"]) for p in preds)


if __name__ == "__main__":
    main()
