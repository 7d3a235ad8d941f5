"""The result of an ensemble simulation, its statistics over live runs, and estimate-vs-prediction comparisons."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from grpo_theory.results import Result, jsonable
from grpo_theory.simulation import kernels as _k
from grpo_theory.validate import ParameterError

__all__ = ["Comparison", "compare", "SimulationResult", "EnsembleSummary"]


# ---------------------------------------------------------------------------
# statistics helpers
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """An estimate with its standard error against a prediction.

    ``ok`` is ``|estimate − expected| ≤ n_sigma·stderr``; truthy when ok.
    ``str()`` reports the numbers.
    """

    estimate: float
    stderr: float
    expected: float
    n_sigma: float = 4.0

    @property
    def deviation(self) -> float:
        """(estimate − expected) in standard errors."""
        if self.stderr == 0:
            if self.estimate == self.expected:
                return 0.0
            return math.copysign(math.inf, self.estimate - self.expected)
        return (self.estimate - self.expected) / self.stderr

    @property
    def ok(self) -> bool:
        return bool(abs(self.deviation) <= self.n_sigma)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        verdict = "agrees" if self.ok else "DISAGREES"
        return (f"estimate {self.estimate:.6g} ± {self.stderr:.3g} vs expected "
                f"{self.expected:.6g}: {self.deviation:+.2f} σ, {verdict} "
                f"(bound {self.n_sigma:g} σ)")


def compare(samples, expected: float, *, n_sigma: float = 4.0) -> Comparison:
    """Compare the mean of i.i.d. ``samples`` with ``expected`` (standard error of the mean)."""
    x = np.asarray(samples, dtype=float).ravel()
    if x.size < 2:
        raise ParameterError("samples", f"{x.size} sample(s)", "at least 2 samples")
    return Comparison(float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size)),
                      float(expected), float(n_sigma))


# ---------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class SimulationResult:
    """Ensemble trajectories of one simulation.

    ``observables[name]`` (also ``result.name`` / ``result[name]``) has shape
    ``(runs, steps + 1)``; ``t`` is ``0..steps`` (optimizer steps).
    ``final_logits`` is ``(runs, K)``; ``theta0``/``theta_ref`` the initial and
    reference logits; ``offsets`` ``(prompts, K)`` the difficulty offsets.

    Divergence: ``diverged_at`` (``(runs,)`` int) is the first step whose state
    left the safe region (logit spread above ``settings.divergence_bound`` or not
    finite), ``-1`` for runs that never did; ``diverged`` is ``diverged_at >= 0``.
    A diverged run is frozen at its last accepted state, so its raw arrays stay
    finite but hold placeholders from ``diverged_at`` on (``active`` is the mask of
    valid entries) and ``final_logits`` is that last accepted state.  The ensemble
    statistics (:meth:`mean`, :meth:`var`, :meth:`sem`, :meth:`per_step`,
    :meth:`summary`, :meth:`to_csv`) at step t use the ``n_active[t]`` runs still
    live at t (survivors only: conditioned on not having diverged yet); they are
    NaN (``None`` in :meth:`summary`) where fewer runs than needed are left.
    """

    model: object             # the GRPOModel simulated
    settings: object          # engine.EnsembleSettings: the simulation-only arguments
    t: np.ndarray
    observables: Mapping[str, np.ndarray]
    final_logits: np.ndarray
    theta0: np.ndarray
    theta_ref: np.ndarray
    offsets: np.ndarray
    diverged_at: np.ndarray = None

    def __post_init__(self):
        if self.diverged_at is None:
            object.__setattr__(self, "diverged_at", np.full(self.settings.runs, -1, np.int64))

    def __getattr__(self, name):
        obs = object.__getattribute__(self, "observables")
        if name in obs:
            return obs[name]
        raise AttributeError(name)

    def __getitem__(self, name):
        return self._get(name)

    def _get(self, name) -> np.ndarray:
        if name not in self.observables:
            raise ParameterError("observable", name,
                                 "one of the recorded " + ", ".join(map(repr, self.observables)))
        return self.observables[name]

    @property
    def runs(self) -> int:
        return self.settings.runs

    @property
    def steps(self) -> int:
        return self.settings.steps

    # -- divergence --------------------------------------------------------------
    @property
    def diverged(self) -> np.ndarray:
        """``(runs,)`` bool: the run left the safe region (see class docstring)."""
        return self.diverged_at >= 0

    @property
    def any_diverged(self) -> bool:
        return bool(np.any(self.diverged_at >= 0))

    @property
    def diverged_fraction(self) -> float:
        """Fraction of the runs that diverged within ``steps``."""
        return float(np.mean(self.diverged_at >= 0))

    @property
    def active(self) -> np.ndarray:
        """``(runs, steps + 1)`` bool: the entry is a real state, ``t < diverged_at``."""
        end = np.where(self.diverged_at >= 0, self.diverged_at, self.steps + 1)
        return self.t[None, :] < end[:, None]

    @property
    def n_active(self) -> np.ndarray:
        """``(steps + 1,)`` int: runs still live at each step (the statistics' sample size)."""
        if not self.any_diverged:
            return np.full(self.steps + 1, self.runs, dtype=np.int64)
        return self.active.sum(axis=0)

    # -- statistics over live runs -------------------------------------------------
    def mean(self, name: str) -> np.ndarray:
        """Ensemble mean per step over the live runs, ``(steps + 1,)``; NaN where none."""
        x = self._get(name)
        if not self.any_diverged:
            return x.mean(axis=0)
        act = self.active
        n = act.sum(axis=0)
        total = np.where(act, x, 0.0).sum(axis=0)
        return np.divide(total, n, out=np.full(n.shape, np.nan), where=n > 0)

    def var(self, name: str) -> np.ndarray:
        """Variance across the live runs per step (ddof = 1); NaN with fewer than 2."""
        x = self._get(name)
        if not self.any_diverged:
            if x.shape[0] < 2:
                return np.full(x.shape[1], np.nan)
            return x.var(axis=0, ddof=1)
        act = self.active
        n = act.sum(axis=0)
        dev = np.where(act, x - self.mean(name), 0.0)
        return np.divide((dev * dev).sum(axis=0), n - 1, out=np.full(n.shape, np.nan),
                         where=n > 1)

    def sem(self, name: str) -> np.ndarray:
        """Standard error of the ensemble mean per step (over the live runs)."""
        if not self.any_diverged:
            return np.sqrt(self.var(name) / self._get(name).shape[0])
        n = self.n_active
        v = self.var(name)
        return np.sqrt(np.divide(v, n, out=np.full(n.shape, np.nan), where=n > 0))

    def compare_mean(self, name: str, step: int, expected: float, *,
                     n_sigma: float = 4.0) -> Comparison:
        """The ensemble mean of ``name`` at ``step`` (live runs) against a prediction."""
        x = self._get(name)[:, step]
        if self.any_diverged:
            x = x[self.active[:, step]]
        return compare(x, expected, n_sigma=n_sigma)

    def summary(self) -> dict:
        """Plain-dict summary: settings, divergence (``diverged_fraction``,
        ``n_diverged``, ``divergence_bound``) and, per observable, the last defined
        ensemble mean, variance and standard error over the ``n_active`` live runs
        (``None`` where undefined, so the dict is valid JSON as is)."""
        out = {"runs": self.runs, "steps": self.steps,
               "group_size": self.model.group_size, "seed": self.settings.seed,
               "divergence_bound": self.settings.divergence_bound,
               "n_diverged": int(self.diverged.sum()),
               "diverged_fraction": self.diverged_fraction,
               "final": {}}
        n_active = self.n_active
        for name in self.observables:
            step = self.steps - 1 if name in _k.UPDATE_OBSERVABLES else self.steps
            if step < 0:
                continue
            out["final"][name] = {"step": step, "n_active": int(n_active[step]),
                                  "mean": self.mean(name)[step],
                                  "var": self.var(name)[step],
                                  "sem": self.sem(name)[step]}
        return jsonable(out)

    def per_step(self) -> dict:
        """Per-step ensemble statistics over the live runs: ``{"step": [...],
        "n_active": [...], "mean_<name>": [...], "var_<name>": [...],
        "sem_<name>": [...]}`` (NaN where undefined)."""
        out = {"step": self.t.tolist(), "n_active": self.n_active.tolist()}
        for name in self.observables:
            out[f"mean_{name}"] = self.mean(name).tolist()
            out[f"var_{name}"] = self.var(name).tolist()
            out[f"sem_{name}"] = self.sem(name).tolist()
        return out

    def to_csv(self, path) -> None:
        """Write per-step ``n_active`` and ensemble mean, variance and standard error
        (over the live runs) as CSV; undefined entries are written as ``nan``.  Atomic: the
        file is written beside ``path`` and moved into place (:mod:`grpo_theory.outputs`)."""
        from grpo_theory.outputs import atomic_output

        table = self.per_step()
        cols = list(table)
        with atomic_output(path) as tmp, open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(cols)
            for row in zip(*(table[c] for c in cols)):
                w.writerow([repr(v) if isinstance(v, float) else v for v in row])




@dataclass(frozen=True)
class EnsembleSummary(Result):
    """What ``grpo-theory simulate`` prints: the settings, the per-step ensemble mean and
    variance of every observable over the live runs, and divergence.  JSON keys:
    the settings, ``n_diverged``, ``diverged_fraction``, ``step``, ``n_active`` and
    ``mean_<observable>``/``var_<observable>`` (``None`` where no run is live)."""

    result: SimulationResult
    csv_path: str | None = None

    def to_dict(self) -> dict:
        r, m, st = self.result, self.result.model, self.result.settings
        payload = {"runs": st.runs, "steps": st.steps, "seed": st.seed, **m.to_dict(),
                   "divergence_bound": st.divergence_bound,
                   "n_diverged": int(r.diverged.sum()), "diverged_fraction": r.diverged_fraction,
                   "step": r.t.tolist(), "n_active": r.n_active.tolist(),
                   "notes": list(m.unused_notes())}
        if m.optimizer == "adam":
            payload["adam_betas"] = [m.adam_beta1, m.adam_beta2]
        for name in r.observables:
            payload[f"mean_{name}"] = r.mean(name)
            payload[f"var_{name}"] = r.var(name)
        return jsonable(payload)

    def __str__(self) -> str:
        r, m, st = self.result, self.result.model, self.result.settings
        mean_r, var_r, sem = r.mean("reward"), r.var("reward"), r.sem("reward")
        reuse = ("fresh batches" if m.reuse == "fresh" else "one batch reused"
                 if m.window_batches == 1 else f"{m.window_batches} batches cycled")
        lag = (f"refresh every {m.refresh_interval}" + (f" ({reuse})" if m.refresh_interval > 1 else "")
               if m.lag_model == "refresh" else f"delay {m.delay}")
        opt = (f"sgd (eta = {m.learning_rate:g}, mu = {m.momentum:g})" if m.optimizer == "sgd"
               else f"adam (eta = {m.learning_rate:g}, betas = {m.adam_beta1:g}/{m.adam_beta2:g}, "
                    f"eps = {m.adam_eps:g})")
        lines = [f"GRPO softmax-bandit simulation: {st.runs} runs x {st.steps} steps, "
                 f"G = {m.group_size}, K = {m.actions}, B = {m.prompts}, seed {st.seed}",
                 f"  {opt}, {m.normalization} advantages, {m.surrogate} surrogate, KL {m.kl}"
                 + (f" (beta = {m.kl_coef:g})" if m.kl != "none" else "") + f", {lag}",
                 f"{'step':>8s} {'mean reward':>12s} {'sd across runs':>15s} {'sem':>10s}"]
        T = st.steps
        for t in sorted({0, T // 4, T // 2, (3 * T) // 4, T}):
            sd = math.sqrt(var_r[t]) if math.isfinite(var_r[t]) else float("nan")
            lines.append(f"{t:8d} {_fmt(mean_r[t], 12)} {_fmt(sd, 15)} {_fmt(sem[t], 10)}")
        zv = r.mean("zero_var_frac")[:-1]
        zv = zv[~np.isnan(zv)]
        lines.append(f"zero-variance groups: {_fmt(zv.mean() if zv.size else math.nan, 0, 3)} "
                     f"of all groups; final KL to reference {_fmt(r.mean('kl')[T], 0)}; "
                     f"final entropy {_fmt(r.mean('entropy')[T], 0)}")
        if r.any_diverged:
            d = r.diverged_at[r.diverged]
            lines.append(f"WARNING: {d.size} of {st.runs} runs ({100 * d.size / st.runs:.1f}%) "
                         f"diverged (logit spread > {st.divergence_bound:g}), first at step "
                         f"{d.min()}, median {int(np.median(d))}; they are frozen and excluded "
                         f"from the statistics above ({r.n_active[T]} runs left at the end)")
        if self.csv_path:
            lines.append(f"per-step summary written to {self.csv_path}")
        lines += [f"note: {n}" for n in m.unused_notes()]
        return "\n".join(lines)


def _fmt(v, width, digits=4):
    """``v`` with ``digits`` decimals, or ``n/a`` when undefined (no live runs)."""
    return f"{v:{width}.{digits}f}" if math.isfinite(v) else f"{'n/a':>{width}s}"
