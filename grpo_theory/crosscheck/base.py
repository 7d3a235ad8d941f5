"""Shared base of the cross-checks: the base model, the check and report objects, the
headline of a check and its table row, and per-run stationary statistics."""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from grpo_theory.model import GRPOModel
from grpo_theory.prose import to_plain_or_as_is
from grpo_theory.results import Result, jsonable
from grpo_theory.theory.drift import drift, update_variance
from grpo_theory.validate import ParameterError

__all__ = [
    "BASE_MODEL",
    "N_SIGMA",
    "TABLE_COLUMNS",
    "Check",
    "CrosscheckReport",
    "as_base",
    "band_contains",
    "band_reason",
    "fmt_value",
    "format_band",
    "format_headline_numbers",
    "g2",
    "headline",
    "heavy_ball",
    "seed_of",
    "table_row",
]

#: The base model of the checks: two-action bandit, p_ref = 0.3, std advantages with
#: TRL's epsilon_adv = 1e-4, exact KL with beta = 2, the stale surrogate, G = 8, on-policy
#: SGD (refresh interval 1, no momentum) at learning rate 0.1; each check varies it.
BASE_MODEL = GRPOModel(p_ref=0.3, normalization="std", kl="exact", kl_coef=2.0, group_size=8,
                       adv_eps=1e-4, surrogate="stale", learning_rate=0.1, momentum=0.0,
                       refresh_interval=1)


def as_base(model: GRPOModel | None = None) -> GRPOModel:
    """``model``, or :data:`BASE_MODEL` when it is ``None`` (the base a check varies)."""
    model = BASE_MODEL if model is None else model
    if not isinstance(model, GRPOModel):
        raise ParameterError("base", type(model).__name__, "a GRPOModel or None")
    return model


def heavy_ball(model: GRPOModel, learning_rate, momentum=0.0, refresh_interval=1) -> GRPOModel:
    """``model``'s variant with heavy-ball SGD at ``learning_rate``/``momentum`` and fresh
    batches refreshed every ``refresh_interval`` steps (the optimizer and lag of a check)."""
    return model.replace(optimizer="sgd", learning_rate=float(learning_rate),
                         momentum=float(momentum), lag_model="refresh", delay=None,
                         refresh_interval=int(refresh_interval), reuse="fresh", window_batches=1)


def seed_of(seed_seq) -> int:
    """The integer seed of one simulation, drawn from its ``SeedSequence`` child."""
    return int(seed_seq.generate_state(1)[0])

N_SIGMA = 4.0


def headline(quantity, units, setting, predicted, measured, band, band_kind, *,
             compare="measured", statistic=None) -> dict:
    r"""The physical headline of a check.

    ``quantity``/``setting``: prose (LaTeX between dollars, :mod:`grpo_theory.prose`);
    ``units``: words; ``predicted``/``measured``: numbers in ``units`` (``measured`` may be a
    ``[low, high]`` pair when the measurement is itself an interval, e.g. a bracket on a grid);
    ``band``: ``[low, high]`` in ``units`` (an end may be ``None``: not established);
    ``band_kind``: what the band is, in words; ``compare``: which number the band must
    contain for a pass — ``"measured"`` (the band is the acceptance interval around the
    prediction) or ``"predicted"`` (the band is the measured interval);
    ``statistic``: ``{"name", "value", "tolerance"}`` when the verdict is decided by a
    normalized statistic (reported in the details, not in the main table).
    ``inside`` is computed here from ``band`` and the compared number."""
    band = [None if b is None else float(b) for b in band]
    x = measured if compare == "measured" else predicted
    return {"quantity": quantity, "units": units, "setting": setting,
            "predicted": predicted, "measured": measured, "band": band,
            "band_kind": band_kind, "compare": compare, "statistic": statistic,
            "inside": band_contains(band, x)}


