"""The record object (grpo_theory.theory.derived): what survives the disk cache, and the
document printer."""

import pickle

import pytest
import sympy as sp

from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import all_names, build, get, latex


@pytest.mark.parametrize("name, shown", [
    ("discrete.refresh_effective_lag", r"\frac{k - 1}{2}"),        # not k/2 - 1/2
    ("noise.ar2_stability_bound", r"2 \left(1 + \mu\right)"),      # not 2 mu + 2
])
def test_a_cached_record_prints_as_it_was_built(name, shown):
    fresh = build(name)
    again = pickle.loads(pickle.dumps(fresh))
    assert shown in fresh.latex()
    assert again.latex() == fresh.latex()
    assert sp.srepr(again.expr) == sp.srepr(fresh.expr)
    assert again.verifications == fresh.verifications


def test_every_cached_record_prints_as_it_was_built():
    """The cache must not change the printed form of any record (srepr is used only where it
    round-trips to the same LaTeX; an unevaluated product can print differently).  Every
    record carries its printed form from build time through the pickle (``latex_as_built``);
    loaded from the disk cache (or computed here), pickled once more, it must still print so."""
    names = all_names()
    assert len(names) >= 100
    for name in names:
        again = pickle.loads(pickle.dumps(get(name)))
        assert again.latex() == again.latex_as_built, name


def test_the_printed_form_at_build_time_is_kept_through_a_second_pickle():
    fresh = build("noise.ar2_stability_bound")
    once = pickle.loads(pickle.dumps(fresh))
    once.lhs = "changed"                         # a second pickle keeps the first printed form
    assert pickle.loads(pickle.dumps(once)).latex_as_built == fresh.latex()


def test_plain_pickling_would_change_the_printed_form():
    """Why the record stores its expression as srepr: sympy re-evaluates a pickled tree."""
    e = sp.Mul(sp.Rational(1, 2), S.k_ref - 1, evaluate=False)
    assert sp.latex(pickle.loads(pickle.dumps(e))) != sp.latex(e)


def test_loggamma_is_printed_as_log_gamma():
    x = sp.Symbol("x", positive=True)             # a real argument keeps loggamma unevaluated
    assert latex(sp.loggamma(x + 1)) == r"\log \Gamma\left(x + 1\right)"


def test_a_displayed_form_is_proven_equal_and_the_proof_fails_when_perturbed():
    from grpo_theory.theory.derived import Derived, VerificationError

    sd = sp.sqrt(S.n * (S.G - S.n) / (S.G * (S.G - 1)))
    expr = S.n * (S.G - S.n) / S.G**2 / (sd + S.eps)
    form = S.n * (S.G - S.n) / (S.G**2 * (S.eps + S.sd_n))
    ok = Derived("t.shown", expr, (S.n, S.G, S.eps), "A", "a test record")
    ok.show(form, [(S.sd_n, sd, "")])
    assert ok.display is form and ok.verifications[-1].passed
    assert r"\hat{\sigma}_{n}" in ok.latex() and ok.where_latex()[0][0] == r"\hat{\sigma}_{n}"
    bad = Derived("t.shown", expr * (1 + S.eps), (S.n, S.G, S.eps), "A", "a test record")
    with pytest.raises(VerificationError):
        bad.show(form, [(S.sd_n, sd, "")])


def test_every_record_has_a_title_and_finite_checks_name_their_cases():
    import re

    listed = re.compile(r"\\dots|=\s*[-\d/]+,\s*[-\d/]+")     # "G = 2, 3, 4", "k = 1, \dots, 6"
    for name in all_names():
        d = get(name)
        assert d.title and "_" not in d.title.replace("$", "").split("{")[0], name
        for v in d.verifications:
            if v.method == "sympy" and not v.cases:
                assert not listed.search(v.claim), (name, v.claim)


# -- one derivation per record across processes ---------------------------------------------

def _logging_records(monkeypatch, tmp_path, names):
    """Records ``lk.*`` registered for the test (``lk.base`` takes half a second; every other
    one uses it); each build appends its name to ``tmp_path/built`` (from any process).  The
    disk cache is a fresh directory and ``all_names`` lists only these records."""
    import time

    from grpo_theory.theory import derived as D

    monkeypatch.setenv("GRPO_THEORY_CACHE", str(tmp_path / "cache"))
    log = tmp_path / "built"

    def record(name, needs_base):
        def build():
            if needs_base:
                D.get("lk.base")
            else:
                time.sleep(0.5)
            with open(log, "a") as fh:
                fh.write(name + "\n")
            return D.Derived(name, sp.Integer(1), (), name, "a test record")
        return build

    for name in names:
        monkeypatch.setitem(D._REGISTRY, name, record(name, name != "lk.base"))
    monkeypatch.setattr(D, "all_names", lambda chapter=None: list(names))
    monkeypatch.setattr(D, "_COMPUTED", {})       # this process's records and times: the
    monkeypatch.setattr(D, "_TIMINGS", {})        # test's own, restored after it
    return log


