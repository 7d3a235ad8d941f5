r"""A real, sampled GRPO step for the batched policy, with refresh lag and optimizers.

One step for every run of the ensemble at once:

1. *Sampling.*  For each prompt a group of ``group_size`` answers is drawn from the
   sampling policy :math:`\pi_{old}` (correct with probability :math:`p_{old}(x)`),
   from uniforms supplied by the caller (so that a per-run loop, a batched step and
   common-random-number pairs can use identical draws).  The verifier returns
   1 for a correct answer; the noisy verifier flips it with ``flip_probability``.
2. *Reward shaping.*  ``kl="k1_reward"`` (verl ``use_kl_in_reward``, k1):
   :math:`r' = r - \beta(\log\pi_{old}(a) - \log\pi_{ref}(a))`.
3. *Advantages.*  ``normalization="mean"`` (Dr. GRPO): :math:`A = r' - \bar r'`;
   ``"std"``: :math:`(r' - \bar r')/(s + \epsilon)` with the Bessel-corrected group std.
4. *Loss* (mean over the group and the prompts; one token per answer, so token-mean
   and Dr. GRPO's constant normalizer coincide):
   ``surrogate="stale"``: :math:`-A\log\pi_\theta(a)`; ``"ratio"``:
   :math:`-\min(\rho A, \operatorname{clip}(\rho, 1-\epsilon_{low}, 1+\epsilon_{high})A)` with
   :math:`\rho = \pi_\theta(a)/\pi_{old}(a)` (the model's ``clip_low``/``clip_high``); plus
   ``kl="k3"``: :math:`+\beta\,k_3`, :math:`k_3 = e^{\ell_{ref}-\ell} - (\ell_{ref}-\ell) - 1`
   at :math:`\ell = \log\pi_\theta(a)` (TRL's default).
5. *Refresh lag.*  :math:`\pi_{old}` is the policy at the start of the current
   window of ``refresh_interval`` = k steps.  ``reuse="fresh"``: a fresh batch is drawn
   from :math:`\pi_{old}` at every step; ``reuse="batch"``: one batch drawn at the window
   start is reused for all k steps (PPO-style epochs).
6. *Optimizer* (per run, batched): ``sgd`` (heavy-ball momentum ``momentum``:
   :math:`b \leftarrow \mu b + g`, :math:`\theta \leftarrow \theta - \eta b`, torch's
   SGD without dampening, i.e. the theory's :math:`v = \mu v - \eta\nabla`), ``adam``
   and ``adamw`` (decoupled weight decay), bias-corrected.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from grpo_theory.model import REUSE_MODES, GRPOModel
from grpo_theory.validate import ParameterError, check_choice, check_int, check_real

from ._torch import require_torch

__all__ = ["NetObjective", "OptimizerConfig", "VARIANTS", "Batch", "sample_batch", "grpo_loss",
           "Optimizer", "RunRecord", "run_ensemble", "grpo_step"]

#: the torch optimizers of the experiments (``adamw``: Adam with decoupled weight decay)
OPTIMIZERS = ("sgd", "adam", "adamw")
#: the KL estimators a sampled network step implements (the exact KL needs the full policy)
KLS = ("none", "k3", "k1_reward")


@dataclass(frozen=True)
class NetObjective:
    """The GRPO objective of a network run: the variant of a :class:`~grpo_theory.model.GRPOModel`
    (group size, normalization and epsilon, surrogate and clip, KL estimator and coefficient)
    and the verifier's ``flip_probability`` (see the module docstring)."""

    model: GRPOModel
    flip_probability: float = 0.0

    def __post_init__(self):
        if not isinstance(self.model, GRPOModel):
            raise ParameterError("model", type(self.model).__name__, "a GRPOModel")
        if self.model.group_size is None:
            raise ParameterError("group_size", "inf", "a finite group size for sampled groups")
        check_choice("kl", self.model.kl, KLS)
        object.__setattr__(self, "flip_probability", check_real(
            "flip_probability", self.flip_probability, low=0, high=0.5, high_open=True))

    group_size = property(lambda self: self.model.group_size)
    normalization = property(lambda self: self.model.normalization)
    surrogate = property(lambda self: self.model.surrogate)
    kl = property(lambda self: self.model.kl)
    kl_coef = property(lambda self: self.model.effective_kl_coef)
    adv_eps = property(lambda self: self.model.adv_eps)
    clip_range = property(lambda self: self.model.clip_range)

    def replace(self, flip_probability=None, **changes) -> "NetObjective":
        """A copy with model fields (and the flip probability) changed."""
        return NetObjective(self.model.replace(**changes),
                            self.flip_probability if flip_probability is None else flip_probability)


#: named variants: the theory's clean case (Dr. GRPO, k1 in the reward) and TRL's default
#: (std, clipped ratio, k3 in the loss: the negative control), as models
VARIANTS = {
    "dr-grpo-k1": GRPOModel(normalization="mean", surrogate="stale", kl="k1_reward", kl_coef=0.5,
                            adv_eps=1e-4, group_size=8),
    "trl-default": GRPOModel(normalization="std", surrogate="ratio", kl="k3", kl_coef=0.5,
                             adv_eps=1e-4, group_size=8, clip_low=0.2, clip_high=0.2),
}


