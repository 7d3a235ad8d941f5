"""The lab tests' shared session fixtures: the saved tiny model and the quick run (made once,
on the xdist worker of the ``lab`` group: test_lab.py and test_distributed.py both use it)."""

from __future__ import annotations

import contextlib
import io
import json
from types import SimpleNamespace

import pytest

@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """The built-in tiny GPT-2 saved by ``save_pretrained`` (a plain GPT2LMHeadModel)."""
    from grpo_theory.lab.model import save_tiny_model

    return save_tiny_model(str(tmp_path_factory.mktemp("lab_tiny_model")))


@pytest.fixture(scope="session")
def quick(tmp_path_factory, tiny_model_dir):
    """``grpo-theory lab --quick --json --out OUT --model DIR --kernel lanczos``, run once for
    the whole session: ``(the JSON, OUT, the completed command)``.

    In this process, through the CLI's entry point (``grpo_theory.cli.main.main``: the
    arguments parsed, the JSON printed, the exit code returned): the worker imported torch and
    TRL already when it collected the lab tests, so a subprocess would only import them again
    (about 10 s of CPU)."""
    from grpo_theory.cli.main import main

    out = tmp_path_factory.mktemp("lab_quick")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["lab", "--quick", "--json", "--out", str(out), "--model", tiny_model_dir,
                     "--kernel", "lanczos"])
    p = SimpleNamespace(returncode=code, stdout=stdout.getvalue(), stderr=stderr.getvalue())
    assert p.returncode in (0, 1), p.stderr[-2000:]
    return json.loads(p.stdout), out, p
