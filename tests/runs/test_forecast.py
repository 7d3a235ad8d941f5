"""Forecasts: calibration of the 90 % interval on synthetic curves, the baselines against
independent references, declining where the model does not apply, the reward's range."""

import json
import math

import numpy as np
import pytest

import grpo_theory.runs.forecast as F
from grpo_theory.cli.main import main
from grpo_theory.runs.forecast import (
    MIN_LEVEL_POINTS,
    MIN_TRAIN_POINTS,
    entropy_law,
    fit_entropy_law,
    fit_scalerl_sigmoid,
    forecast,
    last_value,
    noise_sd,
)
from grpo_theory.validate import ParameterError

FAST = ["exponential", "oscillator"]


def _synthetic(rng, shape, n):
    """A noisy reward curve written out here (independently of the core): relaxation, logistic
    take-off, two time scales, or a flat noisy level."""
    t = np.arange(n, dtype=float)
    sd = rng.uniform(0.01, 0.05)
    tau = rng.uniform(0.05, 0.2) * n        # the 20 % prefix covers at least a time constant
    a, b = rng.uniform(0.05, 0.4), rng.uniform(0.6, 0.95)
    if shape == 0:
        mu = b - (b - a) * np.exp(-t / tau)
    elif shape == 1:
        mu = a + (b - a) / (1 + np.exp(-(t - tau) / (tau / 4)))
    elif shape == 2:
        mu = b - (b - a) * (0.5 * np.exp(-t / (tau / 4)) + 0.5 * np.exp(-t / (2 * tau)))
    else:
        mu = np.full(n, b)
    return t, mu, mu + sd * rng.standard_normal(n)


def test_interval_is_calibrated_on_synthetic_curves():
    # 24 curves: relaxations and flat noisy levels from 20 % and 50 %, logistic take-offs from
    # 50 %: the 90 % band covers 85-95 % of the held-out points pooled, and a forecast is made
    # for every one (no decline).  Not covered here, and stated in the docs: a prefix shorter
    # than a time constant does not identify the plateau, and a single exponential fitted to the
    # fast part of a two-time-scale curve misses its slow tail (the band then under-covers:
    # ~0.6 from 20 %).
    rng = np.random.default_rng(0)
    inside = total = 0
    cases = [(0, 0.2), (0, 0.5), (3, 0.2), (3, 0.5), (1, 0.5), (0, 0.2)] * 4
    for shape, frac in cases:
        t, _, y = _synthetic(rng, shape, int(rng.integers(40, 160)))
        p = forecast(t, y, frac, FAST)
        assert p.applicable, p.reasons
        ok = (p.y_holdout >= p.lower) & (p.y_holdout <= p.upper)
        assert p.interval_coverage == pytest.approx(ok.mean())
        inside += int(ok.sum())
        total += ok.size
    assert 0.85 <= inside / total <= 0.95, inside / total


def test_interval_widens_with_the_horizon_and_stays_in_range():
    rng = np.random.default_rng(4)
    t = np.arange(120.0)
    y = np.clip(0.85 - 0.7 * np.exp(-t / 40) + 0.02 * rng.standard_normal(t.size), 0, 1)
    fc = forecast(t, y, 0.25, FAST)
    assert fc.applicable
    width = fc.upper - fc.lower
    assert width[-1] >= width[0] - 1e-12 or fc.upper[-1] == 1.0
    low, high = fc.band
    assert low.min() >= 0.0 and high.max() <= 1.0


def test_forecast_of_a_relaxation_beats_the_level():
    # relaxations whose prefix covers about one time scale: over seven noise draws the
    # model's extrapolation is much closer to the true curve than the level carried forward
    t = np.arange(200.0)
    mu = 0.9 - 0.7 * np.exp(-t / 50.0)
    ratios = []
    for seed in range(1, 8):
        y = mu + 0.02 * np.random.default_rng(seed).standard_normal(t.size)
        fc = forecast(t, y, 0.25, FAST)
        assert fc.applicable and fc.best in FAST
        # chosen by rolling origin (the simplest family within one standard error of the best)
        assert fc.origin_rmse[fc.best] <= 1.5 * min(fc.origin_rmse.values())
        truth = mu[fc.n_train:]
        ours = math.sqrt(np.mean((fc.prediction - truth) ** 2))
        level = math.sqrt(np.mean((last_value(y[:fc.n_train]) - truth) ** 2))
        ratios.append(ours / level)
    assert np.median(ratios) < 0.5, ratios


