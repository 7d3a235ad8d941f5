"""Check 3: the refresh-interval threshold, located in the simulation from the mean response
to a fixed initial offset, against the exact L2 window monodromy."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from grpo_theory.crosscheck.base import BASE_MODEL, N_SIGMA, Check, band_reason, headline, heavy_ball, seed_of
from grpo_theory.simulation import simulate
from grpo_theory.theory import discrete
from grpo_theory.theory.drift import drift, update_variance
from grpo_theory.theory.fixed_points import stable_fixed_point

#: KL in the loss (exact, beta = 1): p* = 0.737, K = 0.293 per unit eta, K_f/K = 0.145
THRESHOLD_VARIANT = BASE_MODEL.replace(kl_coef=1.0)
#: KL in the reward (k1, mean normalization, beta = 0.5): K_fresh = 0 exactly, and no noise at z*
K1_VARIANT = BASE_MODEL.replace(kl="k1_reward", normalization="mean", kl_coef=0.5, adv_eps=1e-6)

#: prompts per step (groups averaged into one update) for the KL-in-the-loss settings
PROMPTS = 256
#: (label, variant, prompts per step, momentum, eta*K, refresh intervals as multiples of
#: the exact L2 k_max)
SETTINGS = (
    ("kl_loss mu=0 etaK=0.2", THRESHOLD_VARIANT, PROMPTS, 0.0, 0.2, (0.5, 0.8, 1.3, 1.6)),
    ("kl_loss mu=0.9 etaK=0.05", THRESHOLD_VARIANT, PROMPTS, 0.9, 0.05, (0.5, 1.0, 1.5, 2.0)),
    ("k1_reward(all stale) mu=0 etaK=0.2", K1_VARIANT, 1, 0.0, 0.2, (0.5, 0.8, 1.3, 1.6)),
)
X0 = 0.02           #: initial offset from z* (logits)
WINDOWS = 3         #: windows followed per refresh interval
BATCHES = 10        #: jackknife batches


def _derivatives(fpz, model, h=1e-2):
    """Second and third derivatives of the drift F(z, z_old) at (z*, z*) as symmetric
    tensors over (z, z_old), by central differences of the lambdified drift."""
    def f(d):
        return float(drift(model, fpz + d[0], fpz + d[1]))
    e = np.eye(2) * h

    def hess(c):
        H = np.empty((2, 2))
        for i in range(2):
            for j in range(2):
                H[i, j] = (f(c + e[i] + e[j]) - f(c + e[i] - e[j]) - f(c - e[i] + e[j])
                           + f(c - e[i] - e[j])) / (4 * h * h)
        return H
    H = hess(np.zeros(2))
    T = np.stack([(hess(e[k]) - hess(-e[k])) / (2 * h) for k in range(2)], axis=-1)
    return H, T


def _predict(eta, mu, k, K, phi, x0, windows, derivs=None, noise=None):
    """Mean (x, v) at the window starts from (x0, v=0), window phase 0.

    Returns (linear, corrected): ``linear`` from the exact L2 monodromy
    (``discrete.monodromy``) applied n times; ``corrected`` from the exact per-step map
    (``discrete.step_matrix``) plus the leading mean-field corrections of the drift,
    E[F] - F_lin = H:(m m^T + C)/2 + T:(m m m + 3 m C)/6 over (x, x_s) (``derivs`` = (H, T)
    from :func:`_derivatives`), with the covariance C propagated through the same map with
    the per-step noise eta^2 sigma^2(z_old) (``noise``: a function of the window-start
    deviation)."""
    M = discrete.monodromy(eta, mu, k, K, fresh_fraction=phi)
    lin = [np.array([x0, 0.0])]
    for _ in range(windows):
        lin.append(M @ lin[-1])
    lin = np.array(lin)
    if derivs is None:
        return lin, lin
    H, T = derivs
    A = discrete.step_matrix(eta, mu, K, phi)
    E = np.array([[1.0, 0], [0, 1], [1, 0]])
    b = eta * np.array([1.0, 1.0, 0.0])
    P = np.array([0, 2])                       # (x, x_s) inside (x, v, x_s)
    m2, C2 = np.array([x0, 0.0]), np.zeros((2, 2))
    out = [m2.copy()]
    for _ in range(windows):
        m3, C3 = E @ m2, E @ C2 @ E.T
        q = eta**2 * noise(m3[2]) * np.outer([1.0, 1, 0], [1.0, 1, 0])
        for _ in range(k):
            m, C = m3[P], C3[np.ix_(P, P)]
            corr = (0.5 * np.einsum("ij,ij", H, np.outer(m, m) + C)
                    + np.einsum("ijk,i,j,k", T, m, m, m) / 6
                    + 0.5 * np.einsum("ijk,i,jk", T, m, C))
            m3 = A @ m3 + b * corr
            C3 = A @ C3 @ A.T + q
        m2, C2 = m3[:2], C3[:2, :2]
        out.append(m2.copy())
    return lin, np.array(out)


def _fit_radius(S):
    """Spectral radius of the least-squares window map of mean states S (windows+1, 2)."""
    X, Y = S[:-1].T, S[1:].T
    M = Y @ X.T @ np.linalg.inv(X @ X.T)
    return float(np.max(np.abs(np.linalg.eigvals(M))))


def _measure(z, k, zstar, windows):
    """Per-run deviations at window starts: x_n = z_{nk} - z*, v_n = z_{nk} - z_{nk-1}."""
    idx = np.arange(windows + 1) * k
    x = z[:, idx] - zstar
    v = np.zeros_like(x)
    v[:, 1:] = z[:, idx[1:]] - z[:, idx[1:] - 1]
    return np.stack([x, v], axis=-1)          # (runs, windows+1, 2)


def _radius_jackknife(D, batches=BATCHES):
    est = _fit_radius(D.mean(axis=0))
    idx = np.array_split(np.arange(D.shape[0]), batches)
    loo = np.array([_fit_radius(np.delete(D, ix, axis=0).mean(axis=0)) for ix in idx])
    se = math.sqrt((batches - 1) / batches * np.sum((loo - loo.mean()) ** 2))
    return est, float(se)


def _one_setting(label, variant, prompts, mu, aK, factors, R, seed_seq, stiffness_scale, x0, windows):
    model = variant.replace(prompts=prompts)
    fp = stable_fixed_point(model)
    K, phi = fp.stiffness, fp.fresh_fraction
    eta = aK / K
    K_used = K * stiffness_scale
    k_pred = discrete.max_stable_refresh_interval(eta, mu, K_used, fresh_fraction=phi)
    k_true = discrete.max_stable_refresh_interval(eta, mu, K, fresh_fraction=phi)
    ks = sorted({max(1, round(k_true * f)) for f in factors})
    derivs = _derivatives(fp.z, model)

    def noise(xs):
        return float(update_variance(model, expit(fp.z + xs)))

    rows = []
    for k, ss in zip(ks, seed_seq.spawn(len(ks))):
        # antithetic pair: runs from z* + x0 and z* - x0 with the same seed; the odd part
        # (D+ - D-)/2 cancels the noise-driven mean shift and every even order in x0
        Ds = [_measure(simulate(heavy_ball(model, eta, mu, k), steps=windows * k, runs=R,
                                p0=float(expit(fp.z + sgn * x0)), record=("z",),
                                seed=seed_of(ss)).z,
                       k, fp.z, windows) for sgn in (1, -1)]
        D = 0.5 * (Ds[0] - Ds[1])
        mean = D.mean(axis=0)
        se = D.std(axis=0, ddof=1) / math.sqrt(R)
        lin, sp_ = _predict(eta, mu, k, K_used, phi, x0, windows, derivs, noise)
        _, sm_ = _predict(eta, mu, k, K_used, phi, -x0, windows, derivs, noise)
        so = 0.5 * (sp_ - sm_)
        bias = np.abs(so[:, 0] - lin[:, 0])
        dev = np.abs(mean[:, 0] - lin[:, 0])
        band = N_SIGMA * se[:, 0] + bias
        ratio = float(np.max(dev[1:] / band[1:]))
        ratio_corrected = float(np.max(np.abs(mean[1:, 0] - so[1:, 0]) / (N_SIGMA * se[1:, 0])))
        rho, rho_se = _radius_jackknife(D)
        rho_L2 = float(discrete.spectral_radius(eta, mu, k, K_used, fresh_fraction=phi))
        status = ("growing" if rho > 1 + N_SIGMA * rho_se else
                  "contracting" if rho < 1 - N_SIGMA * rho_se else "undecided")
        rows.append({"setting": label, "setting_text": _label_text(model.kl, mu, aK),
                     "refresh_interval": k, "steps": windows * k,
                     "mean_x": mean[:, 0].tolist(), "mean_x_se": se[:, 0].tolist(),
                     "pred_x_L2": lin[:, 0].tolist(), "bias_second_order": bias.tolist(),
                     "bias_over_4se": float(np.max(bias[1:] / (N_SIGMA * se[1:, 0]))),
                     "agreement_ratio": ratio, "consistent": ratio <= 1.0,
                     "pred_x_corrected": so[:, 0].tolist(),
                     "corrected_ratio_to_4se": ratio_corrected,
                     "radius_fit": rho, "radius_fit_se": rho_se, "radius_L2": rho_L2,
                     "status": status})
    contracting = [r["refresh_interval"] for r in rows if r["status"] == "contracting"]
    growing = [r["refresh_interval"] for r in rows if r["status"] == "growing"]
    k_lo = max(contracting) if contracting else None
    k_hi = min(growing) if growing else None
    name = _label_text(model.kl, mu, aK)
    reasons = [rf"{name}: runs grow at $k = {k} \le k_{{\max}} = {k_pred}$" for k in growing
               if k <= k_pred]
    reasons += [rf"{name}: runs contract at $k = {k} > k_{{\max}} = {k_pred}$"
                for k in contracting if k > k_pred]
    reasons += [f"{name}: no $k$ measured contracting"] if not contracting else []
    reasons += [f"{name}: no $k$ measured growing"] if not growing else []
    reasons += [f"{name}, $k = {r['refresh_interval']}$: the mean deviation is off L2 by "
                f"{r['agreement_ratio']:.2f} × (4 SE + |bias|)" for r in rows if not r["consistent"]]
    summary = {"setting": label, "kl": model.kl, "kl_coef": model.kl_coef,
               "normalization": model.normalization, "prompts": prompts, "momentum": mu, "eta_K": aK, "learning_rate": eta,
               "stiffness": K, "fresh_fraction": phi, "k_max_L2": k_pred,
               "k_max_L2_true_K": k_true,
               "k_max_published": discrete.linear_stability(eta, mu, 1, K, fresh_fraction=phi)
               .max_stable_refresh_interval_continuous,
               "bracket": [k_lo, k_hi], "reasons": reasons}
    return summary, rows


def check_refresh_threshold(quick=True, seed_seq=None, base=None, stiffness_scale=1.0,
                            x0=X0, settings=SETTINGS) -> Check:
    r"""Largest stable refresh interval at real-run settings, from the mean response to an
    initial offset.

    Per setting (variant, momentum, eta K) and refresh interval k, R runs start at
    z* + x0 (window phase 0, velocity 0).  The ensemble mean of (x, v) at the window starts
    is compared with the exact L2 prediction M^n (x0, 0) (``discrete.monodromy``), within
    4 SE plus the computed second-order mean-field bias; the per-window multiplier is the
    spectral radius of the least-squares window map of the mean states (jackknife SE), and
    classifies k as growing / contracting.  ``stiffness_scale`` multiplies K before
    predicting (a test hook that feeds the check a wrong stiffness).  ``base`` is accepted
    for the common signature and ignored: the settings fix their variants."""
    seed_seq = seed_seq or np.random.SeedSequence(2)
    R = 250 if quick else 2000
    summaries, rows = [], []
    for s, ss in zip(settings, seed_seq.spawn(len(settings))):
        summ, r = _one_setting(*s, R=R, seed_seq=ss, stiffness_scale=stiffness_scale, x0=x0,
                               windows=WINDOWS)
        summaries.append(summ)
        rows += r
    reasons = [x for s in summaries for x in s["reasons"]]
    verdict = "fail" if reasons else "pass"
    inside = sum(1 for s in summaries if s["bracket"][0] is not None and s["bracket"][1]
                 is not None and s["bracket"][0] <= s["k_max_L2"] < s["bracket"][1])
    notes = []
    for s in summaries:
        lo, hi = s["bracket"]
        notes.append(rf"{_label_text(s['kl'], s['momentum'], s['eta_K'])}: "
                     rf"$K = {s['stiffness']:.4g}$ ($K_{{f}}/K = {s['fresh_fraction']:.3f}$), "
                     rf"$\eta = {s['learning_rate']:.4g}$; exact L2 $k_{{\max}} = {s['k_max_L2']}$, "
                     f"empirical bracket (largest contracting, smallest growing $k$) "
                     f"{'none' if lo is None else lo} and {'none' if hi is None else hi}; "
                     f"published first-order {s['k_max_published']}")
        for r in rows:
            if r["setting"] == s["setting"]:
                notes.append(rf"  $k = {r['refresh_interval']}$: radius {r['radius_fit']:.3f} ± "
                             f"{r['radius_fit_se']:.2g} (L2 {r['radius_L2']:.3f}), so {r['status']}; "
                             rf"$\bar x_{{W}}$ {r['mean_x'][-1]:.4g} ± {r['mean_x_se'][-1]:.2g} vs L2 "
                             rf"{r['pred_x_L2'][-1]:.4g}; $\max|\bar x_n - x_{{L2}}| / "
                             rf"(4\,\mathrm{{SE}} + |\mathrm{{bias}}|)$ "
                             rf"{r['agreement_ratio']:.2f}; $\max |\mathrm{{bias}}| / (4\,\mathrm{{SE}})$ "
                             f"{r['bias_over_4se']:.2f}; "
                             rf"$\max|\bar x_n - (x_{{L2}} + \mathrm{{bias}})| / (4\,\mathrm{{SE}})$ "
                             f"{r['corrected_ratio_to_4se']:.2f}")
    hl, reason = _headline(summaries, rows, R)
    return Check(
        name="refresh_threshold",
        description=r"largest stable refresh interval at real-run settings ($k$ from 2 to 64, "
                    r"$\eta K$ from 0.05 to 0.2, $\mu = 0$ and $0.9$, fresh and all-stale "
                    "splits): mean response to an offset vs the exact L2 window monodromy",
        predicted=len(summaries), measured=inside, error=inside - len(summaries),
        band={"tolerance": 0,
              "derivation": f"per setting and $k$, {R} runs from $z^{{*}} + {x0}$ "
                            f"($v = 0$, window phase 0), {WINDOWS} windows; the mean $x$ at each "
                            f"window start within 4 SE (across runs) + |second-order mean-field "
                            f"bias| of the exact L2 prediction $M^{{n}} (x_{{0}}, 0)$; $k$ growing "
                            f"or contracting if the spectral radius of the least-squares window "
                            f"map of the mean $(x, v)$ is above $1 + 4\\,\\mathrm{{SE}}$ or below "
                            f"$1 - 4\\,\\mathrm{{SE}}$ (jackknife, {BATCHES} batches); pass iff "
                            f"every $k$ agrees, no $k \\le k_{{\\max}}$ is growing, no "
                            f"$k > k_{{\\max}}$ contracting, and both occur (so the bracket "
                            f"contains the L2 $k_{{\\max}}$). Predicted and measured: the number "
                            f"of settings, and of settings whose bracket contains the L2 "
                            f"$k_{{\\max}}$"},
        verdict=verdict, headline=hl, reason=reason,
        details={"units": "settings", "settings": summaries, "rows": rows, "x0": x0,
                 "runs": R, "windows": WINDOWS, "stiffness_scale": stiffness_scale,
                 "failure_reason": "; ".join(reasons) if reasons else None, "notes": notes})


def _label_text(kl, mu, aK):
    """A setting's name in prose (its ``label`` is a key)."""
    where = "KL in the reward (k1, all stale)" if kl == "k1_reward" else "KL in the loss"
    return rf"{where}, $\mu = {mu:g}$, $\eta K = {aK:g}$"


