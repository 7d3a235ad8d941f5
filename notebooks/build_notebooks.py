"""Build the teaching notebooks from this script (``python notebooks/build_notebooks.py``).

Each notebook imports ``grpo_theory`` and renders equations from the registered
derivations (``Math(get(name).latex())``); none re-defines the mathematics.
"""

from __future__ import annotations

from pathlib import Path

import nbformat as nbf

HERE = Path(__file__).resolve().parent
SETUP = """import warnings
# tqdm.auto (progress bars) warns inside Jupyter when ipywidgets is missing; harmless here.
warnings.filterwarnings("ignore", message="IProgress not found")
import numpy as np
import matplotlib.pyplot as plt
from IPython.display import Math, display
from grpo_theory.derived import get
from grpo_theory.report import DEFAULT_MODEL
VARIANT = {k: DEFAULT_MODEL[k] for k in ("p_ref", "group_size", "normalization", "kl", "kl_coef", "adv_eps", "surrogate")}
DEFAULT_MODEL"""


def eq(*names):
    return "\n".join(f"display(Math(get({n!r}).latex()))" for n in names)


NOTEBOOKS = {
    "01_update_to_drift": [
        ("md", "# 1. From the GRPO update to the mean-field drift\n\nA group of G actions is drawn "
               "from the sampling policy, rewards are normalised within the group, and the logits take a "
               "policy-gradient step. Averaging the update over the binomial number of correct samples "
               "gives the **mean-field drift** F(z). The sum is exact at finite G."),
        ("code", SETUP),
        ("md", "The expected (std-normalised) advantage, its large-G limit, and the probability that a "
               "group carries no signal (all rewards equal):"),
        ("code", eq("drift.expected_advantage_std_limit", "drift.degenerate_probability")),
        ("md", "The two KL variants exert different forces. The exact KL and the per-sample k3 "
               "estimator of TRL/verl do not agree:"),
        ("code", eq("drift.kl_force_exact", "drift.kl_force_k3")),
        ("code", "from grpo_theory.drift import drift\nz = np.linspace(-3, 6, 200)\n"
                 "fig, ax = plt.subplots(figsize=(5, 3))\n"
                 "for norm in ('std', 'mean'):\n    for kl in ('exact', 'k3'):\n"
                 "        ax.plot(z, drift(z, normalization=norm, kl=kl, kl_coef=0.1, group_size=8, p_ref=0.3), label=f'{norm}, {kl}')\n"
                 "ax.axhline(0, color='k', lw=0.5); ax.set_xlabel('logit z'); ax.set_ylabel('drift F(z)'); ax.legend(); plt.show()"),
        ("md", "**Exercise.** What fraction of groups of size G = 8 are degenerate at p = 0.9? "
               "Evaluate the rendered formula by hand (p^G + (1 − p)^G) and check your answer."),
        ("code", "my_answer = 0.9**8 + 0.1**8   # <- your answer\n"
                 "from grpo_theory.drift import degenerate_probability\n"
                 "assert abs(my_answer - degenerate_probability(0.9, 8)) < 1e-12\nmy_answer"),
    ],
    "02_fixed_points": [
        ("md", "# 2. Fixed points, stiffness and success amplification\n\nWith a KL penalty the reward stops at "
               "an interior fixed point p* > p_ref: this is success amplification. The slope of the drift "
               "there is the stiffness K = −F′(z*)."),
        ("code", SETUP),
        ("code", eq("fixed_points.mroueh_map", "fixed_points.stiffness_reward_invariance")),
        ("code", "from grpo_theory.fixed_points import stable_fixed_point, compare_with_mroueh\n"
                 "fp = stable_fixed_point(**VARIANT); fp"),
        ("md", "Which variant matches Mroueh's recurrence? The table puts each variant's stable fixed point "
               "next to Mroueh's:"),
        ("code", "rows = compare_with_mroueh(p_ref=0.3, kl_coef=0.5)\nfor r in rows: print(r)"),
        ("md", "**Exercise.** Is the default model's fixed point above p_ref, i.e. is the success amplified?"),
        ("code", "amplified = fp.p > DEFAULT_MODEL['p_ref']   # <- your answer\nassert amplified == (fp.p > 0.3) and fp.stable"),
    ],
    "03_oscillator": [
        ("md", "# 3. The oscillator\n\nThe linearised update with momentum and lag is the damped oscillator "
               "m ẍ + γ ẋ + k x = 0. Its coefficients come from the hyperparameters:"),
        ("code", SETUP),
        ("code", eq("oscillator.mass", "oscillator.damping", "oscillator.spring", "oscillator.damping_ratio")),
        ("md", "The overdamped limit m → 0 is the empirical single exponential with τ = γ/k:"),
        ("code", eq("oscillator.single_exponential")),
        ("code", "from grpo_theory import oscillator\nt = np.linspace(0, 80, 400)\n"
                 "fig, ax = plt.subplots(figsize=(5, 3))\n"
                 "for mu in (0.0001, 0.5, 0.8, 0.95):\n"
                 "    o = oscillator.coefficients(0.5, mu, 1, 0.127)\n"
                 "    ax.plot(t, o.trajectory(t, -1.0), label=f'mu={mu:g}, {o.regime}')\n"
                 "o = oscillator.coefficients(0.5, 0.0001, 1, 0.127)\n"
                 "ax.plot(t, oscillator.single_exponential(t, 0.0, -1.0, o.time_scale), 'k:', label='single exponential')\n"
                 "ax.set_xlabel('step'); ax.set_ylabel('x = z - z*'); ax.legend(fontsize=7); plt.show()"),
        ("md", "Inertia adds a **slow start**: with ẋ(0) = 0 the initial slope vanishes. The single "
               "exponential instead starts at full speed."),
        ("md", "**Exercise.** Compute the time scale τ = γ/k for η = 0.5, μ = 0.0001, k = 1, K = 0.127."),
        ("code", "o = oscillator.coefficients(0.5, 0.0001, 1, 0.127)\nmy_tau = o.damping / o.spring   # <- your answer\n"
                 "assert abs(my_tau - o.time_scale) < 1e-12\nmy_tau"),
    ],
    "04_stability": [
        ("md", "# 4. Stability: the refresh-interval threshold\n\nThe exact L2 analysis applies Jury's "
               "conditions to the refresh-window monodromy. The published threshold ηK·k < 1 − μ is its "
               "first-order continuous approximation."),
        ("code", SETUP),
        ("code", eq("discrete.refresh_flip_threshold", "discrete.published_threshold_learning_rate")),
        ("code", "from grpo_theory import discrete\nrows = discrete.threshold_error_table(momenta=(0.0, 0.9), refresh_intervals=(1, 2, 8, 32))\n"
                 "for r in rows: print(r['momentum'], r['refresh_interval'], round(r['eta_K_exact'], 5), r['binding'], round(r['rel_error_published'], 3))"),
        ("code", "from grpo_theory.simulate import simulate\nK = 0.127\n"
                 "for k in (1, 8):\n    st = discrete.stability(0.5, 0.5, k, K)\n"
                 "    print(k, st.discrete_regime, round(st.spectral_radius, 3))"),
        ("md", "**Exercise.** What is the largest stable refresh interval at η = 0.5, μ = 0.5, K = 0.127 "
               "(stale surrogate)? Compare it with the published floor((1 − μ)/(ηK))."),
        ("code", "st = discrete.stability(0.5, 0.5, 1, 0.127)\nmy_k = st.max_stable_refresh_interval   # <- your answer\n"
                 "assert discrete.stability(0.5, 0.5, my_k, 0.127).stable and not discrete.stability(0.5, 0.5, my_k + 1, 0.127).stable\n"
                 "my_k, st.max_stable_refresh_interval_continuous"),
    ],
    "05_group_temperature": [
        ("md", "# 5. Group size as temperature\n\nThe noise in one GRPO step has variance ∝ 1/G. The "
               "stationary fluctuation around z* is the AR(2) variance:"),
        ("code", SETUP),
        ("code", eq("noise.ar2_variance", "noise.langevin_variance")),
        ("code", "from grpo_theory import noise\nfrom grpo_theory.drift import update_variance\nfrom grpo_theory.fixed_points import stable_fixed_point\n"
                 "for G in (8, 32, 128):\n    fp = stable_fixed_point(**{**VARIANT, 'group_size': G})\n"
                 "    s2 = float(update_variance(fp.p, normalization='std', kl='k3', group_size=G, kl_coef=0.1, p_ref=0.3, adv_eps=1e-6))\n"
                 "    v = noise.stationary_variance(0.5, 0.0, fp.stiffness, s2, fresh_fraction=1.0)\n"
                 "    print(G, round(fp.p, 4), round(G * v, 4))"),
        ("md", "G·Var z approaches a constant as G grows. At small G, degenerate groups reduce both the "
               "drift and the noise."),
        ("md", "**Exercise.** Does doubling G halve Var z for the default model (std normalisation, k3 KL)? Compute the ratio Var z(G=64)/Var z(G=128). For this variant it stays close to 1: the 1/G law does not hold here. The report's fluctuation figure shows the same."),
        ("code", "def var(G):\n    fp = stable_fixed_point(**{**VARIANT, 'group_size': G})\n"
                 "    s2 = float(update_variance(fp.p, normalization='std', kl='k3', group_size=G, kl_coef=0.1, p_ref=0.3, adv_eps=1e-6))\n"
                 "    return noise.stationary_variance(0.5, 0.0, fp.stiffness, s2, fresh_fraction=1.0)\n"
                 "ratio = var(64) / var(128)\nassert 0.9 < ratio < 1.5   # not 2: no 1/G law for this variant\nratio"),
    ],
    "06_real_run": [
        ("md", "# 6. Fitting and diagnosing a real run\n\nA verl GRPO run (DeepSeek 7B, GSM8K) from the "
               "test data, fitted with the overdamped single exponential and with the L3 oscillator."),
        ("code", SETUP),
        ("code", "from grpo_theory.report import find_example_log\nfrom grpo_theory.logs import read_log\nfrom grpo_theory.fitting import fit_log\n"
                 "path = find_example_log()\nlog = read_log(path)\nres = fit_log(log, models=('exponential', 'oscillator'))\n"
                 "{m: round(d['r2'], 3) for m, d in res['models'].items()}"),
        ("code", "obj = res['_objects']\nfig, ax = plt.subplots(figsize=(5, 3))\nax.plot(obj['steps'], obj['values'], '.', ms=2, color='0.5')\n"
                 "for name, fr in obj['fits'].items():\n    ax.plot(obj['steps'], fr.predict(obj['steps'] - fr.t0), label=name)\n"
                 "ax.set_xlabel('step'); ax.set_ylabel('reward'); ax.legend(); plt.show()"),
        ("code", "from grpo_theory.diagnostics import diagnose\nimport json\nprint(json.dumps(diagnose(log), indent=1, default=str)[:1500])"),
        ("md", "**Exercise.** Which model family has the higher R² on this run?"),
        ("code", "my_best = 'oscillator'   # <- your answer\nassert my_best == max(res['models'], key=lambda m: res['models'][m]['r2'])"),
    ],
}


def build(out_dir=HERE):
    paths = []
    for name, cells in NOTEBOOKS.items():
        nb = nbf.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbf.v4.new_markdown_cell(src) if kind == "md" else nbf.v4.new_code_cell(src)
                    for kind, src in cells]
        path = Path(out_dir) / f"{name}.ipynb"
        nbf.write(nb, path)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in build():
        print(p)
