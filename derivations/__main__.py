"""Run the whole derivation chain and write equations.tex: ``python -m derivations [--out DIR]``."""

import sys

from grpo_theory.cli import main

if __name__ == "__main__":
    args = sys.argv[1:] or ["--out", "derivations/out"]
    sys.exit(main(["derive", *args]))
