r"""Two kinds of lag: one batch reused for a refresh window vs fresh batches from a stale policy.

Both TRL's ``num_iterations`` (verl ``ppo_epochs``) and ``steps_per_generation`` give
a refresh window of k optimizer steps whose samples come from the same old policy,
so they share the mean-field drift and the L2 monodromy.  They differ in the noise:

* ``fresh`` — every step draws its own batch: the window is driven by k independent
  noise kicks :math:`\eta\xi_j`;
* ``batch`` — one batch is reused by all k steps: to linear order the same kick
  :math:`\eta\xi` is applied k times (for the stale surrogate the advantage force
  does not depend on the current iterate at all, see ``drift.kl_force_k1_reward``
  and ``drift.ratio_factor``; for the ratio surrogate and k3 the per-step
  difference is of order x, i.e. multiplicative, and is dropped).

On the per-step state :math:`y = (x, v, x_s)` (deviation, last increment, deviation
of the sampling policy) with step map :math:`A` (``discrete.refresh_step_matrix``)
and noise loading :math:`b = (1, 1, 0)`, the state at phase j of a window is
:math:`y_j = A^j E y_0 + \eta\,\sum_{i<j} A^{j-1-i} b\,\xi_i`, with
:math:`\xi_i = \xi` for ``batch``.  Its noise covariance is
:math:`\eta^2\sigma^2 S_j b b^\top S_j^\top`, :math:`S_j = \sum_{m<j} A^m` (``batch``)
instead of :math:`\eta^2\sigma^2\sum_{m<j} A^m b b^\top A^{m\top}` (``fresh``): an AR
process with window-correlated forcing.  The window-start covariance solves the
discrete Lyapunov equation of the monodromy; the reported variance is the average
over the k phases.  ``reuse.sgd_window_variance`` is the closed form for SGD with
an all-stale stiffness (the KL-in-reward case), where batch reuse multiplies the
stationary variance by k to leading order in :math:`\eta K`.
"""

from __future__ import annotations


import numpy as np
import sympy as sp

from grpo_theory.theory import symbols as S
from grpo_theory.theory.lazy_scipy import solve_discrete_lyapunov
from grpo_theory.theory.derived import Derived, derivation, get, prove_equal, prove_zero
from grpo_theory.theory.printing import latex
from grpo_theory.theory.printing import sci as _sci
from grpo_theory.theory.discrete import step_matrix
from grpo_theory.validate import check_int

__all__ = ["window_phase_variances", "window_sampling"]

_j = sp.Symbol("j", integer=True, nonnegative=True)


def _sgd_window(reuse):
    """(window-start variance V0, phase-averaged variance) for SGD, all-stale stiffness."""
    a, k, eta, s2 = S.a, S.k_ref, S.eta, S.sigma2
    V = sp.Symbol("V_0", positive=True)
    # x_j = (1 - j a) x_0 + eta * (sum of j kicks): j^2 sigma^2 (one kick j times) or j sigma^2
    loading = _j**2 if reuse == "batch" else _j
    (V0,) = sp.solve(sp.Eq(V, (1 - k * a) ** 2 * V + eta**2 * s2 * loading.subs(_j, k)), V)
    avg = sp.summation((1 - _j * a) ** 2 * V0 + eta**2 * s2 * loading, (_j, 0, k - 1)) / k
    return sp.factor(V0), sp.factor(sp.simplify(avg))


@derivation("reuse.sgd_window_variance")
def _sgd_window_variance() -> Derived:
    a, k, eta, s2 = S.a, S.k_ref, S.eta, S.sigma2
    V0_b, avg_b = _sgd_window("batch")
    V0_f, avg_f = _sgd_window("fresh")
    # displayed with every factor positive on the stable range 0 < k a < 2
    display = eta**2 * s2 * (3 * k - a * (k**2 - 1)) / (3 * a * (2 - a * k))
    out = Derived("reuse.sgd_window_variance", display, (S.eta, S.a, S.k_ref, S.sigma2),
                  r"\overline{\operatorname{Var} z}_{\mathrm{batch}}",
                  r"Exact stationary variance of the logit deviation, averaged over the $k$ phases "
                  r"of a refresh window, when one batch is reused by all $k$ steps (SGD, all-stale "
                  r"stiffness $a = \eta K$, e.g. KL in the reward): "
                  r"$x_{j} = (1 - j a) x_{s} + j \eta \xi$ at step $j$ of the window.",
                  units="logits$^2$", assumptions=r"linear noise (same kick at every step of the "
                  r"window); $0 < k a < 2$", level="L2",
                  title="Variance with one batch reused for a whole window")
    expr = out.expr
    out.step(r"the root of $\operatorname{Var} x_{s} = (1 - k a)^{2} \operatorname{Var} x_{s} + "
             r"k^{2} \eta^{2} \sigma^{2}$ (one kick applied $k$ times)", V0_b, r"\operatorname{Var} x_{s}")
    out.step(r"the average over the $k$ phases of $(1 - j a)^{2} \operatorname{Var} x_{s} + "
             r"j^{2} \eta^{2} \sigma^{2}$, summed and factored", avg_b,
             out.lhs)
    out.check(r"it is the phase average, written with every factor positive for $0 < k a < 2$",
              "sympy", prove_equal(expr, avg_b), f"phase average as factored: ${latex(avg_b)}$")
    out.check(r"the window-start variance solves $\operatorname{Var} x_{s} = (1 - k a)^{2} "
              r"\operatorname{Var} x_{s} + k^{2} \eta^{2} \sigma^{2}$ (batch) and the same with "
              r"$k \eta^{2} \sigma^{2}$ (fresh batches)", "sympy",
              prove_zero(V0_b - (1 - k * a) ** 2 * V0_b - k**2 * eta**2 * s2)
              and prove_zero(V0_f - (1 - k * a) ** 2 * V0_f - k * eta**2 * s2))
    out.check("window-start variance: the batch one is exactly $k$ times the fresh one", "sympy",
              prove_equal(V0_b / V0_f, k))
    ar = get("noise.ar2_variance").expr.subs({S.mu: 0, S.K: a / eta})
    out.check(r"at $k = 1$ both equal the on-policy variance of the noise section at $\mu = 0$",
              "sympy",
              prove_equal(expr.subs(k, 1), ar) and prove_equal(avg_f.subs(k, 1), ar))
    lead = sp.limit(sp.simplify(expr / avg_f), a, 0)
    out.check(r"to leading order in $a$ the phase-averaged variance is $k$ times the fresh one",
              "sympy", prove_equal(lead, k),
              rf"$\lim_{{a \to 0}} \frac{{\mathrm{{batch}}}}{{\mathrm{{fresh}}}} = "
              rf"{latex(lead)}$")
    fb = sp.lambdify((S.eta, S.a, S.k_ref, S.sigma2), expr)
    ff = sp.lambdify((S.eta, S.a, S.k_ref, S.sigma2), avg_f)
    worst = 0.0
    for a_v, k_v in ((0.05, 2), (0.1, 4), (0.02, 8), (0.2, 3)):
        for mode, f in (("batch", fb), ("fresh", ff)):
            ref = np.mean(window_phase_variances(1.0, 0.0, a_v, 1.0, k_v, reuse=mode))
            worst = max(worst, abs(f(1.0, a_v, k_v, 1.0) - ref) / ref)
    out.check("equals the stationary variance of the general window map, solved numerically from "
              "its Lyapunov equation, at 4 points in both modes", "numeric", worst < 1e-10,
              f"worst relative error {_sci(worst)} (tolerance $10^{{-10}}$)")
    return out


