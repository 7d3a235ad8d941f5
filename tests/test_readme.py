"""The README shows what the tool really prints (issue 21 item 11).

Every ``$ grpo-theory ...`` line of a ``console`` block is run; the lines shown under it must
be lines of the real output, in order, the first one first (``...`` stands for lines left
out).  The Python block is executed and the output its ``# -> ...`` comments state is checked.
"""

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from grpo_theory.cli.main import main

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(kind):
    return re.findall(rf"```{kind}\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def _sessions():
    out = []
    for block in _blocks("console"):
        cmd = None
        for line in block.splitlines():
            if line.startswith("$ grpo-theory "):
                cmd = [shlex.split(line[2:])[1:], []]
                out.append(cmd)
            elif cmd is not None:
                cmd[1].append(line.rstrip())
    return out


def test_the_readme_has_a_tour():
    assert any(argv and shown for argv, shown in _sessions())


@pytest.mark.parametrize("argv,shown", _sessions(), ids=[" ".join(a[:2]) for a, _ in _sessions()])
def test_each_console_session_matches_the_real_output(capsys, argv, shown):
    main(argv)
    real = capsys.readouterr().out.splitlines()
    assert not [ln for ln in real if ln != ln.rstrip()], "trailing blanks in the output"
    want = [ln for ln in shown if ln.strip()]
    assert want and real, (argv, real)
    first = want[0][3:] if want[0].startswith(".../") else want[0]
    assert real[0].endswith(first) and (want[0].startswith(".../") or real[0] == first), \
        f"the README's first line is not the tool's:\n{want[0]}\n{real[0]}"
    i = 0
    for line in want:
        if line.strip() == "...":
            continue
        def same(a, b=line):   # ".../x" stands for a path that depends on the install
            return a.endswith(b[3:]) if b.startswith(".../") else a == b

        while i < len(real) and not same(real[i]):
            i += 1
        assert i < len(real), f"README line not in the output (in this order):\n{line}\n\n" + "\n".join(real)
        i += 1


def test_the_python_example_runs_and_prints_what_its_comments_say():
    (code,) = [b for b in _blocks("python") if "import grpo_theory" in b]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, str(README), "exec"), {})
    printed = buf.getvalue().splitlines()
    expected = [m.group(1).strip() for m in re.finditer(r"^print\(.*#\s*->\s*(\S.*)$", code,
                                                          re.MULTILINE)]
    assert expected, "the example states some of its output in comments"
    for e in expected:
        assert e in printed, (e, printed)
    assert any(line.startswith("proof log of ") for line in printed)
