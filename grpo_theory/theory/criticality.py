r"""Criticality of the refresh-window boundaries: what the nonlinear L1 map does past them.

The flip and Neimark--Sacker thresholds of :mod:`~grpo_theory.theory.discrete` are the
stability boundaries of the *linear* L2 map.  Whether the fixed point of the *nonlinear*
mean-field map loses stability softly (a small stable cycle or invariant circle grows like
the square root of the distance past the boundary: **supercritical**) or hard (an unstable
one shrinks onto the fixed point from the stable side and the iterate jumps away:
**subcritical**) is decided by a cubic normal-form coefficient of the L1 map on the boundary.

**The L1 window map.**  One refresh window of :math:`k` heavy-ball steps with the exact
mean-field drift :math:`F(z, z_{\mathrm{old}})` of the model's variant (finite :math:`G` as the
exact binomial sum), the sampling logit held at the window's first iterate:

.. math::

    v_{t+1} = \mu v_t + \eta F(z_t, z_0), \qquad z_{t+1} = z_t + v_{t+1},
    \qquad T:(z_0 - z^*, v_0) \mapsto (z_k - z^*, v_k).

Its linear part at the fixed point :math:`(z^*, 0)` is the L2 monodromy with
:math:`K_f = -\partial_z F` and :math:`K_s = -\partial_{z_{\mathrm{old}}} F`.  Its quadratic and
cubic parts :math:`B`, :math:`C` depend only on the partial derivatives of :math:`F` at
:math:`(z^*, z^*)` up to third order (the unperturbed orbit sits at the fixed point): they are
computed here by high-precision numerical differentiation of the drift lambdified from its
sympy record (``mpmath``, 40 digits) and propagated exactly through the :math:`k` steps as
truncated bivariate Taylor polynomials (jets).

**Neimark--Sacker** (eigenvalues :math:`e^{\pm i\theta}`, :math:`0<\theta<\pi`).  With
:math:`A q = e^{i\theta} q`, :math:`A^{\top} p = e^{-i\theta} p`, :math:`\bar p^{\top} q = 1`,
:math:`|q| = 1`, the first Lyapunov coefficient is (Kuznetsov, *Elements of Applied
Bifurcation Theory*, the invariant form of the Neimark--Sacker normal form)

.. math::

    l_1 = \tfrac12 \operatorname{Re}\Big\{ e^{-i\theta}\, \bar p^{\top}\big[ C(q, q, \bar q)
        + 2 B\big(q, (I - A)^{-1} B(q, \bar q)\big)
        + B\big(\bar q, (e^{2i\theta} I - A)^{-1} B(q, q)\big) \big] \Big\}.

:math:`l_1 < 0`: supercritical, an attracting invariant circle of radius
:math:`r = \sqrt{(\rho - 1)/(-l_1)}` in the normal-form coordinate past the boundary
(:math:`\rho` the modulus of the critical multipliers), so the window-start logit oscillates
quasi-periodically with half peak-to-peak amplitude :math:`2 r |q_z|`.  :math:`l_1 > 0`:
subcritical.  The formula does not apply at the strong resonances
:math:`\theta = \pi/2, 2\pi/3` (1:4, 1:3) and :math:`\theta = \pi` (1:2, a double eigenvalue
:math:`-1`, where the Neimark--Sacker and flip boundaries meet: the codimension-two points of
the atlas).

**Flip** (eigenvalue :math:`-1`).  With :math:`A q = -q`, :math:`A^{\top} p = -p`,
:math:`p^{\top} q = 1`, the normal form :math:`w \mapsto -(1 + \alpha) w + c\, w^3` has

.. math:: c = \tfrac16\, p^{\top} C(q, q, q) + \tfrac12\, p^{\top} B\big(q, (I - A)^{-1} B(q, q)\big);

:math:`c > 0`: supercritical (a stable period-two orbit of half amplitude
:math:`|q_z|\sqrt{\alpha / c}` in the window-start logit).

Both coefficients are checked against the map itself, without its quadratic and cubic
forms: :func:`measure_coefficient` iterates the deterministic L1 window map *at* the boundary
from a small amplitude and reads the coefficient off the drift of the normal-form amplitude
(the error shrinks in proportion to the amplitude squared, as the normal form says);
:func:`check_amplitude` iterates it just *past* a supercritical boundary and compares the size
of the new attractor with the prediction and its square-root law.

What it shows (:func:`criticality`, a computation on grids, not a proof): for the stale split
(:math:`K_f = 0`, the L2 map of the atlas, realized exactly by the KL-in-the-reward variant)
both boundaries were supercritical at every point computed (:math:`\beta` from 0.2 to 5,
:math:`G = 4, 16, \infty`, :math:`\mu` from 0.3 to 0.97, :math:`k` from 2 to 34): past the
threshold the reward does not run away but oscillates, with an amplitude growing like
:math:`\sqrt{\eta - \eta_c}`.  A fresh KL force changes the boundaries and can change their
criticality: with std normalization and the exact KL at :math:`\beta = 1` the
Neimark--Sacker boundary is subcritical (a hard loss of stability) for :math:`G = 16` at
:math:`\mu \ge 0.6` and :math:`k` between 5 and 21 (:math:`\eta K \approx 0.05`; there
:math:`l_1` is small, 0.001 to 0.03, and the subcritical window sits next to supercritical
points: the boundary passes near a degenerate, Bautin-type point) and for :math:`G = 4`,
:math:`\mu = 0.5` at :math:`k = 6, 8`; the flip at :math:`G = 4`, :math:`\mu = 0.3`,
:math:`k = 21` is subcritical too.  Where a
multiplier crosses :math:`+1` instead (fresh stiffness above the total, an even :math:`k`) the
window map's boundary is neither a flip nor a Neimark--Sacker point and no coefficient is
given.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import mpmath
import numpy as np
import sympy as sp

from grpo_theory.results import Result, jsonable
from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import get
from grpo_theory.theory.discrete.refresh import refresh_thresholds
from grpo_theory.theory.discrete.thresholds import max_stable_learning_rate
from grpo_theory.theory.drift import drift_name, geometric_factor
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.validate import ParameterError, check_int, check_real

__all__ = ["WindowMap", "BoundaryPoint", "window_map", "boundary_point",
           "check_amplitude", "measure_coefficient", "one_to_two_resonance", "Criticality", "criticality"]

#: working precision (decimal digits) of the drift's partial derivatives
_DPS = 40
#: jets: bivariate polynomials in (x_0, v_0) truncated at total degree 3, as 4x4 arrays
_ORDER = 3


# ----------------------------------------------------------------------------------
# the drift, lambdified from its record, and its partial derivatives at the fixed point
# ----------------------------------------------------------------------------------

@functools.cache
def _drift_functions(normalization, kl, surrogate, group_size):
    """F from the drift record ``drift.F_...`` (finite G: the binomial sum written out),
    lambdified for mpmath as F(z, z_old, p_ref, kappa, beta, eps) and for floats as
    F(p, q, p_old, q_old, p_ref, kappa, beta, eps)."""
    expr = get(drift_name(normalization, kl, surrogate, group_size is not None)).expr
    if group_size is not None:
        expr = expr.subs(S.G, group_size).doit()
    z, zo, pr = sp.symbols("z z_o p_r", real=True)
    consts = (pr, S.kappa, S.beta, S.eps)
    expr = expr.subs({S.p_ref: pr, S.q_ref: 1 - pr})
    in_z = expr.subs({S.p: 1 / (1 + sp.exp(-z)), S.q_fail: 1 / (1 + sp.exp(z)),
                      S.p_old: 1 / (1 + sp.exp(-zo)), S.q_old: 1 / (1 + sp.exp(zo))})
    # floats: in (p, q, p_old, q_old), so that q**(G - n) underflows instead of overflowing
    in_p = sp.lambdify((S.p, S.q_fail, S.p_old, S.q_old) + consts, expr, "math")
    return sp.lambdify((z, zo) + consts, in_z, "mpmath"), in_p


def _sigmoids(z):
    """(sigma(z), sigma(-z)) without overflow."""
    if z >= 0:
        e = math.exp(-z)
        return 1 / (1 + e), e / (1 + e)
    e = math.exp(z)
    return e / (1 + e), 1 / (1 + e)


def _jet_mul(a, b):
    """Product of two truncated bivariate polynomials (4x4 coefficient arrays)."""
    out = np.zeros_like(a)
    for i in range(_ORDER + 1):
        for j in range(_ORDER + 1 - i):
            if a[i, j] != 0:
                for k in range(_ORDER + 1 - i - j):
                    for m in range(_ORDER + 1 - i - j - k):
                        out[i + k, j + m] += a[i, j] * b[k, m]
    return out


def _jet_var(which):
    e = np.zeros((_ORDER + 1, _ORDER + 1))
    e[(1, 0) if which == "x" else (0, 1)] = 1.0
    return e


@dataclass(frozen=True)
class WindowMap:
    r"""The nonlinear L1 refresh-window map of one model at its stable fixed point.

    ``partials[i][j]`` :math:`= \partial_z^i \partial_{z_{\mathrm{old}}}^j F(z^*, z^*)` for
    :math:`i + j \le 3` (per unit learning rate); ``stiffness_fresh`` :math:`K_f`,
    ``stiffness_stale`` :math:`K_s`; ``momentum`` :math:`\mu`; ``refresh_interval`` :math:`k`.
    """

    z_star: float
    partials: tuple
    momentum: float
    refresh_interval: int
    _force: object = field(repr=False, compare=False)

    @property
    def stiffness_fresh(self) -> float:
        return -self.partials[1][0]

    @property
    def stiffness_stale(self) -> float:
        return -self.partials[0][1]

    @property
    def stiffness(self) -> float:
        return self.stiffness_fresh + self.stiffness_stale

    @property
    def fresh_fraction(self) -> float:
        return self.stiffness_fresh / self.stiffness + 0.0     # no -0.0

    def __call__(self, x, v, learning_rate, windows=1):
        """Iterate the deterministic map ``windows`` times from deviation ``x`` (logits) and
        buffer ``v`` (logits per step); returns the window-start deviations and the final
        (x, v).  Floats; for the checks against the normal-form predictions."""
        mu, k, zs, F = self.momentum, self.refresh_interval, self.z_star, self._force
        xs = np.empty(windows)
        for n in range(windows):
            z0 = zs + x
            z = z0
            for _ in range(k):
                v = mu * v + learning_rate * F(z, z0)
                z = z + v
            x = z - zs
            xs[n] = x
        return xs, (x, v)

    def jets(self, learning_rate):
        """Taylor coefficients of one window, ``(X, V)``: 4x4 arrays with
        ``X[i, j]`` the coefficient of :math:`x_0^i v_0^j` in :math:`x_k` (degree <= 3)."""
        f = self.partials
        x0 = _jet_var("x")
        one = np.zeros_like(x0)
        one[0, 0] = 1.0
        pw0 = [one]                                   # powers of x_0 (= z_old - z*)
        for _ in range(_ORDER):
            pw0.append(_jet_mul(pw0[-1], x0))
        X, V = x0.copy(), _jet_var("v")
        for _ in range(self.refresh_interval):
            pw = [pw0[0]]
            for i in range(1, _ORDER + 1):
                pw.append(_jet_mul(pw[-1], X))
            force = np.zeros_like(X)
            for i in range(_ORDER + 1):
                for j in range(_ORDER + 1 - i):
                    if i + j:
                        force += f[i][j] / (math.factorial(i) * math.factorial(j)) \
                            * _jet_mul(pw[i], pw0[j])
            V = self.momentum * V + learning_rate * force
            X = X + V
        return X, V


def _partials(F, z_star, dps):
    with mpmath.workdps(dps):
        zs = mpmath.mpf(z_star)
        return tuple(tuple(float(mpmath.diff(F, (zs, zs), (i, j))) + 0.0 if i + j <= _ORDER else 0.0
                           for j in range(_ORDER + 1)) for i in range(_ORDER + 1))


def window_map(model, *, momentum=None, refresh_interval=None, dps=_DPS) -> WindowMap:
    """The L1 window map of ``model`` (a :class:`~grpo_theory.model.GRPOModel`) at the stable
    fixed point that training from p_ref reaches; ``momentum`` and ``refresh_interval``
    default to the model's.  The fixed point is refined to ``dps`` digits on F(z, z) = 0."""
    mu = check_real("momentum", model.momentum if momentum is None else momentum,
                    low=0, high=1, high_open=True)
    k = check_int("refresh_interval",
                  model.refresh_interval if refresh_interval is None else refresh_interval, low=1)
    if getattr(model, "lag_model", "refresh") != "refresh":
        raise ParameterError("lag_model", model.lag_model, "'refresh' (the window map)")
    z_star, parts, force = _at_fixed_point(model.normalization, model.kl, model.surrogate,
                                           model.group_size, model.p_ref, model.effective_kl_coef,
                                           model.adv_eps, model.actions, model.correct,
                                           stable_fixed_point(model).z, dps)
    return WindowMap(z_star, parts, mu, k, force)


