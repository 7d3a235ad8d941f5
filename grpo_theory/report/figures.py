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
from grpo_theory.theory.discrete import REGIME_CODES

__all__ = ["STYLE", "style", "save", "phase_diagram", "trajectories", "fluctuation_law",
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


def _regime_image(ax, x_edges, y_edges, code, *, logy=True):
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    names = sorted(REGIME_CODES, key=REGIME_CODES.get)
    cmap = ListedColormap([REGIME_COLORS[n] for n in names])
    ax.pcolormesh(x_edges, y_edges, code, cmap=cmap, vmin=-0.5, vmax=len(names) - 0.5,
                  shading="flat", rasterized=True)
    if logy:
        ax.set_yscale("log")
    return [Patch(facecolor=REGIME_COLORS[n], edgecolor="0.6", label=n) for n in names]


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
                  title="") -> list[Path]:
    """Regime map of a :class:`~grpo_theory.theory.discrete.PhaseDiagram` (rows ηK, columns k or μ).

    ``published`` and ``exact_boundary`` are ``(axis_values, eta_K_values)`` curves;
    ``marker`` an optional ``(axis_value, eta_K, label)`` for the default model.
    """
    with style() as plt:
        fig, ax = plt.subplots(figsize=(3.6, 2.9))
        is_k = diagram.axis_name == "refresh_interval"
        xe = _edges(diagram.axis, log=False) if not is_k else np.arange(
            diagram.axis.min() - 0.5, diagram.axis.max() + 1.0)
        ye = _edges(diagram.eta_K, log=True)
        handles = _regime_image(ax, xe, ye, diagram.regime_code)
        h1, = ax.plot(*exact_boundary, color="k", lw=1.2, label="exact stability boundary (L2)")
        h2, = ax.plot(*published, color=PALETTE[1], lw=1.4, ls="--",
                      label=r"published $\eta K k = 1-\mu$")
        hs = [h1, h2]
        if marker is not None:
            h3, = ax.plot([marker[0]], [marker[1]], marker="*", ms=9, color=PALETTE[0], ls="none",
                          label=marker[2])
            hs.append(h3)
        if is_k:
            ax.set_xscale("log")
            ax.set_xlabel(f"refresh interval {math_label('k')} (steps)")
            ax.set_xlim(xe[0], xe[-1])
        else:
            ax.set_xlabel(f"momentum {math_label('mu')}")
            ax.set_xlim(xe[0], xe[-1])
        ax.set_ylim(ye[0], ye[-1])
        ax.set_ylabel(f"{math_label('a')} = {math_label('eta')}{math_label('K')} (learning rate × stiffness)")
        if title:
            ax.set_title(title)
        fig.tight_layout()
        fig.legend(handles=handles + hs, loc="upper center", bbox_to_anchor=(0.5, -0.01),
                   ncol=2, frameon=False)
        return save(fig, out_dir, stem)


def trajectories(out_dir, stem, panels) -> list[Path]:
    """One panel per regime.  Each panel dict: ``title``, ``t``, ``mean``, ``sd``,
    ``theory_t``, ``theory`` (L3 closed form or None), ``z_star``, ``note``."""
    with style() as plt:
        fig, axes = plt.subplots(1, len(panels), figsize=(7.2, 2.5))
        for ax, pan in zip(np.atleast_1d(axes), panels):
            t, m, s = pan["t"], pan["mean"], pan["sd"]
            ax.fill_between(t, m - 2 * s, m + 2 * s, color=PALETTE[0], alpha=0.18, lw=0,
                            label="simulation ±2 sd")
            ax.plot(t, m, color=PALETTE[0], label="simulation mean")
            if pan.get("l1") is not None:
                ax.plot(pan["l1_t"], pan["l1"], color=PALETTE[2], lw=1.1,
                        label="L1 nonlinear mean-field map")
            if pan.get("discrete") is not None:
                ax.plot(pan["discrete_t"], pan["discrete"], ls="none", marker="o", ms=2.2,
                        color="k", label="L2 linear map")
            if pan.get("theory") is not None:
                ax.plot(pan["theory_t"], pan["theory"], color=PALETTE[1], ls="--",
                        label="L3 closed form")
            ax.axhline(pan["z_star"], color="0.5", lw=0.7, ls=":")
            ax.set_title(pan["title"])
            ax.set_xlabel(f"step {math_label('t')}")
            if pan.get("ylim") is not None:
                ax.set_ylim(*pan["ylim"])
            if pan.get("note"):
                ax.text(0.97, 0.04, pan["note"], transform=ax.transAxes, ha="right",
                        va="bottom", fontsize=6.5, color="0.25")
        np.atleast_1d(axes)[0].set_ylabel(f"logit {math_label('z')}")
        h, lab = np.atleast_1d(axes)[0].get_legend_handles_labels()
        fig.legend(h, lab, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=5, frameon=False)
        fig.tight_layout()
        return save(fig, out_dir, stem)


