r"""The network's stiffness, measured two independent ways.

Linearized at the plateau, the expected update is
:math:`\Delta\theta = -\eta\,\frac1N\sum_n \frac{K_b}{\kappa}\,\nabla z_n\nabla z_n^\top\,\delta\theta_{old}`
(:math:`K_b` the per-prompt bandit stiffness, :math:`\kappa = |\nabla z|^2 = 2` the
two-logit softmax factor the bandit theory carries), so in function space
:math:`\delta z` evolves with the matrix :math:`\frac{K_b}{\kappa}\frac{\Theta}{N}`,
:math:`\Theta = JJ^\top` the empirical NTK of the log-odds.  Every eigenmode is the
scalar heavy-ball recurrence of the theory; the top one, with
:math:`K_{top} = \frac{K_b}{\kappa}\frac{\lambda_{\max}(\Theta)}{N}`, binds.

1. **NTK route** (:func:`ntk_top_mode`): :math:`\lambda_{\max}(\Theta)` in float64,
   times the bandit theory's :math:`K_b/\kappa` (and its fresh/stale split).
2. **Linear response** (:func:`linear_response`): a small kick along the top mode
   (common-random-number pairs :math:`\pm\delta`), k = 1, mu = 0, real sampled GRPO;
   the pooled AR(1) coefficient :math:`c = 1 - \eta K` of the response gives
   :math:`K_{resp} = (1 - c)/\eta`.  This measures the mode the instability
   follows (the reward curve may hide it: with random labels the top mode moves
   half the prompts up and half down).

With Adam the update is preconditioned by :math:`P = \operatorname{diag}(1/(\sqrt v + \epsilon))`
and the NTK becomes :math:`JPJ^\top` (``precondition``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .analysis import ar1
from .grpo import OptimizerConfig, run_ensemble

__all__ = ["TopMode", "jacobian", "ntk_top_mode", "linear_response"]


@dataclass
class TopMode:
    eigenvalue: float          # lambda_max of Theta (or of J P J^T)
    eigenvector: np.ndarray    # e (N,), unit norm, sum(e * sign) > 0
    direction: list            # parameter-space kick d with J d = e (float64 tensors)
    spectrum: np.ndarray       # all NTK eigenvalues, descending
    prompts: int

    @property
    def ntk_over_n(self) -> float:
        return self.eigenvalue / self.prompts


def jacobian(policy):
    """J (N, P) of the log-odds z_n w.r.t. the flattened parameters at theta_0 (float64)."""
    torch = policy.torch
    pol = policy.to(torch.float64)
    params = [p[None].clone().requires_grad_(True) for p in pol.params0]
    z = pol.log_odds(pol.log_probs(params))[0]
    rows = []
    for n in range(z.shape[0]):
        g = torch.autograd.grad(z[n], params, retain_graph=True)
        rows.append(torch.cat([gi.reshape(-1) for gi in g]))
    return torch.stack(rows), [p.shape[1:] for p in params]


def _unflatten(vec, shapes):
    out, i = [], 0
    for s in shapes:
        n = int(np.prod(s)) if len(s) else 1
        out.append(vec[i:i + n].reshape(s))
        i += n
    return out


def ntk_top_mode(policy, precondition=None) -> TopMode:
    """Top eigenpair of Theta = J P J^T (P = diag(precondition) or I) and the kick direction."""
    torch = policy.torch
    J, shapes = jacobian(policy)
    if precondition is not None:
        P = torch.cat([q.reshape(-1).to(torch.float64) for q in precondition])
        JP = J * P[None, :]
    else:
        JP = J
    theta = JP @ J.T
    w, V = torch.linalg.eigh(theta)
    lam = float(w[-1])
    e = V[:, -1]
    if float(e.sum()) < 0:
        e = -e
    d = JP.T @ e / lam            # J d = J P J^T e / lam = e
    return TopMode(eigenvalue=lam, eigenvector=e.numpy().copy(), direction=_unflatten(d, shapes),
                   spectrum=w.flip(0).numpy().copy(), prompts=J.shape[0])


def linear_response(policy, cfg, mode: TopMode, *, learning_rate, steps=40, pairs=16,
                    amplitude=0.5, seed=0, reuse="fresh"):
    """K_resp from the AR(1) decay of a +-kick along the top mode (k = 1, mu = 0, SGD).

    Returns (K, se, coefficient, record).
    """
    R = 2 * pairs
    amps = np.r_[np.full(pairs, amplitude), np.full(pairs, -amplitude)]
    rec = run_ensemble(policy, cfg, OptimizerConfig("sgd", learning_rate, 0.0), steps=steps,
                       runs=R, refresh_interval=1, reuse=reuse, seed=seed, kick=mode.direction,
                       amplitudes=amps, paired=True, observe=mode.eigenvector)
    c, se = ar1(rec.response())
    return (1 - c) / learning_rate, se / learning_rate, c, rec
