r"""Exact L2 stability of one configuration: the learning-rate and refresh-interval thresholds
and :func:`linear_stability` (the L2 answer next to its L3 approximation)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from grpo_theory.theory.lazy_scipy import brentq

from grpo_theory.results import Result
from grpo_theory.theory import oscillator
from grpo_theory.theory.discrete._shared import _stiffness
from grpo_theory.theory.discrete.bridge import _continuous_max_learning_rate, continuous_lag, published_k_max
from grpo_theory.theory.discrete.delay import _delay_eigs
from grpo_theory.theory.discrete.refresh import (_general_monodromy, _per_step_maps, _radius_2x2, _stale_eigs,
                                                refresh_thresholds, _window_map)
from grpo_theory.validate import ParameterError

# --- thresholds ------------------------------------------------------------------------

def _first_crossing(radii, a_hi=16.0):
    """Smallest a > 0 with radius(a) = 1 (radius < 1 just above 0), or inf: the first point of
    a geometric grid where the radius reaches 1 (``radii``: the radius on an array of a, the
    grid in one call), then Brent's method in the grid cell before it."""
    grid = np.geomspace(1e-9, a_hi, 481)
    above = np.flatnonzero(np.asarray(radii(grid[1:])) >= 1)
    if not above.size:
        return math.inf
    i = int(above[0]) + 1
    return brentq(lambda x: float(radii(x)) - 1, grid[i - 1], grid[i], xtol=1e-15, rtol=1e-13)


def _classify_boundary(eigs, tol=1e-6):
    on = eigs[np.abs(np.abs(eigs) - np.max(np.abs(eigs))) < tol]
    if np.all(np.abs(on.imag) < tol):
        return "flip" if np.all(on.real < 0) else "fold"
    return "complex"


def _stale_refresh_a_star(mu, k):
    flip, cx, _ = refresh_thresholds(mu, k)
    return float(np.minimum(flip, cx)), ("flip" if flip <= cx else "complex")


def _threshold_a(mu, k, phi, lag_model, delay):
    """(a*, binding) for the configuration; a = eta K."""
    if lag_model == "refresh" and phi == 0.0:
        return _stale_refresh_a_star(mu, k)
    if lag_model == "refresh":
        def radii(av):
            return _radius_2x2(_general_monodromy(av, mu, k, phi))

        def eigs(av):
            return np.linalg.eigvals(_general_monodromy(av, mu, k, phi))
    else:
        def radii(av):
            return np.max(np.abs(_delay_eigs(av, mu, delay, phi)), axis=-1)

        def eigs(av):
            return _delay_eigs(av, mu, delay, phi)
    a_star = _first_crossing(radii)
    if not math.isfinite(a_star):
        return a_star, "none"
    return a_star, _classify_boundary(eigs(a_star))


def max_stable_learning_rate(momentum, refresh_interval, stiffness, *, lag_model="refresh",
                             delay=None, fresh_fraction=0.0) -> float:
    """Exact largest stable learning rate eta* = a*/K (per step)."""
    Kv, phi = _stiffness(stiffness, fresh_fraction)
    return _threshold_a(float(momentum), int(refresh_interval), phi, lag_model, delay)[0] / Kv


def _a_star_k(mu, k):
    flip, cx, _ = refresh_thresholds(mu, k)
    return float(np.minimum(flip, cx))


def _max_k_stale(a, mu):
    """Largest integer k with a < a*(k) (a*(k) is decreasing in k, ~ 2(1-mu)/k for large k:
    finite for every a > 0; no scan cap)."""
    if a >= _a_star_k(mu, 1):
        return 0
    hi = 2.0
    while _a_star_k(mu, hi) > a:
        hi *= 2
    root = brentq(lambda kv: _a_star_k(mu, kv) - a, hi / 2 if hi > 2 else 1.0, hi, xtol=1e-10)
    kk = max(1, int(math.floor(root)))
    while _a_star_k(mu, kk + 1) > a:
        kk += 1
    while kk >= 1 and not _a_star_k(mu, kk) > a:
        kk -= 1
    return kk


def _stable_for_long_windows(a, mu, phi):
    """Whether the monodromy stays stable as k -> oo (fresh stiffness only).

    Inside a long window the fresh heavy-ball map (stable iff 0 < eta K_f < 2(1+mu))
    relaxes x to the balance K_f x + K_s x_s = 0, so M(k) -> diag(-K_s/K_f, 0):
    stable for long windows iff additionally |1 - 1/phi| < 1, i.e. phi > 1/2.
    """
    a_fresh = phi * a
    return 0 < a_fresh < 2 * (1 + mu) and phi > 0.5


