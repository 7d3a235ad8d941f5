r"""Publication figures for the report (matplotlib, Agg backend, one consistent style).

Every figure function takes the data it plots (computed by :mod:`grpo_theory.report`
from the package API — no formula is re-typed here) and writes ``<stem>.png`` and
``<stem>.pdf`` into ``out_dir``, returning the two paths.

Figures
-------
``phase_diagram_k`` / ``phase_diagram_mu``
    Exact L2 regimes (overdamped / alternating / oscillatory / unstable) of the
    stale-surrogate refresh-window map over :math:`(k, \eta K)` and :math:`(\mu, \eta K)`,
    with the published first-order boundary :math:`\eta K k = 1-\mu` overlaid.
``trajectories``
    Simulation ensembles (mean and ±2 sd band) in three regimes with the L3 closed form.
``fluctuation_law``
    :math:`G\cdot\mathrm{Var}\,z` vs :math:`G` (simulated and exact L2 theory).
``bifurcation``
    Fixed points :math:`p^*` vs :math:`\beta`, stable solid / unstable dashed, Mroueh overlaid.
``log_fit``
    The real verl log with the fitted model families.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from grpo_theory.render.latex import math_label
from grpo_theory.report.data import family_words
from grpo_theory.theory.discrete import REGIME_CODES

__all__ = ["STYLE", "style", "save", "warm_up", "phase_diagram", "trajectories", "fluctuation_law",
           "bifurcation", "log_fit", "atlas_folds", "atlas_discrete"]

#: rcParams of every report figure (serif text, small sizes for a two-column paper).
STYLE = {
    "font.family": "serif",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 7,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "lines.linewidth": 1.3,
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "pdf.fonttype": 42,
    "mathtext.fontset": "dejavuserif",
}

#: the text width of the report's LaTeX document (16 cm) in inches: no figure is drawn wider, so
#: the document includes every figure at its drawn size and its fonts print at the sizes above
#: (7 pt the smallest)
TEXT_WIDTH = 6.3

#: colours of the L2 regimes (codes of :data:`grpo_theory.theory.discrete.REGIME_CODES`)
REGIME_COLORS = {"overdamped": "#cfe3f3", "alternating": "#e8dcf2",
                 "oscillatory": "#fde6c4", "unstable": "#f4c7c3"}
PALETTE = ["#1f4e79", "#c0504d", "#4f8f3a", "#8064a2", "#d08a1f", "#3c9fb0"]


def _plt():
    # matplotlib is imported on first drawing, after selecting the non-interactive backend
    # (the laziness is the point: pyplot must not pick a GUI backend first)
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


@contextlib.contextmanager
def style():
    """Context manager applying :data:`STYLE`."""
    plt = _plt()
    with plt.rc_context(STYLE):
        yield plt


def warm_up() -> None:
    """Load what drawing and saving a figure loads once per process (pyplot, the PNG and PDF
    backends, the fonts, the mathtext parser), by drawing a small figure into memory: the report
    calls it before it forks the processes that draw its figures, which then find it loaded."""
    import io

    with style() as plt:
        fig, ax = plt.subplots(figsize=(1.0, 1.0))
        ax.plot([1.0, 2.0], [1.0, 2.0], label="$x$")
        ax.set_xlabel(f"{math_label('beta')} and text")
        ax.legend()
        for fmt in ("png", "pdf"):
            fig.savefig(io.BytesIO(), format=fmt)
        plt.close(fig)


def save(fig, out_dir, stem) -> list[Path]:
    """Write ``stem.png`` and ``stem.pdf``; close the figure; return both paths."""
    plt = _plt()
    out_dir = Path(out_dir)
    paths = []
    for ext in ("png", "pdf"):
        p = out_dir / f"{stem}.{ext}"
        fig.savefig(p, metadata={"CreationDate": None} if ext == "pdf" else None)
        paths.append(p)
    plt.close(fig)
    return paths


#: the regimes of the window map, defined by its two multipliers (eigenvalues of M)
REGIME_LABELS = {
    "overdamped": "overdamped: real multipliers, the largest positive",
    "alternating": "alternating: real multipliers, the largest negative\n(the deviation changes sign every window)",
    "oscillatory": "oscillatory: a complex pair of multipliers",
    "unstable": "unstable: a multiplier outside the unit circle",
}


def _regime_image(ax, x_edges, y_edges, code, *, logy=True):
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    names = sorted(REGIME_CODES, key=REGIME_CODES.get)
    cmap = ListedColormap([REGIME_COLORS[n] for n in names])
    ax.pcolormesh(x_edges, y_edges, code, cmap=cmap, vmin=-0.5, vmax=len(names) - 0.5,
                  shading="flat", rasterized=True)
    if logy:
        ax.set_yscale("log")
    return [Patch(facecolor=REGIME_COLORS[n], edgecolor="0.6", label=REGIME_LABELS[n]) for n in names]


def _tick_label(v, _pos=None) -> str:
    """A tick label: a plain number (0.6, 0.04, 20), a power of ten below 0.001 ($10^{-6}$)."""
    if v <= 0 or 1e-3 <= v < 1e5:
        return f"{v:g}"
    e = int(np.floor(np.log10(v) + 1e-9))
    m = v / 10.0**e
    return f"$10^{{{e}}}$" if abs(m - 1) < 1e-9 else f"${m:g}\\times 10^{{{e}}}$"


def _plain_log_ticks(axis, subs=None):
    """Tick labels of a log axis as plain numbers (0.6, 0.04, 20), never 6x10^-1; ``subs``
    (e.g. ``(1, 2, 5)``) puts labelled ticks at those multiples of each power of ten, for an
    axis that spans less than a decade or two."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    if subs is not None:
        axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(_tick_label))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _edges(values, log=False):
    v = np.asarray(values, float)
    if log:
        lv = np.log(v)
        mid = np.exp(0.5 * (lv[1:] + lv[:-1]))
        first, last = np.exp(2 * lv[0] - np.log(mid[0])), np.exp(2 * lv[-1] - np.log(mid[-1]))
    else:
        mid = 0.5 * (v[1:] + v[:-1])
        first, last = 2 * v[0] - mid[0], 2 * v[-1] - mid[-1]
    return np.concatenate([[first], mid, [last]])


