"""Families of runs: simulated families with known exponents are recovered within the reported
intervals; the invariance test passes a G-invariant family and rejects one whose plateau moves
with G; bad input gets one clear line."""

import json
import math

import numpy as np
import pytest

from grpo_theory.cli.main import main
from grpo_theory.runs.compare import compare, fluctuation_regime
from grpo_theory.runs.logs import TrainingLog, from_simulation
from grpo_theory.model import GRPOModel
from support import simulate
from grpo_theory.validate import ParameterError

pytestmark = pytest.mark.xdist_group("compare")   # its module fixture is built on one worker



# A bandit with a stable plateau: exact KL (beta = 2) to p_ref = 0.7.  With mean
# normalization (Dr. GRPO) the plateau hardly moves with G (p* = 0.772 .. 0.791 for G = 4..32).
BANDIT = dict(p_ref=0.7, kl="exact", kl_coef=2.0, p0=0.3, record=("reward",))


def _run(seed, **kw):
    return from_simulation(simulate(runs=1, seed=seed, **{**BANDIT, **kw}), 0)


@pytest.fixture(scope="module")
def group_sweep():
    """G = 4, 8, 16, 32, one run each, 1500 steps, at p* ~ 0.78 where G min(p, 1-p) >= 0.9 and
    the exact finite-G noise is within 0.2 of the 1/G law (local exponents -0.81 .. -0.98)."""
    sizes = [4, 8, 16, 32]
    logs = [_run(100 + G, steps=1500, group_size=G, normalization="mean", learning_rate=0.25)
            for G in sizes]
    return compare(logs, by="group_size", values=sizes, normalization="mean")


def test_group_sweep_recovers_one_over_g(group_sweep):
    a = group_sweep.analysis
    lo, hi = a.exponent.interval
    assert lo <= -1.0 <= hi, a.exponent
    assert hi - lo < 0.6  # resolved: excludes G-independence (0) and 1/G^2 (-2)
    assert lo <= a.predicted_exponent <= hi and a.agrees
    assert all(r == "1/G" for r in a.regimes)
    # the invariance test's p-value is printed as such, below 0.001 as "< 0.001" (never "p = 0")
    line = next(ln for ln in str(group_sweep).splitlines() if ln.startswith("invariance"))
    pv = ("< 0.001" if a.p_value < 1e-3 else f"{a.p_value:.3g}")
    assert f"p-value {pv} -> " in line


def test_invariance_accepts_replicates():
    """The null is true for replicates (same G, different seeds): the block chi^2 must not reject."""
    logs = [_run(seed, steps=600, group_size=8, normalization="mean", learning_rate=0.25)
            for seed in (1, 2, 3)]
    res = compare(logs, by="group_size", values=[8, 8, 8], normalization="mean")
    a = res.analysis
    assert a.p_value > 0.01
    assert "exponent" in a.declined                      # one group size: no exponent
    # ... nor a verdict on G-invariance (issue 29: replicates at one G were "consistent with
    # G-invariance"): the chi2 is kept as what it is, a replicate check
    assert a.invariant is None and "2 or more group sizes" in a.declined["invariance"]
    assert "G-invariance" not in str(res).split("declined")[0]
    assert "consistent with each other (replicates)" in str(res)


