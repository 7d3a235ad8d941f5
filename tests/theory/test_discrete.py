"""L2 exact discrete linearization: derivations verified, plus independent numerical checks."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_theory.theory import discrete as D
from grpo_theory.theory.discrete import delay, thresholds
from grpo_theory.cli.main import main
from grpo_theory.theory.derived import all_names, get
from grpo_theory.validate import ParameterError

NAMES = [n for n in all_names() if n.startswith("discrete.")]


@pytest.mark.parametrize("name", NAMES)
def test_derivation_verified(name):
    d = get(name)
    assert d.verified, [v for v in d.verifications if not v.passed]
    assert d.latex()


def brute_monodromy(a, mu, k, phi=0.0):
    """Iterate the per-step update literally (no closed form) on the basis vectors."""
    cols = []
    for x0, v0 in ((1.0, 0.0), (0.0, 1.0)):
        x, v, xs = x0, v0, x0
        for _ in range(k):
            v = mu * v - a * (phi * x + (1 - phi) * xs)
            x = x + v
        cols.append((x, v))
    return np.array(cols).T


def brute_radius(a, mu, k, phi=0.0):
    return max(abs(np.linalg.eigvals(brute_monodromy(a, mu, k, phi))))


@pytest.mark.parametrize("mu", [0.0, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("k", [1, 2, 3, 7, 16])
def test_monodromy_vs_explicit_product(mu, k):
    for a in (1e-3, 0.05, 0.7):
        M = D.monodromy(a, mu, k, 1.0)
        np.testing.assert_allclose(M, brute_monodromy(a, mu, k), rtol=1e-10, atol=1e-12)
        Mg = D.monodromy(a, mu, k, 1.0, fresh_fraction=0.4)
        np.testing.assert_allclose(Mg, brute_monodromy(a, mu, k, 0.4), rtol=1e-10, atol=1e-12)


def test_spectral_radius_vs_brute_force_grid():
    a_grid = np.geomspace(1e-3, 4, 25)
    for mu in (0.0, 0.5, 0.9):
        for k in (1, 2, 5, 12):
            got = D.spectral_radius(a_grid, mu, k, 1.0)
            ref = [brute_radius(a, mu, k) for a in a_grid]
            np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-12)
            got = D.spectral_radius(a_grid, mu, k, 1.0, fresh_fraction=0.5)
            ref = [brute_radius(a, mu, k, 0.5) for a in a_grid]
            np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("mu,k", [(0.0, 3), (0.5, 4), (0.9, 2), (0.9, 8), (0.9, 64), (0.99, 16)])
def test_exact_threshold_where_brute_force_radius_crosses_one(mu, k):
    flip, cx, _ = D.refresh_thresholds(mu, k)
    a_star = float(min(flip, cx))
    grid = a_star * np.linspace(0.9, 1.1, 201)           # resolution 0.1 % of a*
    radii = np.array([brute_radius(a, mu, k) for a in grid])
    first_unstable = grid[np.argmax(radii >= 1)]
    assert radii[0] < 1 and radii[-1] > 1
    assert abs(first_unstable - a_star) <= (grid[1] - grid[0]) * 1.0001
    # the binding condition is what the eigenvalues show just above the threshold
    eig = np.linalg.eigvals(brute_monodromy(a_star * 1.0001, mu, k))
    dominant = eig[np.argmax(abs(eig))]
    if flip <= cx:
        assert abs(dominant.imag) < 1e-9 and dominant.real < -0.99
    else:
        assert abs(dominant.imag) > 1e-6


def test_mu_zero_published_threshold_off_by_factor_two():
    for k in (1, 2, 5, 20):
        assert D.max_stable_learning_rate(0.0, k, 1.0) == pytest.approx(2 / k, rel=1e-12)
        pub = get("discrete.published_threshold_learning_rate").numeric(0.0, k)
        assert pub == pytest.approx(1 / k)
        # brute force: stable just below 2/k, unstable just above
        assert brute_radius(2 / k * 0.999, 0.0, k) < 1 < brute_radius(2 / k * 1.001, 0.0, k)


def test_binding_condition_regions():
    rows = D.threshold_error_table(momenta=(0.0, 0.9), refresh_intervals=(1, 2, 8, 64))
    by = {(r["momentum"], r["refresh_interval"]): r["binding"] for r in rows}
    assert by[(0.0, 8)] == "flip" and by[(0.9, 1)] == "flip"
    assert by[(0.9, 2)] == "complex" and by[(0.9, 8)] == "complex"
    assert by[(0.9, 64)] == "flip"        # a_complex -> (1-mu)^2/mu while a_flip ~ 2(1-mu)/k


def test_threshold_table_shape_and_sign():
    rows = D.threshold_error_table()
    assert len(rows) == 4 * 64
    # the published threshold is conservative everywhere on the grid (by >= 48 %)
    assert all(r["rel_error_published"] < -0.48 for r in rows)
    big = [r for r in rows if r["refresh_interval"] == 64 and r["momentum"] <= 0.5]
    assert all(abs(r["rel_error_mean_lag"]) < 0.02 for r in big)


def test_threshold_decreasing_in_k_continuous_extension():
    # a*(k) = min(flip, complex) decreases in k: the stable set in k is {1..k_max}
    ks = np.linspace(1, 400, 4000)
    for mu in np.linspace(0, 0.995, 60):
        flip, cx, _ = D.refresh_thresholds(mu, ks)
        assert np.all(np.diff(np.minimum(flip, cx)) < 0), mu


def test_max_stable_refresh_interval_brute_force():
    for a, mu in ((0.11, 0.0), (0.013, 0.5), (0.01, 0.9), (0.47, 0.5), (0.0013, 0.99)):
        km = D.max_stable_refresh_interval(a, mu, 1.0)
        assert brute_radius(a, mu, km) < 1 and brute_radius(a, mu, km + 1) >= 1
    assert D.max_stable_refresh_interval(3.0, 0.2, 1.0) == 0     # even on-policy unstable


@settings(max_examples=40, deadline=None)
@given(st.floats(1e-3, 1.0), st.floats(1.01, 3.0), st.floats(0.0, 0.98))
def test_max_k_non_increasing_in_eta_K(a, factor, mu):
    assert D.max_stable_refresh_interval(a * factor, mu, 1.0) <= D.max_stable_refresh_interval(a, mu, 1.0)


def test_max_k_not_monotone_in_momentum():
    # momentum can *raise* the max stable interval: at k = 2 the threshold peaks near mu ~ 0.54
    assert D.max_stable_refresh_interval(1.2, 0.0, 1.0) == 1
    assert D.max_stable_refresh_interval(1.2, 0.5, 1.0) == 2
    # but for small eta K (where the published formula is meant) it falls with mu
    ks = [D.max_stable_refresh_interval(0.01, mu, 1.0) for mu in np.linspace(0, 0.99, 34)]
    assert all(x >= y for x, y in zip(ks, ks[1:]))


@settings(max_examples=30, deadline=None)
@given(st.floats(1e-3, 2.0), st.floats(0.0, 0.95), st.integers(1, 30))
def test_stable_configs_decay(a, mu, k):
    r = float(D.spectral_radius(a, mu, k, 1.0))
    if r < 0.999:
        M = brute_monodromy(a, mu, k)
        y = np.array([1.0, 0.3])
        n = max(1, 10_000 // k)
        for _ in range(n):
            y = M @ y
        assert np.linalg.norm(y) < 1e-3 or np.linalg.norm(y) <= 10 * r**n * 1e3


def test_delay_polynomial_roots_vs_companion():
    for d in (0, 1, 2, 3, 7):
        for a, mu, phi in ((0.1, 0.5, 0.0), (0.03, 0.9, 0.3)):
            comp = np.sort_complex(delay._delay_eigs(a, mu, d, phi))
            lam = get("discrete.delay_characteristic_polynomial")
            import sympy as sp
            from grpo_theory.theory import symbols as S
            P = lam.expr.subs({S.d: d, S.mu: mu, S.eta: a, S.K_fresh: phi, S.K_stale: 1 - phi})
            P = sp.expand(P * S.lam) if d == 0 else sp.expand(P)
            coeffs = [complex(c) for c in sp.Poly(P, S.lam).all_coeffs()]
            roots = np.roots(coeffs)
            assert len(roots) == len(comp)
            assert max(min(abs(r - comp)) for r in roots) < 1e-9
            assert max(min(abs(c - roots)) for c in comp) < 1e-9


@pytest.mark.parametrize("d", [0, 1, 2])
def test_delay_symbolic_threshold_matches_numeric(d):
    thr = get(f"discrete.delay_threshold_d{d}").numeric
    for mu in (0.0, 0.4, 0.9):
        exact = float(thr(mu))
        num = D.max_stable_learning_rate(mu, 1, 1.0, lag_model="delay", delay=d)
        assert num == pytest.approx(exact, rel=1e-9)


def test_delay_binding_and_large_d():
    r = D.linear_stability(0.01, 0.5, 1, 1.0, lag_model="delay", delay=1)
    assert r.binding_condition == "complex"
    assert r.max_stable_learning_rate == pytest.approx(0.5)    # 1 - mu, the published form at lag 1
    r0 = D.linear_stability(0.01, 0.5, 1, 1.0, lag_model="delay", delay=0)
    assert r0.binding_condition == "flip" and r0.max_stable_learning_rate == pytest.approx(3.0)
    r20 = D.linear_stability(0.001, 0.5, 1, 1.0, lag_model="delay", delay=20)
    a = r20.max_stable_learning_rate
    assert D.delay_spectral_radius(a * 0.999, 0.5, 20, 1.0) < 1 < D.delay_spectral_radius(a * 1.001, 0.5, 20, 1.0)


def test_stability_result_fields():
    r = D.linear_stability(0.01, 0.9, 8, 1.0)
    assert r.stable and r.discrete_regime == "oscillatory" and r.binding_condition == "complex"
    assert r.max_stable_refresh_interval == 37
    assert r.max_stable_refresh_interval_continuous == 9
    assert r.mass == pytest.approx(0.95) and r.regime == "oscillatory"
    json.dumps(r.to_dict())
    r = D.linear_stability(0.3, 0.0, 5, 1.0)            # 1 - a k = -0.5: alternating, stable
    assert r.discrete_regime == "alternating" and r.alternating and r.stable
    r = D.linear_stability(0.5, 0.0, 5, 1.0)
    assert r.discrete_regime == "unstable" and not r.stable
    r = D.linear_stability(0.01, 0.9, 8, 1.0, fresh_fraction=0.5)
    assert r.spectral_radius == pytest.approx(brute_radius(0.01, 0.9, 8, 0.5))


def test_critical_damping_discrete():
    for mu, k in ((0.5, 3), (0.9, 8)):
        _, _, ac = D.refresh_thresholds(mu, k)
        below = np.linalg.eigvals(brute_monodromy(ac * 0.99, mu, k))
        above = np.linalg.eigvals(brute_monodromy(ac * 1.01, mu, k))
        assert np.all(abs(below.imag) < 1e-12) and np.any(abs(above.imag) > 1e-8)


def test_phase_diagram_speed_and_content():
    import time
    a = np.geomspace(1e-3, 3, 256)
    t0 = time.perf_counter()
    pd = D.phase_diagram(a, np.arange(1, 257), momentum=0.9)
    assert time.perf_counter() - t0 < 1.0
    assert pd.spectral_radius.shape == (256, 256)
    assert set(np.unique(pd.regime_code)) <= {0, 1, 2, 3}
    pm = D.phase_diagram(a, mu_grid=np.linspace(0, 0.99, 64), refresh_interval=4)
    assert pm.spectral_radius.shape == (256, 64)


@pytest.mark.parametrize("kwargs,name", [
    (dict(learning_rate=0.0), "learning_rate"), (dict(momentum=1.0), "momentum"),
    (dict(refresh_interval=0), "refresh_interval"), (dict(stiffness=-1), "stiffness"),
    (dict(refresh_interval=2.5), "refresh_interval"), (dict(lag_model="async"), "lag_model"),
    (dict(fresh_fraction=float("nan")), "fresh_fraction"),
])
def test_stability_bad_input(kwargs, name):
    """The model refuses its own fields; the stiffness and split, not fields of the model,
    are refused by the analysis that takes them."""
    from grpo_theory.model import GRPOModel
    from grpo_theory.theory.stability import stability

    fields = {k: v for k, v in kwargs.items() if k not in ("stiffness", "fresh_fraction")}
    given = {k: v for k, v in kwargs.items() if k in ("stiffness", "fresh_fraction")}
    with pytest.raises(ParameterError) as err:
        model = GRPOModel(**{"learning_rate": 0.1, "momentum": 0.5, "refresh_interval": 2,
                             **fields})
        stability(model, **{"stiffness": 1.0, **given})
    assert err.value.name == name


def test_cli_stability_json(capsys):
    assert main(["stability", "--learning-rate", "0.01", "--momentum", "0.9",
                 "--refresh-interval", "8", "--stiffness", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("spectral_radius_exact", "stable_exact", "binding_condition_exact",
                "max_stable_refresh_interval_exact", "max_stable_refresh_interval_continuous",
                "max_stable_learning_rate_exact", "mass", "damping", "spring", "damping_ratio",
                "regime", "discrete_regime"):
        assert key in out
    assert out["binding_condition_exact"] in ("flip", "complex")
    assert out["max_stable_refresh_interval_exact"] == 37


def test_cli_stability_table_delay_and_ratio(capsys):
    assert main(["stability", "--learning-rate", "0.1", "--momentum", "0.5", "--stiffness", "1",
                 "--lag-model", "delay", "--delay", "2"]) == 0
    assert "binding condition" in capsys.readouterr().out
    assert main(["stability", "--learning-rate", "0.01", "--momentum", "0.5", "--stiffness", "1",
                 "--refresh-interval", "4", "--fresh-fraction", "0.3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["fresh_fraction"] == 0.3


@pytest.mark.parametrize("argv,word", [
    (["--momentum", "1"], "momentum"), (["--learning-rate", "-1"], "learning_rate"),
    (["--refresh-interval", "0"], "refresh_interval"), (["--stiffness", "0"], "stiffness"),
    (["--p-ref", "0.2"], "p_ref"), (["--fresh-fraction", "x"], "fresh_fraction"),
    (["--delay", "2"], "delay"),
    (["--lag-model", "delay"], "delay"), (["--learning-rate", "abc"], "learning_rate"),
])
def test_cli_stability_errors(capsys, argv, word):
    base = {"--learning-rate": "0.1", "--momentum": "0.5", "--stiffness": "1"}
    for i in range(0, len(argv), 2):
        base[argv[i]] = argv[i + 1]
    args = ["stability"] + [x for kv in base.items() for x in kv]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and word in err


@pytest.mark.parametrize("d", range(0, 7))
def test_delay_threshold_at_zero_momentum(d):
    # exact threshold for constant delay d at mu = 0: 2 sin(pi / (2 (2 d + 1)))
    a_star, _ = thresholds._threshold_a(0.0, 1, 0.0, "delay", d)
    assert a_star == pytest.approx(2 * math.sin(math.pi / (2 * (2 * d + 1))), rel=1e-9)


def test_mean_lag_k_max_record_matches_the_table():
    rows = D.refresh_interval_error_table(momenta=(0.0, 0.5), eta_K=(0.01, 0.1))
    for r in rows:
        bound = (1 - r["momentum"]) / r["eta_K"]
        k = r["k_max_mean_lag"]
        assert (k - 1) / 2 < bound <= k / 2 + 1e-12


@pytest.mark.parametrize("k, eta_K", [(1, 0.01), (1, 0.1), (1, 0.5), (2, 0.01), (2, 0.3),
                                       (5, 0.01), (5, 0.1)])
def test_critical_momentum_is_where_the_literal_window_map_turns_complex(k, eta_K):
    """Independent check: the eigenvalues of the literally iterated window map are real just
    below the exact critical momentum and complex just above; the discriminant changes sign."""
    mu_c = D.critical_momentum(eta_K, k)
    assert 0 < mu_c < 1
    for mu, complex_expected in ((mu_c - 1e-4, False), (mu_c + 1e-4, True)):
        eig = np.linalg.eigvals(brute_monodromy(eta_K, mu, k))
        assert bool(abs(eig[0].imag) > 1e-9) is complex_expected
        assert bool(D.window_discriminant(eta_K, mu, k) < 0) is complex_expected
    if k == 1:   # the heavy ball's textbook boundary (1 - sqrt(mu))^2 = eta K
        assert math.isclose((1 - math.sqrt(mu_c)) ** 2, eta_K, rel_tol=1e-9)
        mu = 0.3
        assert math.isclose(D.window_discriminant(eta_K, mu), (1 + mu - eta_K) ** 2 - 4 * mu,
                            rel_tol=1e-9, abs_tol=1e-12)


def test_critical_momentum_refuses_an_eta_K_without_a_transition():
    with pytest.raises(ParameterError, match="eta_K"):
        D.critical_momentum(0.5, 5)      # the critical damping at k = 5 never exceeds 0.19


@pytest.mark.parametrize("a, phi", [(1e-7, 0.3), (1e-12, 0.3), (1e-16, 0.45)])
def test_max_k_at_tiny_eta_k_by_direct_mp_power(a, phi):
    """Below what double precision resolves (the window radius is 1 - O(ηK k)), the scan runs in
    mpmath: its k_max is checked by raising the per-step map to k and k + 1 directly (mpmath's own
    matrix power at 40 extra digits, not the scan's doubling), stable at k and not at k + 1."""
    import mpmath
    k = thresholds.max_stable_refresh_interval(a, 0.5, 1.0, fresh_fraction=phi)
    assert 0 < k < math.inf
    with mpmath.workdps(60 + math.ceil(-math.log10(a))):
        af, as_ = mpmath.mpf(phi) * a, (1 - mpmath.mpf(phi)) * a     # not 1 - phi*a in floats
        A = mpmath.matrix([[1 - af, 0.5, -as_], [-af, 0.5, -as_], [0, 0, 1]])
        E = mpmath.matrix([[1, 0], [0, 1], [1, 0]])

        def radius(n):
            M = (A ** n * E)[0:2, 0:2]
            return max(abs(z) for z in mpmath.eig(M)[0])
        assert radius(k) < 1 <= radius(k + 1)


def test_stability_at_tiny_learning_rate_is_not_called_unstable(capsys):
    """ηK ~ 1e-17 rounds the radius to 1: the refresh scan (mpmath) says every k, and the
    fluctuation says why it is n/a instead of calling the map unstable."""
    assert main(["stability", "--learning-rate", "1e-16"]) == 0
    out = capsys.readouterr().out
    assert "every k (stable for every refresh interval)" in out
    assert "too small for the window map's variance to be resolved" in out
    assert "unstable" not in out.split("stationary fluctuation")[1].split("\n")[0]
