r"""Vectorized kernels of the direct GRPO simulation of the softmax bandit (level L0).

Kept apart from the model API in :mod:`grpo_theory.simulate`: nothing here
validates input; every function takes already-checked numpy arrays.

Shapes: ``R`` runs, ``B`` prompts, ``K`` actions.  Logits ``theta`` are
``(R, K)``; prompt ``b`` sees the policy :math:`\pi_b = \mathrm{softmax}(\theta + d_b)`
with a fixed difficulty offset ``offsets[b]`` (``(B, K)``).  A group of ``G``
samples is represented by its action counts ``counts`` (``(R, B, K)``), which is
exact because every per-sample term depends on the sample only through its
action.

Per prompt the minimized loss is

.. math::

    \mathcal L_b = -\frac1G \sum_i \min\bigl(\rho_i \hat A_i,
        \operatorname{clip}(\rho_i, 1-\epsilon_{lo}, 1+\epsilon_{hi}) \hat A_i\bigr)
        + \beta\,\mathrm{KL}_b

(``surrogate="ratio"``), or :math:`-\frac1G\sum_i \hat A_i \log\pi_\theta(a_i)`
(``surrogate="stale"``), and the gradient is averaged over prompts.  With
:math:`\nabla_\theta \log\pi(a) = e_a - \pi` every gradient is of the form
:math:`\sum_a c_a (e_a - \pi) = c - \pi \sum_a c_a` for per-action coefficients
:math:`c_a`, which is how it is computed.

Two implementations of one step exist: :func:`group_gradient` for any ``K`` and
:func:`two_action_gradient` for ``K = 2``, where the gradient is antisymmetric
(``g_1 = -g_0``) and the whole state reduces to the logit difference
:math:`u = \theta_0 - \theta_1`; :func:`run` uses the latter when ``K = 2``
(unless ``kernel="generic"``).  Both consume the random stream identically (one
binomial draw per run and prompt for ``K = 2``), so they agree to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "OBSERVABLES",
    "STATE_OBSERVABLES",
    "UPDATE_OBSERVABLES",
    "KernelPlan",
    "log_softmax",
    "group_gradient",
    "group_loss",
    "two_action_gradient",
    "Optimizer",
    "run",
]

#: Observables of the state at step t (defined for t = 0..T).
STATE_OBSERVABLES = ("reward", "z", "entropy", "kl")
#: Observables of the update taken at step t (defined for t = 0..T-1; NaN at T).
UPDATE_OBSERVABLES = ("zero_var_frac", "grad_norm", "clip_frac")
OBSERVABLES = ("reward", "z", "entropy", "zero_var_frac", "kl", "grad_norm", "clip_frac")


@dataclass
class KernelPlan:
    """Everything a kernel needs, already validated (see :class:`grpo_theory.simulate.SimulationConfig`)."""

    theta0: np.ndarray        # (R, K) initial logits
    theta_ref: np.ndarray     # (K,) reference logits
    offsets: np.ndarray       # (B, K) per-prompt difficulty offsets
    rewards: np.ndarray       # (K,) rewards in [0, 1]
    steps: int
    group_size: int
    normalization: str        # "std" | "mean"
    adv_eps: float
    surrogate: str            # "stale" | "ratio"
    clip_low: float
    clip_high: float
    kl: str                   # "none" | "exact" | "k3"
    kl_coef: float
    optimizer: str            # "sgd" | "momentum" | "adam"
    learning_rate: float
    momentum: float
    adam_betas: tuple
    adam_eps: float
    lag_model: str            # "refresh" | "delay"
    refresh_interval: int
    delay: int
    record: tuple


# ---------------------------------------------------------------------------
# generic K
# ---------------------------------------------------------------------------

def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Numerically stable :math:`\\log\\mathrm{softmax}` over the last axis."""
    m = logits.max(axis=-1, keepdims=True)
    shifted = logits - m
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _advantages(counts, rewards, group_size, normalization, adv_eps):
    """Per-action advantages ``(R, B, K)`` and the zero-variance mask ``(R, B)``."""
    G = float(group_size)
    rbar = (counts * rewards).sum(axis=-1) / G                      # (R, B)
    dev = rewards - rbar[..., None]                                  # (R, B, K)
    present = counts > 0
    zero_var = (np.where(present, rewards, -np.inf).max(axis=-1)
                == np.where(present, rewards, np.inf).min(axis=-1))
    if normalization == "std":
        s = np.sqrt((counts * dev * dev).sum(axis=-1) / (G - 1.0))
        adv = dev / (s + adv_eps)[..., None]
    else:
        adv = dev
    adv = np.where(zero_var[..., None], 0.0, adv)
    return adv, zero_var