@dataclass(frozen=True)
class OptimizerConfig:
    name: str = "sgd"
    learning_rate: float = 0.1
    momentum: float = 0.0
    betas: tuple = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0

    def __post_init__(self):
        check_choice("optimizer", self.name, OPTIMIZERS)
        check_real("learning_rate", self.learning_rate, low=0, low_open=True)
        check_real("momentum", self.momentum, low=0, high=1, high_open=True)
        if len(self.betas) != 2:
            raise ParameterError("betas", self.betas, "a pair (beta1, beta2)")
        for i, b in enumerate(self.betas):
            check_real(f"betas[{i}]", b, low=0, high=1, high_open=True)
        check_real("eps", self.eps, low=0, low_open=True)
        check_real("weight_decay", self.weight_decay, low=0)


# ----------------------------------------------------------------------------------
# one batch and the loss
# ----------------------------------------------------------------------------------

@dataclass
class Batch:
    actions: object      # (R, N, G) long
    advantages: object   # (R, N, G)
    logp_old: object     # (R, N, G) log pi_old(a)
    logp_ref: object     # (R, N, G) log pi_ref(a)
    reward: object       # (R, N, G) verifier reward (before shaping)


def sample_batch(policy, logp_old, cfg: NetObjective, u_action, u_flip=None) -> Batch:
    """Draw one group per prompt from ``logp_old`` (R, N, 2) using uniforms (R, N, G)."""
    torch = policy.torch
    y = policy.labels[None, :, None]
    p_old = policy.correct_probability(logp_old)[..., None]
    correct = u_action < p_old
    actions = torch.where(correct, y, 1 - y)
    reward = correct.to(logp_old.dtype)
    if cfg.flip_probability > 0:
        flip = u_flip < cfg.flip_probability
        reward = torch.where(flip, 1 - reward, reward)
    lo = torch.gather(logp_old, 2, actions)
    lr = torch.gather(policy.ref_log_probs[None].expand_as(logp_old), 2, actions)
    shaped = reward - cfg.kl_coef * (lo - lr) if cfg.kl == "k1_reward" else reward
    adv = shaped - shaped.mean(-1, keepdim=True)
    if cfg.normalization == "std":
        adv = adv / (shaped.std(-1, keepdim=True, unbiased=True) + cfg.adv_eps)
    return Batch(actions, adv, lo, lr, reward)


def grpo_loss(log_probs, batch: Batch, cfg: NetObjective):
    """Per-run GRPO loss (R,) at the current ``log_probs`` (R, N, 2)."""
    torch = require_torch()
    lp = torch.gather(log_probs, 2, batch.actions)
    A = batch.advantages
    if cfg.surrogate == "stale":
        pg = A * lp
    else:
        ratio = torch.exp(lp - batch.logp_old)
        pg = ratio * A
        lo, hi = cfg.clip_range
        pg = torch.minimum(pg, torch.clamp(ratio, lo, hi) * A)
    loss = -pg.mean((-1, -2))
    if cfg.kl == "k3":
        d = batch.logp_ref - lp
        loss = loss + cfg.kl_coef * (torch.exp(d) - d - 1).mean((-1, -2))
    return loss


# ----------------------------------------------------------------------------------
# optimizers (batched, functional state)
# ----------------------------------------------------------------------------------

class Optimizer:
    """SGD/heavy-ball, Adam, AdamW on a list of batched parameter tensors (in place)."""

    def __init__(self, cfg: OptimizerConfig, params, *, adam_v=None, adam_step=0):
        torch = require_torch()
        self.cfg = cfg
        self.buf = [torch.zeros_like(p) for p in params]
        if cfg.name in ("adam", "adamw"):
            self.v = ([torch.zeros_like(p) for p in params] if adam_v is None
                      else [v.expand_as(p).clone() for v, p in zip(adam_v, params)])
            self.t = int(adam_step)

    def step(self, params, grads):
        c = self.cfg
        if c.name == "sgd":
            for p, g, b in zip(params, grads, self.buf):
                if c.momentum:
                    b.mul_(c.momentum).add_(g)
                    p.sub_(c.learning_rate * b)
                else:
                    p.sub_(c.learning_rate * g)
            return
        b1, b2 = c.betas
        self.t += 1
        bc1 = 1 - b1 ** self.t
        bc2 = 1 - b2 ** self.t
        for p, g, m, v in zip(params, grads, self.buf, self.v):
            if c.name == "adam" and c.weight_decay:
                g = g + c.weight_decay * p
            m.mul_(b1).add_((1 - b1) * g)
            v.mul_(b2).add_((1 - b2) * g * g)
            if c.name == "adamw" and c.weight_decay:
                p.mul_(1 - c.learning_rate * c.weight_decay)
            p.sub_(c.learning_rate * (m / bc1) / ((v / bc2).sqrt() + c.eps))