def band_contains(band, x) -> bool:
    """True when ``x`` (a number) lies in ``band`` = [low, high] (ends included); False when
    ``x`` or an end of the band is missing or not finite."""
    if x is None or band is None or len(band) != 2 or any(b is None for b in band):
        return False
    if isinstance(x, (list, tuple)):
        return False
    lo, hi = float(band[0]), float(band[1])
    x = float(x)
    return math.isfinite(x) and not math.isnan(lo) and not math.isnan(hi) and lo <= x <= hi


def fmt_value(x, resolution=None) -> str:
    """A number for a table: integers as integers; otherwise enough significant digits to
    resolve ``resolution`` (e.g. the band's half-width) to two digits, at least three."""
    if x is None:
        return "—"
    if isinstance(x, (list, tuple)):
        return "–".join(fmt_value(v, resolution) for v in x)
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)) or (isinstance(x, float) and x.is_integer()
                                            and abs(x) < 1e6 and resolution is not None
                                            and resolution >= 0.5):
        return str(int(x))
    x = float(x)
    if not math.isfinite(x):
        return "∞" if x > 0 else ("−∞" if x < 0 else "—")
    if resolution is not None and resolution > 0 and math.isfinite(resolution):
        d = 1 - math.floor(math.log10(resolution))      # decimals that show 2 digits of it
        if 0 <= d <= 6 and abs(x) < 1e6:
            return f"{x:.{d}f}"
        if x != 0:
            sig = min(max(math.floor(math.log10(abs(x))) + d + 1, 2), 8)
            return _e(f"{x:.{sig - 1}e}")
        return "0"
    return _e(f"{x:.3g}")


def g2(x) -> str:
    """A small positive number to two significant digits (``1.3e-5``, ``0.011``)."""
    return _e(f"{float(x):.2g}")


def _e(s: str) -> str:
    """``1.5e-04`` -> ``1.5e-4``."""
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), s)


def format_band(h: dict) -> str:
    """The band of a headline as text: ``low – high`` in its units (an open end as ``?``)."""
    lo, hi = h.get("band") or (None, None)
    res = _resolution(h)
    def end(b):
        return "?" if b is None else fmt_value(b, res)
    return f"{end(lo)} – {end(hi)}"


def _resolution(h: dict):
    lo, hi = h.get("band") or (None, None)
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return (hi - lo) / 2 if hi > lo else None


def format_headline_numbers(h: dict) -> tuple[str, str, str]:
    """(predicted, measured, band) of a headline as text with a common resolution."""
    res = _resolution(h)
    return fmt_value(h.get("predicted"), res), fmt_value(h.get("measured"), res), format_band(h)


def band_reason(h: dict, what: str, extra: str = "", units: bool = True) -> str:
    """The verdict's reason for a headline ``h`` in one sentence: whether the compared
    number lies in the band, with the numbers in the headline's units; ``what`` names the
    quantity (prose), ``extra`` is appended (e.g. "; the worst of 8 variances");
    ``units=False`` leaves the unit word out."""
    pred, meas, band = format_headline_numbers(h)
    unit = h.get("units") or ""
    u = f" {unit}" if units and unit and unit != "dimensionless" else ""
    where = "inside" if h["inside"] else "outside"
    if h.get("compare") == "predicted":
        text = f"the predicted {what} = {pred}{u} is {where} the {h['band_kind']} {band}"
    else:
        text = (f"measured {what} = {meas}{u} is {where} the band {band} of the prediction "
                f"{pred} ({h['band_kind']})")
    return text + extra


@dataclass
class Check:
    """One comparison of a prediction with the simulation.

    ``headline``: the physical comparison the verdict rests on (see :func:`headline`:
    quantity, units, setting, predicted, measured, band in the same units, ...);
    ``reason``: the verdict's reason in one sentence (prose, math between dollars).
    ``predicted``/``measured``/``error``/``band`` are the check's own statistic (kept for
    readers of ``to_dict``): ``predicted``/``measured`` its headline numbers or a normalized
    statistic (units in ``details["units"]``), ``error`` their difference, ``band`` a dict
    with ``tolerance`` (same units as ``error``) and ``derivation`` (how it follows from the
    replications); ``verdict``: "pass", "fail", "info" (not a pass/fail check) or "n/a".
    """

    name: str
    description: str
    predicted: float
    measured: float
    error: float
    band: dict
    verdict: str
    details: dict = field(default_factory=dict)
    headline: dict = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict:
        return jsonable({"name": self.name, "description": self.description,
                       "predicted": self.predicted, "measured": self.measured,
                       "error": self.error, "band": self.band, "verdict": self.verdict,
                       "details": self.details, "headline": self.headline,
                       "reason": self.reason})