@functools.lru_cache(maxsize=64)
def _at_fixed_point(normalization, kl, surrogate, group_size, p_ref, kl_coef, adv_eps, actions,
                    correct, z_guess, dps):
    """(z*, partial derivatives of F at (z*, z*), float force) of one variant; z* refined from
    ``z_guess`` on F(z, z) = 0 at ``dps`` digits."""
    Fm, Ff = _drift_functions(normalization, kl, surrogate, group_size)
    consts = (p_ref, geometric_factor(actions, correct), kl_coef, adv_eps)
    with mpmath.workdps(dps):
        c_mp = tuple(mpmath.mpf(c) for c in consts)
        Fz = lambda z, zo: Fm(z, zo, *c_mp)  # noqa: E731
        z_star = mpmath.findroot(lambda z: Fz(z, z), mpmath.mpf(z_guess))
        parts = _partials(Fz, z_star, dps)
    return float(z_star), parts, functools.partial(_call_float, Ff, consts)


def _call_float(Ff, consts, z, zo):
    return Ff(*_sigmoids(z), *_sigmoids(zo), *consts)


# ----------------------------------------------------------------------------------
# the boundary and its normal-form coefficient
# ----------------------------------------------------------------------------------

def _linear(X, V):
    return np.array([[X[1, 0], X[0, 1]], [V[1, 0], V[0, 1]]])