def fluctuation_law(out_dir, stem, group_sizes, g_var_sim, g_var_sim_err, g_var_theory,
                    g_var_continuous=None) -> list[Path]:
    """G·Var z (stationary) against G: simulation with error bars, exact L2 theory."""
    with style() as plt:
        fig, ax = plt.subplots(figsize=(3.4, 2.5))
        G = np.asarray(group_sizes, float)
        ax.errorbar(G, g_var_sim, yerr=2 * np.asarray(g_var_sim_err), fmt="o", ms=4,
                    color=PALETTE[0], capsize=2, label="simulation (±2 se)")
        ax.plot(G, g_var_theory, color=PALETTE[1], marker="_", ms=10, lw=1.2,
                label="exact L2 (AR) theory")
        if g_var_continuous is not None:
            ax.plot(G, g_var_continuous, color=PALETTE[2], ls="--", lw=1.0,
                    label="L3 Langevin")
        ax.set_xscale("log", base=2)
        ax.set_xticks(G)
        ax.set_xticklabels([str(int(g)) for g in G])
        ax.set_xlabel(f"group size {math_label('G')}")
        ax.set_ylabel(r"$G \cdot \mathrm{Var}\,z$ (stationary)")
        ax.set_ylim(0, None)
        ax.legend(frameon=False)
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
        fig, axes = plt.subplots(1, len(panels), figsize=(7.2, 2.8), sharey=True)
        from matplotlib.lines import Line2D

        for i_ax, (ax, (title, curves)) in enumerate(zip(np.atleast_1d(axes), panels.items())):
            handles = []
            for i, (label, beta, p, stable) in enumerate(curves):
                col = PALETTE[i % len(PALETTE)]
                for xs, ys, st in _segments(np.asarray(beta), np.asarray(p), np.asarray(stable)):
                    ax.plot(xs, ys, color=col, ls="-" if st else "--", lw=1.3 if st else 1.0)
                handles.append(Line2D([], [], color=col, lw=1.3, label=label))
            handles += [Line2D([], [], color="0.3", lw=1.3, label="stable"),
                        Line2D([], [], color="0.3", lw=1.0, ls="--", label="unstable")]
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
            fig.text(0.5, -0.02, note, ha="center", va="top", fontsize=6.5, color="0.3")
        fig.tight_layout()
        return save(fig, out_dir, stem)


