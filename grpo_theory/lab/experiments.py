r"""The lab's experiments on TRL's GRPOTrainer: stiffness, refresh thresholds, damping.

Protocol (every measurement is a real ``GRPOTrainer.train()``):

* **plateau** (:class:`Plateau`): the two-answer task, the warm-started GPT-2, the reference
  placed at :math:`z_{ref}` and the policy at the variant's bandit fixed point :math:`z^*`
  (theory: :func:`grpo_theory.lab._theory.lab_model` -> ``GRPOModel.fixed_point``) on every
  prompt; the tangent kernel's top mode and :math:`K_{top} = K_{bandit}\lambda/(N\kappa)`;
* **linear response**: k = 1, SGD, :math:`\eta K = 0.1`, ``pairs`` common-random-number pairs
  kicked :math:`\pm\delta` along the top mode; pooled AR(1) of the half difference;
* **refresh sweep** (:func:`refresh_sweep`): for each k the same pairs over ``windows``
  refresh windows (``steps_per_generation = k`` or ``num_iterations = k``); the top-mode
  coordinate at window starts gives the per-window multiplier (AR(1) without momentum,
  AR(2) with it; leave-one-pair-out jackknife SE) against the exact spectral radius of the
  window map (``GRPOModel.stability``) at the tangent-kernel stiffness with the bandit's
  fresh/stale split;
* **damping transition** (:func:`momentum_transition`): k = 1, heavy-ball momentum around the
  exact discrete critical value; the AR(2) discriminant of the per-step response changes
  sign at :math:`\mu_c`.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass

import numpy as np

from grpo_theory.deepnet.analysis import (ar1, ar_multiplier, observed_k_max_range, overshoot,
                                          predicted_overshoot)
from grpo_theory.deepnet.results import TransitionRow
from grpo_theory.validate import ParameterError, check_int, check_real

from . import _theory as th
from .engine import Lab, RunSpec
from .model import ModelSpec
from .stiffness import response_from, response_series, response_tasks, top_mode
from .task import TaskSpec

__all__ = ["PlateauSpec", "Plateau", "linear_response", "refresh_sweep", "momentum_transition",
           "SweepRow", "Sweep", "TransitionRow", "Transition", "observed_k_max", "auto_eta_K"]


@dataclass(frozen=True)
class PlateauSpec:
    """The plateau of the stability experiments (defaults: std advantages, k3 KL beta = 2 to
    p_ref = 0.1, G = 8, 16 prompts, width 32: p* = 0.290, fresh fraction 0.31).  ``kick``:
    the linear-response kick per prompt in log-odds (the top mode is close to uniform)."""

    p_ref: float = 0.1
    beta: float = 2.0
    scale_rewards: str = "group"
    group_size: int = 8
    prompts: int = 16
    width: int = 32
    layers: int = 2
    seed: int = 0
    kick: float = 0.1

    def __post_init__(self):
        check_real("p_ref", self.p_ref, low=0, high=1, low_open=True, high_open=True)
        check_real("kick", self.kick, low=0, low_open=True)
        check_real("beta", self.beta, low=0, low_open=True)
        check_int("group_size", self.group_size, low=2)


class Plateau:
    """Lab + reference + policy at the fixed point + top mode (see the module docstring)."""

    def __init__(self, spec: PlateauSpec = PlateauSpec(), *, threads=1, source=None,
                 kernel="auto", executor=None, out=None, device="cpu"):
        self.spec = spec
        self.lab = Lab(TaskSpec(modulus=2, prompts=spec.prompts),
                       ModelSpec(width=spec.width, layers=spec.layers, seed=spec.seed),
                       threads=threads, source=source, device=device)
        self.lab.executor = executor
        #: where the response runs write their TRL logs (None: nowhere)
        self.out = out
        self.base = RunSpec(group_size=spec.group_size, beta=spec.beta,
                            scale_rewards=spec.scale_rewards)
        model = th.lab_model(self.base, p_ref=spec.p_ref, prompts=spec.prompts)
        self.fp = th.fixed_point_of(model)
        self.z_ref = math.log(spec.p_ref / (1 - spec.p_ref))
        self.reference = (self.lab.placed_state(self.z_ref), "reference")
        self.state = self.lab.placed_state(self.fp.z)
        self.mode = top_mode(self.lab, self.state, kernel)
        self.scale = self.mode.ntk_over_n / th.KAPPA
        self.K_ntk = self.fp.stiffness * self.scale
        self.amplitude = spec.kick * math.sqrt(spec.prompts)   # about `kick` per prompt
        #: runs that failed twice (:class:`~grpo_theory.lab.parallel.TaskFailure`), reported
        self.failures = []

    @property
    def phi(self) -> float:
        return float(self.fp.fresh_fraction)

    def theory(self, spec: RunSpec):
        return th.lab_model(spec, p_ref=self.spec.p_ref, prompts=self.spec.prompts,
                            ntk_scale=self.scale)

    def response(self, spec, *, pairs, seed, every=1, amplitude=None, adam_state=None, mode=None,
                 name="response"):
        out = None if self.out is None else os.path.join(self.out, *name.split("/"))
        return response_series(self.lab, spec, state=self.state, reference=self.reference,
                               mode=self.mode if mode is None else mode, z_star=self.fp.z,
                               amplitude=self.amplitude if amplitude is None else amplitude,
                               pairs=pairs, seed=seed, every=every, adam_state=adam_state,
                               name=name, out_dir=out)

    def responses(self, batch):
        """Several responses' runs in one batch for the executor (all k of a sweep at once):
        ``batch`` = [(spec, pairs, seed, every, name)]; returns [(series, records)]."""
        from .parallel import SerialExecutor

        tasks, spans = [], []
        for spec, pairs, seed, every, name in batch:
            out = None if self.out is None else os.path.join(self.out, *name.split("/"))
            t = response_tasks(spec, amplitude=self.amplitude, pairs=pairs, seed=seed, name=name,
                               out_dir=out)
            spans.append((len(tasks), len(tasks) + len(t)))
            tasks += t
        ex = self.lab.executor or SerialExecutor()
        recs = ex.run(self.lab, tasks, state=self.state, reference=self.reference,
                      direction=self.mode.direction)
        out = []
        for (a, b), (spec, _, _, every, _) in zip(spans, batch):
            out.append((response_from(recs[a:b], spec, mode=self.mode, z_star=self.fp.z,
                                      every=every), recs[a:b]))
        return out

    def parameter_count(self) -> int:
        return self.lab.parameter_count()

    def close(self):
        self.lab.close()


def linear_response(plat: Plateau, *, eta_K=0.1, steps=20, pairs=4, seed=100):
    """K from the AR(1) decay of the kicked top mode (k = 1, SGD): ``(K, se, seconds)``."""
    eta = eta_K / plat.K_ntk
    t0 = time.perf_counter()
    r, recs = plat.response(plat.base.replace(learning_rate=eta, steps=steps), pairs=pairs,
                            seed=seed, name="stiffness/linear_response")
    plat.failures += failures_of(recs)
    r = _linear_part(r, plat.amplitude)
    c, se = ar1(r)
    return (1 - c) / eta, se / eta, time.perf_counter() - t0


def failures_of(records) -> list:
    """The :class:`~grpo_theory.lab.parallel.TaskFailure` among ``records``."""
    from .parallel import TaskFailure

    return [r for r in records if isinstance(r, TaskFailure)]


def _linear_part(r, amplitude, growth=20.0):
    """Finite rows, stopped once the mean response has grown ``growth``-fold (the linear regime)."""
    r = r[np.all(np.isfinite(r), axis=1)]
    big = np.nonzero(np.abs(r).mean(1) > growth * amplitude)[0]
    if big.size:
        r = r[:max(big[0], 4)]
    return r


def auto_eta_K(momentum, target, phi) -> float:
    """eta K between the exact thresholds of k = target and target + 1 (geometric mean)."""
    return math.sqrt(th.threshold_eta_K(momentum, target, phi)
                     * th.threshold_eta_K(momentum, target + 1, phi))


@dataclass(frozen=True)
class SweepRow:
    """One refresh interval: measured and exact per-window multiplier and the verdicts.

    ``multiplier``/``se``: from the first windows (the first window without momentum, the
    first three transitions with it): the exact map's statement is about a deterministic
    kick, and in later windows the runs' noise-driven spread damps the mean response (the
    theory's own bandit simulator shows it too: ``bandit_first``, ``bandit_all``).
    ``multiplier_all``/``se_all``: pooled over every window.  ``misclassified``: verdicts
    differ and the multiplier is more than one SE from 1.
    """

    k: int
    multiplier: float
    se: float
    predicted: float
    stable_observed: bool
    stable_predicted: bool
    misclassified: bool
    windows: int
    clip_fraction: float
    multiplier_all: float = float("nan")
    se_all: float = float("nan")
    bandit_first: float = float("nan")
    bandit_all: float = float("nan")


@dataclass(frozen=True)
class Sweep:
    """A refresh-threshold sweep in one of TRL's knobs."""

    name: str
    knob: str
    optimizer: str
    momentum: float
    eta_K: float
    learning_rate: float
    epsilon: float
    fresh_fraction: float
    k_max_predicted: int | None
    k_max_published: int
    k_max_observed: int | None
    k_max_observed_note: str
    per_k: tuple
    pairs: int
    windows: int
    seconds: float
    notes: tuple = ()

    @property
    def k_max_observed_range(self) -> tuple:
        """:func:`observed_k_max_range` of the sweep: the k the multipliers resolve."""
        return observed_k_max_range(list(self.per_k))

    @property
    def agrees(self) -> bool | None:
        """Observed k_max within one of the exact prediction (None if either is missing)."""
        if self.k_max_predicted is None or self.k_max_observed is None:
            return None
        return abs(self.k_max_observed - self.k_max_predicted) <= 1