def _multilinear(X, V):
    """B and C of the window map as tensors T2[i, j, l], T3[i, j, l, m] (0 = x, 1 = v)."""
    T2 = np.zeros((2, 2, 2))
    T3 = np.zeros((2, 2, 2, 2))
    for i, c in enumerate((X, V)):
        for j in range(2):
            for jj in range(2):
                nx = (j == 0) + (jj == 0)
                T2[i, j, jj] = c[nx, 2 - nx] * math.factorial(nx) * math.factorial(2 - nx)
                for m in range(2):
                    mx = nx + (m == 0)
                    T3[i, j, jj, m] = c[mx, 3 - mx] * math.factorial(mx) * math.factorial(3 - mx)
    return T2, T3


def _B(T2, u, w):
    return np.einsum("ijl,j,l->i", T2, u, w)


def _C(T3, u, w, s):
    return np.einsum("ijlm,j,l,m->i", T3, u, w, s)


@dataclass(frozen=True)
class BoundaryPoint:
    r"""The first loss of stability of the fixed point in the learning rate, at one
    (momentum, refresh interval), with its normal-form coefficient.

    ``kind`` is ``"neimark-sacker"`` (a complex pair crosses the unit circle) or ``"flip"``
    (an eigenvalue crosses :math:`-1`); ``learning_rate`` :math:`\eta_c` and ``eta_K``
    :math:`\eta_c K`; ``theta`` the angle of the critical multipliers (:math:`\pi` for a flip);
    ``coefficient`` the first Lyapunov coefficient :math:`l_1` (Neimark--Sacker) or the flip
    coefficient :math:`c`; ``q`` the critical eigenvector (:math:`|q| = 1`, in
    :math:`(x, v)`) and ``p`` the adjoint one (:math:`\bar p^{\top} q = 1`); ``criticality``
    ``"supercritical"`` or ``"subcritical"``.
    """

    kind: str
    momentum: float
    refresh_interval: int
    learning_rate: float
    eta_K: float
    fresh_fraction: float
    theta: float
    coefficient: float
    q: tuple
    p: tuple
    criticality: str
    resonance: str | None = None

    def to_dict(self) -> dict:
        return jsonable({**{k: getattr(self, k) for k in (
            "kind", "momentum", "refresh_interval", "learning_rate", "eta_K", "fresh_fraction",
            "theta", "coefficient", "criticality", "resonance")}, "q": [complex(c) for c in self.q]})


