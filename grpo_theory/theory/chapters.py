"""The chapters of the derivation chain: the one ordered list every part of the project reads.

Each chapter is one module of :mod:`grpo_theory.theory` (``key`` is the module
name and the prefix of its derived records' names).  The derivation registry
imports the modules in this order, ``grpo-theory derive`` prints them in this
order, and ``equations.tex`` has one section per chapter, in this order.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from grpo_theory.validate import check_choice

__all__ = ["Chapter", "CHAPTERS", "chapter", "import_chapters"]


@dataclass(frozen=True)
class Chapter:
    """One chapter: ``key`` (module name), ``title``, ``narrative`` (prose with
    ``$...$`` math, :mod:`grpo_theory.prose`) and ``latex_title``/``latex_intro`` (for ``equations.tex``)."""

    key: str
    title: str
    narrative: str
    latex_title: str
    latex_intro: str = ""

    @property
    def module(self) -> str:
        return f"grpo_theory.theory.{self.key}"


CHAPTERS = (
    Chapter("drift", "1. From the GRPO update to the mean-field drift (L1)",
            "A group of $G$ actions is drawn from $\\pi_{\\mathrm{old}}$; $n$ of them are correct. From the definition "
            "of the group-normalised advantages we derive the advantage mass on the correct "
            "actions, take its exact binomial expectation, its large-$G$ limit and $1/G$ correction, "
            "and derive the KL forces (exact and k3) from their definitions. The importance ratio "
            "rescales the force by $pq/(p_{\\mathrm{old}} q_{\\mathrm{old}})$.",
            "Level L1: the exact mean-field drift",
            "Expected logit update per unit learning rate for every variant (normalization $\\times$ "
            "KL $\\times$ surrogate), exact at finite group size $G$. Probabilities are written with "
            "$q = 1 - p$."),
    Chapter("fixed_points", "2. Fixed points, stiffness and success amplification",
            "Interior fixed points balance the advantage force against the KL force. We solve "
            "them where a closed form exists, compare with Mroueh's recurrence, and show the "
            "stiffness is the same in logit and reward coordinates.",
            "Fixed points, stiffness and success amplification"),
    Chapter("closed_forms", "3. Nonlinear closed forms without KL",
            "Without KL the logit flow separates; the std flow has an explicit asinh solution, the "
            "mean flow an implicit one.",
            "Nonlinear closed forms without KL"),
    Chapter("discrete", "4. Exact discrete linearization (L2) and its stability",
            "With heavy-ball momentum and a refresh interval $k$ the linearised update over one "
            "window is a $2\\times 2$ monodromy matrix; Jury's conditions on its characteristic polynomial "
            "give the exact stability boundary and which eigenvalue crosses the unit circle.",
            "Level L2: exact discrete linearization"),
    Chapter("oscillator", "5. The reduced-order oscillator (L3)",
            "Expanding the discrete characteristic function to second order gives $m$, $\\gamma$ and $\\kappa_{s}$; "
            "we solve the oscillator in all regimes, take the massless limit (the single "
            "exponential) and recover the published threshold as the first-order-in-lag model.",
            "Level L3: the reduced-order oscillator"),
    Chapter("noise", "6. Noise: group size as temperature",
            "Stationary variances from the Lyapunov equations, continuous and exact discrete, and "
            "the reward fluctuation they imply; the per-step noise scales as $1/G$.",
            "Noise: group size as temperature"),
    Chapter("reuse", "7. Batch reuse vs stale sampling",
            "A refresh window of $k$ steps either draws $k$ fresh batches from the old policy or "
            "reuses one batch k times: the same drift and monodromy, but with reuse one noise "
            "kick drives the whole window. The exact L2 variance is an AR process with "
            "window-correlated forcing; for SGD with an all-stale stiffness it is $k$ times "
            "the fresh one to leading order.",
            "Batch reuse vs stale sampling"),
    Chapter("collapse", "8. Collapse: escape to a degenerate policy",
            "At $p = 0$ or $1$ every group is degenerate and the gradient vanishes: the boundary "
            "absorbs. The mean first-passage time out of the plateau's basin solves "
            "$D\\tau'' + b\\tau' = -1$ with the exact finite-G drift and noise; it gives the "
            "probability of collapse within $N$ steps and the knob that lowers it most.",
            "Collapse: escape to a degenerate policy"),
    Chapter("adam", "9. Adam near a fixed point",
            "Adam's first moment is the heavy-ball buffer; its second moment sets the step. At "
            "stationarity the second moment holds the gradient noise plus the restoring force's "
            "own fluctuation, which depends on the step: a self-consistent heavy-ball reduction.",
            "Adam near a fixed point"),
)


def chapter(key: str) -> Chapter:
    """The chapter named ``key`` (``ParameterError`` naming the allowed keys otherwise)."""
    check_choice("chapter", key, [c.key for c in CHAPTERS])
    return next(c for c in CHAPTERS if c.key == key)


def import_chapters() -> None:
    """Import every chapter module (which registers its derivations)."""
    for ch in CHAPTERS:
        importlib.import_module(ch.module)