#: columns of the cross-check table (terminal and report)
TABLE_COLUMNS = ("check", "quantity", "setting", "predicted", "measured", "band",
                 "verdict: reason")


def table_row(c, render=lambda s: s) -> tuple:
    """The table cells of one check (``c`` a :class:`Check` or its ``to_dict``); ``render``
    turns prose into the target format (``prose.to_plain`` or ``prose.to_markdown``)."""
    get = (lambda k, d=None: c.get(k, d)) if isinstance(c, dict) else (lambda k, d=None: getattr(c, k, d))
    h = get("headline") or {}
    verdict = str(get("verdict", "")).upper()
    reason = get("reason") or ""
    if h:
        units = h.get("units") or ""
        pred, meas, band = format_headline_numbers(h)
        kind = h.get("band_kind") or ""
        cells = (get("name"), render(h.get("quantity", "")) + (f" [{units}]" if units else ""),
                 render(h.get("setting", "")), pred, meas,
                 band + (f" ({render(kind)})" if kind else ""))
    else:                              # a check without a headline: its own statistic
        b = get("band") or {}
        tol = b.get("tolerance") if isinstance(b, dict) else None
        units = ((get("details") or {}).get("units") or "") if isinstance(get("details"), dict) else ""
        cells = (get("name"), "statistic" + (f" [{units}]" if units else ""), "—",
                 fmt_value(get("predicted")), fmt_value(get("measured")),
                 "—" if tol is None else f"± {fmt_value(tol)} around the prediction")
    return cells + (f"{verdict}: {render(reason)}" if reason else verdict,)


@dataclass
class CrosscheckReport(Result):
    checks: list
    quick: bool = True
    seed: int = 0

    @property
    def passed(self) -> bool:
        """True when no pass/fail check failed ("info" checks do not count)."""
        return all(c.verdict != "fail" for c in self.checks)

    def __getitem__(self, name) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {"checks": [c.to_dict() for c in self.checks], "passed": self.passed,
                "quick": self.quick, "seed": self.seed}

    def __str__(self) -> str:
        return self.table()

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def table(self, width: int = 100) -> str:
        """The cross-checks for a terminal: a summary table (check, verdict, predicted and
        measured values and band, in the quantity's physical units), then one block per check
        with the quantity, setting, the reason for its verdict, how its band is derived, its
        decisive statistic and its notes, wrapped to ``width`` columns."""
        plain = to_plain_or_as_is
        def wrap(label, text):
            return textwrap.fill(text, width, initial_indent=f"    {label}",
                                 subsequent_indent=" " * (4 + len(label)))

        cells = [table_row(c, plain) for c in self.checks]
        head = ("check", "verdict", "predicted", "measured", "band")
        rows = [head]
        for c, (name, _quantity, _setting, pred, meas, band, _verdict) in zip(self.checks, cells):
            units = (c.headline or {}).get("units") or ""
            unit = f" {plain(units)}" if units and units != "dimensionless" else ""
            rows.append((str(name), c.verdict.upper(), f"{pred}{unit}", f"{meas}{unit}",
                         format_band(c.headline) if c.headline else band))
        widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
        lines = ["  ".join([s.ljust(w) for s, w in zip(r[:-1], widths)] + [r[-1]]).rstrip()
                 for r in rows]
        lines.insert(1, "  ".join(["-" * w for w in widths] + ["-" * len(head[-1])]))
        for c in self.checks:
            if c.verdict == "fail":
                why = c.details.get("failure_reason") or c.reason
                lines.append(f"FAIL {c.name}: {plain(why) if why else 'see its notes below'}")
        lines.append("")
        for c, (name, quantity, setting, _p, _m, band, verdict) in zip(self.checks, cells):
            lines.append(textwrap.fill(f"[{c.name}] {plain(c.description)}", width,
                                       subsequent_indent="    "))
            lines.append(wrap("quantity: ", f"{quantity}"))
            if setting and setting != "—":
                lines.append(wrap("setting:  ", setting))
            how = c.band.get("derivation", "") if isinstance(c.band, dict) else ""
            lines.append(wrap("band:     ", f"{band}; {plain(how)}".rstrip("; ")))
            lines.append(wrap("verdict:  ", verdict))
            st = (c.headline or {}).get("statistic")
            if st:
                lines.append(wrap("statistic: ", f"{plain(st['name'])} = {fmt_value(st['value'])} "
                                  f"(pass iff ≤ {fmt_value(st['tolerance'])})"))
            for note in c.details.get("notes", []):
                lines.append(wrap("- ", plain(note)))
        lines.append("")
        lines.append(f"mode: {'quick' if self.quick else 'full'}, seed {self.seed}; "
                     f"overall: {'PASSED' if self.passed else 'FAILED'}")
        return "\n".join(lines)