def phase_diagram(out_dir, stem, diagram, *, published, exact_boundary, marker=None,
                  title="", resonances=()) -> list[Path]:
    """Regime map of a :class:`~grpo_theory.theory.discrete.PhaseDiagram` (rows ηK, columns k or μ).

    ``published`` and ``exact_boundary`` are ``(axis_values, eta_K_values)`` curves;
    ``marker`` an optional ``(axis_value, eta_K, label)`` for the default model; ``resonances``
    ``(axis_value, eta_K)`` points where the flip and complex-pair boundaries meet.  Over the
    integer refresh interval each k is a cell from the geometric midpoint with k - 1 to the
    one with k + 1 (the first from k = 1), and the exact boundary is drawn as the same steps.
    """
    with style() as plt:
        fig, ax = plt.subplots(figsize=(3.8, 2.9))
        is_k = diagram.axis_name == "refresh_interval"
        if is_k:
            ks = np.asarray(diagram.axis, float)
            xe = np.concatenate([[ks[0]], np.sqrt(ks[1:] * ks[:-1]), [ks[-1]]])
        else:
            xe = _edges(diagram.axis, log=False)
        ye = _edges(diagram.eta_K, log=True)
        handles = _regime_image(ax, xe, ye, diagram.regime_code)
        if is_k:
            h1 = ax.stairs(exact_boundary[1], xe, color="k", lw=1.2, baseline=None,
                           label="exact stability boundary (L2)")
        else:
            h1, = ax.plot(*exact_boundary, color="k", lw=1.2, label="exact stability boundary (L2)")
        h2, = ax.plot(*published, color=PALETTE[1], lw=1.4, ls="--",
                      label=r"published $\eta K k = 1-\mu$")
        hs = [h1, h2]
        for i, (x, y) in enumerate(resonances):
            h, = ax.plot([x], [y], "o", ms=5, mfc="white", color="k", ls="none",
                         label="1:2 resonance (flip meets complex pair)" if i == 0 else None)
            if i == 0:
                hs.append(h)
        if marker is not None:
            h3, = ax.plot([marker[0]], [marker[1]], marker="*", ms=9, color=PALETTE[0], ls="none",
                          label=marker[2])
            hs.append(h3)
        if is_k:
            ax.set_xscale("log")
            _plain_log_ticks(ax.xaxis)
            ax.set_xlabel(f"refresh interval {math_label('k')} (steps)")
        else:
            ax.set_xlabel(f"momentum {math_label('mu')}")
        ax.set_xlim(xe[0], xe[-1])
        ax.set_ylim(ye[0], ye[-1])
        _plain_log_ticks(ax.yaxis)
        ax.set_ylabel(f"{math_label('a')} = {math_label('eta')}{math_label('K')} (learning rate × stiffness)")
        if title:
            ax.set_title(title)
        fig.tight_layout()
        fig.legend(handles=handles + hs, loc="upper center", bbox_to_anchor=(0.5, -0.01),
                   ncol=1, frameon=False, fontsize=7)
        return save(fig, out_dir, stem)