def window_sampling(passes, batches) -> dict:
    r"""Refresh interval and reuse mode of a trainer's window.

    ``passes``: optimizer passes over one generation (TRL ``num_iterations``, verl
    ``ppo_epochs``); ``batches``: distinct optimizer-step batches per generation (TRL
    ``steps_per_generation / gradient_accumulation_steps``, verl ``train_batch_size /
    ppo_mini_batch_size``).  Returns ``{"refresh_interval": passes * batches,
    "reuse": "fresh" | "batch", "window_batches": m}``: ``fresh`` when each batch is used
    once, otherwise ``batch`` with the window cycling through its m = ``batches`` batches
    ``passes`` times.
    """
    p = check_int("passes", passes, low=1)
    b = check_int("batches", batches, low=1)
    if p == 1:
        return {"refresh_interval": b, "reuse": "fresh", "window_batches": 1}
    return {"refresh_interval": p * b, "reuse": "batch", "window_batches": b}


# ----------------------------------------------------------------------------------
# numerics: the general exact L2 window map
# ----------------------------------------------------------------------------------

def window_phase_variances(learning_rate, momentum, stiffness, noise_variance, refresh_interval,
                           *, fresh_fraction=0.0, reuse="fresh", window_batches=1):
    r"""Exact (L2, linear noise) stationary Var x at each phase j = 0..k-1 of a refresh window.

    ``reuse="fresh"``: independent kicks per step; ``"batch"``: the window cycles through
    ``window_batches`` = m independent kicks (step j uses kick j mod m; m = 1: one kick
    applied at every step).  ``noise_variance`` :math:`\sigma^2` is the per-step variance
    of the logit update per unit learning rate squared (logits²).  Returns k variances
    (logits²), all ``inf`` when the window map is unstable.  The optimizer and lag arguments
    are those of a validated :class:`~grpo_theory.model.GRPOModel`; the one public route is
    :func:`grpo_theory.theory.noise.stationary_variance`.
    """
    k, m, eta, s2 = int(refresh_interval), int(window_batches), float(learning_rate), float(noise_variance)
    A = step_matrix(eta, momentum, stiffness, fresh_fraction)
    E = np.array([[1.0, 0], [0, 1], [1, 0]])
    with np.errstate(over="ignore", invalid="ignore"):
        b = eta * np.array([1.0, 1.0, 0.0])
    lin = [E]
    cov = [np.zeros((3, 3))]
    loads = np.zeros((m, 3))       # per kick i: sum over its steps j' < j of A^(j-1-j') b
    with np.errstate(over="ignore", invalid="ignore"):   # an overflowing window: unstable, below
        for j in range(k):
            lin.append(A @ lin[-1])
            if reuse == "batch":
                loads = loads @ A.T
                loads[j % m] += b
                cov.append(s2 * loads.T @ loads)
            else:
                cov.append(A @ cov[-1] @ A.T + s2 * np.outer(b, b))
    M = lin[k][:2]
    # a window map past 1e308 (e.g. learning_rate=1e308; LinAlgError before) grows: unstable
    if not np.all(np.isfinite(M)) or np.max(np.abs(np.linalg.eigvals(M))) >= 1:
        return np.full(k, np.inf)
    sigma0 = solve_discrete_lyapunov(M, cov[k][:2, :2])
    return np.array([(lin[j] @ sigma0 @ lin[j].T + cov[j])[0, 0] for j in range(k)])
