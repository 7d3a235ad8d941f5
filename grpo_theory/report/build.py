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
                     paper=None, errors=None, prepared=None) -> dict:
    """equations.tex (+ .pdf with pdflatex) and references.bib, from :mod:`grpo_theory.render.latex`.
    A pdflatex failure is recorded in ``errors["pdflatex"]`` (its first error line and the log's
    name; the log is kept) and the rest of the report is still written.  ``prepared``: what
    :func:`_prepare_equations` computed ahead."""
    failed = [n for n, d in status.items() if isinstance(d, Exception)]
    if failed:
        notes.append("derivations that failed and are left out of equations.tex: " + ", ".join(failed))
    files = {"equations.tex": out_dir / "equations.tex", "references.bib": out_dir / "references.bib"}
    try:
        latex.write_equations(out_dir, names=[n for n in status if n not in failed],
                              extra_sections=extra_sections, chapter_extras=chapter_extras,
                              warnings=notes, paper=paper, prepared=prepared)
    except latex.PdflatexError as exc:
        if errors is None:
            raise
        errors["pdflatex"] = {"error": exc.error, "log": exc.log.name}
        files[exc.log.name] = exc.log
    if (out_dir / "equations.pdf").exists():
        files["equations.pdf"] = out_dir / "equations.pdf"
    return files


def _prepare_equations(out_dir: Path, status):
    """The parts of equations.tex that depend on the derivations alone, and the result files
    (:func:`grpo_theory.render.latex.prepare_equations`), for :func:`_write_equations`."""
    return latex.prepare_equations(out_dir, [n for n, d in status.items() if not isinstance(d, Exception)])


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

#: the stages after the derivations, in the order their results stand in report.json, the
#: notes and the reused list (none reads another's result: they may run in any order)
_STAGES = ("numbers", "atlas", "phase diagrams", "trajectories", "1/G law", "bifurcations",
           "log fit", "deep network", "cross-checks")
#: the stages that add notes
_TAKE_NOTES = ("trajectories", "deep network")

#: each stage's seconds on a quiet 2-core machine (cold, default ensembles; bench_core.py,
#: 2026-11-29): the order in which two processes take them, the longest first, so that neither
#: waits long for the other
_STAGE_COST = {"deep network": 4.8, "atlas": 4.3, "cross-checks": 3.2, "1/G law": 2.3,
               "log fit": 1.5, "phase diagrams": 1.4, "trajectories": 1.0, "bifurcations": 0.8,
               "numbers": 0.2}


def _stage_call(name, out, full, model):
    """``(key, function, args, kwargs)`` of stage ``name`` for :func:`reuse` (the arguments
    are the stage's key: the same as they always were)."""
    if name == "numbers":
        return "numbers", _numbers, (model,), {}
    if name == "atlas":
        return "atlas", _fig_atlas, (), {"out_dir": out}
    if name == "phase diagrams":
        return "phase", _fig_phase, (model, full), {"out_dir": out}
    if name == "trajectories":
        return "trajectories", _fig_trajectories, (model, full), {"out_dir": out}
    if name == "bifurcations":
        return "bifurcation", _fig_bifurcation, (model, full), {"out_dir": out}
    if name == "log fit":
        return "log_fit", _fig_log, (), {"out_dir": out}
    if name == "1/G law":
        return "fluctuation", _fig_fluctuation, (model, full), {"out_dir": out}
    if name == "deep network":
        return "deepnet", _fig_deepnet, (full,), {"out_dir": out}
    if name == "cross-checks":
        return "crosschecks", run_crosschecks, (), {"quick": not full, "seed": 0}
    raise KeyError(name)


def _run_stage(name, out, full, model):
    """Stage ``name`` (computed, or read back by :func:`reuse`): ``(value, notes, reused,
    seconds)``, the notes it added and whether it was read back returned, not appended (it
    may run in another process)."""
    key, fn, args, kwargs = _stage_call(name, out, full, model)
    notes, reused = [], []
    start = time.perf_counter()
    value = reuse(key, fn, *args, reused=reused, **({"notes": notes} if name in _TAKE_NOTES else {}),
                  **kwargs)
    return value, notes, reused, time.perf_counter() - start