def _estimate(r, order):
    """(multiplier, jackknife SE) of the AR fit of the window series ``r``; NaN if too short."""
    if r.shape[0] < order + 1 or r.shape[1] < 2:
        return float("nan"), float("nan")
    try:
        est = ar_multiplier(r, order)
    except (TypeError, ValueError, np.linalg.LinAlgError):
        return float("nan"), float("nan")
    return float(est["multiplier"]), float(est["se"])


def _bandit_radius(b, order=2):
    """Spectral radius of the AR fit of one (noise-free) ensemble-mean series."""
    b = np.asarray(b, float)[:, None]
    c = np.linalg.lstsq(np.hstack([b[order - j - 1:len(b) - j - 1] for j in range(order)]),
                        b[order:, 0], rcond=None)[0]
    if order == 1:
        return float(abs(c[0]))
    return float(np.max(np.abs(np.roots([1.0, -c[0], -c[1]]))))


def observed_k_max(rows):
    """Largest k below the first observed-unstable k; ``(k, note)`` - ``k`` is None when the
    sweep does not contain the transition (every k stable, or the smallest already unstable)."""
    rows = sorted(rows, key=lambda r: r.k)
    last = None
    for r in rows:
        if not r.stable_observed:
            if last is None:
                return None, f"unstable already at the smallest k tried ({r.k})"
            return last, ""
        last = r.k
    return None, f"stable up to the largest k tried ({rows[-1].k})" if rows else "no k"