def _setting_text(s, R):
    kl = ("KL in the reward (k1, all stale)" if s["kl"] == "k1_reward"
          else f"KL in the loss ({s['kl']})")
    return (f"{kl}, $\\beta = {s['kl_coef']:g}$, $\\mu = {s['momentum']:g}$, "
            f"$\\eta K = {s['eta_K']:g}$, $B = {s['prompts']}$, {R} runs")


def _bracket_headline(s, R, statistic):
    lo, hi = s["bracket"]
    band = [lo, None if hi is None else hi - 1]
    return headline("largest stable refresh interval $k_{\\max}$", "steps", _setting_text(s, R),
                    s["k_max_L2"], band, band,
                    "measured bracket",
                    compare="predicted", statistic=statistic)


def _headline(summaries, rows, R):
    """The binding comparison: the first failing setting (its bracket, or the worst mean
    response when the bracket is right); on a pass the first setting's bracket, the others
    named in the reason."""
    worst = max(r["agreement_ratio"] for r in rows)
    statistic = {"name": "largest $|\\bar x_n - x_{L2}| / (4\\,\\mathrm{SE} + |\\mathrm{bias}|)$ over "
                         "every setting, $k$ and window (the mean responses)",
                 "value": worst, "tolerance": 1.0}

    def bracket_words(s):
        lo, hi = s["bracket"]
        return (f"runs contract at $k = {lo}$ and grow at $k = {hi}$" if lo is not None and
                hi is not None else "the swept $k$ do not both contract and grow")
    failing = [s for s in summaries if s["reasons"]]
    if not failing:
        s = summaries[0]
        hl = _bracket_headline(s, R, statistic)
        others = "; ".join(f"{o['k_max_L2']} in {o['bracket'][0]}–{o['bracket'][1] - 1}"
                           for o in summaries[1:])
        reason = band_reason(hl, "$k_{\\max}$", f" ({bracket_words(s)})" + (
            f"; likewise at the other settings: {others}" if others else "")
            + f"; every mean response follows L2 within {worst:.2f} of its band")
        return hl, reason
    s = failing[0]
    k_pred = s["k_max_L2"]
    grown = [r["refresh_interval"] for r in rows if r["setting"] == s["setting"]
             and r["status"] == "growing"]
    shrunk = [r["refresh_interval"] for r in rows if r["setting"] == s["setting"]
              and r["status"] == "contracting"]
    bracket_ok = (shrunk and grown and max(shrunk) <= k_pred < min(grown)
                  and all(k <= k_pred for k in shrunk) and all(k > k_pred for k in grown))
    if not bracket_ok:
        hl = _bracket_headline(s, R, statistic)
        wrong = ([(f"runs grow at $k = {', '.join(map(str, sorted(k for k in grown if k <= k_pred)))}$"
                  " at or below it")] if any(k <= k_pred for k in grown) else [])
        wrong += ([(f"runs contract at $k = {', '.join(map(str, sorted(k for k in shrunk if k > k_pred)))}$"
                   " above it")] if any(k > k_pred for k in shrunk) else [])
        return hl, band_reason(hl, "$k_{\\max}$", f" ({bracket_words(s)}"
                               + "".join("; " + w for w in wrong) + ")")
    r = max((r for r in rows if r["setting"] == s["setting"]), key=lambda r_: r_["agreement_ratio"])
    m, se = np.array(r["mean_x"]), np.array(r["mean_x_se"])
    lin, bias = np.array(r["pred_x_L2"]), np.array(r["bias_second_order"])
    half = N_SIGMA * se + bias
    n = 1 + int(np.argmax(np.abs(m[1:] - lin[1:]) / half[1:]))
    hl = headline(f"mean offset $x_{{{n}}}$ after {n} windows at $k = {r['refresh_interval']}$",
                  "logits", _setting_text(s, R), float(lin[n]), float(m[n]),
                  [float(lin[n] - half[n]), float(lin[n] + half[n])],
                  "L2 ± (4 SE + |second-order bias|)", statistic=statistic)
    return hl, band_reason(hl, "mean offset", f" (the bracket {s['bracket']} contains "
                                              f"$k_{{\\max}} = {k_pred}$)")
