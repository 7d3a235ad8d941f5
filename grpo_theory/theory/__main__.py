"""Run the derivation chain: ``python -m grpo_theory.theory [CHAPTER] [--out DIR]``.

The same as ``grpo-theory derive``: every result of every chapter (or of one chapter, a
key of :data:`grpo_theory.theory.chapters.CHAPTERS`) printed with the checks that
verified it.
"""

import sys

from grpo_theory.cli.main import main

if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv and not argv[0].startswith("-"):
        argv = ["--only", argv[0], *argv[1:]]
    sys.exit(main(["derive", *argv]))
