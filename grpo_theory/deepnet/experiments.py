r"""The experiments: refresh sweeps, the momentum transition, the control, Adam, the 1/G law.

Protocol (every measurement is real sampled GRPO on the batched MLP policy):

* place the plateau (bandit theory: ``p_star`` for the k1-in-reward variant, the
  stable fixed point from ``p_ref`` otherwise) and measure the stiffness two ways
  (:mod:`.stiffness`);
* **refresh sweep**: for each k, common-random-number pairs kicked by
  :math:`\pm\delta` along the top mode run ``windows`` refresh windows; the
  top-mode coordinate at window starts gives the per-window multiplier (AR(1) at
  mu = 0, AR(2) otherwise; jackknife SE over pairs), against the exact spectral
  radius of the window map at the measured (NTK) stiffness;
* **transition**: k = 1, momentum around the exact discrete critical value;
  the AR(2) discriminant of the per-step response changes sign at mu_c;
* **Adam**: heavy-ball with mu = beta1 and learning rate eta (1 - beta1) on the
  NTK preconditioned by Adam's stationary second moment (measured at the plateau
  with the noisy verifier; Adam's v is started there);
* **1/G**: stationary variance of the top mode with the noisy verifier, against
  the exact AR(2) variance with the enumerated per-prompt noise.
"""

from __future__ import annotations

import math
import time

import numpy as np

from grpo_theory.model import MAX_REFRESH_INTERVAL
from grpo_theory.theory.derived import get
from grpo_theory.theory.discrete import (critical_momentum, linear_stability,
                                         max_stable_refresh_interval, published_k_max,
                                         refresh_thresholds, window_discriminant)
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.theory.noise import stationary_variance
from grpo_theory.validate import ParameterError, check_choice, check_int, check_real

from .analysis import ar_multiplier, overshoot, predicted_overshoot
from .bandit import bandit_stiffness_k1_reward
from ._torch import require_torch
from .grpo import (OPTIMIZERS, VARIANTS, NetObjective, OptimizerConfig, grpo_loss, run_ensemble,
                   sample_batch)
from .policy import Policy, TaskSpec
from .results import DeepnetResult, KRow, TransitionRow
from .stiffness import linear_response, ntk_top_mode

__all__ = ["Plateau", "setup_plateau", "auto_eta_K", "refresh_sweep", "momentum_transition",
           "adam_preconditioner", "fluctuation_law", "run_deepnet"]

KAPPA = 2.0          # |grad z|^2 of the two-logit softmax bandit (drift.geometric_factor)
TARGET_K = 10        # auto learning rate puts the exact k_max here
CONTROL_P_REF = 0.3


class Plateau:
    """Policy at the bandit fixed point + its per-prompt bandit stiffness and split."""

    def __init__(self, cfg: NetObjective, p_star=0.7, p_ref=CONTROL_P_REF, spec=None, dtype=None):
        self.cfg = cfg
        if cfg.kl == "k1_reward":
            if cfg.normalization != "mean" or cfg.surrogate != "stale":
                raise ParameterError("variant", cfg.model.variant_text(), "k1_reward with mean "
                                     "advantages and the stale surrogate (the only k1 case with "
                                     "a theory here)")
            b = bandit_stiffness_k1_reward(p_star, cfg.group_size, cfg.kl_coef,
                                           cfg.flip_probability)
            self.p, self.z, self.z_ref = b["p"], b["z"], b["z_ref"]
            self.K_b, self.phi = b["stiffness"], b["fresh_fraction"]
            self.noise_variance = b["noise_variance"]
        else:
            if cfg.flip_probability:
                raise ParameterError("flip_probability", cfg.flip_probability,
                                     "0 for the theory variants (no noisy-verifier theory)")
            fp = stable_fixed_point(cfg.model.replace(
                p_ref=p_ref, adv_eps=cfg.adv_eps if cfg.normalization == "std" else 0.0))
            self.p, self.z = fp.p, fp.z
            self.z_ref = math.log(p_ref / (1 - p_ref))
            self.K_b, self.phi = fp.stiffness, fp.fresh_fraction
            self.noise_variance = float("nan")
        self.policy = Policy(spec or TaskSpec(), self.z, self.z_ref, dtype=dtype)
        self.mode = ntk_top_mode(self.policy)

    def network_stiffness(self, mode=None) -> float:
        mode = mode or self.mode
        return self.K_b / KAPPA * mode.ntk_over_n