def trajectories(out_dir, stem, panels) -> list[Path]:
    """One panel per regime.  Each panel dict: ``title``, ``t``, ``mean``, ``sd``, ``rms``,
    ``theory_t``, ``theory`` (L3 closed form or None), ``discrete``, ``l1``, ``z_star``,
    ``note``.  A stable panel shows the logit; the unstable one shows the size of the
    deviation from the fixed point on a log axis (the simulation's root mean square, the
    maps' and the closed form's absolute value), where the growth of each is visible."""
    with style() as plt:
        fig, axes = plt.subplots(1, len(panels), figsize=(TEXT_WIDTH, 2.9))
        for ax, pan in zip(np.atleast_1d(axes), panels):
            t, m, s = pan["t"], pan["mean"], pan["sd"]
            zs = pan["z_star"]
            unstable = pan.get("regime", "").startswith("unstable")
            if not unstable:
                ax.fill_between(t, m - 2 * s, m + 2 * s, color=PALETTE[0], alpha=0.18, lw=0,
                                label="simulation ±2 sd")
                # the simulation mean drawn last and dashed over the L1 line it nearly covers
                if pan.get("l1") is not None:
                    ax.plot(pan["l1_t"], pan["l1"], color=PALETTE[2], lw=2.0, alpha=0.8,
                            label="L1 nonlinear mean-field map")
                ax.plot(t, m, color=PALETTE[0], lw=1.0, ls=(0, (4, 2)), zorder=5,
                        label="simulation mean")
                if pan.get("discrete") is not None:
                    ax.plot(pan["discrete_t"], pan["discrete"], ls="none", marker="o", ms=2.2,
                            color="k", label="L2 linear map")
                if pan.get("theory") is not None:
                    ax.plot(pan["theory_t"], pan["theory"], color=PALETTE[1], ls="--",
                            label="L3 closed form")
                ax.axhline(zs, color="0.5", lw=0.7, ls=":")
            else:
                ax.plot(t, pan["rms"], color=PALETTE[0], lw=1.3, ls=(0, (1, 1)),
                        label="simulation (root mean square)")
                if pan.get("l1") is not None:
                    ax.plot(pan["l1_t"], np.abs(pan["l1"] - zs), color=PALETTE[2], lw=1.1)
                if pan.get("discrete") is not None:
                    ax.plot(pan["discrete_t"], np.abs(pan["discrete"] - zs), ls="none", marker="o",
                            ms=2.2, color="k")
                if pan.get("theory") is not None:
                    ax.plot(pan["theory_t"], np.abs(pan["theory"] - zs), color=PALETTE[1], ls="--")
                ax.set_yscale("log")
                top = float(np.nanmax(pan["rms"]))
                ax.set_ylim(1e-3, 5 * top)
                ax.set_ylabel("size of the deviation $|z - z^{*}|$", fontsize=8)
                ax.legend(frameon=False, fontsize=7, loc="upper left")
            ax.set_title(pan["title"])
            ax.set_xlabel(f"step {math_label('t')}")
            if pan.get("ylim") is not None and not unstable:
                ax.set_ylim(*pan["ylim"])
            if pan.get("note"):
                ax.text(0.97, 0.04, pan["note"], transform=ax.transAxes, ha="right", va="bottom",
                        fontsize=7, color="0.25")
        np.atleast_1d(axes)[0].set_ylabel(f"logit {math_label('z')}")
        h, lab = np.atleast_1d(axes)[0].get_legend_handles_labels()
        fig.legend(h, lab, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, frameon=False)
        fig.tight_layout()
        return save(fig, out_dir, stem)


