"""The curated public API: every name resolves, and `import grpo_theory` stays light."""

import subprocess
import sys

import grpo_theory


def test_every_public_name_resolves():
    for name in grpo_theory.__all__:
        assert getattr(grpo_theory, name) is not None, name


def test_import_is_light():
    code = "import sys, grpo_theory; print('sympy' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_unknown_name():
    import pytest

    with pytest.raises(AttributeError):
        grpo_theory.no_such_thing  # noqa: B018
