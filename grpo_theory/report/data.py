r"""The data twins of the report's figures and its key numbers, computed by calling the
theory and the simulator (nothing here draws or writes).

Each function returns the arrays one figure is drawn from (:data:`FIGURE_DATA` maps the
figure's file stem to its twin), so a figure can be re-plotted in any style; every twin
takes the model (default :data:`~grpo_theory.model.DEFAULT_MODEL`) where the figure
depends on it.
"""

from __future__ import annotations

import importlib.util
import math
import warnings

import numpy as np

from grpo_theory.data import example_log
from grpo_theory.deepnet import run_deepnet
from grpo_theory.model import DEFAULT_MODEL, NORMALIZATIONS, GRPOModel
from grpo_theory.progress import progress
from grpo_theory.results import jsonable
from grpo_theory.runs.fitting import fit_log
from grpo_theory.runs.logs import read_log
from grpo_theory.simulation import simulate
from grpo_theory.theory import atlas as at
from grpo_theory.theory import discrete, noise, oscillator
from grpo_theory.theory.criticality import (boundary_point, measure_coefficient,
                                            one_to_two_resonance, window_map)
from grpo_theory.theory.derived import get
from grpo_theory.theory.drift import drift, update_variance
from grpo_theory.theory.fold_limit import fold_limit
from grpo_theory.theory.fixed_points import (bifurcations, level_set, mroueh_fixed_points,
                                             stable_fixed_point)
from grpo_theory.theory.mean_field import mean_field_trajectory
from grpo_theory.theory.stability import stability

__all__ = ["FIGURE_DATA", "MROUEH_KL_COEF", "DEEPNET_INSTALL", "LAW_HOLDS", "key_numbers",
           "phase_diagram_data",
           "trajectories_data", "fluctuation_data", "bifurcation_data", "log_fit_data",
           "atlas_data", "deepnet_data"]


#: KL coefficient of the Mroueh comparison: above the G -> infinity saddle-node (~1.08 at p_ref 0.3)
MROUEH_KL_COEF = 2.0


def key_numbers(model: GRPOModel = DEFAULT_MODEL) -> dict:
    """Fixed point, stiffness, oscillator, regime and thresholds of a heavy-ball ``model``
    (default :data:`DEFAULT_MODEL`), computed from the package API.  JSON-ready dict; the
    L3 oscillator is the one of :func:`grpo_theory.stability` (effective lag (k - 1)/2)."""
    m = model.to_dict()
    rep = stability(model)
    fp, st = rep.fixed_point, rep.exact
    eta, mu, k = model.learning_rate, model.momentum, model.refresh_interval
    K = fp.stiffness
    phi = fp.fresh_fraction  # K_f/K may exceed 1 (or be negative): L2/L3 take any real value
    stale = discrete.linear_stability(eta, mu, k, K, fresh_fraction=0.0)
    osc = oscillator.Oscillator(st.mass, st.damping, st.spring)
    flip, cx, crit = discrete.refresh_thresholds(mu, k)
    a_exact = float(min(flip, cx))
    a_pub = float(get("discrete.published_threshold_learning_rate").numeric(mu, k))
    return jsonable({
        "model": m,
        "fixed_point": {"p": fp.p, "z": fp.z, "stiffness": K, "stiffness_fresh": fp.stiffness_fresh,
                        "stiffness_stale": fp.stiffness_stale, "fresh_fraction": phi,
                        "fresh_fraction_used": phi},
        "eta_K": eta * K,
        "oscillator": {"mass": osc.mass, "damping": osc.damping, "spring": osc.spring,
                       "damping_ratio": osc.damping_ratio if osc.damping > 0 else None,
                       "regime": osc.regime, "time_scale": osc.time_scale,
                       "lag": st.lag_continuous},
        "stability": st.to_dict(),
        "stability_stale_surrogate": stale.to_dict(),
        "thresholds_stale": {
            "eta_K_exact": a_exact, "binding": "flip" if flip <= cx else "complex",
            "eta_K_published": a_pub, "rel_error_published": (a_pub - a_exact) / a_exact,
            "eta_K_critical_damping_exact": float(crit),
            "max_refresh_interval_exact": stale.max_stable_refresh_interval,
            "max_refresh_interval_published": stale.max_stable_refresh_interval_continuous,
            "max_learning_rate_exact": a_exact / K, "max_learning_rate_published": a_pub / K,
        },
    })


