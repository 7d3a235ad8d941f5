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
            "of the group-normalized advantages we derive the advantage mass on the correct "
            "actions, take its exact binomial expectation, its large-$G$ limit and $1/G$ correction, "
            "and derive the KL forces (exact and k3) from their definitions. The importance ratio "
            "rescales the force by $pq/(p_{\\mathrm{old}} q_{\\mathrm{old}})$.",
            "Level L1: the exact mean-field drift",
            "A group of $G$ actions is drawn from the sampling policy $\\pi_{\\mathrm{old}}$ and $n$ of "
            "them are correct. From the definitions of the group-normalized advantages, the surrogate "
            "and the KL penalty we derive the expected logit update per unit learning rate, the "
            "drift $F$, for every variant (normalization, KL penalty and surrogate), exactly at "
            "finite $G$ and in the limit $G \\to \\infty$. The drift is written with the pieces derived "
            "first, the advantage mass $\\mathcal{A}_{G}$, the ratio factor $\\Psi$ and the KL force of "
            "each penalty: $F = \\kappa\\,(\\Psi\\,\\mathcal{A}_{G} - \\beta\\,\\Phi_{\\mathrm{exact}})$ with the "
            "analytic KL, with $\\Phi_{\\mathrm{k3}}$ or $\\Phi_{\\mathrm{k1}}$ for the estimators. Probabilities are carried as $p$ and $q = 1 - p$, so that "
            "$\\mathrm{d}/\\mathrm{d}z = p q\\,(\\partial_{p} - \\partial_{q})$ is exact."),
    Chapter("fixed_points", "2. Fixed points, stiffness and success amplification",
            "Interior fixed points balance the advantage force against the KL force. We solve "
            "them where a closed form exists, compare with Mroueh's recurrence, and show the "
            "stiffness is the same in logit and reward coordinates.",
            "Fixed points, stiffness and success amplification",
            "An interior fixed point balances the advantage force against the KL force. Where a "
            "closed form exists it is derived here; the stiffness $K = -\\mathrm{d}F/\\mathrm{d}z$ at the "
            "fixed point sets every time scale that follows. The fixed point of std normalization "
            "is compared with Mroueh's recurrence."),
    Chapter("closed_forms", "3. Nonlinear closed forms without KL",
            "Without KL the logit flow separates; the std flow has an explicit asinh solution, the "
            "mean flow an implicit one.",
            "Nonlinear closed forms without KL",
            "Without a KL penalty the mean-field logit flow separates, in continuous time: std "
            "normalization at large $G$ has an explicit solution, mean normalization an implicit one "
            "(exact at every $G$)."),
    Chapter("discrete", "4. Exact discrete linearization (L2) and its stability",
            "With heavy-ball momentum and a refresh interval $k$ the linearized update over one "
            "window is a $2\\times 2$ monodromy matrix; Jury's conditions on its characteristic polynomial "
            "give the exact stability boundary and which eigenvalue crosses the unit circle.",
            "Level L2: exact discrete linearization",
            "Linearized at a fixed point, heavy-ball momentum $\\mu$ and a sampling policy refreshed "
            "every $k$ steps make the update a periodic linear map; over one refresh window it is "
            "the monodromy $M$. Jury's conditions on its characteristic polynomial give the exact "
            "stability boundary in the step stiffness $a = \\eta K$ and which eigenvalue crosses the "
            "unit circle: a real one at $-1$ (flip) or a complex pair. A constant delay $d$ is "
            "treated the same way with the Schur--Cohn conditions."),
    Chapter("oscillator", "5. The reduced-order oscillator (L3)",
            "Expanding the discrete characteristic function to second order gives $m$, $\\gamma$ and $\\kappa_{s}$; "
            "we solve the oscillator in all regimes, take the massless limit (the single "
            "exponential) and recover the published threshold as the first-order-in-lag model.",
            "Level L3: the reduced-order oscillator",
            "Expanding the characteristic function of the lagged discrete map to second order gives "
            "a damped oscillator $m \\ddot{x} + \\gamma \\dot{x} + \\kappa_{s} x = 0$ for the deviation "
            "$x = z - z^{*}$. Its closed-form solutions in every regime, its massless limit (the "
            "single exponential of the empirical saturation law) and its thresholds follow; the "
            "published threshold $\\eta K k < 1 - \\mu$ is its first-order-in-lag stability "
            "condition."),
    Chapter("noise", "6. Noise: group size as temperature",
            "Stationary variances from the Lyapunov equations, continuous and exact discrete, and "
            "the reward fluctuation they imply. The per-step noise scales as $1/G$ only where "
            "$G \\min(p^{*}, q^{*}) \\gg 1$; when failures are rare it does not fall with $G$.",
            "Noise: group size as temperature",
            "The gradient noise of one step, of variance $\\sigma^{2}$ per unit learning rate, drives "
            "the linearized dynamics to a stationary fluctuation around the fixed point; the "
            "Lyapunov equations give it exactly, for the continuous model and for the on-policy "
            "discrete map. The fluctuation is proportional to $\\sigma^{2}$. The group size acts as "
            "a temperature, $\\sigma^{2} \\propto 1/G$, only in the regime $G \\min(p^{*}, q^{*}) \\gg 1$: "
            "when failures are rare ($G q^{*}$ of order one or less) the noise of the update does "
            "not fall with $G$ (the rare-failure limit of Section 1)."),
    Chapter("reuse", "7. Batch reuse vs stale sampling",
            "A refresh window of $k$ steps either draws $k$ fresh batches from the old policy or "
            "reuses one batch k times: the same drift and monodromy, but with reuse one noise "
            "kick drives the whole window. The exact L2 variance is that of an autoregressive "
            "process with window-correlated forcing; for SGD with an all-stale stiffness it is $k$ "
            "times the fresh one to leading order.",
            "Batch reuse vs stale sampling",
            "A refresh window of $k$ steps either draws a fresh batch from the sampling policy at "
            "every step or reuses one batch for all $k$ steps. The drift and the monodromy are the "
            "same; with reuse one noise kick drives the whole window."),
    Chapter("collapse", "8. Collapse: escape to a degenerate policy",
            "At $p = 0$ or $1$ every group is degenerate and the gradient vanishes: the boundary "
            "absorbs. The mean first-passage time out of the plateau's basin solves "
            "$D\\tau_{\\mathrm{exit}}'' + b\\tau_{\\mathrm{exit}}' = -1$ with the exact finite-$G$ drift and "
            "noise; it gives the probability of collapse within a number of steps and the knob that "
            "lowers it most.",
            "Collapse: escape to a degenerate policy",
            "At $p = 0$ or $p = 1$ every group is degenerate and the gradient vanishes: these "
            "boundaries absorb. The mean time to leave the plateau's basin is the first-passage "
            "time of the diffusion limit of the logit walk."),
    Chapter("adam", "9. Adam near a fixed point",
            "Adam's first moment is the heavy-ball buffer; its second moment sets the step. At "
            "stationarity the second moment holds the gradient noise plus the restoring force's "
            "own fluctuation, which depends on the step: a self-consistent heavy-ball reduction.",
            "Adam near a fixed point",
            "Adam's first moment is the heavy-ball buffer, with the first-moment decay rate as the "
            "momentum $\\mu$; its second moment sets the step. At stationarity the second moment holds "
            "the gradient noise and the restoring force's own fluctuation, which depends on the "
            "step: a self-consistent heavy-ball reduction."),
    Chapter("reuse_collapse", "10. Reuse collapse: k passes over one finite batch",
            "Reusing one batch for $k$ passes moves the policy $k$ times along that batch's own "
            "gradient. With the log-probability surrogate the push is the same at every pass, exactly, "
            "for any number of actions, so the batch's noise displacement grows like $k$, not "
            "$\\sqrt{k}$. With the importance ratio the clip stops each sample once its ratio "
            "leaves $[1 - \\epsilon_{\\mathrm{clip}}, 1 + \\epsilon_{\\mathrm{clip}}]$: the window stalls at "
            "$p_{\\mathrm{sat}}$ and the KL it can travel on its batch is bounded by about "
            "$\\epsilon_{\\mathrm{clip}}^{2}/2$; without the clip nothing bounds it. A window stays in "
            "the trust region of its own batch while the passes times the per-pass growth of a "
            "sample's log-ratio stay below $\\log(1 + \\epsilon_{\\mathrm{clip}})$.",
            "Reuse collapse: k passes over one finite batch",
            "Reusing one batch of samples for $k$ optimization passes moves the policy $k$ times along that batch's own gradient. This subsection derives how far: with the log-probability surrogate the push is the same at every pass, so the batch's noise displacement grows like $k$; with the importance ratio and its clip each sample stops once its ratio leaves the trust interval, which bounds the KL a window can travel on its batch."),
)


def chapter(key: str) -> Chapter:
    """The chapter named ``key`` (``ParameterError`` naming the allowed keys otherwise)."""
    check_choice("chapter", key, [c.key for c in CHAPTERS])
    return next(c for c in CHAPTERS if c.key == key)


def import_chapters() -> None:
    """Import every chapter module (which registers its derivations)."""
    for ch in CHAPTERS:
        importlib.import_module(ch.module)