def refresh_sweep(plat: Plateau, ks, *, knob="steps_per_generation", momentum=0.0, eta_K=None,
                  target=None, pairs=3, windows=6, seed=0, epsilon=10.0, name=None,
                  optimizer="sgd", adam=None, bandit=True) -> Sweep:
    """Per-k window multipliers vs the exact spectral radius (see the module docstring).

    ``eta_K`` (or ``target``: eta K between the exact thresholds of k = target and
    target + 1).  ``epsilon``: TRL's clip; the default 10 switches it off (the linear theory
    has no clip); TRL's own 0.2 stops a window's push once a sample's ratio leaves
    [0.8, 1.2], which bounds the excursions the linear map would amplify.  ``adam``: an :class:`~grpo_theory.lab.adam.AdamSetup` (the Adam reduction:
    heavy ball with mu = beta1 on the preconditioned kernel).
    """
    if knob not in ("steps_per_generation", "num_iterations"):
        raise ParameterError("knob", knob, "steps_per_generation or num_iterations")
    t0 = time.perf_counter()
    phi = plat.phi
    K = plat.K_ntk if adam is None else adam.K
    mu = momentum if adam is None else adam.beta1
    if eta_K is None:
        eta_K = auto_eta_K(mu, check_int("target", target, low=1), phi)
    notes = []
    if adam is None:
        eta = eta_K / K
        base = plat.base.replace(learning_rate=eta, momentum=momentum, epsilon=epsilon)
        theory = plat.theory(base)
        order = 1 if momentum == 0 else 2
    else:
        eta = adam.learning_rate(plat, eta_K)
        base = plat.base.replace(learning_rate=eta, optimizer="adamw", adam_beta1=adam.beta1,
                                 adam_beta2=adam.beta2, adam_epsilon=adam.eps, epsilon=epsilon)
        theory = adam.theory(plat, base)
        order = 2
        notes.append(adam.note)
    k_exact = th.exact_k_max(theory)
    k_pub = th.published_k_max(theory)
    rows = []
    kset = sorted({check_int("refresh_interval", k, low=1) for k in ks})
    sweep_name = name or f"{knob} {optimizer} mu={mu:g}"
    slug = "refresh/" + re.sub(r"[^A-Za-z0-9.=_-]+", "_", sweep_name).strip("_")
    specs = [base.replace(steps=windows * k, **{knob: k}) for k in kset]
    if adam is None:   # every k's runs in one batch (the executor runs them in parallel)
        batch = plat.responses([(spec, pairs, seed + 1000 * i, k, f"{slug}/k{k}")
                                for i, (k, spec) in enumerate(zip(kset, specs))])
    failed = []
    for i, k in enumerate(kset):
        spec = specs[i]
        if adam is None:
            r, recs = batch[i]
        else:
            r, recs = plat.response(spec, pairs=pairs, seed=seed + 1000 * i, every=k,
                                    adam_state=adam.state, mode=adam.mode, name=f"{slug}/k{k}")
        failed += failures_of(recs)
        r = _linear_part(r, plat.amplitude)
        early = r[:2] if order == 1 else r[:4]
        est = _estimate(early, order)
        est_all = _estimate(r, order)
        model_k = theory.replace(refresh_interval=k,
                                 reuse="fresh" if knob == "steps_per_generation" else "batch")
        pred = th.spectral_radius(model_k)
        b_first = b_all = float("nan")
        if bandit and adam is None:
            b = th.bandit_response(model_k, windows=windows)
            b_first = float(abs(b[1] / b[0])) if order == 1 else _bandit_radius(b[:4])
            b_all = _bandit_radius(b, order)
        clip = [e.get("clip_ratio/region_mean") for rec in recs
                for e in getattr(rec, "log_history", ())
                if e.get("clip_ratio/region_mean") is not None]
        m, se = est if math.isfinite(est[0]) else est_all   # too few pairs for the early fit
        so, sp = bool(m < 1), bool(pred < 1)
        rows.append(SweepRow(k=k, multiplier=m, se=se, predicted=pred, stable_observed=so,
                             stable_predicted=sp,
                             misclassified=bool(so != sp and abs(m - 1) > se),
                             windows=int(r.shape[0]),
                             clip_fraction=float(np.mean(clip)) if clip else 0.0,
                             multiplier_all=est_all[0], se_all=est_all[1],
                             bandit_first=b_first, bandit_all=b_all))
    if adam is not None and adam.growth:
        g = np.array(adam.growth)
        notes.append(f"Adam's v over the kicked runs: the preconditioned kernel's top eigenvalue "
                     f"at the end of a run is {g.mean():.3f} of its plateau value (range "
                     f"{g.min():.3f}-{g.max():.3f}): v grows with the response and lowers the "
                     "effective step")
    if failed:
        notes.append(f"{len(failed)} run(s) failed twice and were left out (their pairs): "
                     + "; ".join(str(f) for f in failed))
        plat.failures += failed
    k_obs, why = observed_k_max(rows)
    return Sweep(name=sweep_name, knob=knob, optimizer=optimizer,
                 momentum=float(mu), eta_K=float(eta_K), learning_rate=float(eta),
                 epsilon=float(epsilon), fresh_fraction=phi,
                 k_max_predicted=None if math.isinf(k_exact) else int(k_exact),
                 k_max_published=int(k_pub), k_max_observed=k_obs, k_max_observed_note=why,
                 per_k=tuple(rows), pairs=pairs, windows=windows,
                 seconds=time.perf_counter() - t0, notes=tuple(notes))