def fluctuation_law(out_dir, stem, regimes) -> list[Path]:
    """G·Var z (stationary) against G for each regime (a list of ``(title, series)``, series
    from :func:`grpo_theory.report.data.fluctuation_data`): simulation with ±2 SE, the exact
    discrete theory and the continuous one; under each G its G min(p*, q*)."""
    with style() as plt:
        fig, axes = plt.subplots(1, len(regimes), figsize=(TEXT_WIDTH, 3.1))
        for ax, (title, d) in zip(np.atleast_1d(axes), regimes):
            G = np.asarray(d["group_size"], float)
            ax.errorbar(G, d["g_var_sim"], yerr=2 * np.asarray(d["g_var_sim_err"]), fmt="o", ms=4,
                        color=PALETTE[0], capsize=2, label="simulation (±2 SE)")
            ax.plot(G, d["g_var_theory"], color=PALETTE[1], marker="_", ms=10, lw=1.2,
                    label="exact discrete theory (L2)")
            ax.plot(G, d["g_var_continuous"], color=PALETTE[2], ls="--", lw=1.0,
                    label="continuous model (L3)")
            ax.set_xscale("log", base=2)
            ax.set_xticks(G)
            ax.set_xticklabels([f"{int(g)}\n{q:.2g}" for g, q in zip(G, d["g_min_pq"])], fontsize=7)
            ax.set_xlabel(f"group size {math_label('G')} (below: $G\\,\\min(p^{{*}}, q^{{*}})$)")
            ax.set_ylim(0, None)
            ax.set_title(title, fontsize=8)
        np.atleast_1d(axes)[0].set_ylabel(r"$G \cdot \mathrm{Var}\,z$ (stationary)")
        np.atleast_1d(axes)[0].legend(frameon=False, loc="lower right")
        fig.tight_layout()
        return save(fig, out_dir, stem)


def _segments(x, y, mask):
    """Split (x, y) into runs where mask is constant: yields (x, y, value)."""
    idx = np.nonzero(np.diff(mask.astype(int)))[0] + 1
    for xs, ys, ms in zip(np.split(x, idx), np.split(y, idx), np.split(mask, idx)):
        if xs.size:
            yield xs, ys, bool(ms[0])