def test_two_processes_never_derive_one_record_twice(monkeypatch, tmp_path):
    """Two processes ask for the same slow record on an empty cache: one derives it, the other
    waits for its lock and loads what the first wrote."""
    import multiprocessing

    from grpo_theory.theory import derived as D

    log = _logging_records(monkeypatch, tmp_path, ["lk.base"])
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=D.get, args=("lk.base",)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert log.read_text().split() == ["lk.base"]
    assert D.is_cached("lk.base")


def test_the_warm_up_derives_each_record_once_and_all_of_them(monkeypatch, tmp_path):
    """warm_cache with 2 workers: while one derives lk.base, the other's records that need it
    are put back (not derived a second time) and handed out once lk.base is in the cache."""
    from grpo_theory.theory import derived as D

    names = ["lk.base", "lk.top1", "lk.top2", "lk.top3", "lk.top4"]
    log = _logging_records(monkeypatch, tmp_path, names)
    assert D.warm_cache(2) == 5
    built = log.read_text().split()
    assert sorted(built) == sorted(names) and built[0] == "lk.base"
    assert all(D.is_cached(n) for n in names)


def test_the_warm_up_runs_meanwhile_here_while_the_workers_derive(monkeypatch, tmp_path):
    """warm_cache(meanwhile=f) calls f once in this process while the workers derive (the report
    imports its modules then), not at all when nothing is missing, and raises what f raised."""
    import os

    from grpo_theory.theory import derived as D

    names = ["lk.base", "lk.top1", "lk.top2", "lk.top3", "lk.top4"]
    log = _logging_records(monkeypatch, tmp_path, names)
    calls = []

    def meanwhile():
        calls.append((os.getpid(), log.read_text().split() if log.exists() else []))

    assert D.warm_cache(2, meanwhile=meanwhile) == 5
    # here, before any record was stored (lk.base sleeps 0.5 s, the others need it)
    assert calls == [(os.getpid(), [])] and all(D.is_cached(n) for n in names)
    assert D.warm_cache(2, meanwhile=meanwhile) == 0 and len(calls) == 1    # nothing to derive
    for n in names:
        D._cache_path(n).unlink()

    def fails():
        raise ValueError("meanwhile failed")

    with pytest.raises(ValueError, match="meanwhile failed"):
        D.warm_cache(2, meanwhile=fails)
    assert all(D.is_cached(n) for n in names)      # the workers finished first


def test_a_record_locked_too_long_is_derived_anyway(monkeypatch, tmp_path):
    """A process that holds a record's lock beyond LOCK_WAIT (stopped, stuck) is not waited for
    for ever: the record is derived here."""
    import fcntl
    import time

    from grpo_theory.theory import derived as D

    log = _logging_records(monkeypatch, tmp_path, ["lk.base"])
    monkeypatch.setattr(D, "LOCK_WAIT", 0.3)
    path = D._cache_path("lk.base")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a+b") as held:   # another holder (flock: per open file)
        fcntl.flock(held, fcntl.LOCK_EX)
        start = time.monotonic()
        D.get("lk.base")
        assert time.monotonic() - start >= 0.3
    assert log.read_text().split() == ["lk.base"]


def test_every_record_is_registered_by_its_own_chapter():
    """A chapter's list of record names is kept in the chapter's hashed cache directory
    (theory/cache.py), which changes with the chapter's own files and what they import: so a
    record ``chapter.name`` must be registered by that chapter's module (or package)."""
    from grpo_theory.theory import derived as D

    D.all_names()
    strays = [(name, fn.__module__) for name, fn in D._REGISTRY.items()
              if not (fn.__module__ + ".").startswith(f"grpo_theory.theory.{name.split('.')[0]}.")]
    assert strays == []


def test_taylor_is_the_series_of_an_analytic_expression_and_refuses_the_others():
    """``derived.taylor`` (derivatives at 0) against sympy's own ``series``, and its refusal where
    the expression is not analytic at 0 (a coefficient is not finite)."""
    from grpo_theory.theory.derived import taylor

    x, a, b = sp.symbols("x a b", positive=True)
    for expr in (sp.log(1 + a * x) / (1 + b * x), sp.exp(a * x) * sp.cos(b * x),
                 (1 + x) ** a, sp.sqrt(1 + a * x) - sp.atan(b * x) ** 2):
        got = taylor(expr, x, 5)
        assert sp.expand(got - sp.series(expr, x, 0, 5).removeO()) == 0, expr
    assert sp.expand(taylor(sp.exp(x), x, 4) - (1 + x + x**2 / 2 + x**3 / 6)) == 0
    assert sp.expand(taylor(sp.exp(x), x, 4) - (1 + x + x**2 / 2 + x**3 / 5)) != 0
    for expr in (sp.log(x), sp.sqrt(x), x * sp.log(x), 1 / x):
        with pytest.raises(ValueError, match="not analytic"):
            taylor(expr, x, 3)


def test_building_the_high_precision_records_leaves_mpmath_s_precision_as_it_was():
    """A record's numeric check sets its working precision locally (``mpmath.workdps``): building
    the chapter whose checks run at 80 and 30 digits leaves the process's precision unchanged
    (it had set ``mpmath.mp.dps`` globally, for whatever ran next)."""
    import mpmath

    from grpo_theory.theory.derived import build

    before = mpmath.mp.dps
    for name in all_names("reuse_collapse"):
        build(name)
        assert mpmath.mp.dps == before, name
