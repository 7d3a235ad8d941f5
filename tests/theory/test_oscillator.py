"""L3 oscillator numeric API vs scipy.integrate.solve_ivp; derivations verified."""

import json
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from grpo_theory.theory import oscillator as O
from grpo_theory.cli.main import main
from grpo_theory.theory.derived import all_names, get
from grpo_theory.validate import ParameterError


@pytest.mark.parametrize("name", [n for n in all_names() if n.startswith("oscillator.")])
def test_derivation_verified(name):
    assert get(name).verified


def _ivp(m, g, k, x0, v0, t):
    sol = solve_ivp(lambda _, y: [y[1], -(g * y[1] + k * y[0]) / m], (0, t[-1]), [x0, v0],
                    t_eval=t, rtol=1e-12, atol=1e-14, method="DOP853")
    return sol.y[0]


@pytest.mark.parametrize("m,g,k,x0,v0,reg", [
    (1.0, 3.0, 1.0, 1.0, -0.5, "overdamped"),
    (0.95, 0.2, 0.5, -0.7, 0.3, "oscillatory"),
    (1.0, 2.0, 1.0, 1.0, 2.0, "critical"),
    (0.75, 0.3, 0.03, 2.0, 0.0, "critical"),     # gamma^2 = 4 m k exactly
    (1.0, 0.0, 1.0, 1.0, 0.0, "undamped"),        # gamma = 0: marginal, not unstable (issue 21)
    (1.0, -0.1, 1.0, 1.0, 0.0, "unstable"),
])
def test_trajectory_vs_solve_ivp(m, g, k, x0, v0, reg):
    t = np.linspace(0, 30, 61)
    x = O.trajectory(t, m, g, k, x0, v0)
    ref = _ivp(m, g, k, x0, v0, t)
    np.testing.assert_allclose(x, ref, rtol=1e-10, atol=1e-10 * abs(x0))
    assert O.regime(m, g, k) == reg


def test_continuity_across_critical_damping():
    m, k, t = 1.0, 1.0, np.linspace(0, 20, 41)
    crit = O.trajectory(t, m, 2.0, k, 1.0, 0.5)
    for eps in (1e-4, 1e-6):
        for g in (2.0 - eps, 2.0 + eps):
            np.testing.assert_allclose(O.trajectory(t, m, g, k, 1.0, 0.5), crit, atol=10 * eps)


def test_slow_start_and_single_exponential():
    t = np.array([0.0, 1e-4])
    x = O.trajectory(t, 1.0, 3.0, 1.0, 1.0, 0.0)
    assert abs(x[1] - x[0]) < 1e-7                               # zero initial slope
    R = O.single_exponential(np.array([0.0, 5.0, 1e6]), 0.8, 0.2, 5.0)
    np.testing.assert_allclose(R, [0.2, 0.8 - 0.6 / np.e, 0.8])
    with pytest.raises(ParameterError):
        O.single_exponential(1.0, 0.8, 0.2, 0.0)


def test_overdamped_limit_approaches_single_exponential():
    t = np.linspace(1, 5, 9)
    g, k, m = 1.0, 0.1, 1e-2
    x = O.trajectory(t, m, g, k, 1.0, 0.0)
    # slow root -k/g - m k^2/g^3 + O(m^2): relative error ~ m k^2 t / g^3 + fast transient
    np.testing.assert_allclose(x, np.exp(-k * t / g), rtol=5 * m * k**2 * t.max() / g**3 + 1e-3)


def test_overdamped_small_mass_no_overflow():
    # large w t uses the proven-equal two-mode form: no overflow, and the massless limit holds
    t = np.linspace(1, 50, 50)
    with np.errstate(over="raise", invalid="raise"):
        x = O.trajectory(t, 1e-6, 1.0, 0.1, 1.0, 0.0)
    np.testing.assert_allclose(x, np.exp(-0.1 * t), rtol=1e-4)
    with np.errstate(over="raise", invalid="raise"):
        far = O.trajectory([1e4, 1e6], 1.0, 5.0, 0.5, 1.0, 0.3)
    assert np.all(np.isfinite(far)) and np.all(np.abs(far) < 1e-30)


def test_coefficients_and_errors():
    osc = O.coefficients(0.01, 0.9, 8, 1.0)
    assert (osc.mass, osc.damping, osc.spring) == pytest.approx((0.95, 0.02, 0.01))
    assert osc.regime == "oscillatory"
    for kwargs, name in ((dict(lag=-1), "lag"), (dict(stiffness=0), "stiffness"),
                         (dict(fresh_fraction=float("nan")), "fresh_fraction")):
        base = dict(learning_rate=0.01, momentum=0.9, lag=8, stiffness=1.0)
        base.update(kwargs)
        with pytest.raises(ParameterError) as err:
            O.coefficients(**base)
        assert err.value.name == name and name in str(err.value)