def setup_plateau(variant="dr-grpo-k1", **kw) -> Plateau:
    """The plateau of a named variant (:data:`~.grpo.VARIANTS`, a model) with optional
    ``group_size``, ``kl_coef`` and ``flip_probability``, ``p_star``, ``p_ref``, ``spec``."""
    model = VARIANTS[check_choice("variant", variant, tuple(VARIANTS))]
    over = {k: kw.pop(k) for k in ("group_size", "kl_coef") if k in kw and kw[k] is not None}
    flip = kw.pop("flip_probability", None) or 0.0
    kw = {k: v for k, v in kw.items() if v is not None}
    return Plateau(NetObjective(model.replace(**over), flip), **kw)


def _a_star(mu, k) -> float:
    flip, cx, _ = refresh_thresholds(mu, k)
    return float(min(flip, cx))


def auto_eta_K(mu, target=TARGET_K) -> float:
    """eta*K between the exact thresholds of k = target and target + 1 (geometric mean)."""
    return math.sqrt(_a_star(mu, target) * _a_star(mu, target + 1))


def _amplitudes(pairs, amp):
    return np.r_[np.full(pairs, amp), np.full(pairs, -amp)]


def refresh_sweep(plat: Plateau, opt: OptimizerConfig, ks, *, K, phi, lr_eff, mu_eff, mode=None,
                  pairs=16, windows=8, amplitude=0.1, seed=0, reuse="fresh", adam_v=None,
                  adam_step=0):
    """Per-k measured vs predicted multiplier (list of KRow) and the seconds/run-steps used."""
    mode = mode or plat.mode
    rows, secs, run_steps = [], 0.0, 0
    for i, k in enumerate(ks):
        k = check_int("refresh_interval", k, low=1)
        rec = run_ensemble(plat.policy, plat.cfg, opt, steps=windows * k, runs=2 * pairs,
                           refresh_interval=k, reuse=reuse, seed=seed + 1000 * i + k,
                           kick=mode.direction, amplitudes=_amplitudes(pairs, amplitude),
                           paired=True, observe=mode.eigenvector, adam_v=adam_v,
                           adam_step=adam_step, stop_abs=50 * amplitude)
        secs += rec.seconds
        run_steps += rec.runs * rec.steps
        s = rec.response()[::k]
        s = s[np.all(np.isfinite(s), axis=1)]
        # keep the linear regime: stop once the mean response has grown 20x
        big = np.nonzero(np.abs(s).mean(1) > 20 * amplitude)[0]
        if big.size:
            s = s[:max(big[0], 4)]
        est = ar_multiplier(s, 1 if mu_eff == 0 else 2)
        pred = float(linear_stability(lr_eff, mu_eff, k, K, fresh_fraction=phi).spectral_radius)
        m, se = est["multiplier"], est["se"]
        so, sp_ = m < 1, pred < 1
        mis = (so != sp_) and abs(m - 1) > se
        rows.append(KRow(k=k, multiplier=m, se=se, predicted=pred, stable_observed=bool(so),
                         stable_predicted=bool(sp_), misclassified=bool(mis), windows=len(s),
                         coefficients=tuple(est["coef"])))
    return rows, secs, run_steps


def observed_k_max(rows):
    """Largest swept k below the first observed-unstable k (None if none is unstable)."""
    rows = sorted(rows, key=lambda r: r.k)
    last = None
    for r in rows:
        if not r.stable_observed:
            return last if last is not None else 0
        last = r.k
    return None