def _radius(wm, eta):
    return float(np.max(np.abs(np.linalg.eigvals(_linear(*wm.jets(eta))))))


def _strong_resonance(theta, tol=0.02):
    for name, th in (("1:4", math.pi / 2), ("1:3", 2 * math.pi / 3), ("1:2", math.pi)):
        if abs(theta - th) < tol:
            return name
    return None


def boundary_point(wm: WindowMap) -> BoundaryPoint:
    """The first learning rate where the window map's fixed point loses stability (the exact
    L2 threshold for the map's stiffness split, :func:`~grpo_theory.theory.discrete.
    max_stable_learning_rate`) and the normal-form coefficient of the L1 map there."""
    K = wm.stiffness
    if not K > 0:
        raise ParameterError("stiffness", K, "a positive stiffness (a stable fixed point)")
    eta_c = max_stable_learning_rate(wm.momentum, wm.refresh_interval, K,
                                     fresh_fraction=wm.fresh_fraction)
    if not math.isfinite(eta_c):
        raise ParameterError("refresh_interval", wm.refresh_interval,
                             "a configuration whose fixed point loses stability at some "
                             "learning rate (here it never does)")
    X, V = wm.jets(eta_c)
    A = _linear(X, V)
    T2, T3 = _multilinear(X, V)
    lam, Q = np.linalg.eig(A)
    crit = np.abs(np.abs(lam) - 1) < 1e-7
    if np.all(crit) and np.all(np.abs(lam.imag) < 1e-9):
        raise ParameterError("refresh_interval", wm.refresh_interval,
                             "a boundary with one critical multiplier (here both are real "
                             "and on the unit circle: a codimension-two point)")
    if abs(lam[0].imag) > 1e-9:
        i = int(np.argmax(lam.imag))
        L = lam[i]
        q = Q[:, i] / np.linalg.norm(Q[:, i])
        lt, P = np.linalg.eig(A.T)
        p = P[:, int(np.argmin(np.abs(lt - np.conj(L))))]
        p = p / np.conj(np.vdot(p, q))                     # conj(p) . q = 1
        qb = np.conj(q)
        I2 = np.eye(2)
        h11 = np.linalg.solve(I2 - A, _B(T2, q, qb))
        h20 = np.linalg.solve(L * L * I2 - A, _B(T2, q, q))
        g21 = np.vdot(p, _C(T3, q, q, qb) + 2 * _B(T2, q, h11) + _B(T2, qb, h20))
        l1 = 0.5 * float(np.real(np.conj(L) / abs(L) * g21))
        theta = float(abs(np.angle(L)))
        return BoundaryPoint("neimark-sacker", wm.momentum, wm.refresh_interval, eta_c, eta_c * K,
                             wm.fresh_fraction, theta, l1, tuple(q), tuple(p),
                             "supercritical" if l1 < 0 else "subcritical", _strong_resonance(theta))
    i = int(np.argmax(np.abs(lam)))
    if not lam[i].real < 0:
        a_f, a_flip = eta_c * wm.stiffness_fresh, 2 * (1 + wm.momentum)
        why = (f"at eta K_f = 2(1 + mu) = {a_flip:g}, the single step's own flip seen over an "
               "even number of steps" if abs(a_f - a_flip) < 1e-9 * a_flip else "")
        raise ParameterError("refresh_interval", wm.refresh_interval,
                             "a window map that loses stability at a complex pair or at -1 "
                             "(here a multiplier crosses +1" + (": " + why if why else "") + ")")
    q = np.real(Q[:, i]) / np.linalg.norm(np.real(Q[:, i]))
    lt, P = np.linalg.eig(A.T)
    p = np.real(P[:, int(np.argmin(lt.real))])
    p = p / (p @ q)
    h = np.linalg.solve(np.eye(2) - A, _B(T2, q, q))
    c = float(p @ _C(T3, q, q, q) / 6 + p @ _B(T2, q, h) / 2)
    return BoundaryPoint("flip", wm.momentum, wm.refresh_interval, eta_c, eta_c * K,
                         wm.fresh_fraction, math.pi, c, tuple(q), tuple(p),
                         "supercritical" if c > 0 else "subcritical")