def test_last_value_baseline_against_a_hand_computation():
    y = np.arange(40.0)
    assert last_value(y) == pytest.approx(np.mean([36, 37, 38, 39]))  # k = 40 // 10 = 4
    assert last_value(np.arange(9.0)) == 8.0  # k = 1
    assert last_value(np.arange(200.0)) == pytest.approx(np.mean(np.arange(195, 200)))  # k <= 5
    rng = np.random.default_rng(1)
    t = np.arange(100.0)
    yy = 0.5 + 0.05 * rng.standard_normal(100)
    fc = forecast(t, yy + 0.003 * t, 0.4, FAST)
    expect = math.sqrt(np.mean((np.mean((yy + 0.003 * t)[36:40]) - (yy + 0.003 * t)[40:]) ** 2))
    assert fc.baselines["last_value"]["holdout_rmse"] == pytest.approx(expect)
    # the forecast's level with the naive window (fraction 0) is the same level: one definition
    from grpo_theory.runs.forecast import LevelFit

    for n, k in ((9, 1), (40, 4), (200, 5)):
        lv = LevelFit(np.arange(float(n)), np.arange(float(n)))
        assert lv.k == k and lv.level == pytest.approx(np.mean(np.arange(n - k, n)))
    # wider windows: a quarter or a half of the prefix, never narrower than the naive one
    assert LevelFit(np.arange(40.0), np.arange(40.0), 0.25).k == 10
    assert LevelFit(np.arange(40.0), np.arange(40.0), 0.5).level == pytest.approx(29.5)
    assert LevelFit(np.arange(9.0), np.arange(9.0), 0.25).k == 2


def test_the_level_window_is_the_widest_the_prefix_future_allows():
    """The level's window by rolling origin: on a flat noisy prefix every window predicts the
    prefix's future equally well, and the one-standard-error rule takes the widest (half the
    prefix), whose held-out error is lower than the naive window's; on a steady rise the wide
    windows lag, and the naive window is kept."""
    import grpo_theory.runs.forecast as F

    rng = np.random.default_rng(7)
    t = np.arange(200.0)
    flat = 0.5 + 0.05 * rng.standard_normal(200)
    fc = forecast(t, flat, 0.5, FAST)
    assert fc.best == "constant" and fc.fits["constant"].k == 50
    assert "last 50 prefix points" in fc.plateau["note"]
    naive = fc.baselines["last_value"]["holdout_rmse"]
    assert fc.holdout_rmse["constant"] < naive
    rise = 0.2 + 0.004 * t + 0.005 * rng.standard_normal(200)
    assert F._level_fraction(t[:100], rise[:100], (0.0, 1.0)) == 0.0
    fr = forecast(t, rise, 0.5, FAST)
    assert fr.fits["constant"].k == 5


