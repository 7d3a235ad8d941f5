r"""The paper-ready report: equations, figures, cross-checks and a readable summary.

:func:`build_report` writes into one directory

- ``equations.tex`` (+ ``equations.pdf`` when ``pdflatex`` exists): every registered
  derivation, rendered from its sympy expression by :mod:`grpo_theory.render.latex`, with
  the atlas section (:mod:`.atlas_tex`);
- ``references.bib``, written from the bibliography of :mod:`grpo_theory.render.latex`;
- figures as PNG and PDF (:mod:`.figures`), drawn from their data twins (:mod:`.data`);
- ``report.json`` (all key numbers) and ``report.md`` (:mod:`.markdown`) tying it together.

Everything is computed for one model, :data:`DEFAULT_MODEL` (overridable), from the
package API; nothing here re-derives or re-types a formula.  This module only orchestrates:
the numbers come from :mod:`.data`, the documents from :mod:`.markdown` and :mod:`.atlas_tex`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from grpo_theory.crosscheck import CrosscheckReport, run_crosschecks
from grpo_theory.model import DEFAULT_MODEL, GRPOModel
from grpo_theory.progress import progress
from grpo_theory.prose import to_plain_or_as_is
from grpo_theory.render import latex
from grpo_theory.render.latex import math_label, notation
from grpo_theory.report import figures
from grpo_theory.report.atlas_tex import atlas_section
from grpo_theory.report.captions import (atlas_figures, captions, chapter_figures, deepnet_section,
                                         log_fit_section)
from grpo_theory.report.lab import lab_data, lab_section, lab_summary
from grpo_theory.report.paper import (TITLE, abstract, back_sections, collapse_text,
                                      crosscheck_section, front_sections)
from grpo_theory.report.data import (DEEPNET_DESIGN, DEEPNET_INSTALL, MROUEH_KL_COEF, atlas_data, bifurcation_data,
                                     deepnet_data, fluctuation_data, key_numbers, log_fit_data,
                                     phase_diagram_data, trajectories_data)
from grpo_theory.report.markdown import number_text, report_markdown
from grpo_theory.report.warm import reuse
from grpo_theory.results import Result, jsonable
from grpo_theory.theory.derived import all_names, get, warm_cache
from grpo_theory.theory.discrete import threshold_error_table
from grpo_theory.theory.fixed_points import compare_with_mroueh
from grpo_theory.validate import check_output_dir

__all__ = ["ReportResult", "build_report"]


@dataclass
class ReportResult(Result):
    """What :func:`build_report` wrote: ``out_dir``, ``files`` (name -> Path),
    ``numbers`` (the key numbers, JSON-ready), ``notes`` and ``seconds``.

    ``exit_code`` is 1 when a simulation cross-check or an atlas check failed (the report is
    still written), 0 otherwise.
    """

    out_dir: Path
    files: dict = field(default_factory=dict)
    numbers: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    _json_exclude = ("numbers",)

    def failures(self) -> list[str]:
        """One line per failed check, with its reason."""
        out = []
        cc = self.numbers.get("crosschecks") or {}
        for c in cc.get("checks", []):
            if c.get("verdict") == "fail" and c.get("reason"):
                out.append(f"cross-check {c['name']} failed: {to_plain_or_as_is(c['reason'])}")
            elif c.get("verdict") == "fail":
                tol = (c.get("band") or {}).get("tolerance")
                out.append(f"cross-check {c['name']} failed: predicted {number_text(c.get('predicted'))}, "
                           f"measured {number_text(c.get('measured'))}, |error| {number_text(abs(c['error']) if c.get('error') is not None else None)}"
                           f" > tolerance {number_text(tol)}")
        pdf = self.numbers.get("pdflatex")
        if pdf:
            out.append(f"pdflatex failed on equations.tex: {pdf['error']} (see "
                       f"{Path(self.out_dir) / pdf['log']})")
        at = self.numbers.get("atlas") or {}
        if at and not at.get("passed", True):
            out.append("atlas: an independent fold or cusp check failed (see report.json)")
        return out

    @property
    def exit_code(self) -> int:
        return 1 if self.failures() else 0

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["failures"] = self.failures()
        d["key_numbers"] = {k: self.numbers.get(k) for k in ("fixed_point", "eta_K", "stability")}
        return jsonable(d)

    def __str__(self) -> str:
        L = [f"report written to {self.out_dir} in {self.seconds:.0f} s ({len(self.files)} files)"]
        fp = self.numbers.get("fixed_point")
        if fp:
            L.append(f"  default model: p* = {fp['p']:.4f}, K = {fp['stiffness']:.4g}, "
                     f"regime (L2) = {self.numbers['stability']['discrete_regime']}")
        at = self.numbers.get("atlas")
        if at:
            c = at["p_ref_plane"]["cusp"]
            L.append(f"  atlas: cusp at {notation('p_ref')} = {c['p_ref']:.8f}, "
                     f"{notation('beta')} = {c['kl_coef']:.8f} ({notation('G')} = {c['group_size']}); "
                     f"independent checks {'passed' if at['passed'] else 'FAILED'}")
        cc = self.numbers.get("crosschecks")
        if cc:
            n_fail = sum(c["verdict"] == "fail" for c in cc["checks"])
            L.append(f"  cross-checks: {len(cc['checks'])} run, "
                     + ("all passed" if not n_fail else f"{n_fail} FAILED"))
        for f in self.failures():
            L.append(f"  FAILED: {f}")
        L.append(f"  open {self.out_dir / 'report.md'}")
        for note in self.notes:
            L.append(f"  note: {note}")
        return "\n".join(L)


# ----------------------------------------------------------------------------------
# equations
# ----------------------------------------------------------------------------------

def _derivation_status():
    """(name -> Derived or exception) for every registered derivation."""
    out = {}
    for name in progress(all_names(), desc="derivations"):
        try:
            out[name] = get(name)
        except Exception as exc:  # a broken derivation is reported, not hidden
            out[name] = exc
    return out


def _write_equations(out_dir: Path, status, notes, extra_sections=(), chapter_extras=None,
                     paper=None, errors=None) -> dict:
    """equations.tex (+ .pdf with pdflatex) and references.bib, from :mod:`grpo_theory.render.latex`.
    A pdflatex failure is recorded in ``errors["pdflatex"]`` (its first error line and the log's
    name; the log is kept) and the rest of the report is still written."""
    failed = [n for n, d in status.items() if isinstance(d, Exception)]
    if failed:
        notes.append("derivations that failed and are left out of equations.tex: " + ", ".join(failed))
    files = {"equations.tex": out_dir / "equations.tex", "references.bib": out_dir / "references.bib"}
    try:
        latex.write_equations(out_dir, names=[n for n in status if n not in failed],
                              extra_sections=extra_sections, chapter_extras=chapter_extras,
                              warnings=notes, paper=paper)
    except latex.PdflatexError as exc:
        if errors is None:
            raise
        errors["pdflatex"] = {"error": exc.error, "log": exc.log.name}
        files[exc.log.name] = exc.log
    if (out_dir / "equations.pdf").exists():
        files["equations.pdf"] = out_dir / "equations.pdf"
    return files


def _verification_summary(status) -> dict:
    counts, failed, methods = {"verified": 0, "unverified": 0, "failed": 0}, [], {}
    cases = 0
    for name, d in status.items():
        if isinstance(d, Exception):
            counts["failed"] += 1
            failed.append({"name": name, "error": f"{type(d).__name__}: {str(d)[:240]}"})
            continue
        counts["verified" if d.verified else "unverified"] += 1
        for v in d.verifications:
            methods[v.method] = methods.get(v.method, 0) + 1
            cases += bool(getattr(v, "cases", ""))
    return {"derivations": len(status), **counts, "claims_by_method": methods,
            "finite_cases": cases, "failed_list": failed}


# ----------------------------------------------------------------------------------
# figures: draw each one from its data twin
# ----------------------------------------------------------------------------------

def _numbers(model):
    nums = key_numbers(model)
    # beta above the G -> infinity saddle-node (about 1.08 at p_ref = 0.3), so Mroueh's
    # recurrence has an interior fixed point to compare with
    nums["mroueh_kl_coef"] = MROUEH_KL_COEF
    nums["mroueh"] = compare_with_mroueh(model.replace(kl_coef=MROUEH_KL_COEF, adv_eps=0.0))
    nums["threshold_errors"] = threshold_error_table(momenta=(0.0, 0.5, 0.9),
                                                     refresh_intervals=(1, 2, 4, 16, 64))
    return nums


def _fig_phase(out_dir, model, full):
    files = []
    for key, d in phase_diagram_data(model, full=full).items():
        sym, val = d["fixed"]
        files += figures.phase_diagram(out_dir, f"phase_diagram_{key}", d["diagram"],
                                       published=d["published"], exact_boundary=d["exact_boundary"],
                                       marker=None, resonances=d.get("resonances", ()),
                                       title=f"exact L2 regimes, {math_label(sym)} = {val:g}")
    return files


def _fig_trajectories(out_dir, model, full, notes):
    panels, rows = trajectories_data(model, full=full, notes=notes)
    return figures.trajectories(out_dir, "trajectories", panels), rows


def _fig_fluctuation(out_dir, model, full):
    d = fluctuation_data(model, full=full)
    v = d["holds"]["variant"]
    p_model = d["model"]["rows"][0]["p_star"], d["model"]["rows"][-1]["p_star"]
    regimes = [(f"mean normalization, analytic KL, $\\beta = {v['kl_coef']:g}$:\nlevels off once "
                "$G\\,\\min(p^*, q^*) \\gg 1$", d["holds"]),
               (f"the model ($p^*$ from {p_model[0]:.2f} to {p_model[1]:.2f}):\nfailures are rare, "
                "$G\\,\\mathrm{Var}\\,z$ keeps growing", d["model"])]
    return figures.fluctuation_law(out_dir, "fluctuation_law", regimes), d["rows"], d["setup"]


def _fig_bifurcation(out_dir, model, full):
    d = bifurcation_data(model, full=full)
    # the caption says how far the branches are traced and where a curve starts
    files = figures.bifurcation(out_dir, "bifurcation", d["panels"], mroueh=d["mroueh"], mroueh_panels=1,
                                beta_range=d["beta_range"], p_ref=d["p_ref"])
    return files, d["rows"]


def _fig_atlas(out_dir):
    data = atlas_data()
    files = figures.atlas_folds(out_dir, "atlas_folds", data)
    files += figures.atlas_discrete(out_dir, "atlas_discrete", data["discrete"])
    return files, data


def _fig_log(out_dir):
    d = log_fit_data()
    files = figures.log_fit(out_dir, "log_fit", d["steps"], d["values"], d["fits"],
                            forecast=d["forecast"], holdout=d["summary"]["forecast"],
                            title="verl GRPO log: deepseek-llm-7b-chat, GSM8K")
    return files, d["summary"]


def _fig_deepnet(out_dir, full, notes):
    d = deepnet_data(full=full)
    if d is None:
        notes.append("deep-network section skipped: PyTorch is not installed (" + DEEPNET_INSTALL + ").")
        return [], None
    return figures.deepnet(out_dir, "deepnet", d), {**d["result"].to_dict(), "design": DEEPNET_DESIGN}


# ----------------------------------------------------------------------------------
# the report
# ----------------------------------------------------------------------------------

def _side_stages(out, full, crosscheck, model):
    """The 1/G law's figure, the deep network's and the cross-checks: what :func:`build_report`
    runs in a second process beside the other figures (about half of the stages' work each), in
    a dict with their notes, reused stages and seconds (returned, not appended in that
    process)."""
    notes, reused, seconds = [], [], {}

    def timed(name, *args, **kwargs):
        start = time.perf_counter()
        value = reuse(*args, reused=reused, **kwargs)
        seconds[name] = time.perf_counter() - start
        return value

    fluct = timed("1/G law", "fluctuation", _fig_fluctuation, model, full, out_dir=out)
    deep = timed("deep network", "deepnet", _fig_deepnet, full, out_dir=out, notes=notes)
    cc = (timed("cross-checks", "crosschecks", run_crosschecks, quick=not full, seed=0)
          if crosscheck else None)
    return {"fluctuation": fluct, "deepnet": deep, "crosschecks": cc,
            "notes": notes, "reused": reused, "seconds": seconds}


def _start_side_stages(out, full, crosscheck, model):
    """:func:`_side_stages` in a forked process (``None`` where there is no ``fork``: then the
    stages run in this process, in order)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    try:
        ex = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
        return ex, ex.submit(_side_stages, out, full, crosscheck, model)
    except (ValueError, OSError):   # pragma: no cover - no fork here
        return None


def _side_result(side, out, full, crosscheck, model):
    """:func:`_side_stages`'s result: the forked process's (an error of a stage is raised here,
    as it would have been in this process), or, where none was started, computed here."""
    if side is None:
        return _side_stages(out, full, crosscheck, model)
    ex, future = side
    try:
        return future.result()
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def build_report(out_dir, *, full: bool = False, model: GRPOModel = DEFAULT_MODEL,
                 crosscheck: bool = True, crosschecks: CrosscheckReport | None = None,
                 prewarm: bool = True) -> ReportResult:
    """Write the report for ``model`` (a heavy-ball model, default :data:`DEFAULT_MODEL`)
    into ``out_dir`` (created).  ``full`` uses larger ensembles and grids and the full
    cross-check run; ``crosschecks``: a cross-check run to include instead of running one
    (``crosscheck=False``: none); ``prewarm`` computes the derivations missing from the disk
    cache in two processes first.  Returns a :class:`ReportResult`."""
    t0 = time.perf_counter()
    out = check_output_dir("--out", out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rr = ReportResult(out_dir=out)
    notes = rr.notes
    # the 1/G law, the deep network and the cross-checks run in a second process
    # (their seconds are that process's; "second process" is the wait for it here)
    stages = ["derivations", "numbers", "atlas", "phase diagrams", "trajectories",
              "bifurcations", "log fit", "second process", "equations", "report"]
    bar = progress(total=len(stages), desc="report")
    timings = {}

    def stage(name):
        timings[name] = time.perf_counter()
        bar.set_postfix_str(name)

    def done(name):
        timings[name] = time.perf_counter() - timings[name]
        bar.update(1)

    stage("derivations")
    if prewarm:
        warm_cache()
    status = _derivation_status()
    done("derivations")
    stage("numbers")
    reused = []             # the stages read back from the cache (:mod:`.warm`)
    nums = reuse("numbers", _numbers, model, reused=reused)
    done("numbers")
    # the 1/G law, the deep network and the cross-checks (independent of the other figures) run
    # in a second process meanwhile, on the core the figures leave idle
    run_cc = crosscheck and crosschecks is None
    side = _start_side_stages(out, full, run_cc, model) if prewarm else None
    figs = {}
    stage("atlas")
    figs["atlas"], atlas = reuse("atlas", _fig_atlas, out_dir=out, reused=reused)
    nums["atlas"] = {**atlas["atlas"].to_dict(), "fold_limit": atlas["fold_limit"].to_dict(),
                     "criticality": atlas["criticality"],
                     "resonances": [{**{k: v for k, v in r.items() if k != "eigenvalues"},
                                     "eigenvalues": [[float(e.real), float(e.imag)]
                                                     for e in r["eigenvalues"]]}
                                    for r in atlas["resonances"]],
                     # where the drawn fold curve ends (a choice of the computation)
                     "continuation_end_p_ref": float(atlas["p_ref_plane"]["p_ref"].min())}
    done("atlas")
    stage("phase diagrams")
    figs["phase"] = reuse("phase", _fig_phase, model, full, out_dir=out, reused=reused)
    done("phase diagrams")
    stage("trajectories")
    figs["trajectories"], nums["trajectories"] = reuse("trajectories", _fig_trajectories, model, full,
                                                       out_dir=out, notes=notes, reused=reused)
    done("trajectories")
    # the second process's results keep their places in report.json and the file list
    figs["fluctuation"] = nums["fluctuation_law"] = nums["fluctuation_setup"] = None
    stage("bifurcations")
    figs["bifurcation"], nums["bifurcations"] = reuse("bifurcation", _fig_bifurcation, model, full,
                                                      out_dir=out, reused=reused)
    done("bifurcations")
    stage("log fit")
    figs["log_fit"], nums["log_fit"] = reuse("log_fit", _fig_log, out_dir=out, reused=reused)
    done("log fit")
    stage("second process")     # (its stages run here, in order, where there is no fork)
    got = _side_result(side, out, full, run_cc, model)
    figs["fluctuation"], nums["fluctuation_law"], nums["fluctuation_setup"] = got["fluctuation"]
    figs["deepnet"], nums["deepnet"] = got["deepnet"]
    notes.extend(got["notes"])
    reused.extend(got["reused"])          # this process's stages, then the second one's
    done("second process")
    timings.update(got["seconds"])
    cc = (crosschecks if crosschecks is not None else got["crosschecks"]) if crosscheck else None
    if not crosscheck:
        notes.append("cross-checks skipped (crosscheck=False).")
    nums["crosschecks"] = cc.to_dict() if cc is not None else None
    stage("equations")          # after the figures: the document includes them
    nums["lab"] = lab_summary(lab_data())
    caps = captions(nums, model.to_dict())
    extra = [atlas_section(atlas, atlas_figures(caps, out)), deepnet_section(nums, caps, out),
             log_fit_section(nums, caps, out), lab_section(nums["lab"]),
             crosscheck_section(nums["crosschecks"])]
    paper = {"title": TITLE, "abstract": abstract(nums), "front_sections": front_sections(nums),
             "back_sections": back_sections(nums)}
    extras = chapter_figures(caps, out)
    if collapse_text(nums):
        extras["collapse"] = "\n\n".join(x for x in (extras.get("collapse"), collapse_text(nums)) if x)
    rr.files.update(_write_equations(out, status, notes, extra_sections=extra,
                                     chapter_extras=extras, paper=paper, errors=nums))
    done("equations")
    for paths in figs.values():
        for p in paths:
            rr.files[p.name] = p
    stage("report")
    nums["verification"] = _verification_summary(status)
    nums["equation_numbers"] = latex.equation_numbers(
        [n for n, d in status.items() if not isinstance(d, Exception)])
    rr.seconds = time.perf_counter() - t0
    nums["timings_seconds"] = {k: round(v, 2) for k, v in timings.items() if k != "report"}
    nums["reused_stages"] = reused
    (out / "report.json").write_text(json.dumps(jsonable(nums), indent=1, allow_nan=False))
    rr.files["report.json"] = out / "report.json"
    (out / "report.md").write_text(report_markdown(model.to_dict(), nums, cc, notes, full, rr))
    rr.files["report.md"] = out / "report.md"
    done("report")
    bar.close()
    rr.numbers = nums
    rr.seconds = time.perf_counter() - t0
    return rr