# ----------------------------------------------------------------------------------
# independent checks: iterate the map past (or before) the boundary
# ----------------------------------------------------------------------------------

def _half_range(xs):
    return 0.5 * float(np.max(xs) - np.min(xs))


def check_amplitude(wm: WindowMap, point: BoundaryPoint, *, offsets=(0.02, 0.01, 0.005),
                    settle=30.0, measure=600) -> dict:
    r"""Past a supercritical boundary, the size of the new attractor against the normal form.

    At :math:`\eta = \eta_c(1 + \delta)` the critical multipliers have modulus
    :math:`\rho > 1`.  Neimark--Sacker: an invariant circle on which the window-start deviation
    oscillates with half peak-to-peak amplitude :math:`2|q_z|\sqrt{(\rho - 1)/(-l_1)}`; flip: a
    period-two orbit of half amplitude :math:`|q_z|\sqrt{(\rho - 1)/c}`.  The float map is
    started on the predicted attractor, run ``settle``/(rho - 1) windows, and the half
    peak-to-peak amplitude is measured over the next ``measure`` windows.  Passed: every
    amplitude within 10 % of the prediction and a log-log slope of amplitude on
    :math:`\delta` within 0.05 of 1/2.
    """
    if point.criticality != "supercritical":
        raise ParameterError("point", point.criticality, "a supercritical boundary point (a "
                             "subcritical one has no attractor past the boundary)")
    q = np.array(point.q)
    ns = point.kind == "neimark-sacker"
    rows = []
    for delta in offsets:
        eta = point.learning_rate * (1 + delta)
        rho = _radius(wm, eta)
        w = math.sqrt((rho - 1) / abs(point.coefficient))
        pred = (2 if ns else 1) * w * abs(q[0])
        x, v = np.real((2 if ns else 1) * w * q)
        _, (x, v) = wm(x, v, eta, 2 * int(settle / (rho - 1)))
        xs, _ = wm(x, v, eta, measure if ns else 4)
        meas = _half_range(xs)
        rows.append({"offset": delta, "rho_minus_1": rho - 1, "predicted": pred,
                     "measured": meas, "ratio": meas / pred})
    slope = float(np.polyfit(np.log([r["offset"] for r in rows]),
                             np.log([r["measured"] for r in rows]), 1)[0])
    return {"rows": rows, "slope": slope,
            "passed": all(abs(r["ratio"] - 1) < 0.10 for r in rows) and abs(slope - 0.5) < 0.05}