def log_fit(out_dir, stem, steps, values, fits, *, title="", forecast=None) -> list[Path]:
    """The logged reward with fitted curves (``fits``: name -> FitResult)."""
    with style() as plt:
        fig, ax = plt.subplots(figsize=(4.6, 2.9))
        ax.plot(steps, values, ".", ms=2.5, color="0.55", label="logged reward")
        for i, (name, fr) in enumerate(fits.items()):
            ax.plot(steps, fr.predict(np.asarray(steps, float) - fr.t0),
                    color=PALETTE[i % len(PALETTE)], lw=1.1,
                    label=f"{name.replace('_', ' ')} ($R^2$={fr.r2:.3f})")
        if forecast is not None:
            ax.axvline(forecast.split_step, color="k", lw=0.7, ls=":")
            ax.fill_between(forecast.t_holdout, forecast.band[0], forecast.band[1], color="k",
                            alpha=0.1, lw=0, label=f"90 % forecast interval ({forecast.best})")
        ax.set_xlabel("step")
        ax.set_ylabel("reward")
        if title:
            ax.set_title(title)
        ax.legend(frameon=False, fontsize=6.5, loc="lower right")
        return save(fig, out_dir, stem)


def atlas_folds(out_dir, stem, data) -> list[Path]:
    """The fold atlas of the fixed points (data: :func:`grpo_theory.report.build.atlas_data`).

    Left: branches p* vs beta at (G, p_ref) of the first plane, stable solid, unstable dashed,
    folds marked.  Middle: the fold curve in (beta, p_ref), bistable region shaded, cusp marked.
    Right: the folds per integer G in (beta, G), bistable range between them.
    """
    with style() as plt:
        fig, axes = plt.subplots(1, 3, figsize=(7.4, 2.6))
        ax = axes[0]
        br = data["branches"]
        for xs, ys, st in _segments(br["kl_coef"], br["p"], br["stable"]):
            ax.plot(xs, ys, color=PALETTE[0], ls="-" if st else "--", lw=1.3 if st else 1.0)
        ax.plot(br["fold_kl_coef"], br["fold_p"], "o", ms=3.5, color=PALETTE[1], label="fold")
        ax.plot([], [], color=PALETTE[0], label="stable")
        ax.plot([], [], color=PALETTE[0], ls="--", lw=1.0, label="unstable")
        lo, hi = np.nanmin(br["fold_kl_coef"]), np.nanmax(br["fold_kl_coef"])
        ax.set_xlim(lo - 1.2 * (hi - lo), hi + 1.2 * (hi - lo))
        ax.set_ylim(0.6, 1.005)
        ax.set_xlabel(f"KL coefficient {math_label('beta')}")
        ax.set_ylabel(f"fixed point {math_label('p')}" + r"$^{*}$")
        ax.set_title(f"{math_label('G')} = {br['group_size']}, {math_label('p_ref')} = {br['p_ref']:g}")
        ax.legend(frameon=False, loc="lower left")

        ax = axes[1]
        fc = data["p_ref_plane"]
        ax.plot(fc["kl_coef"], fc["p_ref"], color="k", lw=1.2, label="fold (saddle-node)")
        # bistable region: between the two fold branches, which meet at the cusp
        i = int(np.argmax(fc["p_ref"]))
        a_r, a_b = fc["p_ref"][:i + 1], fc["kl_coef"][:i + 1]
        b_r, b_b = fc["p_ref"][i:][::-1], fc["kl_coef"][i:][::-1]
        grid = np.linspace(max(a_r.min(), b_r.min()), fc["p_ref"][i], 200)
        xa = np.interp(grid, *(lambda r, b: (r[np.argsort(r)], b[np.argsort(r)]))(a_r, a_b))
        xb = np.interp(grid, *(lambda r, b: (r[np.argsort(r)], b[np.argsort(r)]))(b_r, b_b))
        ax.fill_betweenx(grid, np.minimum(xa, xb), np.maximum(xa, xb), color=REGIME_COLORS["oscillatory"],
                         label="bistable (3 fixed points)")
        c = fc["cusp"]
        ax.plot([c["kl_coef"]], [c["p_ref"]], "*", ms=8, color=PALETTE[1], label="cusp")
        ax.set_xlabel(f"KL coefficient {math_label('beta')}")
        ax.set_ylabel(f"reference reward {math_label('p_ref')}")
        ax.set_title(f"folds in ({math_label('beta')}, {math_label('p_ref')}), "
                     f"{math_label('G')} = {fc['group_size']}")
        ax.legend(frameon=False, loc="upper left", fontsize=6.5)

        ax = axes[2]
        g = data["group_size_plane"]
        ax.fill_betweenx(g["group_size"], g["lower"], g["upper"], color=REGIME_COLORS["oscillatory"],
                         label="bistable")
        ax.plot(g["lower"], g["group_size"], ".-", ms=3, lw=0.8, color="k", label="folds")
        ax.plot(g["upper"], g["group_size"], ".-", ms=3, lw=0.8, color="k")
        ax.axhline(g["first_bistable"] - 0.5, color=PALETTE[1], lw=0.8, ls=":",
                   label=f"onset: {math_label('G')} = {g['first_bistable'] - 1}→{g['first_bistable']}")
        ax.set_yscale("log", base=2)
        ax.set_xlabel(f"KL coefficient {math_label('beta')}")
        ax.set_ylabel(f"group size {math_label('G')}")
        ax.set_title(f"folds in ({math_label('beta')}, {math_label('G')}), "
                     f"{math_label('p_ref')} = {g['p_ref']:g}")
        ax.legend(frameon=False, loc="lower right", bbox_to_anchor=(1.02, 0.0), fontsize=6.5)
        fig.tight_layout()
        return save(fig, out_dir, stem)


