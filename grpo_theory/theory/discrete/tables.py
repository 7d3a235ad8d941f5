r"""The exact stale-surrogate phase diagram and the tables of the continuous thresholds' errors."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from grpo_theory.theory.derived import get
from grpo_theory.theory.discrete._shared import _num
from grpo_theory.theory.discrete.bridge import published_k_max
from grpo_theory.theory.discrete.refresh import _stale_eigs, refresh_thresholds
from grpo_theory.theory.discrete.thresholds import _max_k_stale
from grpo_theory.validate import ParameterError, check_finite_array, check_int, check_real

# --- phase diagram --------------------------------------------------------------------

#: regime codes of :func:`phase_diagram`
REGIME_CODES = {"overdamped": 0, "alternating": 1, "oscillatory": 2, "unstable": 3}


@dataclass(frozen=True)
class PhaseDiagram:
    """Spectral radius and regime code (:data:`REGIME_CODES`) on a grid; rows = eta K."""

    eta_K: np.ndarray
    axis: np.ndarray
    axis_name: str
    spectral_radius: np.ndarray
    regime_code: np.ndarray


def phase_diagram(eta_K_grid, k_grid=None, *, mu_grid=None, momentum=None,
                  refresh_interval=None) -> PhaseDiagram:
    """Exact stale-surrogate phase diagram, vectorised (256 x 256 in well under a second).

    Either ``k_grid`` (refresh intervals) with a scalar ``momentum``, or ``mu_grid``
    with a scalar ``refresh_interval``.  Returns spectral radius per window and a
    regime code per point.
    """
    a = check_finite_array("eta_K_grid", eta_K_grid)
    if np.any(a <= 0):
        raise ParameterError("eta_K_grid", float(a[a <= 0][0]), "positive real numbers")
    if (k_grid is None) == (mu_grid is None):
        raise ParameterError("k_grid", k_grid, "given exactly when mu_grid is not")
    if k_grid is not None:
        mu = check_real("momentum", momentum, low=0, high=1, high_open=True)
        ks = check_finite_array("k_grid", k_grid)
        if np.any(ks < 1) or np.any(ks != np.round(ks)):
            raise ParameterError("k_grid", k_grid, "integers >= 1")
        A, Kg = np.meshgrid(a, ks, indexing="ij")
        l1, l2 = _stale_eigs(A, mu, Kg)
        axis, name = ks, "refresh_interval"
    else:
        k = check_int("refresh_interval", refresh_interval, low=1)
        mus = check_finite_array("mu_grid", mu_grid)
        if np.any(mus < 0) or np.any(mus >= 1):
            raise ParameterError("mu_grid", mu_grid, "real numbers in [0, 1)")
        A, Mg = np.meshgrid(a, mus, indexing="ij")
        l1, l2 = _stale_eigs(A, Mg, k)
        axis, name = mus, "momentum"
    r1, r2 = np.abs(l1), np.abs(l2)
    radius = np.maximum(r1, r2)
    dom = np.where(r1 >= r2, l1, l2)
    cpx = np.abs(l1.imag) > 1e-12 * np.maximum(1, radius)
    code = np.where(radius >= 1, 3, np.where(cpx, 2, np.where(dom.real < 0, 1, 0)))
    return PhaseDiagram(a, axis, name, radius, code)


# --- error of the continuous thresholds -------------------------------------------------

def threshold_error_table(momenta=(0.0, 0.5, 0.9, 0.99), refresh_intervals=range(1, 65)):
    """Rows comparing the exact threshold in eta K with the two continuous ones.

    For each momentum and refresh interval k: exact ``min(flip, complex)``, the
    published ``(1-mu)/k`` and the mean-lag ``2(1-mu)/(k-1)`` thresholds, their
    relative errors ``(continuous - exact)/exact`` and the binding condition.
    """
    pub = _num("discrete.published_threshold_learning_rate")
    mean = _num("discrete.mean_lag_threshold_learning_rate")
    rows = []
    for mu in momenta:
        for k in refresh_intervals:
            flip, cx, _ = refresh_thresholds(mu, k)
            exact = float(min(flip, cx))
            p = float(pub(mu, k))
            with np.errstate(divide="ignore"):
                m = float(mean(mu, float(k))) if k > 1 else math.inf
            rows.append({"momentum": mu, "refresh_interval": k, "eta_K_exact": exact,
                         "binding": "flip" if flip <= cx else "complex",
                         "eta_K_published": p, "eta_K_mean_lag": m,
                         "rel_error_published": (p - exact) / exact,
                         "rel_error_mean_lag": (m - exact) / exact})
    return rows


def refresh_interval_error_table(momenta=(0.0, 0.5, 0.9, 0.99), eta_K=(1e-3, 1e-2, 0.1, 0.5)):
    """Rows comparing the exact max stable refresh interval with the continuous ones.

    Published: floor((1-mu)/(eta K)) (strict inequality: one less on equality);
    mean lag: the largest integer k with (k-1)/2 < (1-mu)/(eta K).
    """
    rows = []
    for mu in momenta:
        for a in eta_K:
            exact = _max_k_stale(a, mu)
            pub = published_k_max(mu, 1.0, a)
            mean = int(get("discrete.mean_lag_max_refresh_interval").numeric(mu, 1.0, a))
            rows.append({"momentum": mu, "eta_K": a, "k_max_exact": exact,
                         "k_max_published": pub, "k_max_mean_lag": mean,
                         "rel_error_published": (pub - exact) / exact if exact else math.nan,
                         "rel_error_mean_lag": (mean - exact) / exact if exact else math.nan})
    return rows