@dataclass(frozen=True)
class Transition:
    """Overdamped-to-oscillatory transition at k = 1 (momentum sweep)."""

    eta_K: float
    mu_c_predicted: float
    mu_c_continuous: float
    mu_c_observed: float | None
    rows: tuple
    pairs: int
    steps: int
    seconds: float

    @property
    def agrees(self) -> bool | None:
        if self.mu_c_observed is None:
            return None
        return abs(self.mu_c_observed - self.mu_c_predicted) <= 0.03


def momentum_transition(plat: Plateau, *, eta_K=0.05, offsets=(-0.1, -0.05, -0.02, 0.0, 0.02,
                                                                0.05, 0.1),
                        steps=40, pairs=4, seed=500) -> Transition:
    """AR(2) discriminant of the k = 1 heavy-ball response around the exact mu_c."""
    t0 = time.perf_counter()
    mu_c = th.critical_momentum(eta_K)
    eta = eta_K / plat.K_ntk
    rows = []
    for i, d in enumerate(offsets):
        mu = float(mu_c + d)
        spec = plat.base.replace(learning_rate=eta, momentum=mu, steps=steps)
        r, recs = plat.response(spec, pairs=pairs, seed=seed + 10 * i,
                                name=f"transition/mu{mu:.4f}")
        plat.failures += failures_of(recs)
        r = _linear_part(r, plat.amplitude)
        est = ar_multiplier(r, 2)
        osh, osh_se = overshoot(r)
        dpred = th.discriminant(eta_K, mu)
        rows.append(TransitionRow(
            momentum=mu, eta_K=float(eta_K), discriminant=est["discriminant"], discriminant_se=est["discriminant_se"],
            discriminant_predicted=float(dpred), oscillatory_observed=bool(est["discriminant"] < 0),
            oscillatory_predicted=bool(dpred < 0), overshoot=osh, overshoot_se=osh_se,
            overshoot_predicted=predicted_overshoot(eta_K, mu, steps)))
    mu_obs = None
    srt = sorted(rows, key=lambda r: r.momentum)
    for a, b in zip(srt, srt[1:]):
        if a.discriminant > 0 >= b.discriminant:
            t = a.discriminant / (a.discriminant - b.discriminant)
            mu_obs = a.momentum + t * (b.momentum - a.momentum)
            break
    return Transition(eta_K=float(eta_K), mu_c_predicted=mu_c,
                      mu_c_continuous=th.critical_momentum_continuous(eta_K),
                      mu_c_observed=mu_obs, rows=tuple(rows), pairs=pairs, steps=steps,
                      seconds=time.perf_counter() - t0)
