"""The derivation chain: the model derived and proven in sympy, chapter by chapter.

One module (or package) per chapter, in the order of :data:`.chapters.CHAPTERS`:

- :mod:`.drift` — L1, the exact mean-field drift of every variant at finite G;
- :mod:`.fixed_points` — fixed points, stiffness and its fresh/stale split, the fold test
  and the bifurcations in beta, Mroueh's recurrence;
- :mod:`.closed_forms` — nonlinear no-KL trajectories;
- :mod:`.discrete` — L2, the exact discrete linearization: refresh-window monodromy, Jury
  conditions, delay, the bridge to L3, exact thresholds (a package, one module per concept);
- :mod:`.oscillator` — L3, the reduced-order continuous oscillator;
- :mod:`.noise` — stationary variances (L3 Langevin, exact L2), the reward fluctuation and
  the noise of a model at its fixed point;
- :mod:`.reuse` — batch reuse vs stale sampling: the window map with correlated forcing;
- :mod:`.collapse` — escape to a degenerate policy: first passage and the collapse risk;
- :mod:`.adam` — Adam near a fixed point as a self-consistent heavy ball.

Beside the chapters: :mod:`.symbols` (every symbol with its assumptions), :mod:`.derived`
(the registry of :class:`~.derived.Derived` records: expression, LaTeX, lambdified numerics,
proof log, per-chapter disk cache; where its files are: :mod:`.cache`, without sympy), :mod:`.chapters` (the chapter list), :mod:`.stability`
(the one route to the stability of a model) and :mod:`.atlas` (the two-parameter
bifurcation atlas).  Rendering (``equations.tex``, the printed chain, the theory page, the
findings) lives above, in :mod:`grpo_theory.render`.
"""

from grpo_theory.theory.chapters import CHAPTERS, Chapter

__all__ = ["CHAPTERS", "Chapter", "Derived", "Verification", "all_names", "get"]

_FROM_DERIVED = ("Derived", "Verification", "all_names", "get")


def __getattr__(name):
    """The registry's names, imported on first use (PEP 562): importing a theory module that
    needs no sympy (:mod:`.chapters`, :mod:`.cache`) does not load sympy and the registry."""
    if name in _FROM_DERIVED:
        from grpo_theory.theory import derived

        return getattr(derived, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
