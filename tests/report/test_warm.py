"""The report's warm path (:mod:`grpo_theory.report.warm`): a stage is read back with its files
and notes instead of being recomputed, keyed by its arguments; off with the cache."""

from pathlib import Path

from grpo_theory.report import warm


def _stage(out_dir, value, *, notes):
    _stage.calls += 1
    f = Path(out_dir) / f"fig_{value}.png"
    f.write_bytes(b"drawn %d" % value)
    notes.append(f"drew {value}")
    return [f], {"value": value, "calls": _stage.calls}


def test_a_stage_is_read_back_with_its_files_and_notes(tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_THEORY_CACHE", str(tmp_path / "cache"))
    _stage.calls = 0
    first_out, second_out = tmp_path / "a", tmp_path / "b"
    first_out.mkdir()
    second_out.mkdir()
    notes1, notes2, reused = [], [], []
    files1, rows1 = warm.reuse("toy", _stage, 3, out_dir=first_out, notes=notes1, reused=reused)
    files2, rows2 = warm.reuse("toy", _stage, 3, out_dir=second_out, notes=notes2, reused=reused)
    assert _stage.calls == 1 and reused == ["toy"]          # the second call read it back
    assert rows2 == rows1 and notes2 == notes1 == ["drew 3"]
    assert files2 == [second_out / "fig_3.png"] and files2[0].read_bytes() == b"drawn 3"
    warm.reuse("toy", _stage, 4, out_dir=second_out, notes=[], reused=reused)
    assert _stage.calls == 2 and reused == ["toy"]          # other arguments: computed


def test_no_reuse_without_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_THEORY_CACHE", "0")
    _stage.calls = 0
    for _ in range(2):
        warm.reuse("toy", _stage, 3, out_dir=tmp_path, notes=[])
    assert _stage.calls == 2 and warm.reuse_dir() is None


def test_old_code_versions_are_pruned(tmp_path):
    """Each code version keeps its own stages; only the most recently used ones stay."""
    import os
    base_parent = tmp_path / "report"
    for i in range(7):
        d = base_parent / f"v{i}"
        d.mkdir(parents=True)
        os.utime(d, (1000 + i, 1000 + i))            # v6 most recent, v0 oldest
    (base_parent / "v9.tmp123").mkdir()               # a stage being written elsewhere
    current = base_parent / "v0"                      # the running version: never removed
    removed = warm.prune(current, keep=4)
    assert sorted(d.name for d in removed) == ["v1", "v2", "v3"]
    assert sorted(d.name for d in base_parent.iterdir()) == ["v0", "v4", "v5", "v6", "v9.tmp123"]