def phase_diagram_data(model: GRPOModel = DEFAULT_MODEL, *, full=False) -> dict:
    """Data twin of the two phase diagrams: ``{"k": ..., "mu": ...}``, each with the
    :class:`~grpo_theory.theory.discrete.PhaseDiagram` (``diagram``), the published boundary
    and the exact boundary as ``(axis, eta_K)`` arrays, and the default model's ``marker``."""
    eta_K = model.learning_rate * stable_fixed_point(model).stiffness
    mu, k = model.momentum, model.refresh_interval
    codim = at.discrete_boundaries(momentum=mu, refresh_interval=k, points=200)["codim2_mu"]
    n = 400 if full else 200
    aK = np.logspace(-3, math.log10(5.0), n)
    pub = get("discrete.published_threshold_learning_rate").numeric
    ks = np.arange(1, 129)
    mus = np.linspace(0.0, 0.99, n)
    return {
        "k": {"diagram": discrete.phase_diagram(aK, ks, momentum=mu),
              "published": (ks, pub(mu, ks.astype(float))),
              "exact_boundary": (ks, np.array([float(min(*discrete.refresh_thresholds(mu, int(kk))[:2]))
                                               for kk in ks])),
              "marker": (k, eta_K, "default model"), "fixed": ("mu", mu)},
        "mu": {"diagram": discrete.phase_diagram(aK, mu_grid=mus, refresh_interval=k),
               "published": (mus, pub(mus, float(k))),
               "exact_boundary": (mus, np.array([float(min(*discrete.refresh_thresholds(float(m_), k)[:2]))
                                                 for m_ in mus])),
               "marker": (mu, eta_K, "default model"), "fixed": ("k", k),
               "resonances": [(c["momentum"], c["eta_K"]) for c in codim]},
    }


def _regime_settings(model, K):
    """(title, learning_rate, momentum, refresh_interval, steps, start offset) per regime."""
    return [
        ("overdamped", 0.5, 0.0, 1, 60, -1.0),
        ("oscillatory", 1.0, 0.8, 1, 60, -1.0),
        ("unstable (flip)", 1.1 * 2 / K, 0.0, 1, 16, -0.05),
    ]