def measure_coefficient(wm: WindowMap, point: BoundaryPoint, *, amplitude=0.02, rate=1e-4,
                        change=0.5, windows_only=False):
    r"""Measure the normal-form coefficient by iterating the float L1 map *at* the boundary.

    At :math:`\eta_c` the normal form gives :math:`|w|^2 \mapsto |w|^2 (1 + 2 l_1 |w|^2)`
    (Neimark--Sacker) or :math:`w^2 \mapsto w^2 (1 - 2c\,w^2)` (flip), so :math:`1/|w|^2`
    moves by :math:`-2 l_1` (or :math:`+2c`) per window.  The map is started on the critical
    eigenvector with window-start half amplitude ``amplitude`` (logits; smaller where the
    cubic term would move :math:`|w|^2` by more than ``rate`` of itself per window), iterated until
    :math:`1/|w|^2` has moved by ``change`` of its start, with :math:`w = \bar p^{\top}(x, v)`
    the linear normal-form coordinate; the slope of a least-squares line through
    :math:`1/|w|^2` gives the measured coefficient.  This uses only the map and its linear
    part, not the quadratic and cubic forms of the prediction.  ``windows_only``: return
    the number of windows the measurement needs, without iterating.
    """
    q, p = np.array(point.q), np.array(point.p)
    w0 = amplitude / (2 * abs(q[0]) if point.kind == "neimark-sacker" else abs(q[0]))
    w0 = min(w0, math.sqrt(rate / abs(point.coefficient)))
    x, v = np.real(2 * w0 * q) if point.kind == "neimark-sacker" else np.real(w0 * q)
    windows = int(math.ceil(change / (2 * abs(point.coefficient) * w0 * w0)))
    if windows_only:
        return windows
    states = np.empty((windows, 2))
    for n in range(windows):
        _, (x, v) = wm(x, v, point.learning_rate)
        states[n] = x, v
    w = states @ np.conj(p)
    y = 1 / np.abs(w) ** 2
    slope = float(np.polyfit(np.arange(1, windows + 1), y, 1)[0])
    measured = -slope / 2 if point.kind == "neimark-sacker" else slope / 2
    return {"kind": point.kind, "predicted": point.coefficient, "measured": measured,
            "windows": windows, "amplitude": amplitude,
            "relative_error": abs(measured / point.coefficient - 1)}