def test_fit_names_the_level_s_window(tmp_path, capsys):
    """``fit``'s forecast line says which window the level averages (chosen by rolling origin)."""
    rng = np.random.default_rng(7)
    path = tmp_path / "flat.csv"
    path.write_text("step,reward\n" + "".join(
        f"{s},{v:.5f}\n" for s, v in enumerate(0.5 + 0.05 * rng.standard_normal(200))))
    assert main(["fit", str(path), "--train-fraction", "0.5"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("forecast:"))
    assert "family by rolling origin: constant" in line
    assert "the mean of the last 50 prefix points, a window chosen by rolling origin" in line


def test_scalerl_sigmoid_recovers_known_parameters():
    # R0 + (A - R0) / (1 + (C_mid / C)^B) written out in the test, C = step + 1
    r0, a, c_mid, b = 0.1, 0.8, 30.0, 2.0
    steps = np.arange(100, 300.0)  # any first step: C counts from 1
    c = steps - steps[0] + 1
    y = r0 + (a - r0) / (1 + (c_mid / c) ** b)
    predict, q = fit_scalerl_sigmoid(steps, y)
    assert q == pytest.approx((r0, a, c_mid, b), rel=1e-3, abs=1e-4)
    assert predict(np.array([400.0]))[0] == pytest.approx(r0 + (a - r0) / (1 + (c_mid / 301) ** b),
                                                         rel=1e-4)


def test_entropy_law_recovers_known_parameters():
    rng = np.random.default_rng(2)
    h = np.linspace(1.2, 0.1, 80)
    a, b = 0.3, 1.1
    y = -a * np.exp(h) + b + 0.002 * rng.standard_normal(h.size)
    ah, bh = fit_entropy_law(h, y)
    assert ah == pytest.approx(a, abs=0.01) and bh == pytest.approx(b, abs=0.02)
    assert entropy_law(0.0, a, b) == pytest.approx(b - a)


def test_noise_sd_of_white_noise():
    y = 0.3 * np.random.default_rng(3).standard_normal(20000)
    assert noise_sd(y) == pytest.approx(0.3, rel=0.03)


def test_falls_back_to_the_level_on_noise_and_falling_prefixes():
    # white noise, and a slow fall: the relaxation families do not apply; instead of declining
    # the forecast carries the level forward, says why, and keeps the baselines
    t = np.arange(100.0)
    for kind, why in (("noise", "flat reward"), ("falling", "decreasing reward")):
        for seed in range(5):
            rng = np.random.default_rng(seed)
            y = (0.5 + 0.1 * rng.standard_normal(100) if kind == "noise"
                 else 0.8 - 0.004 * t + 0.005 * rng.standard_normal(100))
            fc = forecast(t, y, 0.5, FAST)
            if not fc.fallback:            # a chance rise in white noise (rare): not checked
                continue
            assert fc.applicable and fc.best == "constant"
            assert any(why in r for r in fc.fallback), fc.fallback
            d = fc.to_dict()
            assert d["applicable"]["forecast"] is True and d["time_to_90"] is None
            assert {"last_value", "exponential", "scalerl_sigmoid"} <= set(d["baselines"])


def test_binary_reward_bounded_in_every_output():
    rng = np.random.default_rng(4)
    t = np.arange(120.0)
    y = np.clip(0.97 - 0.9 * np.exp(-t / 15) + 0.03 * rng.standard_normal(t.size), 0, 1)
    p = forecast(t, y, 0.2)
    assert p.applicable
    assert p.lower.min() >= 0.0 and p.upper.max() <= 1.0 and p.prediction.max() <= 1.0
    pl = p.plateau
    assert 0.0 <= pl["value"] <= 1.0
    if pl.get("interval"):
        assert 0.0 <= pl["interval"][0] <= pl["interval"][1] <= 1.0
    lo, hi = p.end_level["interval"]
    assert 0.0 <= lo <= p.end_level["value"] <= hi <= 1.0


def test_curve_end_level_plateau_and_time_to_90_in_json():
    rng = np.random.default_rng(5)
    t = np.arange(200.0)
    mu = 0.9 - 0.7 * np.exp(-t / 50.0)
    p = forecast(t, mu + 0.02 * rng.standard_normal(t.size), 0.5, ["exponential"])
    d = json.loads(json.dumps(p.to_dict(), allow_nan=False))
    assert len(d["curve"]) == p.n_holdout == 100
    row = d["curve"][-1]
    assert row["step"] == 199.0 and row["lower"] <= row["mean"] <= row["upper"]
    assert d["end_level"]["step"] == 199.0
    assert d["best"] == "exponential"
    # the true plateau 0.9 and time to 90 % 50 ln 10 = 115 steps lie in their 90 % intervals
    assert d["plateau"]["interval"][0] <= 0.9 <= d["plateau"]["interval"][1]
    lo, hi = d["time_to_90"]["interval_steps"]
    assert lo <= 50 * math.log(10) <= hi


def test_too_short_and_bad_fraction():
    t = np.arange(20.0)
    with pytest.raises(ParameterError, match="train_fraction"):
        forecast(t, t / 20, 0.05)                    # 1 < MIN_LEVEL_POINTS training point
    assert MIN_TRAIN_POINTS == 5 and MIN_LEVEL_POINTS == 2
    with pytest.raises(ParameterError, match="train_fraction"):
        forecast(t, t / 20, 1.5)


def test_plateau_is_cut_to_the_reward_range():
    # still rising linearly at the split: the exponential's plateau runs past 1
    rng = np.random.default_rng(5)
    t = np.arange(200.0)
    y = np.clip(0.1 + 0.004 * t + 0.01 * rng.standard_normal(t.size), 0, 1)
    fc = forecast(t, y, 0.5, ["exponential"])
    assert fc.applicable
    assert fc.fits["exponential"].plateau > 1.0
    d = fc.to_dict()
    assert d["plateau"]["value"] == 1.0 and d["plateau"]["clipped"] is True
    assert fc.prediction.max() <= 1.0
    # an unknown range (dense reward): not cut, and the binary families are off
    fc2 = forecast(t, 3 * y, 0.5, None)
    assert fc2.reward_range is None
    assert set(fc2.fits) <= {"exponential", "oscillator", "constant"}


def test_fit_json_contract_and_dense_reward(tmp_path, capsys):
    rng = np.random.default_rng(8)
    t = np.arange(60)
    y = 0.8 - 0.6 * np.exp(-t / 20) + 0.02 * rng.standard_normal(t.size)
    path = tmp_path / "run.csv"
    path.write_text("step,reward\n" + "".join(f"{s},{v:.5f}\n" for s, v in zip(t, y)))
    assert main(["fit", str(path), "--json", "--train-fraction", "0.5",
                 "--models", "exponential,oscillator,mean_field_std"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 60 and out["best"] in out["models"]
    assert all("r2" in m for m in out["models"].values())
    fc = out["forecast"]
    assert {"n_train", "best", "holdout_rmse", "models", "baselines", "interval",
            "applicable", "curve", "end_level", "plateau", "time_to_90"} <= set(fc)
    assert len(fc["curve"]) == fc["n_holdout"]
    assert fc["n_train"] == 30 and fc["applicable"]["forecast"] is True
    assert all("holdout_rmse" in m for m in fc["models"].values())
    assert set(out["applicable"]) >= {"fit", "reasons"}
    # declared dense: the mean-field family is off, and the report says so
    assert main(["fit", str(path), "--json", "--reward", "dense",
                 "--models", "exponential,mean_field_std"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["models"]) == {"exponential"}
    assert any("mean-field" in w for w in out["warnings"])
    # a 'binary' reward outside [0, 1] is bad input: one line, exit 2
    path.write_text("step,reward\n" + "".join(f"{s},{3 * v:.5f}\n" for s, v in zip(t, y)))
    assert main(["fit", str(path), "--reward", "binary"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reward" in err[0]


def test_a_prefix_of_two_to_four_points_gets_the_level_with_a_student_t_band():
    # 4 points of a plateau in noise: the level carried forward is the last value (the naive
    # forecast's window of max(1, min(5, 4 // 10)) = 1 point, the one definition of the level),
    # the band the Student-t interval of a new point about it, t(0.95, 3) s sqrt(1 + 1/1)
    # (t(0.95, 3) = 2.3533634, from tables)
    rng = np.random.default_rng(7)
    t = np.arange(20.0)
    y = 0.5 + 0.05 * rng.standard_normal(20)
    fc = forecast(t, y, 0.2)
    assert fc.applicable and fc.best == "constant" and fc.n_train == 4
    s = np.std(y[:4], ddof=1)
    assert fc.upper[0] - fc.prediction[0] == pytest.approx(2.3533634 * s * math.sqrt(2.0))
    assert fc.prediction[0] == pytest.approx(y[3]) == pytest.approx(last_value(y[:4]))
    # that interval covers a little over 90 % of new points (Monte Carlo over 20000 prefixes of
    # 4 points: the last point is one of those s is taken from, so not exactly 0.9)
    z = rng.standard_normal((20000, 5))
    half = 2.3533634 * np.std(z[:, :4], ddof=1, axis=1) * math.sqrt(2.0)
    assert 0.9 <= np.mean(np.abs(z[:, 4] - z[:, 3]) <= half) <= 0.94
    # equal points leave no spread to size a band from: declined, with the reason
    fc = forecast(t, np.r_[np.full(4, 0.5), np.linspace(0.5, 0.6, 16)], 0.2)
    assert not fc.applicable and "no spread" in fc.reasons[0]


def test_band_holds_the_spread_of_the_families_the_prefix_cannot_tell_apart(monkeypatch):
    # a two-time-scale curve (dense units, no range cut) whose 30 % prefix leaves the exponential
    # and the oscillator within one standard error of each other: the curve is the simplest
    # family's, and the band's half-width^2 grows by exactly 1.645^2 x the mean squared distance
    # of the tied families' own curves (from their fits, recomputed here) from the forecast

    t = np.arange(100.0)
    mu = 5.9 - 0.7 * (0.5 * np.exp(-t / 5) + 0.5 * np.exp(-t / 60))
    y = mu + 0.02 * np.random.default_rng(5).standard_normal(t.size)
    fc = forecast(t, y, 0.3, FAST)
    assert fc.reward_range is None and fc.best == "exponential"
    assert sorted(fc.band_families) == ["exponential", "oscillator"]
    assert fc.to_dict()["interval"]["families"] == fc.band_families
    th = fc.t_holdout
    d2 = np.mean([(fc.fits[m].predict(th - fc.fits[m].t0) - fc.prediction) ** 2
                  for m in fc.band_families], axis=0)
    assert np.max(d2) > 0
    real_select = F._select
    monkeypatch.setattr(F, "_select", lambda ro: (lambda b, m, tied: (b, m, [b]))(*real_select(ro)))
    alone = forecast(t, y, 0.3, FAST)
    assert alone.band_families == ["exponential"]
    np.testing.assert_allclose(alone.prediction, fc.prediction)
    half, half0 = (fc.upper - fc.lower) / 2, (alone.upper - alone.lower) / 2
    np.testing.assert_allclose(half ** 2 - half0 ** 2, F.Z90 ** 2 * d2, rtol=1e-9, atol=1e-15)


def test_a_calibration_multiplies_the_band_and_nothing_else():
    """The band learns nothing from other runs by default (calibration 1: the scorecard measured
    a scale learned from other repositories lowering the pooled coverage); a calibration a user
    gives widens (or narrows) the half-width before it is cut to the range, and the curve, the
    choice and the baselines stay."""
    import inspect

    assert inspect.signature(forecast).parameters["calibration"].default == 1.0
    assert not hasattr(F, "CONFORMAL_SCALE")
    rng = np.random.default_rng(3)
    t, _, y = _synthetic(rng, 0, 40)
    a = forecast(t, y, 0.5, ["exponential"])
    q = 1.37
    c = forecast(t, y, 0.5, ["exponential"], calibration=q)
    assert a.calibration == 1.0 and a.to_dict()["interval"]["calibration"] == 1.0
    assert np.allclose(c.half, q * a.half) and np.allclose(a.prediction, c.prediction)
    assert a.best == c.best and a.baselines == c.baselines and c.calibration == q
    lo, hi = a.reward_range or (-np.inf, np.inf)
    assert np.allclose(c.lower, np.maximum(c.prediction - c.half, lo))
    assert np.allclose(c.upper, np.minimum(c.prediction + c.half, hi))
    assert c.to_dict()["interval"]["calibration"] == q
    with pytest.raises(ParameterError, match="calibration"):
        forecast(t, y, 0.5, FAST, calibration=0.0)


def test_conformal_scale_quantile_with_runs_as_units():
    """The quantile against hand computations, with points or runs as the units, and the level
    carrying split conformal's ceil((m + 1) 0.9) / m correction."""
    from grpo_theory.runs.forecast import conformal_scale

    assert conformal_scale([]) is None and conformal_scale([{"scores": []}]) is None
    # 19 points, scores 1..19: level ceil(20 * 0.9) / 19 = 18 / 19 -> the 18th, however the
    # points are split into runs
    runs = [{"scores": [float(k)]} for k in range(1, 20)]
    assert conformal_scale(runs) == 18.0 == conformal_scale(runs, weight="runs")
    assert conformal_scale([{"scores": [float(k) for k in range(1, 20)]}]) == 18.0
    # with runs as the units one long run of small scores cannot pull the scale down: 9 short
    # runs at 10, one run of 1000 points at 0.1 -> the 90 % (corrected: 100 %) run point is 10;
    # with points as the units the long run is 1000 of 1009 points -> 0.1
    runs = [{"scores": [10.0]} for _ in range(9)] + [{"scores": [0.1] * 1000}]
    assert conformal_scale(runs, weight="runs") == 10.0 and conformal_scale(runs) == 0.1
    with pytest.raises(ParameterError, match="weight"):
        conformal_scale(runs, weight="repos")
    # exchangeable draws: the scaled band covers about 90 % of new runs' points
    rng = np.random.default_rng(4)
    cal = [{"scores": list(np.abs(rng.standard_normal(int(rng.integers(5, 50)))))}
           for _ in range(200)]
    q = conformal_scale(cal)
    assert abs(q - 1.645) < 0.15
    new = np.abs(rng.standard_normal(20000))
    assert 0.88 <= np.mean(new <= q) <= 0.93


def _scorecard():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "scorecard.py"
    if not path.is_file():
        pytest.skip("benchmarks/ is not shipped with the wheel")
    spec = importlib.util.spec_from_file_location("scorecard", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_scorecard_coverage_by_repository_against_hand_counts():
    """The scorecard's coverage of the band as shipped (a point is covered where its score is <=
    1) and of the leave-one-repository-out conformal comparison, counted by hand."""
    sc = _scorecard()
    recs = {0.2: [{"run": "a1", "repo": "A", "bench": "pub", "scores": [0.5, 1.0, 1.5, 2.0]},
                  {"run": "a2", "repo": "A", "bench": "pub", "scores": [0.1, 0.2]},
                  {"run": "b1", "repo": "B", "bench": "lab", "scores": [3.0, 0.9, 1.2]}]}
    c = sc.coverage_by_repo(recs)["by_fraction"][0.2]
    # A: 0.5, 1.0, 0.1, 0.2 of 6 covered; B: 0.9 of 3
    assert c["by_repo"]["A"] == (4 / 6, 6, 2, 1.0) and c["by_repo"]["B"] == (1 / 3, 3, 1, 1.0)
    assert c["by_bench"]["all"]["pooled"] == 5 / 9
    assert c["by_bench"]["all"]["per_run_mean"] == pytest.approx((2 / 4 + 1 + 1 / 3) / 3)
    assert c["by_bench"]["pub"]["pooled"] == 4 / 6 and c["by_bench"]["lab"]["runs"] == 1
    # leave one repository out: A's scale from B's 3 scores alone (rank ceil(4 * 0.9) = 4 > 3:
    # the largest, 3.0), B's from A's 6 (rank ceil(7 * 0.9) = 7 > 6: the largest, 2.0)
    lo = sc.conformal_loro(recs)["by_fraction"][0.2]["by_repo"]
    assert lo["A"] == (1.0, 6, 2, 3.0) and lo["B"] == (2 / 3, 3, 1, 2.0)