def trajectories_data(model: GRPOModel = DEFAULT_MODEL, *, full=False, notes=None) -> tuple[list, list]:
    """Data twin of the trajectories figure: ``(panels, rows)``; each panel holds the arrays
    ``t``, ``mean``, ``sd`` (simulation), ``l1_t``/``l1`` (nonlinear mean-field map),
    ``discrete_t``/``discrete`` (L2 linear map), ``theory_t``/``theory`` (L3 closed form)."""
    notes = [] if notes is None else notes
    fp = stable_fixed_point(model)
    K, zs, phi = fp.stiffness, fp.z, fp.fresh_fraction
    runs = 512 if full else 128
    prompts = 32  # identical prompts: same mean field, noise / 32 (variance ∝ 1/(B G))
    panels, rows = [], []
    for title, eta, mu, k, steps, dz in _regime_settings(model, K):
        z0 = zs + dz
        p0 = 1 / (1 + math.exp(-z0))
        setting = model.replace(optimizer="sgd", learning_rate=eta, momentum=mu,
                                refresh_interval=k, prompts=prompts)
        st = stability(setting).exact
        with np.errstate(all="ignore"):
            try:
                res = simulate(setting, steps=steps, runs=runs, p0=p0, record=("z",), seed=1,
                               progress=False)
                z = res["z"]
                t = res.t
            except (ValueError, FloatingPointError) as exc:
                notes.append(f"trajectory simulation '{title}' stopped: {exc}")
                continue
        ok = np.all(np.isfinite(z), axis=0)
        last = int(np.argmin(ok)) if not ok.all() else len(t)
        t, z = t[:last], z[:, :last]
        osc = oscillator.Oscillator(st.mass, st.damping, st.spring)
        tt = np.linspace(0, t[-1], 400)
        theory = None
        if osc.mass > 0 and osc.damping > 0:
            theory = zs + oscillator.trajectory(tt, osc.mass, osc.damping, osc.spring, z0 - zs, 0.0)
        # exact L2 linear map, iterated from the same start (deviation x, velocity 0)
        A = discrete.step_matrix(eta, mu, K, phi)
        y = np.array([z0 - zs, 0.0, z0 - zs])
        xs = [y[0]]
        for j in range(int(t[-1])):
            if j % k == 0:
                y[2] = y[0]
            y = A @ y
            xs.append(y[0])
        lin = zs + np.array(xs)
        with np.errstate(all="ignore"):
            l1 = mean_field_trajectory(setting, int(t[-1]), z0=z0)
        sd = z.std(axis=0, ddof=1)
        ylim = None
        if title.startswith("unstable"):
            lo = min(np.nanmin(z.mean(0) - 2 * sd), np.nanmin(lin))
            hi = max(np.nanmax(z.mean(0) + 2 * sd), np.nanmax(lin))
            ylim = (lo - 0.2 * (hi - lo), hi + 0.2 * (hi - lo))
        panels.append({"title": f"{title}: $\\eta={eta:.3g}$, $\\mu={mu:g}$",
                       "regime": title, "t": t, "mean": z.mean(axis=0), "sd": sd,
                       "rms": np.sqrt(np.mean((z - zs) ** 2, axis=0)),
                       "theory_t": tt, "theory": theory, "discrete_t": np.arange(lin.size),
                       "discrete": lin, "l1_t": np.arange(l1.size), "l1": l1, "z_star": zs, "ylim": ylim,
                       "note": f"L2: ρ = {st.spectral_radius:.3f}"
                               + (f"\nL3: ζ = {osc.damping_ratio:.2f}" if osc.damping > 0 else "")})
        rows.append({"regime": title, "runs": runs, "prompts": prompts,
                     "learning_rate": eta, "momentum": mu, "refresh_interval": k,
                     "eta_K": eta * K, "l2_regime": st.discrete_regime,
                     "spectral_radius": st.spectral_radius, "l3_regime": osc.regime,
                     "damping_ratio": osc.damping_ratio if osc.damping > 0 else None})
    return panels, rows


#: the variant of the fluctuation figure in which the 1/G law holds: mean normalization with the
#: analytic KL at beta = 0.45 keeps the fixed point away from p = 1 (p* from 0.69 at G = 4 to
#: 0.80 at G = 128), so G min(p*, q*) grows from about 1 to 26
LAW_HOLDS = {"normalization": "mean", "kl": "exact", "kl_coef": 0.45, "adv_eps": 0.0}


def _variance_parts(setting, fp, x, eta) -> dict:
    r"""Where the simulated stationary variance about z* departs from the linear theory (SGD
    without momentum, k = 1).  Stationarity of the exact update z' = z + η(F(z) + ξ), with
    δ = z − z*, F(z) = −Kδ + R(δ) (R the drift's nonlinear remainder) and E[ξ² | z] = σ²(z),
    gives exactly  K(2 − ηK) E[δ²] = η E[σ²(z)] + 2(1 − ηK) E[δR] + η E[R²].
    Evaluated over the simulated samples ``x`` (runs × steps), with the exact drift and the
    exact binomial noise at each sample: ``var_z_noise_part`` (the linear theory with σ²
    averaged over the spread; equals the L2 variance when σ² is constant) and
    ``var_z_curvature_part`` (the drift's curvature over the spread), whose sum the simulated
    E[δ²] equals up to its sampling error."""
    z = np.asarray(x, float)[:, ::5].ravel()            # every fifth step: the terms are smooth
    d = z - fp.z
    K = fp.stiffness
    den = K * (2 - eta * K)
    s2 = update_variance(setting, 1 / (1 + np.exp(-z)))
    rem = np.asarray(drift(setting, z), float) + K * d
    return {"var_z_noise_part": float(eta * np.mean(s2) / den),
            "var_z_curvature_part": float((2 * (1 - eta * K) * np.mean(d * rem)
                                           + eta * np.mean(rem * rem)) / den)}