def one_to_two_resonance(momentum, refresh_interval) -> dict:
    r"""The stale L2 map where its flip and Neimark--Sacker thresholds meet (``momentum`` and
    a real ``refresh_interval`` from :func:`~grpo_theory.theory.atlas.discrete_boundaries`):
    the monodromy (lambdified from ``discrete.refresh_monodromy``) at the flip threshold.  At
    the codimension-two point both eigenvalues are :math:`-1` and :math:`M \ne -I` (one
    eigenvector, a Jordan block): the 1:2 resonance.  Returns the thresholds, the eigenvalues
    and :math:`\|M + I\|`."""
    flip, cx, _ = refresh_thresholds(momentum, refresh_interval)
    M = np.asarray(get("discrete.refresh_monodromy").numeric(float(flip), float(momentum),
                                                              float(refresh_interval)), float)
    return {"eta_K_flip": float(flip), "eta_K_complex": float(cx),
            "eigenvalues": np.linalg.eigvals(M), "norm_M_plus_I": float(np.linalg.norm(M + np.eye(2)))}


# ----------------------------------------------------------------------------------
# the scan
# ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Criticality(Result):
    """Boundary kind and criticality of one model's L1 window map on a grid of momenta and
    refresh intervals (``rows``: one per point, with ``measured`` the coefficient read off the
    map's iterations, or ``None`` with ``not_measured`` giving the reason)."""

    model: dict
    rows: list

    @property
    def passed(self) -> bool:
        """Every measured coefficient within ``tolerance`` of its prediction (and of the
        same sign); ``False`` when nothing was measured."""
        meas = [r for r in self.rows if r.get("measured") is not None]
        return bool(meas) and all(r["agrees"] for r in meas)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def __str__(self) -> str:
        lines = []
        for r in self.rows:
            head = f"mu = {r['momentum']:g}, k = {r['refresh_interval']}: "
            if r["kind"] is None:
                lines.append(head + "n/a (" + r["reason"] + ")")
                continue
            m = (f"measured {r['measured']:.4g}" if r["measured"] is not None
                 else "not measured: " + r["not_measured"])
            lines.append(head + f"{r['kind']} at eta K = {r['eta_K']:.4g}, {r['criticality']} "
                         f"(coefficient {r['coefficient']:.4g}; {m})")
        return "\n".join(lines)


def _row(model, mu, k, max_windows, tolerance):
    try:
        wm = window_map(model, momentum=mu, refresh_interval=k)
        pt = boundary_point(wm)
    except ParameterError as e:
        return {"momentum": mu, "refresh_interval": k, "kind": None, "reason": e.allowed}
    row = {"momentum": mu, "refresh_interval": k, **pt.to_dict(), "measured": None}
    if pt.resonance is not None:
        row["not_measured"] = f"near the {pt.resonance} resonance"
        return row
    need = measure_coefficient(wm, pt, windows_only=True)
    if need > max_windows:
        row["not_measured"] = (f"the coefficient is so small that measuring it needs {need} "
                               f"windows (more than {max_windows})")
        return row
    m = measure_coefficient(wm, pt)
    row.update(measured=m["measured"], relative_error=m["relative_error"],
               agrees=m["relative_error"] < tolerance)
    return row


def criticality(model, *, momenta=(0.5, 0.8, 0.9), refresh_intervals=range(2, 17),
                max_windows=20000, tolerance=0.02) -> Criticality:
    """Boundary kind and criticality of ``model``'s L1 window map for every (momentum,
    refresh interval) of the grid, each coefficient measured on the map where that takes
    at most ``max_windows`` windows."""
    rows = [_row(model, float(mu), int(k), max_windows, tolerance)
            for mu in momenta for k in refresh_intervals]
    return Criticality(model.to_dict(), rows)
