"""The ``grpo-theory`` console script's entry point.

It imports the command line inside the Ctrl-C handling, so that an interrupt during the first
imports (numpy's, ~60 ms, before :func:`grpo_theory.cli.main.main` can catch it) is one line
and exit code 130 too, not a traceback.  ``grpo_theory/__init__.py`` imports nothing heavy.
"""

import sys


def main() -> int:
    try:
        from grpo_theory.cli.main import main as run
    except KeyboardInterrupt:
        print("grpo-theory: interrupted", file=sys.stderr)
        return 130
    return run()