def bifurcation(out_dir, stem, panels, *, mroueh=None, mroueh_panels=None,
                beta_range=(1e-2, 10.0), p_ref=None, note=None) -> list[Path]:
    """Fixed-point branches p* vs β.  ``panels`` = {title: [(label, beta, p, stable_mask)]};
    ``mroueh`` = (beta, p) points overlaid on the first ``mroueh_panels`` panels (all if None)."""
    with style() as plt:
        fig, axes = plt.subplots(1, len(panels), figsize=(TEXT_WIDTH, 3.1), sharey=True)
        from matplotlib.lines import Line2D

        for i_ax, (ax, (title, curves)) in enumerate(zip(np.atleast_1d(axes), panels.items())):
            handles = []
            drew_unstable = False
            for i, (label, beta, p, stable) in enumerate(curves):
                col = PALETTE[i % len(PALETTE)]
                for xs, ys, st in _segments(np.asarray(beta), np.asarray(p), np.asarray(stable)):
                    visible = np.isfinite(xs) & (xs >= beta_range[0]) & (xs <= beta_range[1])
                    if not st and visible.any():
                        drew_unstable = True
                    ax.plot(xs, ys, color=col, ls="-" if st else "--", lw=1.3 if st else 1.0)
                handles.append(Line2D([], [], color=col, lw=1.3, label=label))
            handles.append(Line2D([], [], color="0.3", lw=1.3, label="stable"))
            if drew_unstable:
                handles.append(Line2D([], [], color="0.3", lw=1.0, ls="--", label="unstable"))
            if mroueh is not None and (mroueh_panels is None or i_ax < mroueh_panels):
                handles.append(ax.plot(*mroueh, ls="none", marker="o", ms=2.5, mfc="none", color="k",
                                       label="Mroueh (2025) recurrence")[0])
            if p_ref is not None:
                ax.axhline(p_ref, color="0.6", lw=0.7, ls=":")
            ax.set_xscale("log")
            ax.set_xlim(*beta_range)
            ax.set_ylim(p_ref - 0.02 if p_ref is not None else 0, 1.005)
            ax.set_xlabel(f"KL coefficient {math_label('beta')}")
            ax.set_title(title)
            ax.legend(handles=handles, frameon=False, loc="lower left")
        np.atleast_1d(axes)[0].set_ylabel(r"fixed point $p^*$ (reward)")
        if note:
            fig.text(0.5, -0.02, note, ha="center", va="top", fontsize=7, color="0.3", wrap=True)
        fig.tight_layout()
        return save(fig, out_dir, stem)


def log_fit(out_dir, stem, steps, values, fits, *, title="", forecast=None, holdout=None) -> list[Path]:
    """The logged reward with fitted curves (``fits``: name -> FitResult); with a
    ``forecast``, a second panel shows the held-out part at its own scale: the held-out points,
    the forecast of the family chosen on the first part and its 90 % interval (``holdout``: its
    held-out RMSE and coverage, :func:`grpo_theory.report.data.log_fit_data`'s summary)."""
    with style() as plt:
        ncols = 2 if forecast is not None else 1
        fig, axes = plt.subplots(1, ncols, figsize=(TEXT_WIDTH, 3.2), squeeze=False)
        ax = axes[0, 0]
        ax.plot(steps, values, ".", ms=2.5, color="0.55", label="logged reward")
        for i, (name, fr) in enumerate(fits.items()):
            ax.plot(steps, fr.predict(np.asarray(steps, float) - fr.t0),
                    color=PALETTE[i % len(PALETTE)], lw=1.1,
                    label=f"{family_words(name)} ({100 * fr.r2:.1f} % of the variance)")
        if forecast is not None:
            ax.axvline(forecast.split_step, color="k", lw=0.7, ls=":")
            ax.text(forecast.split_step, 0.02, "  fitted | held out  ", transform=ax.get_xaxis_transform(),
                    ha="center", va="bottom", fontsize=7,
                    bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
        ax.set_xlabel("step")
        ax.set_ylabel("reward")
        if title:
            ax.set_title(title, fontsize=8)
        # a white box: the legend stands over the dotted split line
        ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 0.1), frameon=True,
                  facecolor="white", edgecolor="none", framealpha=1.0)
        if forecast is not None and forecast.best is not None:
            ax = axes[0, 1]
            th, yh = np.asarray(forecast.t_holdout), np.asarray(forecast.y_holdout)
            pred = np.asarray(forecast.prediction)
            lower, upper = np.asarray(forecast.lower), np.asarray(forecast.upper)
            ax.fill_between(th, lower, upper, color=PALETTE[1], alpha=0.2, lw=0,
                            label="90 % forecast interval")
            ax.plot(th, yh, ".", ms=2.5, color="0.45", label="held-out reward")
            ax.plot(th, pred, color=PALETTE[1], lw=1.2,
                    label=f"forecast ({family_words(forecast.best)}, from the first part)")
            if holdout is not None:
                ax.set_title(f"held out: RMSE {holdout['holdout_rmse']:.2g}, "
                             f"{100 * holdout['holdout_coverage']:.0f} % inside the interval", fontsize=8)
            lo, hi = float(np.min(yh)), float(np.max(yh))
            ax.set_ylim(lo - 0.45 * (hi - lo), hi + 0.05 * (hi - lo))
            ax.set_xlabel("step")
            ax.legend(frameon=False, fontsize=7, loc="lower left")
        fig.tight_layout()
        return save(fig, out_dir, stem)