def _prompt_logps(theta, theta_old, theta_ref, offsets):
    logp = log_softmax(theta[:, None, :] + offsets)
    logp_old = log_softmax(theta_old[:, None, :] + offsets)
    logp_ref = log_softmax(theta_ref[None, None, :] + offsets)
    return logp, logp_old, logp_ref


def _clip_masks(rho, adv, clip_low, clip_high):
    clipped_ratio = np.clip(rho, 1.0 - clip_low, 1.0 + clip_high)
    unclipped = rho * adv <= clipped_ratio * adv        # min picks the unclipped branch
    return clipped_ratio, unclipped


def group_gradient(theta, theta_old, theta_ref, offsets, rewards, counts, *, group_size,
                   normalization, adv_eps, surrogate, clip_low, clip_high, kl, kl_coef):
    r"""Analytic gradient of the GRPO loss on sampled groups, any ``K``.

    Returns ``(grad, zero_var_frac, clip_frac)`` with ``grad`` of shape ``(R, K)``
    (averaged over the ``B`` prompts), the fraction of the ``B`` groups with zero
    reward variance and the fraction of the ``G·B`` samples whose clipped branch is
    the strictly smaller one (zero for ``surrogate="stale"``), each ``(R,)``.
    ``counts`` is ``(R, B, K)``.  The clipped branch, when it is the active
    minimum, contributes no gradient.
    """
    G = float(group_size)
    counts = np.asarray(counts, dtype=float)
    logp, logp_old, logp_ref = _prompt_logps(theta, theta_old, theta_ref, offsets)
    pi = np.exp(logp)
    adv, zero_var = _advantages(counts, rewards, group_size, normalization, adv_eps)
    w = counts / G
    if surrogate == "ratio":
        rho = np.exp(logp - logp_old)
        _, unclipped = _clip_masks(rho, adv, clip_low, clip_high)
        coef = -w * np.where(unclipped, rho * adv, 0.0)
        clip_frac = (counts * ~unclipped).sum(axis=(1, 2)) / (G * counts.shape[1])
    else:
        coef = -w * adv
        clip_frac = np.zeros(theta.shape[0])
    if kl == "k3":
        coef = coef + kl_coef * w * (1.0 - np.exp(logp_ref - logp))
    grad_b = coef - pi * coef.sum(axis=-1, keepdims=True)
    if kl == "exact":
        log_ratio = logp - logp_ref
        kl_b = (pi * log_ratio).sum(axis=-1, keepdims=True)
        grad_b = grad_b + kl_coef * pi * (log_ratio - kl_b)
    return grad_b.mean(axis=1), zero_var.mean(axis=1), clip_frac


def group_loss(theta, theta_old, theta_ref, offsets, rewards, counts, *, group_size,
               normalization, adv_eps, surrogate, clip_low, clip_high, kl, kl_coef):
    """The loss whose gradient :func:`group_gradient` returns, ``(R,)`` (for tests)."""
    G = float(group_size)
    counts = np.asarray(counts, dtype=float)
    logp, logp_old, logp_ref = _prompt_logps(theta, theta_old, theta_ref, offsets)
    adv, _ = _advantages(counts, rewards, group_size, normalization, adv_eps)
    w = counts / G
    if surrogate == "ratio":
        rho = np.exp(logp - logp_old)
        clipped_ratio = np.clip(rho, 1.0 - clip_low, 1.0 + clip_high)
        term = np.minimum(rho * adv, clipped_ratio * adv)
    else:
        term = adv * logp
    loss_b = -(w * term).sum(axis=-1)
    if kl == "k3":
        x = logp_ref - logp
        loss_b = loss_b + kl_coef * (w * (np.exp(x) - x - 1.0)).sum(axis=-1)
    elif kl == "exact":
        loss_b = loss_b + kl_coef * (np.exp(logp) * (logp - logp_ref)).sum(axis=-1)
    return loss_b.mean(axis=1)


# ---------------------------------------------------------------------------
# K = 2
# ---------------------------------------------------------------------------

def _log_sigmoid(x):
    """:math:`\\log\\sigma(x) = -\\log(1+e^{-x})`, stable for both signs."""
    return -np.logaddexp(0.0, -x)


