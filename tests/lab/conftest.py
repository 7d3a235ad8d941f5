"""The lab tests' shared session fixtures: the saved tiny model and the quick run (made once,
on the xdist worker of the ``lab`` group: test_lab.py and test_distributed.py both use it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def lab_env():
    env = dict(os.environ, PYTHONPATH=str(ROOT), GRPO_THEORY_PROGRESS="0")
    env.pop("PYTHONUNBUFFERED", None)
    return env


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """The built-in tiny GPT-2 saved by ``save_pretrained`` (a plain GPT2LMHeadModel)."""
    from grpo_theory.lab.model import save_tiny_model

    return save_tiny_model(str(tmp_path_factory.mktemp("lab_tiny_model")))


@pytest.fixture(scope="session")
def quick(tmp_path_factory, tiny_model_dir):
    """``grpo-theory lab --quick --json --out OUT --model DIR --kernel lanczos``, run once for
    the whole session."""
    out = tmp_path_factory.mktemp("lab_quick")
    p = subprocess.run([sys.executable, "-m", "grpo_theory", "lab", "--quick", "--json",
                        "--out", str(out), "--model", tiny_model_dir, "--kernel", "lanczos"],
                       capture_output=True, text=True, env=lab_env(), cwd=ROOT, timeout=900)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    return json.loads(p.stdout), out, p