# ----------------------------------------------------------------------------------
# the ensemble runner
# ----------------------------------------------------------------------------------

@dataclass
class RunRecord:
    """Observed top-mode coordinate ``x`` (steps+1, R) and mean reward (steps+1, R)."""

    x: np.ndarray
    reward: np.ndarray
    seconds: float
    runs: int
    steps: int
    paired: bool
    extra: dict = field(default_factory=dict)

    def response(self) -> np.ndarray:
        """(x_plus - x_minus)/2 per common-random-number pair, (steps+1, R/2); or x itself."""
        if not self.paired:
            return self.x
        h = self.runs // 2
        return 0.5 * (self.x[:, :h] - self.x[:, h:])


def grpo_step(policy, params, opt, cfg, batch_or_none, logp_old, u_action, u_flip=None):
    """One optimizer step for all runs; returns (log_probs before the step, batch used)."""
    torch = policy.torch
    for p in params:
        p.requires_grad_(True)
    logp = policy.log_probs(params)
    batch = batch_or_none
    if batch is None:
        batch = sample_batch(policy, logp_old if logp_old is not None else logp.detach(), cfg,
                             u_action, u_flip)
    loss = grpo_loss(logp, batch, cfg).sum()
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p in params:
            p.requires_grad_(False)
        opt.step(params, grads)
    return logp.detach(), batch


def run_ensemble(policy, cfg: NetObjective, opt_cfg: OptimizerConfig, *, steps: int, runs: int,
                 refresh_interval: int = 1, reuse: str = "fresh", seed: int = 0,
                 kick=None, amplitudes=None, paired: bool = False, observe=None,
                 adam_v=None, adam_step=0, stop_abs=None, params=None) -> RunRecord:
    r"""Train ``runs`` policies from the plateau with real sampled GRPO, batched.

    ``kick``: a direction in parameter space (list of tensors without run axis),
    added with per-run ``amplitudes`` (R,).  ``paired=True``: runs ``i`` and
    ``i + R/2`` share every uniform (common random numbers) - give them opposite
    amplitudes to measure a linear response with most of the sampling noise
    cancelled.  ``observe``: a vector e (N,) of the function space; ``x`` records
    :math:`e\cdot(z - z^*)` before every step and after the last.  ``stop_abs``:
    stop early once every run has :math:`|x|` beyond it (the rest is NaN).
    """

    torch = policy.torch
    steps = check_int("steps", steps, low=1)
    runs = check_int("runs", runs, low=1)
    k = check_int("refresh_interval", refresh_interval, low=1)
    reuse = check_choice("reuse", reuse, REUSE_MODES)
    if paired and runs % 2:
        raise ParameterError("runs", runs, "an even number with paired=True")
    gen = torch.Generator().manual_seed(int(seed))
    if params is None:
        params = policy.replicate(runs)
    with torch.no_grad():
        if kick is not None:
            amp = torch.as_tensor(np.asarray(amplitudes, dtype=float), dtype=policy.dtype)
            for p, d in zip(params, kick):
                p.add_(amp.reshape((-1,) + (1,) * d.dim()) * d.to(policy.dtype)[None])
    e = None if observe is None else torch.as_tensor(np.asarray(observe), dtype=policy.dtype)
    opt = Optimizer(opt_cfg, params, adam_v=adam_v, adam_step=adam_step)
    N, G = policy.spec.prompts, cfg.group_size
    draws = runs // 2 if paired else runs
    xs = np.full((steps + 1, runs), np.nan)
    rw = np.full((steps + 1, runs), np.nan)

    def observe_now(logp, t):
        z = policy.log_odds(logp)
        if e is not None:
            xs[t] = ((z - policy.z_star) @ e).double().numpy()
        rw[t] = policy.correct_probability(logp).mean(-1).double().numpy()

    t0 = time.perf_counter()
    logp_old = batch = None
    for t in range(steps):
        u = torch.rand((draws, N, G), generator=gen, dtype=policy.dtype)
        uf = (torch.rand((draws, N, G), generator=gen, dtype=policy.dtype)
              if cfg.flip_probability > 0 else None)
        if paired:
            u = torch.cat([u, u])
            uf = None if uf is None else torch.cat([uf, uf])
        if t % k == 0:
            with torch.no_grad():
                logp_old = policy.log_probs(params)
            batch = None
        if reuse == "fresh":
            batch = None
        logp, batch = grpo_step(policy, params, opt, cfg, batch, logp_old, u, uf)
        observe_now(logp, t)
        if stop_abs is not None and e is not None and np.all(np.abs(xs[t]) > stop_abs):
            break
        if not torch.isfinite(logp).all():
            break
    else:
        with torch.no_grad():
            observe_now(policy.log_probs(params), steps)
    secs = time.perf_counter() - t0
    return RunRecord(x=xs, reward=rw, seconds=secs, runs=runs, steps=steps, paired=paired,
                     extra={"params": params, "optimizer": opt})