def _fluctuation_series(model, Gs, runs, steps, burn, eta, mu) -> dict:
    rows = []
    sim, err, th, cont = [], [], [], []
    for G in Gs:
        setting = model.replace(group_size=G, optimizer="sgd", learning_rate=eta, momentum=mu,
                                refresh_interval=1, prompts=1)
        fp = stable_fixed_point(setting)
        s2 = noise.noise_at_fixed_point(setting, fp)
        phi = fp.fresh_fraction
        var_th = noise.stationary_variance(eta, mu, fp.stiffness, s2, fresh_fraction=phi)
        var_c = noise.stationary_variance(eta, mu, fp.stiffness, s2, level="continuous",
                                          fresh_fraction=phi)
        res = simulate(setting, steps=steps, runs=runs, p0=fp.p, record=("z",), seed=2,
                       progress=False)
        x = res["z"][:, burn:]
        per_run = x.var(axis=1, ddof=1)  # time variance per run around its own mean
        centred = ((x - fp.z) ** 2).mean(axis=1)
        var_sim = float(np.mean(centred))
        se = float(np.std(centred, ddof=1) / math.sqrt(runs))
        parts = _variance_parts(setting, fp, x, eta) if mu == 0 else {}
        sim.append(G * var_sim)
        err.append(G * se)
        th.append(G * var_th)
        cont.append(G * var_c)
        rows.append({"group_size": G, "p_star": fp.p, "g_min_pq": G * min(fp.p, 1 - fp.p),
                     "stiffness": fp.stiffness,
                     "noise_variance": s2, "var_z_sim": var_sim, "var_z_sim_se": se,
                     "var_z_theory": var_th, "var_z_continuous": var_c,
                     "var_z_time_per_run": float(per_run.mean()), **parts})
    return {"group_size": np.array(Gs), "g_var_sim": np.array(sim), "g_var_sim_err": np.array(err),
            "g_var_theory": np.array(th), "g_var_continuous": np.array(cont),
            "g_min_pq": np.array([r["g_min_pq"] for r in rows]), "rows": rows}


def fluctuation_data(model: GRPOModel = DEFAULT_MODEL, *, full=False) -> dict:
    """Data twin of the 1/G-law figure, two regimes: ``holds`` (the variant :data:`LAW_HOLDS`
    of ``model``, where G min(p*, q*) grows well above 1) and ``model`` (``model`` itself; for
    the default, failures are rare and G min(p*, q*) stays near 1).  Each has the arrays
    ``group_size``, ``g_var_sim`` (± ``g_var_sim_err``), ``g_var_theory`` (exact L2),
    ``g_var_continuous`` (L3), ``g_min_pq`` and the table ``rows``; ``variant`` describes it."""
    eta, mu = 0.5, 0.0
    Gs = [4, 8, 16, 32, 64, 128, 256] if full else [4, 8, 16, 32, 64, 128]
    runs, steps, burn = (1024, 600, 200) if full else (256, 300, 100)
    out = {}
    for key, m in progress([("holds", model.replace(**LAW_HOLDS)), ("model", model)],
                           desc="1/G law"):
        out[key] = _fluctuation_series(m, Gs, runs, steps, burn, eta, mu)
        out[key]["variant"] = {k: getattr(m, k) for k in ("normalization", "kl", "kl_coef",
                                                          "adv_eps", "p_ref")}
    out["learning_rate"], out["momentum"] = eta, mu
    out["setup"] = {"learning_rate": eta, "momentum": mu, "runs": runs, "steps": steps, "burn": burn,
                    "kl_coef_holds": LAW_HOLDS["kl_coef"]}
    out["rows"] = [dict(r, regime=key) for key in ("holds", "model") for r in out[key]["rows"]]
    return out


