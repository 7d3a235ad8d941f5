"""Test-session set-up: the derivation cache lives in a temporary directory, never in the
user's home; plots use a non-interactive backend; progress bars stay quiet.

Expensive results are computed once per test run and shared by the xdist workers:

- the derivation chain: the controller (or the single process without xdist) computes every
  derivation missing from the shared disk cache before the workers start
  (:func:`grpo_theory.theory.derived.warm_cache`, in as many processes as there are cores), so
  no worker derives a chapter another one is deriving;
- :func:`shared`: a session result (e.g. the quick cross-check run) computed by the first
  worker that needs it, under a file lock, and loaded from disk by the others.

xdist hands out tests one by one (``--dist loadgroup``), so the two workers finish together; a
file whose module-scoped fixture is expensive keeps its tests on one worker with
``pytestmark = pytest.mark.xdist_group("<name>")`` (see tests/report/test_report.py).
"""

import os
import pickle
import tempfile
from pathlib import Path

import pytest

# One cache for all xdist workers of this machine, keyed per chapter by a hash of the
# chapter's source (see grpo_theory.theory.derived), so it is safe to share and to reuse.
os.environ.setdefault("GRPO_THEORY_CACHE", str(Path(tempfile.gettempdir()) / "grpo_theory_test_cache"))
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("GRPO_THEORY_PROGRESS", "0")

try:
    import fcntl
except ImportError:  # pragma: no cover - no POSIX file locks: every process computes its own
    fcntl = None


def pytest_configure(config):
    if hasattr(config, "workerinput"):        # an xdist worker: the controller warmed the cache
        return
    from grpo_theory.theory.derived import warm_cache

    warm_cache(workers=os.cpu_count() or 1)


@pytest.fixture(scope="session")
def shared(tmp_path_factory, worker_id):
    """``shared(key, compute)``: ``compute()`` once for the whole test run (all workers), the
    result pickled next to the workers' temporary directories."""
    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        root = root.parent                    # common to the workers of this run
    memo = {}

    def get(key, compute):
        if key in memo:
            return memo[key]
        path = root / f"shared-{key}.pkl"
        if fcntl is None or worker_id == "master":
            value = compute()
        else:
            with open(root / f"shared-{key}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if path.exists():
                    value = pickle.loads(path.read_bytes())
                else:
                    value = compute()
                    path.write_bytes(pickle.dumps(value))
        memo[key] = value
        return value

    return get


@pytest.fixture(scope="session")
def quick_crosschecks(shared):
    """The quick cross-check run (seed 0), once for the whole test run: the report's own stage
    (``report.warm.reuse``, the same call as ``grpo-theory report``'s), so that the report made
    from the installed wheel (tests/installed.py: the same package files, the same cache) and
    these tests compute it once between them, whichever comes first."""
    from grpo_theory.crosscheck import run_crosschecks
    from grpo_theory.report.warm import reuse

    return shared("quick-crosschecks", lambda: reuse("crosschecks", run_crosschecks, quick=True, seed=0))


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """The sdist and the wheel built from this checkout, twine-checked, and the wheel installed
    into a fresh virtual environment (tests/installed.py). Session-scoped: the tests that use it
    are in the xdist group ``report``, so it is built once, on one worker."""
    from installed import build_and_install

    return build_and_install(tmp_path_factory.mktemp("installed"))
