r"""Level L2: the exact discrete linearization at a fixed point and its stability.

Deviation :math:`x = z - z^*` (logits), heavy-ball momentum :math:`\mu\in[0,1)`,
learning rate :math:`\eta`, stiffness :math:`K = K_f + K_s` (:math:`K_f` acts on
the current iterate, :math:`K_s` through the sampling policy).  The update is

.. math::

    v_{t+1} = \mu v_t - \eta\,(K_f x_t + K_s x_{s(t)}),\qquad x_{t+1} = x_t + v_{t+1},

with :math:`s(t) = k\lfloor t/k\rfloor` (lag model ``refresh``, refresh interval
:math:`k`, the lag cycles :math:`0,\dots,k-1`) or :math:`s(t) = t-d` (lag model
``delay``).  Time is in optimizer steps.

Results (each a registered, verified derivation ``discrete.<name>``):

* ``refresh_monodromy`` — the one-window map of :math:`(x, v)` for the stale
  surrogate (:math:`K_f=0`, :math:`a=\eta K`),
  :math:`M=\begin{pmatrix}1-aS_2 & S_1\\ -a(1-\mu^k)/(1-\mu) & \mu^k\end{pmatrix}`,
  :math:`S_1=\mu(1-\mu^k)/(1-\mu)`, :math:`S_2=(k-S_1)/(1-\mu)`; derived by summing
  the geometric series with sympy and proven by induction on :math:`k`.
  ``refresh_trace`` :math:`=1+\mu^k-aS_2`, ``refresh_determinant``
  :math:`=\mu^k+a(S_1-k\mu^k)/(1-\mu)`.
* Jury (Schur–Cohn) conditions of :math:`\lambda^2-\operatorname{tr}M\,\lambda+\det M`:
  :math:`1-\operatorname{tr}+\det = ak(1-\mu^k)/(1-\mu) > 0` always; the ``flip``
  boundary (eigenvalue :math:`-1`) and the ``complex`` boundary (a pair on the
  unit circle, :math:`\det M = 1`) are affine in :math:`a` and give the exact
  learning-rate thresholds; the smaller one binds.
* ``refresh_critical_damping`` — the exact real-to-complex transition,
  :math:`(1-\mu)(1-\mu^k)/(\sqrt{k}+\sqrt{S_1})^2` (the heavy-ball
  :math:`(1-\sqrt{\mu})^2` at :math:`k=1`).
* The published first-order threshold :math:`\eta K k < 1-\mu` is off by a
  factor 2 at :math:`\mu=0` (exact: :math:`\eta K k < 2`), and by a factor 2 for
  every :math:`\mu` as :math:`k\to\infty` where the flip boundary binds; the
  first-order model with the *mean* lag :math:`(k-1)/2` is asymptotically exact.
* ``delay_characteristic_polynomial`` and its Schur–Cohn boundaries for
  :math:`d\in\{0,1,2\}`.
* ``refresh_slow_eigenvalue`` — the continuous limit: the slow eigenvalue is
  :math:`1 - ak/(1-\mu) + O(a^2)` per window, the L3 root :math:`-\kappa_s/\gamma` per step.

The chapter is a package, one module per concept:

* :mod:`.refresh` — the refresh-window monodromy (stale surrogate), its Jury thresholds and
  critical damping, the per-step map with a fresh/stale split, and their numerics;
* :mod:`.delay` — constant staleness d: characteristic polynomial and thresholds;
* :mod:`.bridge` — the continuous limit: published and mean-lag thresholds, the slow
  eigenvalue and the effective lag (k - 1)/2 of the L3 model;
* :mod:`.thresholds` — the exact learning-rate and refresh-interval thresholds and
  :func:`linear_stability`, the L2 answer at a given stiffness;
* :mod:`.tables` — the phase diagram and the tables of the continuous thresholds' errors.

The derivation cache hashes every file of the package (``cache._chapter_hash``).
"""

from grpo_theory.theory.discrete.refresh import (critical_momentum, monodromy, refresh_thresholds,
                                                 spectral_radius, step_matrix,
                                                 window_discriminant)
from grpo_theory.theory.discrete.delay import delay_spectral_radius
from grpo_theory.theory.discrete.bridge import continuous_lag, published_k_max
from grpo_theory.theory.discrete.thresholds import (StabilityResult, linear_stability,
                                                    max_stable_learning_rate,
                                                    max_stable_refresh_interval)
from grpo_theory.theory.discrete.tables import (REGIME_CODES, PhaseDiagram, phase_diagram,
                                                refresh_interval_error_table, threshold_error_table)

__all__ = ["StabilityResult", "PhaseDiagram", "REGIME_CODES", "monodromy", "spectral_radius",
           "linear_stability", "phase_diagram", "refresh_thresholds", "max_stable_refresh_interval",
           "max_stable_learning_rate", "delay_spectral_radius", "threshold_error_table",
           "refresh_interval_error_table", "step_matrix", "continuous_lag", "published_k_max",
           "critical_momentum", "window_discriminant"]
