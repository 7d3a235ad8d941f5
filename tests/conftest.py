"""Test-session set-up: the derivation cache lives in a temporary directory, never in the
user's home; plots use a non-interactive backend; progress bars stay quiet."""

import os
import tempfile
from pathlib import Path

# One cache for all xdist workers of this machine, keyed per chapter by a hash of the
# chapter's source (see grpo_theory.theory.derived), so it is safe to share and to reuse.
os.environ.setdefault("GRPO_THEORY_CACHE", str(Path(tempfile.gettempdir()) / "grpo_theory_test_cache"))
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("GRPO_THEORY_PROGRESS", "0")
