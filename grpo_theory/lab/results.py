"""Typed result of ``grpo-theory lab`` (no torch or TRL needed to read or print it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from grpo_theory.deepnet.analysis import observed_k_max_words
from grpo_theory.results import Result
from grpo_theory.results import table_cell as _f, jsonable

__all__ = ["LabResult"]


def _sweep_dict(s) -> dict:
    d = jsonable(s)
    d["per_k"] = [{k: jsonable(getattr(r, k)) for k in
                   ("k", "multiplier", "se", "predicted", "stable_observed", "stable_predicted",
                    "misclassified", "windows", "clip_fraction", "multiplier_all", "se_all",
                    "bandit_first", "bandit_all")} for r in s.per_k]
    d["agrees"] = s.agrees
    d["k_max_observed_range"] = list(s.k_max_observed_range)
    return d


@dataclass(frozen=True)
class LabResult(Result):
    """The lab's answer: the engine, the plateau, the stiffness two ways, the refresh sweeps
    (the first one is the headline ``per_k``), the damping transition and the families.

    A part that was not run is ``None``; ``notes`` say what was measured how.
    """

    engine: str
    quick: bool
    model_parameters: int
    prompts: int
    group_size: int
    plateau: dict
    stiffness: dict
    sweeps: tuple
    transition: object = None
    group_family: dict | None = None
    size_family: dict | None = None
    rate_family: dict | None = None
    fit_r2: dict | None = None
    unsafe: object = None
    seconds: float = 0.0
    notes: tuple = field(default=())
    model: str = ""
    executor: str = "serial (this process)"
    processes: int = 1
    failed_tasks: tuple = ()

    # the headline sweep --------------------------------------------------------------
    @property
    def headline(self):
        return self.sweeps[0] if self.sweeps else None

    @property
    def misclassified(self) -> list:
        """Refresh intervals classified against the exact theory beyond their SE; sweeps with
        TRL's clip on are outside the linear theory (reported, not scored)."""
        out = []
        for s in self.sweeps + ((self.unsafe,) if self.unsafe is not None else ()):
            if s.epsilon < 1:
                continue
            out += [f"{s.name}: k = {r.k}" for r in s.per_k if r.misclassified]
        return out

    @property
    def exit_code(self) -> int:
        """1 when a refresh interval is misclassified or a run failed twice (reported)."""
        return 1 if (self.misclassified or self.failed_tasks) else 0

    def to_dict(self) -> dict:
        h = self.headline
        d = {
            "engine": self.engine, "quick": self.quick,
            "model_parameters": self.model_parameters, "prompts": self.prompts,
            "group_size": self.group_size, "plateau": jsonable(self.plateau),
            "stiffness": jsonable(self.stiffness),
            "k_max_predicted": None if h is None else h.k_max_predicted,
            "k_max_published": None if h is None else h.k_max_published,
            "k_max_observed": None if h is None else h.k_max_observed,
            "per_k": [] if h is None else _sweep_dict(h)["per_k"],
            "sweeps": [_sweep_dict(s) for s in self.sweeps],
            "transition": None if self.transition is None else {
                **jsonable(self.transition), "agrees": self.transition.agrees},
            "group_family": jsonable(self.group_family),
            "size_family": jsonable(self.size_family),
            "rate_family": jsonable(self.rate_family),
            "fit_r2": jsonable(self.fit_r2),
            "unsafe": None if self.unsafe is None else _sweep_dict(self.unsafe),
            "model": self.model, "executor": self.executor, "processes": self.processes,
            "failed_tasks": jsonable(list(self.failed_tasks)),
            "misclassified": self.misclassified, "exit_code": self.exit_code,
            "seconds": self.seconds, "notes": list(self.notes)}
        return d

    def __str__(self) -> str:
        L = [f"lab: {self.engine}, {self.model_parameters} parameters, "
             f"{self.prompts} prompts x G = {self.group_size}" + (" (quick)" if self.quick else "")]
        if self.model:
            L.append(f"policy: {self.model}; runs: {self.executor}"
                     + (f"; each run data-parallel over {self.processes} processes (global batch "
                        "unchanged)" if self.processes > 1 else ""))
        p = self.plateau
        L.append(f"plateau: {p['variant']}, p_ref = {p['p_ref']:g}, p* = {p['p_star']:.4f}, "
                 f"bandit K = {p['stiffness_bandit']:.4f}, fresh fraction {p['fresh_fraction']:.3f}")
        s = self.stiffness
        rel = (s["response"] / s["ntk"] - 1) * 100 if s.get("response") else float("nan")
        route = s.get("kernel_route", "full")
        how = ("J built, eigh" if route == "full" else
               f"Lanczos on J-vector products, {s.get('kernel_iterations')} iterations, residual "
               f"{s.get('kernel_residual', float('nan')):.1e}")
        L.append(f"stiffness (tangent kernel x bandit): K = {s['ntk']:.4f}   "
                 f"[lambda_max/N = {s['ntk_top_over_n']:.3f}, top mode overlap with uniform "
                 f"{s['uniform_overlap']:.4f}; {how}]")
        if s.get("response") is not None:
            L.append(f"stiffness (linear response):        K = {s['response']:.4f} +- "
                     f"{s['response_se']:.4f}   ({rel:+.1f} % vs the kernel)")
        if self.sweeps or self.unsafe is not None:
            L.append("")
            L.append("per-window multipliers: 'early' from the first window (with momentum the "
                     "first three transitions), 'all' pooled over every window, 'bandit' the "
                     "same from the theory's own bandit simulator (L0, no network)")
        for sw in self.sweeps + ((self.unsafe,) if self.unsafe is not None else ()):
            L.append("")
            kp = "none (every k stable)" if sw.k_max_predicted is None else sw.k_max_predicted
            rng = sw.k_max_observed_range
            ko = (observed_k_max_words(sw.k_max_observed, rng) if rng[1] is not None
                  else sw.k_max_observed if sw.k_max_observed is not None
                  else f"- ({sw.k_max_observed_note})")
            L.append(f"{sw.name}: eta K = {sw.eta_K:.4f}, lr = {sw.learning_rate:.4g}, "
                     f"epsilon = {sw.epsilon:g}; k_max exact {kp}, published rule "
                     f"{sw.k_max_published}, observed {ko}")
            L.append(f"{'k':>4} {'early':>7} {'se':>6} {'all':>7} {'se':>6} {'exact':>7} "
                     f"{'bandit':>7} {'b.all':>6}  {'observed':>9} {'exact':>9}  {'clip':>5}  verdict")
            for r in sw.per_k:
                v = "MISCLASSIFIED" if r.misclassified else (
                    "agree" if r.stable_observed == r.stable_predicted else "differ within SE")
                L.append(f"{r.k:>4} {_f(r.multiplier, '.3f'):>7} {_f(r.se, '.3f'):>6} "
                         f"{_f(r.multiplier_all, '.3f'):>7} {_f(r.se_all, '.3f'):>6} "
                         f"{_f(r.predicted, '.3f'):>7} {_f(r.bandit_first, '.3f'):>7} "
                         f"{_f(r.bandit_all, '.3f'):>6}  {_f(r.stable_observed):>9} "
                         f"{_f(r.stable_predicted):>9}  {r.clip_fraction:5.3f}  {v}")
            if sw.epsilon < 1:
                L.append("  note: TRL's clip is on: outside the linear theory (the clip stops a "
                         "sample's push once its ratio leaves [1 - eps, 1 + eps]); reported, not "
                         "scored")
            for n in sw.notes:
                L.append(f"  note: {n}")
        t = self.transition
        if t is not None:
            L.append("")
            L.append(f"damping transition at k = 1, eta K = {t.eta_K:g}: mu_c exact "
                     f"{t.mu_c_predicted:.4f}, continuous (L3) {t.mu_c_continuous:.4f}, observed "
                     f"{_f(t.mu_c_observed)}")
            L.append(f"{'mu':>7} {'disc':>9} {'se':>8} {'exact':>9}  regime")
            for r in t.rows:
                reg = "oscillatory" if r.oscillatory_observed else "overdamped"
                L.append(f"{r.momentum:>7.4f} {r.discriminant:>9.4f} {r.discriminant_se:>8.4f} "
                         f"{r.discriminant_predicted:>9.4f}  {reg}"
                         + ("" if r.oscillatory_observed == r.oscillatory_predicted
                            else "  (exact: other)"))
        for title, fam in (("group-size family", self.group_family),
                           ("size family", self.size_family),
                           ("learning-rate family", self.rate_family)):
            if fam:
                L.append("")
                L.append(f"{title}: {fam.get('summary', '')}")
        if self.fit_r2:
            r = self.fit_r2
            L.append("")
            L.append(f"single-exponential fit R^2 on the family runs' TRL reward: median "
                     f"{r['median']:.3f} (min {r['min']:.3f}, {r['runs']} runs; signal share "
                     f"median {r.get('noise_ceiling_median', float('nan')):.3f})")
            for name, m in sorted(r.get("by_model", {}).items()):
                if name != "exponential":
                    L.append(f"  {name}: median {m['median']:.3f}, {100 * m['fraction_at_least_0.91']:.0f} % "
                             "of runs >= 0.91")
        L.append("")
        L.append(f"{self.seconds:.1f} s in all")
        for n in self.notes:
            L.append(f"note: {n}")
        for f in self.failed_tasks:
            L.append(f"FAILED run {f['name']}: {f['attempts']} attempts, left out ({f['errors'][-1]})")
        if self.failed_tasks:
            L.append(f"exit 1: {len(self.failed_tasks)} run(s) failed twice (left out, listed above)")
        L.append("exit 1: misclassified " + "; ".join(self.misclassified) if self.misclassified
                 else "no refresh interval misclassified beyond its standard error"
                 + (" (exit 0)" if not self.failed_tasks else ""))
        return "\n".join(L)