def atlas_folds(out_dir, stem, data) -> list[Path]:
    """The fold atlas of the fixed points (data: :func:`grpo_theory.report.build.atlas_data`).

    Left: branches p* vs beta at (G, p_ref) of the first plane, stable solid, unstable dashed,
    folds marked.  Middle: the fold curve in (beta, p_ref), bistable region shaded, cusp marked.
    Right: the folds per integer G in (beta, G), bistable range between them.
    """
    with style() as plt:
        fig, axes = plt.subplots(1, 3, figsize=(TEXT_WIDTH, 2.9))
        ax = axes[0]
        br = data["branches"]
        for xs, ys, st in _segments(br["kl_coef"], br["p"], br["stable"]):
            ax.plot(xs, ys, color=PALETTE[0], ls="-" if st else "--", lw=1.3 if st else 1.0)
        ax.plot(br["fold_kl_coef"], br["fold_p"], "o", ms=3.5, color=PALETTE[1], label="fold (saddle-node)")
        ax.plot([], [], color=PALETTE[0], label="stable branch")
        ax.plot([], [], color=PALETTE[0], ls="--", lw=1.0, label="unstable branch")
        lo, hi = np.nanmin(br["fold_kl_coef"]), np.nanmax(br["fold_kl_coef"])
        ax.set_xlim(lo - 1.2 * (hi - lo), hi + 1.2 * (hi - lo))
        ax.set_ylim(0.6, 1.005)
        ax.set_xlabel(f"KL coefficient {math_label('beta')}")
        ax.set_ylabel(f"fixed point {math_label('p')}" + r"$^{*}$")
        ax.set_title(f"{math_label('G')} = {br['group_size']}, {math_label('p_ref')} = {br['p_ref']:g}")

        ax = axes[1]
        fc = data["p_ref_plane"]
        ax.plot(fc["kl_coef"], fc["p_ref"], color="k", lw=1.2, label="fold curve (continued)")
        # bistable region: between the two fold branches, which meet at the cusp
        i = int(np.argmax(fc["p_ref"]))
        a_r, a_b = fc["p_ref"][:i + 1], fc["kl_coef"][:i + 1]
        b_r, b_b = fc["p_ref"][i:][::-1], fc["kl_coef"][i:][::-1]
        grid = np.linspace(max(a_r.min(), b_r.min()), fc["p_ref"][i], 200)
        xa = np.interp(grid, *(lambda r, b: (r[np.argsort(r)], b[np.argsort(r)]))(a_r, a_b))
        xb = np.interp(grid, *(lambda r, b: (r[np.argsort(r)], b[np.argsort(r)]))(b_r, b_b))
        ax.fill_betweenx(grid, np.minimum(xa, xb), np.maximum(xa, xb), color=REGIME_COLORS["oscillatory"],
                         label="bistable: 3 fixed points")
        c = fc["cusp"]
        ax.plot([c["kl_coef"]], [c["p_ref"]], "*", ms=8, color=PALETTE[1], label="cusp")
        fl = data.get("fold_limit")
        if fl is not None:
            pr = np.array([r["p_ref"] for r in fl.rows])
            lo_b = np.array([r["folds"][0]["kl_coef"] for r in fl.rows])
            up_b = np.array([r["folds"][1]["kl_coef"] for r in fl.rows])
            # shaded up to where the continuation's shading starts (no blank band between the
            # largest directly found p_ref and the continuation's smallest)
            top = pr.max()
            pr_f = np.append(pr, grid[0]) if grid[0] > top else pr
            lo_f = np.append(lo_b, min(xa[0], xb[0])) if grid[0] > top else lo_b
            up_f = np.append(up_b, max(xa[0], xb[0])) if grid[0] > top else up_b
            order = np.argsort(pr_f)
            ax.fill_betweenx(pr_f[order], np.minimum(lo_f, up_f)[order], np.maximum(lo_f, up_f)[order],
                             color=REGIME_COLORS["oscillatory"], alpha=0.6, lw=0)
            for j, b in enumerate((lo_b, up_b)):
                ax.plot(b, pr, "o:", ms=2.5, lw=0.8, mfc="white", color="k",
                        label="folds found directly, below the continuation" if j == 0 else None)
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis)
        ax.set_xlabel(f"KL coefficient {math_label('beta')}")
        ax.set_ylabel(f"reference reward {math_label('p_ref')}")
        ax.set_title(f"folds in ({math_label('beta')}, {math_label('p_ref')}), "
                     f"{math_label('G')} = {fc['group_size']}")

        ax = axes[2]
        g = data["group_size_plane"]
        ax.fill_betweenx(g["group_size"], g["lower"], g["upper"], color=REGIME_COLORS["oscillatory"],
                         label="bistable: 3 fixed points")
        ax.plot(g["lower"], g["group_size"], ".-", ms=3, lw=0.8, color="k", label=f"folds at each integer {math_label('G')}")
        ax.plot(g["upper"], g["group_size"], ".-", ms=3, lw=0.8, color="k")
        ax.axhline(g["first_bistable"] - 0.5, color=PALETTE[1], lw=0.8, ls=":",
                   label=f"onset: {math_label('G')} = {g['first_bistable'] - 1}→{g['first_bistable']}")
        ax.set_yscale("log", base=2)
        _plain_log_ticks(ax.yaxis)
        ax.set_xlabel(f"KL coefficient {math_label('beta')}")
        ax.set_ylabel(f"group size {math_label('G')}")
        ax.set_title(f"folds in ({math_label('beta')}, {math_label('G')}), "
                     f"{math_label('p_ref')} = {g['p_ref']:g}")
        # one legend for the three panels, below them (inside, the legends covered the curves)
        handles, labels = [], []
        for a_ in axes:
            for h_, l_ in zip(*a_.get_legend_handles_labels()):
                if l_ not in labels:
                    handles.append(h_)
                    labels.append(l_)
        fig.tight_layout()
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3,
                   frameon=False)
        return save(fig, out_dir, stem)


