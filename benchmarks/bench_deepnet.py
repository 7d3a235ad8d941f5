"""Full deep-network protocol (issue 12): run once, on demand (a few minutes on 2 cores).

    python benchmarks/bench_deepnet.py [--out DIR] [--pairs 32] [--windows 10]

Prints and writes to DIR (default ``deepnet_results``): ``table.md`` (the results table),
``results.json`` (every number), ``fig_refresh.png`` (per-window multiplier vs k at each
mu, measured with SE and the exact prediction), ``fig_transition.png`` (AR(2)
discriminant vs mu), ``fig_fluctuation.png`` (stationary variance vs G).

Protocol:
  * refresh sweeps at mu in {0, 0.5, 0.9}, k = 1 .. k_max + 4 (eta*K between the exact
    thresholds of k = 10 and 11 at each mu);
  * the momentum transition at k = 1, eta*K = 0.05, mu_c + {-0.1 .. 0.1};
  * the negative control (TRL default objective) up to k = 32;
  * Adam (beta1 = 0.9) against the Adam reduction (noisy verifier, flip 0.1);
  * the 1/G fluctuation law with the noisy verifier, G in {4, 8, 16, 32};
  * speed: batched run axis vs a one-run-at-a-time loop.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grpo_theory.deepnet import run_deepnet  # noqa: E402
from grpo_theory.theory.discrete import linear_stability  # noqa: E402
from grpo_theory.deepnet.experiments import fluctuation_law, setup_plateau  # noqa: E402
from grpo_theory.deepnet.grpo import OptimizerConfig, run_ensemble  # noqa: E402
from grpo_theory.deepnet.results import jsonable  # noqa: E402


def speed(runs=32, steps=50):
    """us per run-step: one batched ensemble vs a loop of single runs (same work)."""
    plat = setup_plateau("dr-grpo-k1")
    opt = OptimizerConfig("sgd", 0.1, 0.5)
    amps = np.full(runs, 0.1)
    rec = run_ensemble(plat.policy, plat.cfg, opt, steps=steps, runs=runs, kick=plat.mode.direction,
                       amplitudes=amps, observe=plat.mode.eigenvector)
    batched = rec.seconds / (runs * steps) * 1e6
    t = 0.0
    for r in range(runs):
        rr = run_ensemble(plat.policy, plat.cfg, opt, steps=steps, runs=1, seed=r,
                          kick=plat.mode.direction, amplitudes=amps[:1],
                          observe=plat.mode.eigenvector)
        t += rr.seconds
    loop = t / (runs * steps) * 1e6
    return {"batched_us_per_run_step": batched, "loop_us_per_run_step": loop,
            "speedup": loop / batched, "runs": runs, "steps": steps}


def _row(label, r):
    kp = "none" if r.k_max_predicted is None else r.k_max_predicted
    ko = "none<=%d" % max(x.k for x in r.per_k) if r.k_max_observed is None else r.k_max_observed
    worst = max(abs(x.multiplier - x.predicted) for x in r.per_k)
    mis = ",".join(map(str, r.misclassified)) or "-"
    return (f"| {label} | {r.effective_momentum:g} | {r.eta_K:.4f} | {r.stiffness_ntk:.4f} | "
            f"{r.stiffness_response:.4f} ± {r.stiffness_response_se:.4f} | {kp} | "
            f"{r.k_max_published} | {ko} | {worst:.3f} | {mis} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="deepnet_results")
    ap.add_argument("--pairs", type=int, default=32)
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)      # tiny tensors: one thread is fastest and fair on shared cores
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    kw = dict(quick=False, pairs=args.pairs, windows=args.windows, seed=args.seed)
    results = {}
    for mu in (0.0, 0.5, 0.9):
        results[f"sgd_mu{mu:g}"] = run_deepnet(momentum=mu, transition=(mu == 0.0), **kw)
        print(f"mu = {mu} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    results["control_trl_default"] = run_deepnet(variant="trl-default", transition=False, **kw)
    results["adam_beta1_0.9"] = run_deepnet(optimizer="adam", momentum=0.9, transition=False,
                                            **kw)
    results["reuse_batch_mu0"] = run_deepnet(momentum=0.0, reuse="batch", transition=False, **kw)
    print(f"sweeps done ({time.perf_counter() - t0:.0f} s)", flush=True)
    fluct = fluctuation_law((4, 8, 16, 32), runs=64, burn=200, steps=600, seed=args.seed + 3)
    spd = speed()
    total = time.perf_counter() - t0

    lines = ["# Deep-network test of the exact stability theory (bench_deepnet.py)", "",
             "| run | mu | eta*K | K (NTK) | K (response) | k_max exact | k_max published | "
             "k_max observed | max abs(meas - pred) | misclassified k |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        lines.append(_row(name, r))
    lines += ["", "## Per-k multipliers", ""]
    for name, r in results.items():
        lines += [f"### {name}", "", "| k | multiplier | se | predicted | observed | predicted |",
                  "|---|---|---|---|---|---|"]
        for x in r.per_k:
            lines.append(f"| {x.k} | {x.multiplier:.4f} | {x.se:.4f} | {x.predicted:.4f} | "
                         f"{'stable' if x.stable_observed else 'UNSTABLE'} | "
                         f"{'stable' if x.stable_predicted else 'UNSTABLE'} |")
        lines.append("")
    r0 = results["sgd_mu0"]
    lines += ["## Momentum transition (k = 1, eta*K = 0.05)", "",
              f"mu_c exact discrete {r0.mu_c_predicted:.4f}, continuous L3 "
              f"{r0.mu_c_continuous:.4f}, observed "
              f"{'-' if r0.mu_c_observed is None else format(r0.mu_c_observed, '.4f')}", "",
              "| mu | discriminant | se | predicted | overshoot | se | predicted |",
              "|---|---|---|---|---|---|---|"]
    for t in r0.transition:
        lines.append(f"| {t.momentum:.4f} | {t.discriminant:.4f} | {t.discriminant_se:.4f} | "
                     f"{t.discriminant_predicted:.4f} | {t.overshoot:.4f} | {t.overshoot_se:.4f} | "
                     f"{t.overshoot_predicted:.4f} |")
    lines += ["", "## 1/G fluctuation law (noisy verifier, flip 0.1, k = 1, mu = 0, eta*K = 0.1)",
              "", "| G | Var x | se | predicted (exact AR) | G * Var x |", "|---|---|---|---|---|"]
    for f in fluct:
        lines.append(f"| {f['G']} | {f['var']:.5f} | {f['se']:.5f} | {f['predicted']:.5f} | "
                     f"{f['G_times_var']:.4f} |")
    Gs = np.array([f["G"] for f in fluct], float)
    vs = np.array([f["var"] for f in fluct])
    slope = float(np.polyfit(np.log(Gs), np.log(vs), 1)[0])
    lines += ["", f"log-log slope of Var x vs G: {slope:.3f} (1/G law: -1)", "",
              "## Speed", "",
              f"batched: {spd['batched_us_per_run_step']:.0f} us per run-step; one run at a time: "
              f"{spd['loop_us_per_run_step']:.0f} us per run-step (x{spd['speedup']:.1f}); "
              f"total wall time {total:.0f} s"]
    table = "\n".join(lines)
    print(table)
    (out / "table.md").write_text(table + "\n")
    blob = {k: v.to_dict() for k, v in results.items()}
    blob["fluctuation_law"] = {"rows": fluct, "loglog_slope": slope}
    blob["speed"] = spd
    blob["seconds"] = total
    (out / "results.json").write_text(json.dumps(jsonable(blob), indent=2, allow_nan=False))
    try:
        _figures(out, results, fluct)
    except Exception as exc:  # pragma: no cover - figures are a convenience
        print(f"figures skipped: {exc}")
    bad = [k for k, r in results.items() if r.exit_code]
    return 1 if bad else 0


def _figures(out, results, fluct):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, mu in zip(axes, (0.0, 0.5, 0.9)):
        r = results[f"sgd_mu{mu:g}"]
        ks = np.arange(1, max(x.k for x in r.per_k) + 1)
        pred = [linear_stability(r.effective_learning_rate, mu, int(k), r.stiffness_ntk).spectral_radius
                for k in ks]
        ax.plot(ks, pred, "-", color="0.5", label="exact theory (NTK stiffness)")
        ax.errorbar([x.k for x in r.per_k], [x.multiplier for x in r.per_k],
                    yerr=[x.se for x in r.per_k], fmt="o", ms=4, label="network (real GRPO)")
        ax.axhline(1, color="k", lw=0.6)
        ax.axvline(r.k_max_published + 0.5, color="r", ls=":", label="published k_max")
        ax.set_title(f"mu = {mu:g}, eta K = {r.eta_K:.4f}")
        ax.set_xlabel("refresh interval k")
    axes[0].set_ylabel("per-window multiplier")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "fig_refresh.png", dpi=120)
    plt.close(fig)
    r0 = results["sgd_mu0"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.errorbar([t.momentum for t in r0.transition], [t.discriminant for t in r0.transition],
                yerr=[t.discriminant_se for t in r0.transition], fmt="o", label="network")
    mus = np.linspace(min(t.momentum for t in r0.transition), max(t.momentum for t in r0.transition))
    ax.plot(mus, (1 + mus - 0.05) ** 2 - 4 * mus, "-", color="0.5", label="exact k = 1")
    ax.axvline(r0.mu_c_predicted, color="g", ls="--", label="mu_c exact")
    ax.axvline(r0.mu_c_continuous, color="r", ls=":", label="mu_c L3")
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel("momentum")
    ax.set_ylabel("AR(2) discriminant")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "fig_transition.png", dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    G = [f["G"] for f in fluct]
    ax.errorbar(G, [f["var"] for f in fluct], yerr=[f["se"] for f in fluct], fmt="o",
                label="network")
    ax.plot(G, [f["predicted"] for f in fluct], "s--", mfc="none", label="exact AR variance")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("group size G")
    ax.set_ylabel("stationary Var of the top mode")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "fig_fluctuation.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