_K_SCAN_DOUBLINGS = 62


def _scan_k(A, mul, stable, a, mu, phi):
    """Largest k with ``stable(A^k)``, the stable k forming {1..k_max}: doubling then bisection on
    the bits of k (the powers A^(2^j) from successive squaring, composed by ``mul``); ``math.inf``
    when stable at k = 2^62 and, by the long-window limit (:func:`_stable_for_long_windows`), for
    every larger k."""
    powers = [A]
    if not stable(A):
        return 0
    for _ in range(_K_SCAN_DOUBLINGS):          # is k = 2^j stable?
        square = mul(powers[-1], powers[-1])
        if not stable(square):
            break
        powers.append(square)
    else:
        if _stable_for_long_windows(a, mu, phi):
            return math.inf
        raise ParameterError("learning_rate", a, "an eta K whose refresh threshold lies below "
                             "k = 2^62 or in the long-window limit")
    # stable at k = 2^J (powers[J]), unstable at 2^(J+1): add the lower bits while stable
    k, power = 2 ** (len(powers) - 1), powers[-1]
    for j in range(len(powers) - 2, -1, -1):
        candidate = mul(power, powers[j])
        if stable(candidate):
            k, power = k + 2 ** j, candidate
    return k


def _max_k_general(a, mu, phi):
    """Largest stable k (numeric monodromy, :func:`_scan_k` in double precision; in mpmath below
    :data:`FLOAT_RESOLVED_ETA_K`)."""
    if a < FLOAT_RESOLVED_ETA_K:
        return _max_k_general_mp(a, mu, phi)
    A = _per_step_maps(np.asarray(a, float), mu, np.asarray(phi, float))[0]
    return _scan_k(A, np.matmul, lambda power: float(_radius_2x2(_window_map(power))) < 1,
                   a, mu, phi)


#: below this eta K the window radius 1 - O(eta K k) is not resolved in double precision over
#: the doubling scan (its rounding error grows like 1e-16 per product); the scan then runs in mpmath
FLOAT_RESOLVED_ETA_K = 1e-6


def _max_k_general_mp(a, mu, phi):
    """:func:`_scan_k` in mpmath, at a precision that resolves 1 - radius = O(eta K k): 30 digits
    beyond those that eta K itself consumes."""
    import mpmath

    with mpmath.workdps(30 + max(0, math.ceil(-math.log10(a)))):
        A = mpmath.matrix(3, 3)
        af, as_ = mpmath.mpf(phi) * mpmath.mpf(a), (1 - mpmath.mpf(phi)) * mpmath.mpf(a)
        A[0, 0], A[0, 1], A[0, 2] = 1 - af, mu, -as_
        A[1, 0], A[1, 1], A[1, 2] = -af, mu, -as_
        A[2, 2] = 1

        def stable(power):            # the window map P A^k E: x_s = x at the refresh
            m00, m01 = power[0, 0] + power[0, 2], power[0, 1]
            m10, m11 = power[1, 0] + power[1, 2], power[1, 1]
            tr, det = m00 + m11, m00 * m11 - m01 * m10
            root = mpmath.sqrt(mpmath.mpc(tr * tr - 4 * det))
            return max(abs((tr + root) / 2), abs((tr - root) / 2)) < 1

        return _scan_k(A, lambda x, y: x * y, stable, a, mu, phi)


def max_stable_refresh_interval(learning_rate, momentum, stiffness, *, fresh_fraction=0.0):
    """Exact largest stable integer refresh interval k (0 if even k = 1 is unstable).

    ``fresh_fraction`` = K_f/K is the split of the stiffness at the fixed point
    (:attr:`grpo_theory.theory.fixed_points.FixedPoint.fresh_fraction`); 0 means all
    stiffness acts through the sampling policy.  Returns ``math.inf`` when every
    refresh interval is stable (possible only with fresh stiffness, phi > 1/2),
    never a scan cap.

    Stale: brentq on the continuous-k extension of min(flip, complex) threshold,
    which decreases in k, then an integer check.  With fresh stiffness: doubling and
    bisection on the numeric monodromy.
    """
    Kv, phi = _stiffness(stiffness, fresh_fraction)
    mu, a = float(momentum), float(learning_rate) * Kv
    if phi == 0.0:
        return _max_k_stale(a, mu)
    return _max_k_general(a, mu, phi)


# --- the result object -------------------------------------------------------------