def two_action_gradient(u, u_old, u_ref, delta, r0, r1, n0, *, group_size, normalization,
                        adv_eps, surrogate, clip_low, clip_high, kl, kl_coef):
    r"""Gradient component :math:`g_0 = -g_1` for two actions.

    ``u = θ_0 − θ_1`` (``(R,)``), prompt offsets ``delta = d_{b0} − d_{b1}`` (``(B,)``),
    ``n0`` the count of action 0 in each group (``(R, B)``).  Returns
    ``(g0, zero_var_frac, clip_frac)``, each ``(R,)``.
    """
    G = float(group_size)
    n0 = np.asarray(n0, dtype=float)
    n1 = G - n0
    x = u[:, None] + delta                    # logit of π(0) per prompt
    q = 1.0 / (1.0 + np.exp(-x))              # π(0)
    dr = r0 - r1
    zero_var = (n0 == 0.0) | (n1 == 0.0) if dr != 0.0 else np.ones(n0.shape, dtype=bool)
    # deviations r_a − r̄:  r0 − r̄ = n1·dr/G,  r1 − r̄ = −n0·dr/G
    if normalization == "std":
        s = abs(dr) * np.sqrt(n0 * n1 / (G * (G - 1.0)))
        scale = dr / (G * (s + adv_eps))
    else:
        scale = np.full(n0.shape, dr / G)
    scale[zero_var] = 0.0
    adv0 = n1 * scale
    adv1 = -n0 * scale
    w0 = n0 / G
    w1 = n1 / G
    if surrogate == "ratio":
        x_old = u_old[:, None] + delta
        rho0 = np.exp(_log_sigmoid(x) - _log_sigmoid(x_old))
        rho1 = np.exp(_log_sigmoid(-x) - _log_sigmoid(-x_old))
        _, un0 = _clip_masks(rho0, adv0, clip_low, clip_high)
        _, un1 = _clip_masks(rho1, adv1, clip_low, clip_high)
        c0 = -w0 * np.where(un0, rho0 * adv0, 0.0)
        c1 = -w1 * np.where(un1, rho1 * adv1, 0.0)
        clip_frac = (n0 * ~un0 + n1 * ~un1).sum(axis=1) / (G * n0.shape[1])
    else:
        c0 = -w0 * adv0
        c1 = -w1 * adv1
        clip_frac = None
    if kl == "k3":
        x_ref = u_ref + delta
        # 1 − π_ref(a)/π(a)
        c0 = c0 + kl_coef * w0 * (1.0 - np.exp(_log_sigmoid(x_ref) - _log_sigmoid(x)))
        c1 = c1 + kl_coef * w1 * (1.0 - np.exp(_log_sigmoid(-x_ref) - _log_sigmoid(-x)))
    g0 = c0 * (1.0 - q) - c1 * q
    if kl == "exact":
        g0 = g0 + kl_coef * q * (1.0 - q) * (u - u_ref)[:, None]
    if clip_frac is None:
        clip_frac = np.zeros(u.shape[0])
    return g0.mean(axis=1), zero_var.mean(axis=1), clip_frac


def _two_action_state(u, delta, u_ref, r0, r1, record, out, t):
    """Fill the state observables at row ``t`` of ``out`` for two actions."""
    x = u[:, None] + delta
    q = 1.0 / (1.0 + np.exp(-x))
    p = (r1 + (r0 - r1) * q).mean(axis=1)
    if "reward" in out:
        out["reward"][t] = p
    if "z" in out:
        with np.errstate(divide="ignore"):
            out["z"][t] = np.log(p) - np.log1p(-p)
    if "entropy" in out or "kl" in out:
        lq0 = _log_sigmoid(x)
        lq1 = _log_sigmoid(-x)
        if "entropy" in out:
            out["entropy"][t] = -(q * lq0 + (1.0 - q) * lq1).mean(axis=1)
        if "kl" in out:
            x_ref = u_ref + delta
            kl = q * (lq0 - _log_sigmoid(x_ref)) + (1.0 - q) * (lq1 - _log_sigmoid(-x_ref))
            out["kl"][t] = kl.mean(axis=1)