#: the branches are traced for z* up to z_ref + this many logits (p* within 1e-17 of 1)
_BRANCH_SPAN = 40.0


def _branches(model, beta_range):
    """Fixed-point branches p*(β) of the model's variant as the parametric curve
    β = B(z) = A(z)/Φ(z) (:func:`~grpo_theory.theory.fixed_points.level_set`).

    Every z > z_ref with B(z) > 0 is a fixed point for β = B(z), stable when
    dF/dz = dA − B dΦ = Φ B' < 0: where B' < 0, since the exact and k3 KL forces Φ are
    positive above z_ref.
    """
    z = model.z_ref + np.concatenate([np.logspace(-4, 0, 300)[:-1],
                                      np.linspace(1, _BRANCH_SPAN, 3000)])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        B, dB = level_set(model, z)
        stable = dB < 0
    p = 1 / (1 + np.exp(-z))
    keep = np.isfinite(B) & (B > beta_range[0] * 0.5) & (B < beta_range[1] * 2)
    B, p, stable = np.where(keep, B, np.nan), p, stable & keep
    return B, p, stable


def bifurcation_data(model: GRPOModel = DEFAULT_MODEL, *, full=False) -> dict:
    """Data twin of the bifurcation figure: ``panels`` ({title: [(label, beta, p, stable)]}),
    ``mroueh`` ((beta, p) arrays of Mroueh's fixed points), ``beta_range``, ``p_ref`` and the
    saddle-node table ``rows``."""
    p_ref = model.p_ref
    rng = (1e-2, 10.0)
    panels, bif_rows = {}, []
    for norm in NORMALIZATIONS:
        curves = []
        for kl in ("exact", "k3"):
            for G in (model.group_size, None):
                variant = model.replace(normalization=norm, kl=kl, group_size=G,
                                        surrogate="stale")
                B, p, st = _branches(variant, rng)
                label = f"{kl} KL, " + (f"G = {G}" if G else r"G → ∞")
                curves.append((label, B, p, st))
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    bifs = bifurcations(variant)
                for b in bifs:
                    bif_rows.append({"normalization": norm, "kl": kl, "group_size": G, **b})
        panels[f"{norm} normalization"] = curves
    betas = np.logspace(math.log10(rng[0]), math.log10(rng[1]), 30 if full else 20)
    mb, mp = [], []
    for b in betas:
        for pv in mroueh_fixed_points(model.replace(kl_coef=float(b))):
            mb.append(b)
            mp.append(pv)
    return {"panels": panels, "mroueh": (np.array(mb), np.array(mp)), "beta_range": rng,
            "p_ref": p_ref, "rows": bif_rows, "z_span": _BRANCH_SPAN}


#: the boundary points whose criticality the atlas section computes: (setting in words, model,
#: momentum, refresh interval); the first has the all-stale stiffness of the atlas's L2 map
CRITICALITY_POINTS = (
    ("KL in the reward (all stiffness stale), $G = 16$, $\\beta = 1$",
     GRPOModel(normalization="mean", kl="k1_reward", kl_coef=1.0, group_size=16, adv_eps=0.0), 0.8, 4),
    ("std normalization, analytic KL, $G = 4$, $\\beta = 1$",
     GRPOModel(normalization="std", kl="exact", kl_coef=1.0, group_size=4, adv_eps=0.0), 0.5, 4),
    ("std normalization, analytic KL, $G = 4$, $\\beta = 1$",
     GRPOModel(normalization="std", kl="exact", kl_coef=1.0, group_size=4, adv_eps=0.0), 0.5, 6),
)

#: reference rewards below the continuation's end at which the folds are found directly
FOLD_LIMIT_P_REFS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