@dataclass(frozen=True)
class StabilityResult(Result):
    """Exact (L2) stability of one configuration, next to the continuous (L3) approximation.

    ``spectral_radius`` is per refresh window (lag model ``refresh``) or per step
    (``delay``).  ``stable`` is decided by the exact thresholds (Jury conditions),
    not by comparing a rounded radius with 1.  ``binding_condition`` is the Jury
    boundary reached first as the learning rate grows: ``"flip"`` (a real eigenvalue
    at -1) or ``"complex"`` (a complex pair on the unit circle).  ``regime`` and
    ``discrete_regime`` are the exact map's label; ``regime_continuous`` is L3's.
    ``max_stable_refresh_interval`` is ``math.inf`` (``None`` in JSON) with
    ``stable_for_every_refresh_interval`` true when no refresh interval is unstable.
    The L3 columns use the effective lag ``lag_continuous`` = (k-1)/2 (refresh) or d
    (delay) and the same split; ``rel_error_continuous`` is the relative error of the
    L3 threshold in learning rate against the exact one.  Learning rates per step,
    intervals in steps.
    """

    learning_rate: float
    momentum: float
    refresh_interval: int
    stiffness: float
    lag_model: str
    delay: int | None
    fresh_fraction: float
    spectral_radius: float
    stable: bool
    eigenvalues: tuple
    binding_condition: str
    max_stable_learning_rate: float
    max_stable_refresh_interval: int | float | None
    stable_for_every_refresh_interval: bool | None
    critical_learning_rate_discrete: float | None
    discrete_regime: str
    regime: str
    alternating: bool
    max_stable_refresh_interval_continuous: int
    published_rule_safe: bool | None
    lag_continuous: float
    mass: float
    damping: float
    spring: float
    damping_ratio: float
    regime_continuous: str
    max_stable_learning_rate_continuous: float
    rel_error_continuous: float
    notes: tuple = field(default=())

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["eigenvalues"] = [[float(np.real(z)), float(np.imag(z))] for z in self.eigenvalues]
        if self.stable_for_every_refresh_interval:
            out["max_stable_refresh_interval"] = None    # no largest one: see the boolean
        return out



def _discrete_regime(eigs, radius, stable):
    dom = eigs[np.argmax(np.abs(eigs))]
    complex_pair = np.any(np.abs(eigs.imag) > 1e-12 * max(1.0, radius))
    alternating = (not complex_pair) and dom.real < 0
    if not stable:
        return "unstable", bool(alternating)
    if complex_pair:
        return "oscillatory", False
    return ("alternating" if alternating else "overdamped"), bool(alternating)


def linear_stability(learning_rate, momentum, refresh_interval, stiffness, *, lag_model="refresh",
                     delay=None, fresh_fraction=0.0) -> StabilityResult:
    r"""Exact L2 stability of the linearized heavy-ball GRPO update, with the L3 comparison:
    the low-level analysis at a given stiffness and split (the one route for a model is
    :func:`grpo_theory.theory.stability.stability`, which calls this one).

    The optimizer and lag arguments are those of a :class:`~grpo_theory.model.GRPOModel`
    (validated there); ``stiffness`` and ``fresh_fraction`` :math:`=K_f/K` (the split of the
    stiffness at the fixed point, :class:`~grpo_theory.theory.fixed_points.FixedPoint`; 0
    means all stiffness acts through the sampling policy) are validated here.

    ``lag_model="refresh"``: the refresh-window monodromy (closed form when
    ``fresh_fraction = 0``; numeric product otherwise).  ``lag_model="delay"``:
    constant staleness ``delay`` = d steps, companion matrix of :math:`P_d(\lambda)`.
    The continuous columns come from :func:`grpo_theory.theory.oscillator.coefficients`
    with the lag of :func:`continuous_lag` and the same split;
    ``max_stable_refresh_interval_continuous`` is the published
    :math:`\lceil(1-\mu)/(\eta K)\rceil - 1` (all stiffness stale, lag = k).

    Where double precision cannot answer, a ``ParameterError`` naming ``learning_rate`` says
    so: ηK below the smallest normal double (its thresholds ~ 1/(ηK) overflow), or a window
    map that overflows (ηK far beyond every threshold, e.g. ``learning_rate=1e308``, which
    raised LinAlgError).
    """
    Kv, phi = _stiffness(stiffness, fresh_fraction)
    eta = float(learning_rate)
    a = eta * Kv
    where = f"K = {Kv:.6g}, eta*K = {a:.3g}" + (f", fresh fraction {phi:.3g}" if phi else "")
    if not a >= ETA_K_MIN:
        raise ParameterError("learning_rate", learning_rate, "large enough that eta*K >= "
                             f"{ETA_K_MIN:.3g}, the smallest normal double (below, the "
                             f"thresholds ~ 1/(eta*K) overflow); here {where}")
    overflow = ParameterError("learning_rate", learning_rate, "small enough that the exact map "
                              f"stays finite in double precision over the window; here {where}, "
                              "far beyond every stability threshold (the map is unstable)")
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            res = _linear_stability(eta, momentum, refresh_interval, Kv, lag_model=lag_model,
                                    delay=delay, fresh_fraction=phi)
    except (np.linalg.LinAlgError, OverflowError):
        raise overflow from None
    except ValueError as exc:           # a root bracket lost to overflow (scipy's brentq)
        if "different signs" not in str(exc):
            raise
        raise overflow from None
    if not (math.isfinite(res.spectral_radius) and all(map(np.isfinite, res.eigenvalues))):
        raise overflow
    return res