def test_cli_trajectory(capsys):
    assert main(["trajectory", "--mass", "1", "--damping", "2", "--spring", "1", "--x0", "1",
                 "--v0", "0", "--times", "0,1,2.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["regime"] == "critical" and out["damping_ratio"] == pytest.approx(1)
    np.testing.assert_allclose(out["x"], _ivp(1, 2, 1, 1, 0, np.array([0, 1, 2.5])), rtol=1e-9)
    assert main(["trajectory", "--mass", "1", "--damping", "0.2", "--spring", "1", "--x0", "1",
                 "--times", "0,3"]) == 0
    assert "oscillatory" in capsys.readouterr().out


@pytest.mark.parametrize("argv,word", [
    (["--times", "1,,2"], "times"), (["--times", "a"], "times"), (["--times", "-1"], "times"),
    (["--mass", "0"], "mass"), (["--spring", "-1"], "spring"), (["--x0", "nan"], "x0"),
])
def test_cli_trajectory_errors(capsys, argv, word):
    base = {"--mass": "1", "--damping": "1", "--spring": "1", "--x0": "1", "--times": "0,1"}
    base[argv[0]] = argv[1]
    assert main(["trajectory"] + [x for kv in base.items() for x in kv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and word in err


def test_cli_trajectory_echoes_the_value_as_typed(capsys):
    assert main(["trajectory", "--mass", "0", "--damping", "1", "--spring", "1", "--x0", "1",
                 "--times", "1"]) == 2
    assert capsys.readouterr().err.strip().endswith("got 0")      # not "got 0.0" (issue 29)


def test_cli_trajectory_refuses_times_past_the_largest_double(capsys):
    """An unstable oscillator at t = 1e6 printed x = -inf (issue 29).  Independent bound:
    m = 1, gamma = -1, kappa = 1 grows as A e^{t/2} with A = sqrt(1 + 1/3), so |x| passes
    1.8e308 within one period (2 pi / omega, omega = sqrt(3)/2) of 2 (log(1.8e308) - log A)."""
    import warnings

    argv = ["trajectory", "--mass", "1", "--damping", "-1", "--spring", "1", "--x0", "1",
            "--times", "0", "10", "1e6"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # no overflow RuntimeWarning either
        assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "times" in err and "got 1000000" in err
    t_max = float(err.split("at most ")[1].split()[0])
    t_env = 2 * (math.log(np.finfo(float).max) - 0.5 * math.log(4 / 3))
    assert abs(t_max - t_env) < 2 * math.pi / (math.sqrt(3) / 2)
    assert main(argv[:-3] + [f"{0.999 * t_max:.6g}", "--json"]) == 0
    assert np.isfinite(json.loads(capsys.readouterr().out)["x"][0])


def test_critical_learning_rate_is_finite_at_zero_lag():
    # issue 9: 0/0 (nan) at lag 0 and -2.22 at 1e-8 before; independent value: at lag 0
    # gamma = 1 - mu, m = (1 + mu)/2, so gamma^2 = 4 m eta K gives eta = (1-mu)^2/(2(1+mu)K)
    f = get("oscillator.critical_learning_rate").numeric
    for lag in (0.0, 1e-8):
        assert f(0.5, 1.0, lag) == pytest.approx(0.25 / 3, rel=1e-7)
    g = get("oscillator.critical_stiffness").numeric
    assert g(0.5, 1.0, 0.0) == pytest.approx(0.25 / 3, rel=1e-12)


def test_overshoot_with_free_initial_slope_against_integration():
    from scipy.integrate import solve_ivp
    m, g, k, x0 = 1.0, 0.2, 2.0, 1.0
    for v0 in (0.0, 0.5, -3.0):
        sol = solve_ivp(lambda t, y: [y[1], -(g * y[1] + k * y[0]) / m], (0, 10), [x0, v0],
                        rtol=1e-11, atol=1e-13, dense_output=True, events=lambda t, y: y[1])
        t1 = [t for t in sol.t_events[0] if t > 1e-9][0]
        expected = -sol.sol(t1)[0] / x0
        with np.errstate(divide="ignore", invalid="ignore"):  # numpy evaluates both cases
            value = get("oscillator.overshoot").numeric(m, g, k, x0, v0)
        assert value == pytest.approx(expected, rel=1e-7)


def test_period_and_decay_times():
    m, g, k = 1.0, 0.2, 2.0
    W = math.sqrt(4 * m * k - g * g) / (2 * m)
    assert get("oscillator.period").numeric(m, g, k) == pytest.approx(2 * math.pi / W)
    assert get("oscillator.envelope_decay_time").numeric(m, g) == pytest.approx(10.0)
    s = get("oscillator.slow_root").numeric(1.0, 3.0, 1.0)
    assert s == pytest.approx((-3 + math.sqrt(5)) / 2)
    assert get("oscillator.decay_time").numeric(1.0, 3.0, 1.0) == pytest.approx(-1 / s)


def test_trajectory_cli_is_a_typed_result(capsys):
    assert main(["trajectory", "--mass", "1", "--damping", "2", "--spring", "1", "--x0", "1",
                 "--times", "0,1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["x"][1] == pytest.approx(2 * math.exp(-1)) and out["regime"] == "critical"


def test_critical_damping_written_as_two_sqrt_mk_is_finite():
    """gamma = 2 sqrt(m k) computed in floating point lands within rounding of the boundary,
    where the regimes' own radicands can be 0 or of the wrong sign: the critical branch answers
    (it was NaN), and it agrees with the damping just inside either regime."""
    import numpy as np

    from grpo_theory.theory.oscillator import trajectory

    t = np.array([0.0, 1.0, 10.0, 50.0])
    for m, k in ((1.0, 0.4600799062739125), (0.7, 1.3), (2.0, 1e-4)):
        g = 2 * np.sqrt(m * k)
        x = trajectory(t, m, g, k, 0.3, 0.1)
        assert np.all(np.isfinite(x)), (m, k, x)
        for side in (1 - 1e-7, 1 + 1e-7):
            assert np.allclose(trajectory(t, m, g * side, k, 0.3, 0.1), x, rtol=1e-5, atol=1e-9)