def criticality_rows() -> list[dict]:
    """The criticality of the boundary points of :data:`CRITICALITY_POINTS`: kind, eta K, the
    normal-form coefficient and the same coefficient measured by iterating the map."""
    rows = []
    for setting, model, mu, k in CRITICALITY_POINTS:
        wm = window_map(model, momentum=mu, refresh_interval=k)
        pt = boundary_point(wm)
        meas = measure_coefficient(wm, pt)
        rows.append({"setting": setting, "momentum": mu, "refresh_interval": k, "kind": pt.kind,
                     "eta_K": pt.eta_K, "fresh_fraction": pt.fresh_fraction,
                     "coefficient": pt.coefficient, "measured": meas["measured"],
                     "relative_error": meas["relative_error"], "criticality": pt.criticality})
    return rows


def atlas_data(*, group_size=64, p_ref=0.3, group_sizes=None, momentum=0.8,
               refresh_interval=4) -> dict:
    """Data twin of the atlas figures: arrays to re-plot them in any style.

    ``branches`` (p* vs beta with stability and the folds at ``group_size``, ``p_ref``),
    ``p_ref_plane`` (the continued fold curve and its cusp), ``group_size_plane`` (lower and
    upper fold per integer G), ``discrete`` (flip / complex-pair curves, codimension-two
    points), ``checks`` (the independent checks), ``atlas`` (the
    :class:`~grpo_theory.theory.atlas.Atlas`), ``fold_limit`` (the folds below the
    continuation's end, :func:`~grpo_theory.theory.fold_limit.fold_limit`), ``resonances``
    (the monodromy at each codimension-two point) and ``criticality``
    (:func:`criticality_rows`).
    """
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = at.atlas(group_size=group_size, p_ref=p_ref, group_sizes=group_sizes,
                       momentum=momentum, refresh_interval=refresh_interval)
        zr = math.log(p_ref / (1 - p_ref))
        z = zr + np.linspace(1e-3, 12.0, 3000)
        B, dB = level_set(at.ATLAS_MODEL.replace(p_ref=p_ref, group_size=group_size), z)
    folds = at.folds_at(p_ref, group_size)
    fc = res.p_ref_plane
    rows = [r for r in res.group_size_plane if len(r["folds"]) >= 2]
    return {
        "branches": {"group_size": group_size, "p_ref": p_ref, "kl_coef": B,
                     "p": 1 / (1 + np.exp(-z)), "stable": dB < 0,
                     "fold_kl_coef": np.array([f["kl_coef"] for f in folds]),
                     "fold_p": np.array([f["p"] for f in folds])},
        "p_ref_plane": {"group_size": fc.group_size, "p_ref": fc.p_ref, "kl_coef": fc.kl_coef,
                        "p": fc.p, "cusp": fc.cusp},
        "group_size_plane": {"p_ref": p_ref,
                             "group_size": np.array([r["group_size"] for r in rows]),
                             "lower": np.array([r["folds"][0]["kl_coef"] for r in rows]),
                             "upper": np.array([r["folds"][-1]["kl_coef"] for r in rows]),
                             **res.group_size_cusp},
        "discrete": res.discrete,
        "checks": res.checks,
        "atlas": res,
        "fold_limit": fold_limit(group_size, p_refs=FOLD_LIMIT_P_REFS),
        "resonances": [{**c, **one_to_two_resonance(c.get("momentum", momentum),
                                                     c.get("refresh_interval", refresh_interval))}
                       for c in res.discrete["codim2_k"] + res.discrete["codim2_mu"]],
        "criticality": criticality_rows(),
    }


#: the forecast's candidates in words: the two curve families the report fits (``fit --models
#: exponential,oscillator``) and the forecast's baseline, which ``fit`` always adds and never
#: offers as a family of its own: the level carried forward (``constant`` in the package)
FAMILY_WORDS = {"exponential": "single exponential", "oscillator": "damped oscillator",
                "constant": "level carried forward"}


def family_words(name: str) -> str:
    """A forecast candidate in words (:data:`FAMILY_WORDS`; an unknown name as it is)."""
    return FAMILY_WORDS.get(name, str(name).replace("_", " "))