def atlas_discrete(out_dir, stem, data) -> list[Path]:
    """Flip and complex-pair (Neimark-Sacker) boundaries of the exact refresh-window map as
    curves in (k, eta K) and (mu, eta K), codimension-two points marked."""
    with style() as plt:
        fig, axes = plt.subplots(1, 2, figsize=(TEXT_WIDTH, 3.0))
        for ax, x, fl, cx, cod, xkey, fixed in (
                (axes[0], data["k"], data["flip_k"], data["complex_k"], data["codim2_k"],
                 "refresh_interval", f"{math_label('mu')} = {data['momentum']:g}"),
                (axes[1], data["mu"], data["flip_mu"], data["complex_mu"], data["codim2_mu"],
                 "momentum", f"{math_label('k')} = {data['refresh_interval']}")):
            ax.plot(x, fl, color=PALETTE[0], label="flip (eigenvalue $-1$)")
            ax.plot(x, np.where(np.isfinite(cx), cx, np.nan), color=PALETTE[1], ls="--",
                    label="complex pair on the unit circle")
            ax.fill_between(x, np.minimum(fl, np.where(np.isfinite(cx), cx, np.inf)), 1e3,
                            color=REGIME_COLORS["unstable"], lw=0, label="unstable")
            for pt in cod:
                ax.plot([pt[xkey]], [pt["eta_K"]], "o", ms=5, mfc="white", color="k")
            ax.plot([], [], "o", ms=5, mfc="white", color="k",
                    label="1:2 resonance (codimension two)")
            ax.set_yscale("log")
            ax.set_ylim(np.nanmin(fl) / 3, np.nanmax(fl) * 1.5)
            _plain_log_ticks(ax.yaxis, subs=(1.0, 2.0, 5.0) if np.nanmax(fl) / np.nanmin(fl) < 30
                             else None)
            ax.set_ylabel(f"{math_label('a')} = {math_label('eta')}{math_label('K')}")
            ax.set_title(fixed)
        axes[0].set_xscale("log")
        _plain_log_ticks(axes[0].xaxis)
        axes[0].text(0.03, 0.04, f"{math_label('k')} extended to real values between the integers",
                     transform=axes[0].transAxes, fontsize=7, color="0.3")
        axes[0].set_xlabel(f"refresh interval {math_label('k')} (steps)")
        axes[1].set_xlabel(f"momentum {math_label('mu')}")
        h, lab = axes[0].get_legend_handles_labels()
        fig.legend(h, lab, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, frameon=False)
        fig.tight_layout()
        return save(fig, out_dir, stem)