def atlas_discrete(out_dir, stem, data) -> list[Path]:
    """Flip and complex-pair (Neimark-Sacker) boundaries of the exact refresh-window map as
    curves in (k, eta K) and (mu, eta K), codimension-two points marked."""
    with style() as plt:
        fig, axes = plt.subplots(1, 2, figsize=(7.0, 2.7))
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
            ax.plot([], [], "o", ms=5, mfc="white", color="k", label="codimension-two point")
            ax.set_yscale("log")
            ax.set_ylim(np.nanmin(fl) / 3, np.nanmax(fl) * 1.5)
            ax.set_ylabel(f"{math_label('a')} = {math_label('eta')}{math_label('K')}")
            ax.set_title(fixed)
        axes[0].set_xscale("log")
        axes[0].text(0.03, 0.04, f"{math_label('k')} extended to real values between the integers",
                     transform=axes[0].transAxes, fontsize=6.5, color="0.3")
        axes[0].set_xlabel(f"refresh interval {math_label('k')} (steps)")
        axes[1].set_xlabel(f"momentum {math_label('mu')}")
        h, lab = axes[0].get_legend_handles_labels()
        fig.legend(h, lab, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, frameon=False)
        fig.tight_layout()
        return save(fig, out_dir, stem)


def deepnet(out_dir, stem, data) -> list[Path]:
    """Measured per-window multipliers of the neural policy (± SE) against the exact (L2)
    prediction from the measured stiffness, with the exact and published k_max marked."""
    with style() as plt:
        fig, ax = plt.subplots(figsize=(4.6, 2.9))
        k = np.asarray(data["k"])
        ax.axhline(1.0, color="0.6", lw=0.7)
        ax.plot(k, data["predicted"], "s", mfc="none", color=PALETTE[0], label="exact L2 prediction")
        ax.errorbar(k, data["multiplier"], yerr=data["se"], fmt="o", ms=3.5, color=PALETTE[1],
                    label="neural policy, real GRPO (± SE)")
        if data["k_max_predicted"] is not None:
            ax.axvline(data["k_max_predicted"] + 0.5, color=PALETTE[0], ls="--", lw=0.8,
                       label=f"exact $k_{{\\max}}$ = {data['k_max_predicted']}")
        ax.axvline(data["k_max_published"] + 0.5, color="0.3", ls=":", lw=0.8,
                   label=f"published rule: $k_{{\\max}}$ = {data['k_max_published']}")
        ax.set_xlabel("refresh interval $k$ (steps)")
        ax.set_ylabel("multiplier per window")
        ax.legend(frameon=False, fontsize=6.5, loc="upper left")
        return save(fig, out_dir, stem)
