"""grpo_theory.outputs.atomic_output: an output appears whole or not at all (issue 29 item 4)."""

import os
import signal
import stat

import pytest

from grpo_theory.outputs import atomic_output, relocate


def _listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_a_failed_file_leaves_the_earlier_one_and_nothing_else(tmp_path, error):
    target = tmp_path / "fig.png"
    target.write_text("earlier")
    with pytest.raises(error):
        with atomic_output(target) as tmp:
            assert tmp.parent == tmp_path and tmp.suffix == ".png" and not tmp.exists()
            tmp.write_text("half")
            raise error
    assert _listing(tmp_path) == ["fig.png"] and target.read_text() == "earlier"


def test_a_file_replaces_the_earlier_one_with_the_umask_permissions(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("earlier")
    with atomic_output(target) as tmp:
        tmp.write_text("new")
        assert target.read_text() == "earlier"       # not touched before the end
    assert target.read_text() == "new" and _listing(tmp_path) == ["out.csv"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask


def test_a_failed_directory_leaves_nothing_not_even_the_parents_it_made(tmp_path):
    target = tmp_path / "a" / "b" / "rep"
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(target, directory=True) as tmp:
            (tmp / "fig.png").write_text("x")
            (tmp / "sub").mkdir()
            raise KeyboardInterrupt
    assert _listing(tmp_path) == []


def test_a_new_directory_appears_whole(tmp_path):
    target = tmp_path / "rep"
    with atomic_output(target, directory=True) as tmp:
        (tmp / "report.md").write_text("r")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "x.json").write_text("{}")
        assert not target.exists()
    assert _listing(tmp_path) == ["rep", "rep/report.md", "rep/sub", "rep/sub/x.json"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o777 & ~mask
    assert relocate(tmp / "sub" / "x.json", tmp, target) == target / "sub" / "x.json"
    assert relocate(None, tmp, target) is None and relocate("/else", tmp, target) == "/else"


def test_an_existing_directory_keeps_foreign_files_and_loses_the_stale_ones(tmp_path):
    """--force over an earlier output in a directory that also holds the user's own files."""
    target = tmp_path / "rep"
    (target / "group_size" / "old_run").mkdir(parents=True)
    (target / "report.md").write_text("earlier")
    (target / "equations.pdf").write_text("earlier pdf")     # this run makes no PDF
    (target / "notes.txt").write_text("mine")
    with atomic_output(target, directory=True, stale=("equations.*",)) as tmp:
        (tmp / "report.md").write_text("new")
        (tmp / "equations.tex").write_text("tex")
        (tmp / "group_size" / "new_run").mkdir(parents=True)
    assert _listing(tmp_path) == ["rep", "rep/equations.tex", "rep/group_size",
                                  "rep/group_size/new_run", "rep/notes.txt", "rep/report.md"]
    assert (target / "report.md").read_text() == "new"
    assert (target / "notes.txt").read_text() == "mine"


def test_ctrl_c_during_the_final_moves_is_held_back_until_they_are_done(tmp_path, monkeypatch):
    target = tmp_path / "rep"
    target.mkdir()
    real_replace = os.replace
    sent = []

    def replace_after_ctrl_c(src, dst):
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C arrives between two renames
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_after_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(target, directory=True) as tmp:
            for name in ("a", "b", "c"):
                (tmp / name).write_text(name)
    assert sent and _listing(tmp_path) == ["rep", "rep/a", "rep/b", "rep/c"]


def test_a_killed_writers_temporary_sibling_is_removed_by_the_next_run(tmp_path):
    """SIGKILL runs no handler: the hidden sibling stays. The next write to the same target
    removes it (its process is gone), and keeps a live writer's sibling."""
    import os
    import subprocess
    import sys
    code = ("import os, sys, signal; from grpo_theory.outputs import atomic_output\n"
            "with atomic_output(sys.argv[1], directory=True) as tmp:\n"
            "    (tmp / 'half.txt').write_text('x'); os.kill(os.getpid(), signal.SIGKILL)\n")
    target = tmp_path / "report"
    subprocess.run([sys.executable, "-c", code, str(target)], check=False)
    orphans = [p.name for p in tmp_path.iterdir()]
    assert len(orphans) == 1 and orphans[0].startswith(".report.") and ".tmp" in orphans[0]
    live = tmp_path / f".report.{os.getpid()}.abcd.tmp"       # this process: alive
    live.mkdir()
    with atomic_output(target, directory=True) as tmp:
        (tmp / "done.txt").write_text("ok")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["report", live.name])
