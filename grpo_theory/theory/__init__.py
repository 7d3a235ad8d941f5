"""The derivation chain: the model derived and proven in sympy, chapter by chapter.

One module per chapter, in the order of :data:`.chapters.CHAPTERS`:

- :mod:`.drift` — L1, the exact mean-field drift of every variant at finite G;
- :mod:`.fixed_points` — fixed points, stiffness and its fresh/stale split, bifurcations,
  Mroueh's recurrence;
- :mod:`.closed_forms` — nonlinear no-KL trajectories;
- :mod:`.discrete` — L2, the exact discrete linearisation: refresh-window monodromy, Jury
  conditions, exact thresholds in the refresh interval and the learning rate;
- :mod:`.oscillator` — L3, the reduced-order continuous oscillator;
- :mod:`.noise` — stationary variances (L3 Langevin, exact L2) and the reward fluctuation.

Infrastructure: :mod:`.symbols` (every symbol with its assumptions), :mod:`.derived`
(the registry of :class:`~.derived.Derived` records: expression, LaTeX, lambdified numerics,
proof log, per-chapter disk cache), :mod:`.chain` (the printer of ``grpo-theory derive``),
:mod:`.latex` (``equations.tex``) and :mod:`.stability` (the stability facade).
"""

from grpo_theory.theory.chapters import CHAPTERS, Chapter
from grpo_theory.theory.derived import Derived, Verification, all_names, get

__all__ = ["CHAPTERS", "Chapter", "Derived", "Verification", "all_names", "get"]
