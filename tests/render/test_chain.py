"""``derive``'s summaries (grpo_theory.render.chain): a cached run prints what a fresh one
prints, read from the summaries kept beside the records instead of the records themselves,
without loading sympy."""

import json
import os
import subprocess
import sys

from grpo_theory.render import chain
from grpo_theory.theory import derived


def _plain(result):
    """The printed chain without the per-record seconds."""
    return [line.rsplit("  (", 1)[0] if line.startswith("--- ") else line
            for line in str(result).splitlines()]


def test_a_cached_derive_prints_and_reports_what_a_fresh_one_does(monkeypatch, tmp_path):
    names = derived.all_names("oscillator")
    records = {name: derived.get(name) for name in names}     # from the session's cache
    monkeypatch.setenv("GRPO_THEORY_CACHE", str(tmp_path))
    monkeypatch.setattr(derived, "_TIMINGS", {})   # none derived in this run: summaries are kept
    for name, record in records.items():      # the records in a fresh cache, no summaries yet
        derived._store(derived._cache_path(name), record)
    first = chain.derive_chain("oscillator", compile_pdf=False)
    kept = [derived.side_cache_path(n, chain._summary_tag()) for n in names]
    assert all(p.exists() for p in kept)

    def no_records(name):                     # a cached run does not unpickle the records
        raise AssertionError(f"{name} loaded")

    monkeypatch.setattr(derived, "get", no_records)
    second = chain.derive_chain("oscillator", compile_pdf=False)
    assert _plain(second) == _plain(first)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in second.to_dict()["results"]]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"}
                     for r in json.loads(first.to_json())["results"]]
    # a summary written by other rendering code is not read
    monkeypatch.setattr(chain, "_summary_tag", lambda: "summary-other.json")
    assert chain._cached_summary(names[0]) is None


def test_a_cached_derive_does_not_load_sympy_and_a_missing_summary_is_derived(monkeypatch,
                                                                             tmp_path):
    names = derived.all_names("noise")
    records = {name: derived.get(name) for name in names}     # from the session's cache
    monkeypatch.setenv("GRPO_THEORY_CACHE", str(tmp_path))
    monkeypatch.setattr(derived, "_TIMINGS", {})
    for name, record in records.items():
        derived._store(derived._cache_path(name), record)
    first = chain.derive_chain("noise", compile_pdf=False)     # writes summaries and names
    code = ("import sys; from grpo_theory.render.chain import derive_chain; "
            "r = derive_chain('noise', compile_pdf=False); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sympy', 'mpmath'))); "
            "print(str(r))")
    env = dict(os.environ, GRPO_THEORY_CACHE=str(tmp_path), GRPO_THEORY_PROGRESS="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout.split("\n", 1)
    assert out[0] == "[]"                      # neither sympy nor mpmath was imported
    assert _plain(out[1].rstrip("\n")) == _plain(first)
    # one summary gone: that record is loaded from its pickle, the rest printed the same
    derived.side_cache_path(names[1], chain._summary_tag()).unlink()
    third = chain.derive_chain("noise", compile_pdf=False)
    assert _plain(third) == _plain(first)
    assert derived.side_cache_path(names[1], chain._summary_tag()).exists()


def test_the_warm_up_workers_keep_the_summaries_of_what_they_derive(monkeypatch, tmp_path):
    names = derived.all_names("noise")
    others = [n for n in derived.all_names() if n.split(".")[0] != "noise"]
    records = {name: derived.get(name) for name in others + names}   # the session's cache
    monkeypatch.setenv("GRPO_THEORY_CACHE", str(tmp_path))
    monkeypatch.setattr(derived, "_TIMINGS", {})
    monkeypatch.setattr(derived, "_COMPUTED", {})
    for name in others:                 # everything but the chapter, which the workers derive
        derived._store(derived._cache_path(name), records[name])
    assert derived.warm_cache(workers=2, names=names, after=chain._summarize) == len(names)
    for name in names:                  # written in the workers, as the record prints
        summary, lines = chain._cached_summary(name)
        want = chain.record_summary(records[name])
        assert lines == chain.record_lines(want)
        assert {k: v for k, v in summary.items() if k != "seconds"} == \
            {k: v for k, v in want.items() if k != "seconds"}
    assert set(derived.timings()) == set(names)     # derived there, not here