def _holdout_summary(fc) -> dict | None:
    """The forecast's held-out numbers shown with the log-fit figure: the family chosen on the
    fitted part, its held-out RMSE and the fraction of held-out points inside its interval."""
    if fc is None or fc.best is None:
        return None
    yh, lo, up = (np.asarray(x, float) for x in (fc.y_holdout, fc.lower, fc.upper))
    return {"best": fc.best, "split_step": float(fc.split_step), "n_holdout": int(yh.size),
            "holdout_rmse": float(fc.holdout_rmse[fc.best]),
            "holdout_coverage": float(np.mean((yh >= lo) & (yh <= up))),
            # every candidate's held-out error and its rolling-origin error on the fitted part
            "holdout_rmse_by_family": {m: float(v) for m, v in fc.holdout_rmse.items()},
            "origin_rmse_by_family": {m: float(v) for m, v in (fc.origin_rmse or {}).items()}}


def log_fit_data() -> dict:
    """Data twin of the real-log figure: ``steps``, ``values``, ``fits`` (name -> fit),
    ``forecast`` and the ``summary`` table (the log ships in :mod:`grpo_theory.data`)."""
    path = example_log()
    log = read_log(path)
    res = fit_log(log, models=("exponential", "oscillator"), train_fraction=0.5)
    summary = {"source": path.name, "metric": res.metric, "n": res.n, "best": res.best,
               "models": {m: {"r2": d["r2"], "plateau": d["plateau"], "params": d["params"],
                              "time_to_90_steps": d.get("time_to_90_steps")}
                          for m, d in res.models.items()},
               "forecast": _holdout_summary(res.forecast_result)}
    return {"steps": np.asarray(res.steps), "values": np.asarray(res.values), "fits": res.fits,
            "forecast": res.forecast_result, "summary": summary}


#: the refresh intervals of the report's deep-network sweep: every k from on-policy past the
#: published rule's k_max (5) to beyond the exact one (10), where the multiplier crosses 1
DEEPNET_KS = tuple(range(1, 13))
#: the sweep's design, said in the figure's caption: kicked pairs (each run twice, kicked by
#: +δ and by −δ along the top mode with common random numbers), windows per run, random seed
DEEPNET_DESIGN = {"pairs": 16, "windows": 8, "seed": 0}

DEEPNET_INSTALL = ("pip install 'grpo-theory[deepnet]' (on a CPU-only machine first "
                   "pip install torch==2.13.0)")


def deepnet_data(*, full=False) -> dict | None:
    """Data twin of the deep-network figure: a refresh sweep of an MLP policy trained with real
    sampled GRPO (:func:`grpo_theory.deepnet.run_deepnet`) around the exact k_max predicted
    from its measured stiffness; arrays ``k``, ``multiplier``, ``se``, ``predicted`` and the
    summary numbers.  ``None`` when PyTorch is not installed."""
    if importlib.util.find_spec("torch") is None:
        return None

    res = run_deepnet(quick=True, refresh_intervals=tuple(range(1, 15)) if full else DEEPNET_KS,
                      transition=full, **DEEPNET_DESIGN)
    rows = res.per_k
    return {"k": np.array([r.k for r in rows]), "multiplier": np.array([r.multiplier for r in rows]),
            "se": np.array([r.se for r in rows]), "predicted": np.array([r.predicted for r in rows]),
            "k_max_predicted": res.k_max_predicted, "k_max_published": res.k_max_published,
            "k_max_observed": res.k_max_observed, "learning_rate": res.learning_rate,
            "momentum": res.momentum, "eta_K": res.eta_K, "result": res}


#: Each report figure (stem) -> its data twin: call it to get the arrays and re-plot in any style.
FIGURE_DATA = {"phase_diagram_k": phase_diagram_data, "phase_diagram_mu": phase_diagram_data,
               "trajectories": trajectories_data, "fluctuation_law": fluctuation_data,
               "bifurcation": bifurcation_data, "log_fit": log_fit_data,
               "atlas_folds": atlas_data, "atlas_discrete": atlas_data, "deepnet": deepnet_data}