def momentum_transition(plat: Plateau, K, momenta, *, eta_K=0.05, steps=40, pairs=16,
                        amplitude=0.1, seed=7, reuse="fresh"):
    """k = 1 heavy-ball responses at each momentum: AR(2) discriminant and overshoot."""
    eta = eta_K / K
    rows, secs, run_steps = [], 0.0, 0
    for i, mu in enumerate(momenta):
        rec = run_ensemble(plat.policy, plat.cfg, OptimizerConfig("sgd", eta, float(mu)),
                           steps=steps, runs=2 * pairs, refresh_interval=1, reuse=reuse,
                           seed=seed + i, kick=plat.mode.direction,
                           amplitudes=_amplitudes(pairs, amplitude), paired=True,
                           observe=plat.mode.eigenvector)
        secs += rec.seconds
        run_steps += rec.runs * rec.steps
        s = rec.response()
        est = ar_multiplier(s, 2)
        osh, osh_se = overshoot(s)
        dpred = window_discriminant(eta_K, mu)
        rows.append(TransitionRow(
            momentum=float(mu), eta_K=float(eta_K), discriminant=est["discriminant"],
            discriminant_se=est["discriminant_se"], discriminant_predicted=float(dpred),
            oscillatory_observed=bool(est["discriminant"] < 0),
            oscillatory_predicted=bool(dpred < 0), overshoot=osh, overshoot_se=osh_se,
            overshoot_predicted=predicted_overshoot(eta_K, mu, steps)))
    return rows, secs, run_steps


def observed_mu_c(rows):
    """Zero crossing of the measured discriminant, linearly interpolated in mu (None if none)."""
    rows = sorted(rows, key=lambda r: r.momentum)
    for a, b in zip(rows, rows[1:]):
        if a.discriminant > 0 >= b.discriminant:
            t = a.discriminant / (a.discriminant - b.discriminant)
            return a.momentum + t * (b.momentum - a.momentum)
    return None


def adam_preconditioner(plat: Plateau, *, samples=64, seed=11, eps=1e-8):
    """Adam's stationary second moment v = E[g^2] at the plateau (R sampled gradients), and
    the preconditioner P = 1/(sqrt v + eps)."""
    torch = plat.policy.torch
    pol = plat.policy
    params = pol.replicate(samples)
    for p in params:
        p.requires_grad_(True)
    gen = torch.Generator().manual_seed(seed)
    N, G = pol.spec.prompts, plat.cfg.group_size
    logp = pol.log_probs(params)
    u = torch.rand((samples, N, G), generator=gen, dtype=pol.dtype)
    uf = torch.rand((samples, N, G), generator=gen, dtype=pol.dtype)
    batch = sample_batch(pol, logp.detach(), plat.cfg, u, uf)
    grads = torch.autograd.grad(grpo_loss(logp, batch, plat.cfg).sum(), params)
    v = [(g.double() ** 2).mean(0) for g in grads]
    P = [1.0 / (vi.sqrt() + eps) for vi in v]
    return [vi.to(pol.dtype) for vi in v], P


def fluctuation_law(group_sizes=(4, 8, 16, 32), *, flip_probability=0.1, p_star=0.7,
                    kl_coef=0.5, eta_K=0.1, runs=64, burn=200, steps=600, seed=3):
    """Stationary Var of the top-mode coordinate vs G with the noisy verifier (k = 1, SGD).

    Prediction: noise.stationary_variance(eta, 0, K_top, sigma^2) with
    sigma^2 = (lambda_max/N)^2 * Var(dz per unit lr)/kappa^2 from the enumeration.
    """
    out = []
    for i, G in enumerate(group_sizes):
        plat = setup_plateau("dr-grpo-k1", group_size=G, flip_probability=flip_probability,
                             kl_coef=kl_coef, p_star=p_star)
        K = plat.network_stiffness()
        eta = eta_K / K
        rec = run_ensemble(plat.policy, plat.cfg, OptimizerConfig("sgd", eta, 0.0),
                           steps=burn + steps, runs=runs, seed=seed + i,
                           observe=plat.mode.eigenvector)
        x = rec.x[burn:]
        var = float(np.mean(x ** 2))
        # SE from batch means over runs (runs are independent)
        per_run = np.mean(x ** 2, axis=0)
        se = float(per_run.std(ddof=1) / math.sqrt(runs))
        s2 = (plat.mode.ntk_over_n / KAPPA) ** 2 * plat.noise_variance
        pred = stationary_variance(eta, 0.0, K, s2)
        out.append({"G": G, "var": var, "se": se, "predicted": pred, "G_times_var": G * var,
                    "K": K, "eta": eta, "noise_variance_bandit": plat.noise_variance})
    return out


