r"""Mean-field trajectories of a model (L1): the exact nonlinear map and its moment closure.

* :func:`mean_field_trajectory` iterates the exact L1 map
  :math:`v_{t+1}=\mu v_t+\eta F(z_t, z_{s(t)})`, :math:`z_{t+1}=z_t+v_{t+1}` with the drift
  :math:`F` of the model's variant and its refresh window;
* :func:`moment_closure_trajectory` adds the second-order moment closure of the on-policy
  dynamics: the mean feels :math:`\tfrac12 F''\operatorname{Var}` and the covariance of
  :math:`(x, v)` is propagated through the Jacobian with the exact per-step noise.

Both are vectorised over arrays of starting logits, learning rates and momenta (broadcast),
so one call traces a family of settings of one variant.  Time in optimizer steps, z in
logits.
"""

from __future__ import annotations

import numpy as np
from grpo_theory.theory.lazy_scipy import expit

from grpo_theory.model import GRPOModel
from grpo_theory.theory.drift import drift, update_variance

__all__ = ["mean_field_trajectory", "moment_closure_trajectory"]


def _broadcast(model, z0, learning_rate, momentum):
    z0 = model.z_ref if z0 is None else z0
    eta = model.learning_rate if learning_rate is None else learning_rate
    mu = (model.momentum if model.optimizer == "sgd" else 0.0) if momentum is None else momentum
    return np.broadcast_arrays(np.asarray(z0, float), np.asarray(eta, float),
                               np.asarray(mu, float))


def mean_field_trajectory(model: GRPOModel, steps: int, *, z0=None, learning_rate=None,
                          momentum=None) -> np.ndarray:
    r"""Iterate the exact L1 map of ``model`` for ``steps`` steps from ``z0`` (default z_ref).

    ``learning_rate``/``momentum`` default to the model's (heavy ball); arrays of them (and
    of ``z0``) broadcast.  The sampling logit :math:`z_{s(t)}` is refreshed at
    t ≡ 0 (mod k), k the model's refresh interval (1 with lag model ``delay``: the map is
    then on-policy).  Returns an array of shape ``(..., steps+1)``.
    """
    z0, eta, mu = _broadcast(model, z0, learning_rate, momentum)
    z = z0.astype(float).copy()
    v = np.zeros_like(z)
    zold = z.copy()
    out = np.empty(z.shape + (steps + 1,))
    out[..., 0] = z
    k = model.window
    for t in range(steps):
        if t % k == 0:
            zold = z.copy()
        v = mu * v + eta * drift(model, z, zold)
        z = z + v
        out[..., t + 1] = z
    return out


def moment_closure_trajectory(model: GRPOModel, steps: int, *, z0=None, learning_rate=None,
                              momentum=None, h=1e-3):
    r"""Second-order moment closure of the on-policy dynamics of ``model`` (its refresh
    interval is not used).

    Mean :math:`m` and covariance :math:`C` of (x, v):
    :math:`E[F(z)] \approx F(m) + \tfrac12 F''(m) C_{xx}`, and :math:`C` propagated
    through the Jacobian with the exact per-step noise :math:`\eta^2\sigma^2(m)`
    (:func:`grpo_theory.theory.drift.update_variance`, the model's B prompts).  The
    difference to the L1 map is the leading :math:`O(\eta^2 \mathrm{Var})` mean-field bias.
    Returns ``(mean, var)`` arrays of shape ``(..., steps+1)``.
    """
    z0, eta, mu = _broadcast(model, z0, learning_rate, momentum)
    m = z0.astype(float).copy()
    v = np.zeros_like(m)
    cxx, cxv, cvv = (np.zeros_like(m) for _ in range(3))
    means = np.empty(m.shape + (steps + 1,))
    vars_ = np.empty_like(means)
    means[..., 0], vars_[..., 0] = m, cxx
    for t in range(steps):
        zz = np.stack([m, m + h, m - h])
        F0, Fp, Fm = drift(model, zz, zz)
        d1 = (Fp - Fm) / (2 * h)
        d2 = (Fp - 2 * F0 + Fm) / h**2
        s2 = np.asarray(update_variance(model, expit(m).ravel()), float).reshape(m.shape)
        v = mu * v + eta * (F0 + 0.5 * d2 * cxx)
        m = m + v
        # linear map of (x, v): v' = mu v + eta d1 x + eta xi ; x' = x + v'
        a11, a12 = 1 + eta * d1, mu
        a21, a22 = eta * d1, mu
        n = eta**2 * s2
        nxx = a11 * a11 * cxx + 2 * a11 * a12 * cxv + a12 * a12 * cvv + n
        nxv = a11 * a21 * cxx + (a11 * a22 + a12 * a21) * cxv + a12 * a22 * cvv + n
        nvv = a21 * a21 * cxx + 2 * a21 * a22 * cxv + a22 * a22 * cvv + n
        cxx, cxv, cvv = nxx, nxv, nvv
        means[..., t + 1], vars_[..., t + 1] = m, cxx
    return means, vars_