def _generic_state(theta, theta_ref, offsets, rewards, record, out, t):
    logp = log_softmax(theta[:, None, :] + offsets)
    pi = np.exp(logp)
    p = (pi * rewards).sum(axis=-1).mean(axis=1)
    if "reward" in out:
        out["reward"][t] = p
    if "z" in out:
        with np.errstate(divide="ignore"):
            out["z"][t] = np.log(p) - np.log1p(-p)
    if "entropy" in out:
        out["entropy"][t] = -(pi * logp).sum(axis=-1).mean(axis=1)
    if "kl" in out:
        logp_ref = log_softmax(theta_ref[None, None, :] + offsets)
        out["kl"][t] = (pi * (logp - logp_ref)).sum(axis=-1).mean(axis=1)


# ---------------------------------------------------------------------------
# optimizers (PyTorch conventions)
# ---------------------------------------------------------------------------

class Optimizer:
    r"""SGD, heavy-ball momentum and Adam on an array of parameters, PyTorch conventions.

    ``step(g)`` returns the parameter increment :math:`\Delta\theta`:

    - ``sgd``: :math:`-\eta g`;
    - ``momentum``: :math:`b \leftarrow \mu b + g`, :math:`-\eta b` (``torch.optim.SGD``,
      dampening 0, no Nesterov; :math:`b_0 = 0` so the first buffer is ``g``);
    - ``adam``: :math:`m \leftarrow \beta_1 m + (1-\beta_1) g`,
      :math:`v \leftarrow \beta_2 v + (1-\beta_2) g^2`,
      :math:`-\frac{\eta}{1-\beta_1^t}\, m / (\sqrt{v}/\sqrt{1-\beta_2^t} + \epsilon)`.
    """

    def __init__(self, kind, shape, *, learning_rate, momentum=0.0, betas=(0.9, 0.999),
                 eps=1e-8):
        self.kind = kind
        self.lr = float(learning_rate)
        self.mu = float(momentum)
        self.b1, self.b2 = (float(b) for b in betas)
        self.eps = float(eps)
        self.t = 0
        if kind == "momentum":
            self.buf = np.zeros(shape)
        elif kind == "adam":
            self.m = np.zeros(shape)
            self.v = np.zeros(shape)

    def step(self, g):
        self.t += 1
        if self.kind == "sgd":
            return -self.lr * g
        if self.kind == "momentum":
            self.buf *= self.mu
            self.buf += g
            return -self.lr * self.buf
        # adam
        self.m *= self.b1
        self.m += (1.0 - self.b1) * g
        self.v *= self.b2
        self.v += (1.0 - self.b2) * (g * g)
        bc1 = 1.0 - self.b1 ** self.t
        bc2 = 1.0 - self.b2 ** self.t
        denom = np.sqrt(self.v) / np.sqrt(bc2) + self.eps
        return -(self.lr / bc1) * self.m / denom


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------

def _allocate(plan, runs):
    T = plan.steps
    out = {}
    for name in plan.record:
        arr = np.empty((T + 1, runs))        # time-major while filling: contiguous rows
        if name in UPDATE_OBSERVABLES:
            arr[T] = np.nan
        out[name] = arr
    return out


def _lagged(plan, t, current, ring, old):
    """Logits (or logit differences) of the sampling policy at step ``t``.

    ``refresh``: π_old := π_θ at t ≡ 0 (mod k).  ``delay``: the policy of step
    t − d, the initial one for t < d (``ring`` holds the last d + 1 states, all
    initialised to the start).
    """
    if plan.lag_model == "refresh":
        if plan.refresh_interval == 1:
            return current
        if t % plan.refresh_interval == 0:
            old[...] = current
        return old
    d = plan.delay
    if d == 0:
        return current
    ring[t % (d + 1)] = current
    return ring[(t + 1) % (d + 1)]


def run(plan: KernelPlan, rng: np.random.Generator, *, steps_iter=None, kernel="auto"):
    """Integrate the plan; returns ``(observables, final_theta)``.

    ``observables`` maps each recorded name to an array ``(R, T+1)``; per-update
    observables have NaN in the last column.  ``steps_iter`` wraps
    ``range(steps)`` (a progress bar).  ``kernel`` is ``"auto"`` (two-action
    kernel when ``K = 2``), ``"generic"`` or ``"two_action"``.
    """
    R, K = plan.theta0.shape
    if kernel == "auto":
        kernel = "two_action" if K == 2 else "generic"
    it = range(plan.steps) if steps_iter is None else steps_iter
    if kernel == "two_action":
        return _run_two_action(plan, rng, it)
    return _run_generic(plan, rng, it)