def test_one_run_given_twice_is_refused(tmp_path, capsys):
    """The same log twice (or a copy of it) was compared with itself: chi2 = 0, p = 1,
    "consistent with G-invariance" (issue 29).  It is one run, not a family."""
    from grpo_theory.data import example_log

    log = str(example_log())
    copy = tmp_path / "copy.log"
    copy.write_bytes(open(log, "rb").read())
    for pair in ([log, log], [log, str(copy)]):
        assert main(["compare", *pair, "--by", "group_size", "--values", "4,8"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "LOG must be a run other than" in err


def test_invariance_rejects_a_plateau_that_moves_with_g():
    """With std normalization the exact finite-G drift moves the plateau (p* = 0.83 at G = 4,
    0.93 at G = 32): the test must see it."""
    logs = [_run(7 + G, steps=600, group_size=G, normalization="std", learning_rate=0.25)
            for G in (4, 32)]
    a = compare(logs, by="group_size", values=[4, 32], normalization="std").analysis
    assert a.p_value < 1e-3 and not a.invariant


def test_regimes_from_the_exact_finite_g_noise():
    e_half, reg_half = fluctuation_regime(0.5, 16, normalization="mean")
    assert e_half < -1.5 and "1/G^2" in reg_half          # the 1/G term vanishes at p = 1/2
    e_rare, reg_rare = fluctuation_regime(0.97, 4, normalization="std")
    assert e_rare > -0.5 and "rare" in reg_rare            # G (1 - p) = 0.12
    assert fluctuation_regime(0.78, 16, normalization="mean")[1] == "1/G"


@pytest.fixture(scope="module")
def size_family():
    """'Model size' built into the stiffness: near the plateau the relaxation time is
    1/(eta K); member N gets K -> K N^alpha, realized as the learning rate 0.05 N^alpha
    (eta and K enter the linearized map only as eta K), alpha = 0.5, N = 1, 2, 4, 8."""
    sizes, alpha = [1, 2, 4, 8], 0.5
    logs = [_run(10 + i, steps=600, group_size=8, normalization="mean",
                 learning_rate=0.05 * N**alpha) for i, N in enumerate(sizes)]
    return compare(logs, by="model_size", values=sizes), alpha


def test_size_exponent_recovered_within_interval(size_family):
    res, alpha = size_family
    reg = res.analysis.regression
    lo, hi = reg.interval
    assert lo <= -alpha <= hi, reg                          # tau ~ N^-alpha
    assert hi < 0                                           # resolved: alpha > 0
    jlo, jhi = res.analysis.joint_interval
    assert jlo <= -alpha <= jhi
    assert "alpha = " in res.analysis.reading
    text = json.loads(res.to_json())
    assert text["by"] == "model_size" and len(text["runs"]) == 4


def test_learning_rate_family_matches_inverse_eta():
    etas = [0.04, 0.08, 0.16]
    logs = [_run(30 + i, steps=500, group_size=8, normalization="mean", learning_rate=eta)
            for i, eta in enumerate(etas)]
    a = compare(logs, by="learning_rate").analysis           # values read from the configs
    assert a.expected == pytest.approx(-1.0)
    assert a.agrees, a.regression


def test_refresh_family_shows_lag_eroding_the_damping():
    """Refresh interval k = 1, 3, 5, 7 on a bandit whose stiffness is all stale (exact KL,
    beta = 0.5, p_ref = 0.3, mean normalization: K_f/K ~ 0 at p* = 0.754), started near the
    plateau so that tau is the linear relaxation time; each log is the mean of 128 runs.
    First-order theory: tau = gamma/(eta K) falls by K_s/K = 1 step per step of lag (k-1)/2."""
    from grpo_theory.theory.fixed_points import stable_fixed_point

    fp = stable_fixed_point(GRPOModel(p_ref=0.3, kl="exact", kl_coef=0.5, group_size=64,
                                      normalization="mean"))
    phi = fp.stiffness_fresh / fp.stiffness
    logs = []
    for k in (1, 3, 5, 7):
        r = simulate(steps=300, runs=128, group_size=64, normalization="mean", learning_rate=0.5,
                     refresh_interval=k, p_ref=0.3, kl="exact", kl_coef=0.5, p0=0.6, seed=50 + k,
                     record=("reward",))
        y = np.asarray(r.reward).mean(axis=0)
        logs.append(_log(np.arange(y.size), y, f"k{k}"))
    a = compare(logs, by="refresh_interval", values=[1, 3, 5, 7], fresh_fraction=phi).analysis
    lo, hi = a.regression.interval
    assert a.expected == pytest.approx(-(1 - phi))
    assert lo <= a.expected <= hi < 0, a.regression     # erosion resolved


def test_plot_and_cli(tmp_path):
    logs = []
    for i, N in enumerate([1, 4]):
        path = tmp_path / f"run{N}.csv"
        lg = _run(40 + i, steps=300, group_size=8, normalization="mean", learning_rate=0.05 * N**0.5)
        s, y = lg.series("reward")
        path.write_text("step,reward\n" + "".join(f"{a:g},{float(b)!r}\n" for a, b in zip(s, y)))
        logs.append(str(path))
    fig = tmp_path / "fig.png"
    assert main(["compare", *logs, "--by", "model_size", "--values", "1,4", "--plot", str(fig)]) == 0
    assert fig.stat().st_size > 1000


def _log(steps, values, name="r", metric="reward"):
    return TrainingLog(metrics={metric: (np.asarray(steps, float), np.asarray(values, float))},
                       source=name, default_metric=metric)


def test_non_binary_reward_declines_the_one_over_g_comparison():
    rng = np.random.default_rng(0)
    t = np.arange(300.0)
    logs = [_log(t, 2.0 - 1.5 * np.exp(-t / 30) + 0.1 * rng.standard_normal(t.size) / math.sqrt(G),
                 f"g{G}") for G in (4, 16)]
    res = compare(logs, by="group_size", values=[4, 16])
    assert res.analysis.exponent is not None
    assert res.analysis.predicted_exponent is None and "0/1" in res.analysis.declined["theory"]
    assert "declined (theory)" in str(res)


def test_bad_input(capsys):
    t = np.arange(50.0)
    good = _log(t, 0.5 - 0.3 * np.exp(-t / 10))
    with pytest.raises(ParameterError, match="at least 2 logs"):
        compare([good], by="group_size", values=[4])
    with pytest.raises(ParameterError, match="same reward metric"):
        compare([good, _log(t, 0.5 - 0.3 * np.exp(-t / 10), metric="critic/score/mean")],
                by="group_size", values=[4, 8])
    with pytest.raises(ParameterError, match="at least 10"):
        compare([good, _log(t[:5], t[:5] / 10)], by="group_size", values=[4, 8])
    with pytest.raises(ParameterError, match="one value per log"):
        compare([good, good], by="group_size", values=[4])
    with pytest.raises(ParameterError, match="--values"):
        compare([good, good], by="model_size")
    with pytest.raises(ParameterError, match="by must be"):
        compare([good, good], by="seed", values=[1, 2])
    with pytest.raises(ParameterError, match="existing directory"):
        compare([good, good], by="group_size", values=[4, 8], plot="/no/such/dir/fig.png")
    assert main(["compare", "nothere.csv", "other.csv", "--by", "group_size"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothere.csv" in err


def test_compare_reads_simulate_out_files_as_they_are(tmp_path, capsys):
    """`simulate --out` writes the ensemble mean as mean_reward: compare finds it with no
    --metric."""
    paths = []
    for lr in ("0.1", "0.2"):
        path = tmp_path / f"lr{lr}.csv"
        assert main(["simulate", "--steps", "60", "--runs", "32", "--learning-rate", lr,
                     "--out", str(path)]) == 0
        paths.append(str(path))
    capsys.readouterr()
    assert main(["compare", *paths, "--by", "learning_rate", "--values", "0.1,0.2",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metric"] == "mean_reward"


def test_an_interval_holding_zero_is_not_called_agreement():
    # two learning rates 1 % apart, relaxations written out here with the same time scale (25 steps)
    # in noise: the exponent's interval holds both the theory's -1 and 0 (no dependence), so
    # the text says not resolved, never a bare "agrees"
    from grpo_theory.runs.logs import TrainingLog

    t = np.arange(150.0)
    logs = [TrainingLog(metrics={"reward": (t, 0.8 - 0.6 * np.exp(-t / 25.0) + 0.04
                                            * np.random.default_rng(seed).standard_normal(t.size))})
            for seed in (1, 2)]
    res = compare(logs, by="learning_rate", values=[0.05, 0.0505])
    lo, hi = res.analysis.regression.interval
    assert lo <= -1 <= hi and lo <= 0 <= hi and res.analysis.agrees
    assert "-> consistent, not resolved" in str(res) and "-> agrees" not in str(res)


def test_runs_that_fit_declines_give_no_time_scale_and_no_law():
    # issue 29 item 6 (seen on two public TRL logs at G = 2, which `fit` declines for noise while
    # compare used their tau 97 [8.9, 1.1e3]): two relaxations read through G = 2 binary rewards
    # (values 0, 1/2, 1), the step-to-step noise far above the rise
    from grpo_theory.runs.curves import fit_curve
    from grpo_theory.runs.curves import applicability

    t = np.arange(1, 201.0)
    rng = np.random.default_rng(3)
    logs = []
    for k, (p0, p1) in enumerate([(0.25, 0.5), (0.3, 0.6)]):
        y = rng.binomial(2, p1 - (p1 - p0) * np.exp(-(t - 1) / 20)) / 2
        fr = fit_curve(t, y, "exponential")
        assert 1 < fr.params["tau"] < t[-1] - t[0]          # the exponential alone gives a tau ...
        assert applicability(t, y)                          # ... that `fit` would not read
        logs.append(TrainingLog(metrics={"reward": (t, y)}, source=f"logs/run{k}/gate.log",
                                default_metric="reward"))
    res = compare(logs, by="refresh_interval", values=[1, 2])
    assert not any(f.identified for f in res.runs)
    assert all("does not apply" in f.reason for f in res.runs)
    assert res.analysis.regression is None and "law" in res.analysis.declined
    assert "tau vs lag slope" not in str(res)
    # issue 29 item 7: the runs are told apart by the shortest unique path suffix
    assert [f.label for f in res.runs] == ["run0/gate.log", "run1/gate.log"]
    rows = str(res).splitlines()
    assert rows[2].split()[0] == "run0/gate.log" and rows[3].split()[0] == "run1/gate.log"


def test_run_labels_are_file_names_or_the_shortest_unique_suffix():
    from grpo_theory.runs.compare import run_labels

    # a folder name longer than 40 characters was shown alone, the same for every run
    d = "/data/Sunshine535__nips-grpo-dynamics-and-more"
    assert run_labels([f"{d}/gate2_rho1.00_seed42.log", f"{d}/gate2_rho3.00_seed42.log"]) == \
        ["gate2_rho1.00_seed42.log", "gate2_rho3.00_seed42.log"]
    assert run_labels(["/a/b/run/x.log", "/a/c/run/x.log", "y.csv"]) == \
        ["b/run/x.log", "c/run/x.log", "y.csv"]
    long = "x" * 50 + ".log"
    assert run_labels([long, "y.log"]) == ["..." + long[-37:], "y.log"]