def deepnet(out_dir, stem, data) -> list[Path]:
    """Measured per-window multipliers of the neural policy against the exact (L2) prediction
    from the measured stiffness, with the exact and the published k_max; below, measured minus
    predicted with ±2 SE, the report's one error-bar convention (smaller than the markers above)."""
    with style() as plt:
        fig, (ax, ax2) = plt.subplots(2, 1, figsize=(4.8, 2.6), sharex=True,
                                      gridspec_kw={"height_ratios": [2.2, 1]})
        k = np.asarray(data["k"])
        ax.axhline(1.0, color="0.6", lw=0.7)
        ax.plot(k, data["predicted"], "s", ms=6, mfc="none", color=PALETTE[0],
                label="exact L2 prediction")
        ax.errorbar(k, data["multiplier"], yerr=2 * np.asarray(data["se"]), fmt="o", ms=3,
                    color=PALETTE[1], label="neural policy, real GRPO (±2 SE)")
        if data["k_max_predicted"] is not None:
            ax.axvline(data["k_max_predicted"] + 0.5, color=PALETTE[0], ls="--", lw=0.8,
                       label=f"exact theory: stable up to $k$ = {data['k_max_predicted']}")
        ax.axvline(data["k_max_published"] + 0.5, color="0.3", ls=":", lw=0.8,
                   label=f"published rule: stable up to $k$ = {data['k_max_published']}")
        ax.set_ylabel("|multiplier| per window")
        lr = data.get("learning_rate")
        if lr is not None:
            ax.set_title(f"MLP policy, SGD: $\\eta$ = {lr:.3g}, $\\mu$ = {data['momentum']:g}, "
                         f"$\\eta K$ = {data['eta_K']:.3g}", fontsize=8)
        resid = np.asarray(data["multiplier"]) - np.asarray(data["predicted"])
        ax2.axhline(0.0, color="0.6", lw=0.7)
        ax2.errorbar(k, resid, yerr=2 * np.asarray(data["se"]), fmt="o", ms=3, color=PALETTE[1],
                     capsize=2)
        ax2.set_ylabel("measured −\npredicted", fontsize=7)
        ax2.set_xlabel("refresh interval $k$ (steps)")
        ax2.set_xticks(k)
        fig.tight_layout()
        fig.legend(*ax.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0),
                   ncol=2, frameon=False)
        return save(fig, out_dir, stem)
