"""Typed results of the deep-network experiments (no torch needed to read or print them)."""

from __future__ import annotations

from dataclasses import dataclass, field


from grpo_theory.results import Result
from grpo_theory.results import table_cell as _f, jsonable

__all__ = ["KRow", "TransitionRow", "DeepnetResult"]




@dataclass(frozen=True)
class KRow:
    """One refresh interval: measured and predicted per-window multiplier and the verdicts.

    ``misclassified``: the observed and predicted verdicts differ and the measured
    multiplier is more than one standard error from 1.
    """

    k: int
    multiplier: float
    se: float
    predicted: float
    stable_observed: bool
    stable_predicted: bool
    misclassified: bool
    windows: int
    coefficients: tuple = ()


@dataclass(frozen=True)
class TransitionRow:
    """k = 1 response at one momentum (or learning rate): AR(2) discriminant and overshoot."""

    momentum: float
    eta_K: float
    discriminant: float
    discriminant_se: float
    discriminant_predicted: float
    oscillatory_observed: bool
    oscillatory_predicted: bool
    overshoot: float
    overshoot_se: float
    overshoot_predicted: float


@dataclass(frozen=True)
class DeepnetResult(Result):
    """The deep-network test of the exact stability theory (``grpo-theory deepnet``)."""

    variant: str
    optimizer: str
    momentum: float
    learning_rate: float
    effective_learning_rate: float
    effective_momentum: float
    eta_K: float
    group_size: int
    kl_coef: float
    flip_probability: float
    p_star: float
    prompts: int
    parameters: int
    reuse: str
    bandit_stiffness: float
    fresh_fraction: float
    ntk_top_eigenvalue: float
    stiffness_ntk: float
    stiffness_response: float
    stiffness_response_se: float
    k_max_predicted: int | None
    k_max_published: int
    k_max_observed: int | None
    per_k: tuple
    mu_c_predicted: float | None
    mu_c_continuous: float | None
    mu_c_observed: float | None
    transition: tuple
    ms_per_run_step: float
    seconds: float
    notes: tuple = field(default=())

    @property
    def misclassified(self) -> list:
        return [r.k for r in self.per_k if r.misclassified]

    @property
    def exit_code(self) -> int:
        return 1 if self.misclassified else 0

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["per_k"] = [{key: jsonable(getattr(r, key)) for key in
                       ("k", "multiplier", "se", "predicted", "stable_observed", "stable_predicted",
                        "misclassified", "windows")} for r in self.per_k]
        d["misclassified_k"] = self.misclassified
        d["exit_code"] = self.exit_code
        return d

    def __str__(self) -> str:
        L = []
        L.append(f"deepnet: {self.variant}, optimizer {self.optimizer}, MLP {self.parameters} "
                 f"parameters over {self.prompts} prompts, G = {self.group_size}, "
                 f"beta = {self.kl_coef:g}, plateau p* = {self.p_star:.4f}, reuse {self.reuse}")
        L.append(f"heavy-ball: eta = {self.effective_learning_rate:.5g}, mu = "
                 f"{self.effective_momentum:g}, eta*K = {self.eta_K:.4f}"
                 + ("" if self.optimizer == "sgd" else
                    f" (Adam reduction of eta = {self.learning_rate:g}, beta1 = {self.momentum:g})"))
        L.append(f"stiffness (NTK x bandit):   K = {self.stiffness_ntk:.4f}   "
                 f"[lambda_max(NTK)/N = {self.ntk_top_eigenvalue / self.prompts:.3f}, "
                 f"bandit K/kappa = {self.bandit_stiffness / 2:.4f}, fresh fraction "
                 f"{self.fresh_fraction:.3g}]")
        rel = (self.stiffness_response / self.stiffness_ntk - 1) * 100
        L.append(f"stiffness (linear response): K = {self.stiffness_response:.4f} +- "
                 f"{self.stiffness_response_se:.4f}   ({rel:+.2f} % vs NTK)")
        kp = "none (stable for every k)" if self.k_max_predicted is None else self.k_max_predicted
        ko = "none up to the largest k tried" if self.k_max_observed is None else self.k_max_observed
        L.append(f"k_max: exact {kp}, published rule {self.k_max_published}, observed {ko}")
        L.append("")
        L.append(f"{'k':>4} {'multiplier':>11} {'se':>7} {'predicted':>10}  {'observed':>9} "
                 f"{'predicted':>9}  verdict")
        for r in self.per_k:
            verdict = "MISCLASSIFIED" if r.misclassified else (
                "agree" if r.stable_observed == r.stable_predicted else "disagree within SE")
            L.append(f"{r.k:>4} {_f(r.multiplier):>11} {_f(r.se):>7} {_f(r.predicted):>10}  "
                     f"{_f(r.stable_observed):>9} {_f(r.stable_predicted):>9}  {verdict}")
        if self.transition:
            L.append("")
            L.append(f"momentum transition at k = 1, eta*K = {self.transition[0].eta_K:.4f}: "
                     f"mu_c exact {_f(self.mu_c_predicted)}, continuous (L3) "
                     f"{_f(self.mu_c_continuous)}, observed {_f(self.mu_c_observed)}")
            L.append(f"{'mu':>7} {'disc':>9} {'se':>8} {'pred':>9}  {'overshoot':>9} {'se':>7} "
                     f"{'pred':>7}  regime")
            for t in self.transition:
                reg = "oscillatory" if t.oscillatory_observed else "overdamped"
                ok = "" if t.oscillatory_observed == t.oscillatory_predicted else "  (theory: other)"
                L.append(f"{t.momentum:>7.4f} {t.discriminant:>9.4f} {t.discriminant_se:>8.4f} "
                         f"{t.discriminant_predicted:>9.4f}  {t.overshoot:>9.4f} "
                         f"{t.overshoot_se:>7.4f} {t.overshoot_predicted:>7.4f}  {reg}{ok}")
        L.append("")
        L.append(f"speed: {self.ms_per_run_step * 1e3:.0f} us per run-step (batched), "
                 f"{self.seconds:.1f} s in all")
        for n in self.notes:
            L.append(f"note: {n}")
        L.append("exit 1: misclassified k = " + ", ".join(map(str, self.misclassified))
                 if self.misclassified else "all k classified as predicted (exit 0)")
        return "\n".join(L)
