"""The test run's own machinery: ``--dist loadgroup`` keeps an ``xdist_group`` on one worker.

The book, the lab's quick run and the report are built once by a session or module fixture on
the worker that runs their group (tests/conftest.py); if the grouping is silently ignored (as on
pytest 9.2 with pytest-xdist 3.8, pytest-xdist issue #1386: the ``@group`` suffix of the node id
no longer takes effect) each is built once per worker and the run takes a minute longer.  xdist
gives a grouped test the node id ``<path>::<name>@<group>``: that is what this checks."""

import pytest

pytestmark = pytest.mark.xdist_group("machinery")


def _dist_mode(config) -> str:
    """The controller's ``--dist``: a worker's own option says ``no``, so it is read from the
    command line the worker was given, else from the project's ``addopts``."""
    for args in (config.workerinput.get("mainargv", []), config.getini("addopts")):
        args = [a for arg in args for a in str(arg).split("=", 1)]
        if "--dist" in args[:-1]:
            return args[args.index("--dist") + 1]
    return "no"


def test_a_grouped_test_carries_its_group(request):
    if not hasattr(request.config, "workerinput"):
        pytest.skip("not run by an xdist worker: nothing to check")
    dist = _dist_mode(request.config)
    if dist != "loadgroup":
        pytest.skip(f"--dist {dist}: not distributed by group")
    assert request.node.nodeid.endswith("@machinery"), (
        f"{request.node.nodeid}: xdist_group is ignored by this pytest/pytest-xdist pair, so every "
        "worker builds the shared fixtures of a group (pin pytest < 9.2, pyproject.toml)")