def run_deepnet(*, quick=True, variant="dr-grpo-k1", momentum=None, learning_rate=None,
                refresh_intervals=None, optimizer="sgd", reuse="fresh", p_star=0.7, kl_coef=None,
                group_size=None, flip_probability=None, seed=0, pairs=16, windows=8,
                transition=True, threads=1) -> DeepnetResult:
    """Test the exact discrete stability theory on a neural policy trained with real GRPO.

    ``learning_rate=None`` picks eta so that eta*K sits between the exact thresholds of
    k = 10 and 11 (at the effective momentum).  ``refresh_intervals=None``: quick -
    k_max - 1 and k_max + 1 (control: 1, 8, 32); full - 1..k_max + 4 (control: up to 32).
    ``optimizer="adam"``/``"adamw"`` uses ``momentum`` as beta1 (default 0.9) and needs the
    noisy verifier (default flip probability 0.1): at a noise-free plateau Adam's v is 0.
    """
    torch = require_torch()
    t_start = time.perf_counter()
    old_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    try:
        return _run(quick=quick, variant=variant, momentum=momentum, learning_rate=learning_rate,
                    refresh_intervals=refresh_intervals, optimizer=optimizer, reuse=reuse,
                    p_star=p_star, kl_coef=kl_coef, group_size=group_size,
                    flip_probability=flip_probability, seed=seed, pairs=pairs, windows=windows,
                    transition=transition, t_start=t_start)
    finally:
        torch.set_num_threads(old_threads)