def _grad_kwargs(plan):
    return dict(group_size=plan.group_size, normalization=plan.normalization,
                adv_eps=plan.adv_eps, surrogate=plan.surrogate, clip_low=plan.clip_low,
                clip_high=plan.clip_high, kl=plan.kl, kl_coef=plan.kl_coef)


def _finish(out):
    return {name: np.ascontiguousarray(arr.T) for name, arr in out.items()}


def _run_two_action(plan, rng, steps_iter):
    R = plan.theta0.shape[0]
    G = plan.group_size
    u0 = plan.theta0[:, 0] - plan.theta0[:, 1]
    u = u0.copy()
    u_ref = float(plan.theta_ref[0] - plan.theta_ref[1])
    delta = plan.offsets[:, 0] - plan.offsets[:, 1]
    r0, r1 = float(plan.rewards[0]), float(plan.rewards[1])
    out = _allocate(plan, R)
    opt = Optimizer(plan.optimizer, (R,), learning_rate=plan.learning_rate,
                    momentum=plan.momentum, betas=plan.adam_betas, eps=plan.adam_eps)
    kw = _grad_kwargs(plan)
    ring = np.repeat(u0[None], plan.delay + 1, axis=0) if plan.lag_model == "delay" else None
    old = u0.copy()
    state_names = [n for n in STATE_OBSERVABLES if n in out]
    _two_action_state(u, delta, u_ref, r0, r1, plan.record, {n: out[n] for n in state_names}, 0)
    for t in steps_iter:
        u_old = _lagged(plan, t, u, ring, old)
        q_old = 1.0 / (1.0 + np.exp(-(u_old[:, None] + delta)))
        n0 = rng.binomial(G, q_old)
        g0, zvf, cf = two_action_gradient(u, u_old, u_ref, delta, r0, r1, n0, **kw)
        if "zero_var_frac" in out:
            out["zero_var_frac"][t] = zvf
        if "clip_frac" in out:
            out["clip_frac"][t] = cf
        if "grad_norm" in out:
            out["grad_norm"][t] = np.sqrt(2.0) * np.abs(g0)
        # θ_0 += Δ, θ_1 −= Δ  ⇒  u += 2Δ
        u = u + 2.0 * opt.step(g0)
        _two_action_state(u, delta, u_ref, r0, r1, plan.record,
                          {n: out[n] for n in state_names}, t + 1)
    shift = 0.5 * (u - u0)
    theta = plan.theta0 + np.stack([shift, -shift], axis=1)
    return _finish(out), theta


def _run_generic(plan, rng, steps_iter):
    R, K = plan.theta0.shape
    G = plan.group_size
    theta = plan.theta0.copy()
    out = _allocate(plan, R)
    opt = Optimizer(plan.optimizer, (R, K), learning_rate=plan.learning_rate,
                    momentum=plan.momentum, betas=plan.adam_betas, eps=plan.adam_eps)
    kw = _grad_kwargs(plan)
    ring = (np.repeat(theta[None], plan.delay + 1, axis=0)
            if plan.lag_model == "delay" else None)
    old = theta.copy()
    state_out = {n: out[n] for n in STATE_OBSERVABLES if n in out}
    _generic_state(theta, plan.theta_ref, plan.offsets, plan.rewards, plan.record, state_out, 0)
    for t in steps_iter:
        theta_old = _lagged(plan, t, theta, ring, old)
        if K == 2:   # same stream as the two-action kernel: one binomial per group
            q_old = 1.0 / (1.0 + np.exp(-((theta_old[:, 0] - theta_old[:, 1])[:, None]
                                          + (plan.offsets[:, 0] - plan.offsets[:, 1]))))
            n0 = rng.binomial(G, q_old)
            counts = np.stack([n0, G - n0], axis=-1)
        else:
            pi_old = np.exp(log_softmax(theta_old[:, None, :] + plan.offsets))
            counts = rng.multinomial(G, pi_old / pi_old.sum(axis=-1, keepdims=True))
        g, zvf, cf = group_gradient(theta, theta_old, plan.theta_ref, plan.offsets,
                                    plan.rewards, counts, **kw)
        if "zero_var_frac" in out:
            out["zero_var_frac"][t] = zvf
        if "clip_frac" in out:
            out["clip_frac"][t] = cf
        if "grad_norm" in out:
            out["grad_norm"][t] = np.sqrt((g * g).sum(axis=1))
        theta = theta + opt.step(g)
        _generic_state(theta, plan.theta_ref, plan.offsets, plan.rewards, plan.record,
                       state_out, t + 1)
    return _finish(out), theta