#: the smallest eta*K whose thresholds (~ 1/(eta K) steps) stay finite: the smallest normal double
ETA_K_MIN = float(np.finfo(float).tiny)


def _linear_stability(learning_rate, momentum, refresh_interval, stiffness, *, lag_model="refresh",
                      delay=None, fresh_fraction=0.0) -> StabilityResult:
    """:func:`linear_stability` without the double-precision guard."""
    Kv, phi = _stiffness(stiffness, fresh_fraction)
    eta, mu = float(learning_rate), float(momentum)
    k = int(refresh_interval) if lag_model == "refresh" else 1
    a = eta * Kv
    notes = []
    if lag_model == "refresh":
        if phi == 0.0:
            l1, l2 = _stale_eigs(a, mu, k)
            eigs = np.array([complex(l1), complex(l2)])
            _, _, crit = refresh_thresholds(mu, k)
            crit_lr = float(crit) / Kv if np.isfinite(crit) else None
            if mu == 0:
                crit_lr = None
                notes.append("μ = 0: the monodromy eigenvalues (1 − ηKk, 0) are always real")
        else:
            eigs = np.linalg.eigvals(_general_monodromy(a, mu, k, phi))
            crit_lr = None
        k_max = max_stable_refresh_interval(eta, mu, Kv, fresh_fraction=phi)
    else:
        eigs = _delay_eigs(a, mu, delay, phi)
        crit_lr = None
        k_max = None
    radius = float(np.max(np.abs(eigs)))
    a_star, binding = _threshold_a(mu, k, phi, lag_model, delay)
    stable = bool(a < a_star)
    if stable and radius >= 1:
        notes.append(f"the computed spectral radius {radius!r} rounds to >= 1; the exact Jury "
                     f"conditions (ηK = {a:.3g} < {a_star:.6g}) say stable")
    d_regime, alternating = _discrete_regime(eigs, radius, stable)
    every_k = None
    if lag_model == "refresh":
        every_k = bool(k_max == math.inf)
        if every_k:
            notes.append("stable for every refresh interval (the long-window monodromy tends to "
                         "diag(1 − 1/φ, 0) with φ = K_f/K > 1/2)")
    lag = continuous_lag(lag_model, k, delay)
    osc = oscillator.coefficients(eta, mu, lag, Kv, fresh_fraction=phi)
    eta_l3 = _continuous_max_learning_rate(mu, lag, Kv, phi)
    k_pub = published_k_max(mu, eta, Kv)
    safe = None
    if lag_model == "refresh":
        safe = bool(every_k or k_pub <= k_max)
        if not safe:
            notes.append(f"the published rule ηKk < 1 − μ allows k ≤ {k_pub} but the exact "
                         f"map is stable only up to k = {k_max}: unsafe here (fresh fraction "
                         f"{phi:.4g})")
    return StabilityResult(
        learning_rate=eta, momentum=mu, refresh_interval=k, stiffness=Kv, lag_model=lag_model,
        delay=delay, fresh_fraction=phi, spectral_radius=radius, stable=stable,
        eigenvalues=tuple(complex(z) for z in eigs), binding_condition=binding,
        max_stable_learning_rate=a_star / Kv, max_stable_refresh_interval=k_max,
        stable_for_every_refresh_interval=every_k,
        critical_learning_rate_discrete=crit_lr, discrete_regime=d_regime, regime=d_regime,
        alternating=alternating, max_stable_refresh_interval_continuous=k_pub,
        published_rule_safe=safe, lag_continuous=lag,
        mass=osc.mass, damping=osc.damping, spring=osc.spring,
        damping_ratio=float(osc.damping_ratio) if osc.damping > 0 else float("nan"),
        regime_continuous=osc.regime, max_stable_learning_rate_continuous=eta_l3,
        rel_error_continuous=(eta_l3 - a_star / Kv) / (a_star / Kv) if math.isfinite(a_star)
        else float("nan"),
        notes=tuple(notes))