def _times(steps, n):
    return np.unique(np.linspace(1, steps, min(n, steps)).round().astype(int))


def _stationary_var(z, t_from, stride):
    """Across-run variance of z averaged over times t_from, t_from+stride, ... with its SE.

    Per run i the statistic s_i = mean_t (z_it - zbar_t)^2 R/(R-1); runs are independent,
    so SE = std(s_i)/sqrt(R)."""
    R = z.shape[0]
    ts = np.arange(t_from, z.shape[1], stride)
    dev = z[:, ts] - z[:, ts].mean(axis=0)
    s = (dev**2).mean(axis=1) * R / (R - 1)
    return float(s.mean()), float(s.std(ddof=1) / math.sqrt(R)), ts


def _stationary_mean(x, t_from):
    """Mean of x over runs and times >= t_from; SE from per-run time averages."""
    per_run = x[:, t_from:].mean(axis=1)
    return float(per_run.mean()), float(per_run.std(ddof=1) / math.sqrt(per_run.size))


def _second_order_offsets(fp, eta, var_z, model, h=1e-3):
    """Leading noise-induced offsets at a stable fixed point (on-policy SGD).

    dz = F''(z*) Var z / (2K) (mean logit shift) and
    dp = sigma'(z*) dz + sigma''(z*) Var z / 2 (mean reward shift)."""
    zz = np.array([fp.z, fp.z + h, fp.z - h])
    F0, Fp, Fm = drift(model, zz, zz)
    d2 = (Fp - 2 * F0 + Fm) / h**2
    dz = 0.5 * d2 * var_z / fp.stiffness
    p = fp.p
    s1 = p * (1 - p)
    s2 = s1 * (1 - 2 * p)
    return float(dz), float(s1 * dz + 0.5 * s2 * var_z)


def _variance_second_order(fp, var_z, s2, model, h=0.02):
    r"""Leading relative correction to the linear stationary variance (on-policy SGD).

    Two O(Var) effects the L2 AR variance leaves out: the noise variance averaged over
    the fluctuations, E[sigma^2(z)] = sigma^2 + (sigma^2)'' Var/2, and the effective
    stiffness E[-F'(z)] = K - F3 Var/2 (F3 the third derivative; Var is proportional to
    1/K).  Returns (sigma^2)'' Var/(2 sigma^2) + F3 Var/(2K)."""
    zz = fp.z + np.array([-2 * h, -h, 0.0, h, 2 * h])
    sv = np.asarray(update_variance(model, expit(zz)), float)
    d2s = (sv[1] - 2 * sv[2] + sv[3]) / h**2
    F = drift(model, zz, zz)
    d3F = (F[4] - 2 * F[3] + 2 * F[1] - F[0]) / (2 * h**3)
    return float(0.5 * d2s * var_z / s2 + 0.5 * d3F * var_z / fp.stiffness)