def _start_stages(names, out, full, model):
    """The stages ``names`` submitted to two forked processes, the longest first (each process
    takes the next one as it finishes one): ``(executor, {name: future})``, or ``None`` where
    there is no ``fork`` (then :func:`_stage_results` runs them in this process, in order)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    try:
        ex = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
        order = sorted(names, key=lambda n: -_STAGE_COST.get(n, 0.0))
        return ex, {n: ex.submit(_run_stage, n, out, full, model) for n in order}
    except (ValueError, OSError):   # pragma: no cover - no fork here
        return None


def _stage_results(pool, names, out, full, model, on_done=None):
    """Each stage's :func:`_run_stage` result by name, from the forked processes (an error of
    a stage is raised here, as it would have been in this process) or, where none were
    started, computed here in order; ``on_done(name)`` as each one is in."""
    if pool is None:
        results = {}
        for n in names:
            results[n] = _run_stage(n, out, full, model)
            if on_done is not None:
                on_done(n)
        return results
    from concurrent.futures import as_completed
    ex, futures = pool
    try:
        by_future = {f: n for n, f in futures.items()}
        for f in as_completed(by_future):
            f.result()
            if on_done is not None:
                on_done(by_future[f])
        return {n: futures[n].result() for n in names}
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def build_report(out_dir, *, full: bool = False, model: GRPOModel = DEFAULT_MODEL,
                 crosscheck: bool = True, crosschecks: CrosscheckReport | None = None,
                 prewarm: bool = True, started: float | None = None) -> ReportResult:
    """Write the report for ``model`` (a heavy-ball model, default :data:`DEFAULT_MODEL`)
    into ``out_dir`` (created).  ``full`` uses larger ensembles and grids and the full
    cross-check run; ``crosschecks``: a cross-check run to include instead of running one
    (``crosscheck=False``: none); ``prewarm`` computes the derivations missing from the disk
    cache in two processes first; ``started``: the :func:`time.perf_counter` at which the
    caller began (it derived the missing records itself: the report's seconds and its
    derivations' count from there).  Returns a :class:`ReportResult`."""
    t0 = time.perf_counter() if started is None else started
    out = check_output_dir("--out", out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rr = ReportResult(out_dir=out)
    notes = rr.notes
    run_cc = crosscheck and crosschecks is None
    names = [n for n in _STAGES if n != "cross-checks" or run_cc]
    # the figures, the key numbers and the cross-checks (none reads another's result) run in
    # two forked processes after the derivations, the longest first; each stage's seconds are
    # those of the process that ran it, "stages" the wait for them all here
    bar = progress(total=len(names) + 3, desc="report")     # + derivations, equations, report
    timings = {}

    def stage(name):
        timings[name] = time.perf_counter()
        bar.set_postfix_str(name)

    def done(name):
        timings[name] = time.perf_counter() - timings[name]
        bar.update(1)

    stage("derivations")
    timings["derivations"] = t0
    if prewarm:
        # meanwhile, here: what drawing a figure loads, for the processes forked below
        warm_cache(meanwhile=figures.warm_up)
    done("derivations")
    started_at = time.perf_counter()
    pool = _start_stages(names, out, full, model) if prewarm else None
    # meanwhile, here: the records the document prints, and its parts that depend on them alone
    status = _derivation_status()
    prepared = _prepare_equations(out, status)
    got = _stage_results(pool, names, out, full, model,
                         on_done=lambda n: (bar.set_postfix_str(n), bar.update(1)))
    reused = []             # the stages read back from the cache (:mod:`.warm`), in order
    for n in names:
        notes.extend(got[n][1])
        reused.extend(got[n][2])
        timings[n] = got[n][3]
    timings["stages"] = time.perf_counter() - started_at
    value = {n: got[n][0] for n in names}
    nums = value["numbers"]
    figs = {}
    figs["atlas"], atlas = value["atlas"]
    nums["atlas"] = {**atlas["atlas"].to_dict(), "fold_limit": atlas["fold_limit"].to_dict(),
                     "criticality": atlas["criticality"],
                     "resonances": [{**{k: v for k, v in r.items() if k != "eigenvalues"},
                                     "eigenvalues": [[float(e.real), float(e.imag)]
                                                     for e in r["eigenvalues"]]}
                                    for r in atlas["resonances"]],
                     # where the drawn fold curve ends (a choice of the computation)
                     "continuation_end_p_ref": float(atlas["p_ref_plane"]["p_ref"].min())}
    figs["phase"] = value["phase diagrams"]
    figs["trajectories"], nums["trajectories"] = value["trajectories"]
    figs["fluctuation"], nums["fluctuation_law"], nums["fluctuation_setup"] = value["1/G law"]
    figs["bifurcation"], nums["bifurcations"] = value["bifurcations"]
    figs["log_fit"], nums["log_fit"] = value["log fit"]
    figs["deepnet"], nums["deepnet"] = value["deep network"]
    cc = (crosschecks if crosschecks is not None else value["cross-checks"]) if crosscheck else None
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
                                     chapter_extras=extras, paper=paper, errors=nums, prepared=prepared))
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