def _run(*, quick, variant, momentum, learning_rate, refresh_intervals, optimizer, reuse, p_star,
         kl_coef, group_size, flip_probability, seed, pairs, windows, transition, t_start):
    check_choice("optimizer", optimizer, OPTIMIZERS)
    adam = optimizer != "sgd"
    if momentum is None:
        momentum = 0.9 if adam else 0.0
    mu = check_real("momentum", momentum, low=0, high=1, high_open=True)
    if adam and flip_probability is None:
        flip_probability = 0.1
    if adam and not flip_probability:
        raise ParameterError("flip_probability", flip_probability,
                                "> 0 with Adam (at a noise-free plateau Adam's second moment is 0)")
    plat = setup_plateau(variant, p_star=p_star, kl_coef=kl_coef, group_size=group_size,
                         flip_probability=flip_probability)
    pairs = check_int("pairs", pairs, low=2)
    windows = check_int("windows", windows, low=5)
    notes = []
    K_ntk = plat.network_stiffness()
    phi = plat.phi
    # linear response: k = 1, mu = 0, SGD, eta K = 0.05 (plain network stiffness)
    K_resp, K_resp_se, _, rec = linear_response(plat.policy, plat.cfg, plat.mode,
                                                learning_rate=0.05 / K_ntk, steps=40,
                                                pairs=pairs, amplitude=0.1, seed=seed + 101)
    secs, run_steps = rec.seconds, rec.runs * rec.steps
    # the heavy-ball system being tested
    adam_v = None
    mode = plat.mode
    K_sys = K_ntk
    if adam:
        v, P = adam_preconditioner(plat, samples=256 if not quick else 128, seed=seed + 11)
        mode = ntk_top_mode(plat.policy, precondition=P)
        K_sys = plat.network_stiffness(mode)
        adam_v = v
        mu_eff = mu
        notes.append("Adam reduction: heavy-ball with mu = beta1 and eta_eff = eta (1 - beta1) on "
                     "the NTK preconditioned by 1/sqrt(v), v = E[g^2] measured at the plateau "
                     "(noisy verifier); Adam's v starts there, bias corrections off")
    else:
        mu_eff = mu
    if learning_rate is None:
        a = auto_eta_K(mu_eff)
        lr_eff = a / K_sys
        learning_rate = lr_eff / (1 - mu) if adam else lr_eff
        notes.append(f"learning rate chosen so that eta*K = {a:.4f} lies between the exact "
                     f"thresholds of k = {TARGET_K} and {TARGET_K + 1}")
    else:
        learning_rate = check_real("learning_rate", learning_rate, low=0, low_open=True)
        lr_eff = learning_rate * (1 - mu) if adam else learning_rate
    a = lr_eff * K_sys
    k_pred = max_stable_refresh_interval(lr_eff, mu_eff, K_sys, fresh_fraction=phi)
    k_pub = published_k_max(mu_eff, lr_eff, K_sys)
    if math.isinf(k_pred):
        k_pred_out = None
        notes.append(f"exact theory: no refresh threshold (fresh fraction {phi:.3f}; the window "
                     "map is stable for every k)")
    else:
        k_pred_out = int(k_pred)
    if refresh_intervals is None:
        if k_pred_out is None:
            ks = [1, 8, 32] if quick else [1, 2, 4, 6, 8, 12, 16, 24, 32]
        elif quick:
            ks = sorted({max(1, k_pred - 1), max(1, k_pred), k_pred + 1})
        else:
            ks = list(range(1, k_pred + 5))
    else:
        ks = sorted({check_int("refresh_interval", k, low=1, high=MAX_REFRESH_INTERVAL)
                     for k in refresh_intervals})     # the model's bound: trained k x windows steps
    if adam:
        opt = OptimizerConfig(optimizer, learning_rate, 0.0, betas=(mu, 0.999))
    else:
        opt = OptimizerConfig("sgd", learning_rate, mu)
    rows, s2, n2 = refresh_sweep(plat, opt, ks, K=K_sys, phi=phi, lr_eff=lr_eff, mu_eff=mu_eff,
                                 mode=mode, pairs=pairs, windows=windows, seed=seed, reuse=reuse,
                                 adam_v=adam_v, adam_step=10 ** 6 if adam else 0)
    secs += s2
    run_steps += n2
    k_obs = observed_k_max(rows)
    # momentum transition (k = 1, SGD heavy-ball, eta K = 0.05)
    trans, mu_c, mu_c_l3, mu_c_obs = (), None, None, None
    if transition:
        eK = 0.05
        mu_c = critical_momentum(eK)
        lag = float(get("discrete.refresh_effective_lag").numeric(1))   # (k - 1)/2 = 0: on-policy
        mu_c_l3 = float(get("oscillator.critical_momentum").numeric(eK, 1.0, lag))
        grid = ([mu_c - 0.05, mu_c + 0.05] if quick else
                [mu_c + d for d in (-0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1)])
        trans, s3, n3 = momentum_transition(plat, K_ntk, grid, eta_K=eK, pairs=pairs,
                                            seed=seed + 500, reuse=reuse)
        secs += s3
        run_steps += n3
        trans = tuple(trans)
        mu_c_obs = observed_mu_c(trans)
    return DeepnetResult(
        variant=variant, optimizer=optimizer, momentum=mu, learning_rate=float(learning_rate),
        effective_learning_rate=float(lr_eff), effective_momentum=float(mu_eff), eta_K=float(a),
        group_size=plat.cfg.group_size, kl_coef=plat.cfg.kl_coef,
        flip_probability=plat.cfg.flip_probability, p_star=plat.p,
        prompts=plat.policy.spec.prompts, parameters=plat.policy.n_params, reuse=reuse,
        bandit_stiffness=plat.K_b, fresh_fraction=float(phi),
        ntk_top_eigenvalue=mode.eigenvalue, stiffness_ntk=float(K_sys),
        stiffness_response=float(K_resp), stiffness_response_se=float(K_resp_se),
        k_max_predicted=k_pred_out, k_max_published=int(k_pub), k_max_observed=k_obs,
        per_k=tuple(rows), mu_c_predicted=mu_c, mu_c_continuous=mu_c_l3, mu_c_observed=mu_c_obs,
        transition=trans, ms_per_run_step=1e3 * secs / max(run_steps, 1),
        seconds=time.perf_counter() - t_start, notes=tuple(notes))
