"""What a user installs: the sdist and the wheel built from this checkout, checked with
twine, and the wheel installed (non-editable) into a fresh virtual environment.

The environment is new and holds this project only as the wheel: the checkout is on none of
its paths. Its third-party dependencies (numpy, sympy, ..., and torch when the test
environment has it) are borrowed from the test environment by a ``.pth`` file naming that
environment's ``site-packages`` directory, written *after* the wheel is installed: a plain
directory line in a ``.pth`` file puts the directory on ``sys.path`` without running the
``.pth`` files inside it, so the editable install of the checkout (an import hook started by
such a file) is not active there. Downloading and installing the dependencies afresh would
take minutes and test pip, not the package; that the wheel *declares* every dependency it
imports is checked separately (tests/test_packaging.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from dataclasses import dataclass
from pathlib import Path

#: the checkout the tests run from
CHECKOUT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Installed:
    dist: Path            # the built sdist and wheel
    wheel: Path
    sdist: Path
    twine: str            # what `twine check --strict` printed
    python: Path          # the fresh environment's interpreter
    script: Path          # its `grpo-theory` console script

    def env(self) -> dict:
        """The environment a user's shell would give the command: no PYTHONPATH."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["PATH"] = f"{self.python.parent}{os.pathsep}{env.get('PATH', '')}"
        return env

    def run(self, *args, cwd, timeout=600) -> subprocess.CompletedProcess:
        """``grpo-theory ARGS`` from the installed wheel, in ``cwd`` (outside the checkout)."""
        return subprocess.run([str(self.script), *map(str, args)], cwd=cwd, env=self.env(),
                              capture_output=True, text=True, timeout=timeout)

    def python_c(self, code: str, *, cwd) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.python), "-c", code], cwd=cwd, env=self.env(),
                              capture_output=True, text=True, timeout=120)


def _check(cmd, **kw) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout + r.stderr


def build_and_install(root: Path) -> Installed:
    """Build the sdist and, from it, the wheel (``python -m build``, as a release does), check
    both with ``twine check --strict``, and install the wheel into a fresh environment under
    ``root``."""
    dist = root / "dist"
    # --no-isolation: the test environment has the build backend (the test extra pins it);
    # an isolated build would download setuptools on every run
    _check([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(CHECKOUT)],
           cwd=root)
    wheel, = dist.glob("grpo_theory-*.whl")
    sdist, = dist.glob("grpo_theory-*.tar.gz")
    twine = _check([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], cwd=root)
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # the test environment's pip installs into the new environment (--python), without deps
    _check([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
            "--no-index", "--disable-pip-version-check", "-q", str(wheel)], cwd=root)
    purelib = Path(_check([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          cwd=root).strip())
    own = Path(sysconfig.get_path("purelib"))
    (purelib / "_test_environment_dependencies.pth").write_text(f"{own}\n")
    return Installed(dist=dist, wheel=wheel, sdist=sdist, twine=twine, python=python,
                     script=env_dir / "bin" / "grpo-theory")
