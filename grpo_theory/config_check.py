r"""Check a GRPO training configuration before launch.

Maps a TRL ``GRPOConfig`` (JSON/YAML, or a ``TrainingArguments``-style dict) or a
verl configuration (nested YAML, dotted ``key=value`` overrides, or a launch
script such as the one printed at the top of a verl log) to the model's
parameters:

====================  ==========================================  ==================================================
model parameter       TRL                                         verl
====================  ==========================================  ==================================================
group size G          ``num_generations``                         ``actor_rollout_ref.rollout.n``
learning rate η       ``learning_rate``                           ``actor_rollout_ref.actor.optim.lr``
momentum μ            ``adam_beta1`` (default 0.9)                ``actor_rollout_ref.actor.optim.betas[0]`` (0.9)
KL coefficient β      ``beta``                                    ``actor.kl_loss_coef`` if ``use_kl_loss``
KL estimator          k3                                          ``kl_loss_type`` (``low_var_kl`` = k3)
normalization         ``scale_rewards`` (False/"none" = mean)     ``algorithm.norm_adv_by_std_in_grpo``
refresh interval k    steps_per_generation·num_iterations/GAS     ppo_epochs·train_batch_size/ppo_mini_batch_size
====================  ==========================================  ==================================================

With a stiffness :math:`K` (per unit learning rate; given, or measured from an
earlier run's log) it predicts the regime, the stability margin, the largest
safe refresh interval and learning rate.  Every number computed here comes
from the core: the exact discrete (L2) analysis of :mod:`grpo_theory.discrete`
when present, otherwise the L3 coefficients of :mod:`grpo_theory.oscillator`
(the published first-order threshold), labelled as such.
"""

from __future__ import annotations

import json
import math
import os

from .validate import ParameterError, check_real

__all__ = ["ModelParameters", "read_config", "map_config", "stiffness_from_log", "check_config"]


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def read_config(path) -> tuple[dict, str]:
    """Read a config file into a flat dict with dotted keys; returns ``(config, kind)``.

    ``kind`` is ``"verl"`` or ``"trl"`` (decided by the keys).  JSON, YAML, and
    text with ``key=value`` overrides (a shell launch script, a verl log whose
    top holds the launch script) are accepted.
    """
    from .logs import LogFormatError
    from .logs.verl import STEP_LINE, parse_overrides

    p = os.fspath(path)
    if not os.path.isfile(p):
        raise ParameterError("config", p, "an existing file")
    with open(p, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    data = None
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LogFormatError(p, exc.lineno, f"not valid JSON ({exc.msg})") from None
    elif p.endswith((".yaml", ".yml")):
        import yaml
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise LogFormatError(p, mark.line + 1 if mark else None,
                                 f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if data is None:
        header = []
        for line in text.split("\n"):
            if STEP_LINE.search(line):
                break
            header.append(line)
        data = parse_overrides(header)
        if not data:
            raise LogFormatError(p, None, "no configuration found (expected JSON, YAML or "
                                          "dotted key=value overrides)")
    if not isinstance(data, dict):
        raise LogFormatError(p, 1, "the configuration must be a mapping of keys to values")
    if isinstance(data.get("log_history"), list):
        raise LogFormatError(p, None, "this is a TRL trainer_state.json, not a GRPOConfig "
                                      "(use the run's training arguments / config file)")
    flat = _flatten(data)
    kind = "verl" if any(k.startswith(("actor_rollout_ref.", "algorithm.", "data.", "trainer."))
                         for k in flat) else "trl"
    return flat, kind


class ModelParameters(dict):
    """name -> {"value", "source", "assumed"}; ``assumed`` True when a default was used."""

    def value(self, name):
        return self[name]["value"]

    def put(self, name, value, source, assumed=False, note=None):
        entry = {"value": value, "source": source, "assumed": bool(assumed)}
        if note:
            entry["note"] = note
        self[name] = entry


def _get(cfg, *keys):
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return k, cfg[k]
    for k in keys:  # suffix match for partial dotted paths (e.g. "rollout.n")
        for ck, v in cfg.items():
            if v is not None and ck.endswith("." + k):
                return ck, v
    return None, None


def _number(name, value, key):
    try:
        if isinstance(value, str):
            value = float(value)
        return float(value)
    except (TypeError, ValueError):
        raise ParameterError(key or name, value, "a number") from None


def map_config(cfg: dict, kind: str) -> ModelParameters:
    """Map a flat config to the model's parameters (see module docstring)."""
    mp = ModelParameters()
    if kind == "trl":
        k, v = _get(cfg, "num_generations")
        mp.put("group_size", int(_number("num_generations", v, k)) if k else 8, k or
               "TRL default num_generations = 8", assumed=k is None)
        k, v = _get(cfg, "learning_rate")
        mp.put("learning_rate", _number("learning_rate", v, k) if k else 1e-6,
               k or "GRPOConfig default learning_rate = 1e-6", assumed=k is None)
        k, v = _get(cfg, "adam_beta1")
        mp.put("momentum", _number("adam_beta1", v, k) if k else 0.9, k or
               "Adam default beta1 = 0.9", assumed=k is None,
               note="Adam's beta1 read as the momentum mu of the model")
        k, v = _get(cfg, "beta")
        mp.put("kl_coef", _number("beta", v, k) if k else 0.0, k or
               "GRPOConfig default beta = 0.0 (TRL >= 0.18; earlier versions 0.04)", assumed=k is None)
        mp.put("kl_estimator", "k3", "TRL computes the per-token k3 estimator")
        k, v = _get(cfg, "scale_rewards")
        if k is None:
            norm, src, assumed = "std", "TRL default scale_rewards = True (group std)", True
        else:
            s = str(v).lower()
            norm = "mean" if s in ("false", "none", "0") else "std"
            src, assumed = k, False
        mp.put("normalization", norm, src, assumed=assumed)
        ks, spg = _get(cfg, "steps_per_generation")
        ki, it = _get(cfg, "num_iterations")
        kg, gas = _get(cfg, "gradient_accumulation_steps")
        gas_v = _number("gradient_accumulation_steps", gas, kg) if kg else 1.0
        spg_v = _number("steps_per_generation", spg, ks) if ks else gas_v
        it_v = _number("num_iterations", it, ki) if ki else 1.0
        refresh = spg_v * it_v / gas_v
        mp.put("refresh_interval", refresh,
               f"steps_per_generation ({spg_v:g}{'' if ks else ', default = GAS'}) x num_iterations "
               f"({it_v:g}{'' if ki else ', default'}) / gradient_accumulation_steps "
               f"({gas_v:g}{'' if kg else ', default'})", assumed=not (ks or ki))
    else:
        k, v = _get(cfg, "actor_rollout_ref.rollout.n", "rollout.n")
        mp.put("group_size", int(_number("rollout.n", v, k)) if k else 1, k or
               "verl default rollout.n = 1 (not GRPO!)", assumed=k is None)
        k, v = _get(cfg, "actor_rollout_ref.actor.optim.lr", "actor.optim.lr", "optim.lr")
        mp.put("learning_rate", _number("lr", v, k) if k else 1e-6, k or
               "verl default actor lr = 1e-6", assumed=k is None)
        k, v = _get(cfg, "actor_rollout_ref.actor.optim.betas", "optim.betas")
        beta1 = None
        if k is not None:
            try:
                beta1 = float(v[0] if isinstance(v, (list, tuple)) else
                              str(v).strip("[]() ").split(",")[0])
            except (ValueError, IndexError):
                beta1 = None
        mp.put("momentum", beta1 if beta1 is not None else 0.9,
               k if beta1 is not None else "AdamW default beta1 = 0.9", assumed=beta1 is None,
               note="Adam's beta1 read as the momentum mu of the model")
        ku, use_kl = _get(cfg, "actor_rollout_ref.actor.use_kl_loss", "actor.use_kl_loss")
        kr, kl_in_reward = _get(cfg, "algorithm.use_kl_in_reward")
        if ku and str(use_kl).lower() == "true":
            kc, coef = _get(cfg, "actor_rollout_ref.actor.kl_loss_coef", "actor.kl_loss_coef")
            mp.put("kl_coef", _number("kl_loss_coef", coef, kc) if kc else 0.001,
                   kc or "verl default kl_loss_coef = 0.001", assumed=kc is None)
            kt, ktype = _get(cfg, "actor_rollout_ref.actor.kl_loss_type", "actor.kl_loss_type")
            ktype = str(ktype) if kt else "low_var_kl"
            est = {"low_var_kl": "k3", "k3": "k3", "kl": "k1", "k1": "k1", "mse": "k2",
                   "k2": "k2", "abs": "abs"}.get(ktype, ktype)
            mp.put("kl_estimator", est, f"{kt} = {ktype}" if kt else "verl default low_var_kl = k3",
                   assumed=kt is None)
        elif kr and str(kl_in_reward).lower() == "true":
            kc, coef = _get(cfg, "algorithm.kl_ctrl.kl_coef")
            mp.put("kl_coef", _number("kl_coef", coef, kc) if kc else 0.001,
                   kc or "verl default kl_ctrl.kl_coef = 0.001", assumed=kc is None,
                   note="KL applied as a reward penalty, not a loss")
            mp.put("kl_estimator", "k1", "verl in-reward KL (kl_penalty default 'kl' = k1)",
                   assumed=True)
        else:
            mp.put("kl_coef", 0.0, "use_kl_loss not set: no KL to the reference",
                   assumed=ku is None)
            mp.put("kl_estimator", None, "no KL")
        kn, norm = _get(cfg, "algorithm.norm_adv_by_std_in_grpo")
        mp.put("normalization", "mean" if kn and str(norm).lower() == "false" else "std",
               kn or "verl default norm_adv_by_std_in_grpo = True", assumed=kn is None)
        ke, ep = _get(cfg, "actor_rollout_ref.actor.ppo_epochs", "actor.ppo_epochs")
        kb, tbs = _get(cfg, "data.train_batch_size")
        km, mbs = _get(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size",
                       "actor.ppo_mini_batch_size")
        ep_v = _number("ppo_epochs", ep, ke) if ke else 1.0
        if kb and km:
            refresh = ep_v * _number("train_batch_size", tbs, kb) / _number("ppo_mini_batch_size", mbs, km)
            mp.put("refresh_interval", refresh,
                   f"ppo_epochs ({ep_v:g}{'' if ke else ', default'}) x {kb} ({tbs}) / {km} ({mbs})",
                   assumed=ke is None)
        else:
            mp.put("refresh_interval", ep_v, "train_batch_size or ppo_mini_batch_size missing: "
                   "assumed one mini-batch per rollout", assumed=True)
    return mp


def stiffness_from_log(path, *, learning_rate=None, metric=None, momentum=None,
                       refresh_interval=None) -> dict:
    r"""Measure the stiffness per unit learning rate from an earlier run's log.

    Fits the single exponential (time constant :math:`\tau`, steps) and reports

    - ``naive``: :math:`K = 1/(\tau\,\eta)` — assumes :math:`\tau = 1/(\eta K)`, i.e.
      damping :math:`\gamma = 1` (no heavy-ball inertia, no lag);
    - ``value`` (used for predictions): the :math:`K` for which the core's L3
      model (:func:`grpo_theory.oscillator.coefficients`) with the earlier run's
      momentum :math:`\mu` and refresh interval has time scale
      :math:`\gamma/k = \tau` — consistent with the model the prediction uses, so
      the earlier run's own configuration is predicted stable, as observed.

    ``learning_rate``, ``momentum`` and ``refresh_interval`` default to the
    earlier log's config (verl launch script), else lr must be given.
    """
    from scipy.optimize import brentq

    from .fitting import fit_curve
    from .logs import read_log
    from .oscillator import coefficients

    log = read_log(path)
    name = log.reward_metric(metric)
    steps, values = log.series(name)
    fit = fit_curve(steps, values, "exponential")
    earlier = map_config(log.config, "verl") if any(
        k.startswith("actor_rollout_ref.") for k in log.config) else None
    src = "given"
    if learning_rate is None:
        if earlier is None or earlier["learning_rate"]["assumed"]:
            raise ParameterError("learning rate of the earlier run", None,
                                 f"found in {path}'s config; give --from-log-lr")
        learning_rate, src = earlier.value("learning_rate"), f"{path}: {earlier['learning_rate']['source']}"
    eta = check_real("learning_rate", learning_rate, low=0, low_open=True)
    mu = momentum if momentum is not None else (earlier.value("momentum") if earlier else 0.9)
    ell = refresh_interval if refresh_interval is not None else (
        earlier.value("refresh_interval") if earlier else 1.0)
    tau, tau_se = fit.params["tau"], fit.stderr["tau"]
    naive = 1.0 / (tau * eta)

    def mismatch(K):
        return coefficients(eta, mu, ell, K).time_scale - tau

    hi = naive
    while mismatch(hi) > 0:
        hi *= 2
    lo = hi / 2
    while mismatch(lo) < 0 and lo > 1e-300:
        lo /= 2
    K = brentq(mismatch, lo, hi, xtol=1e-12 * naive)
    K_se = K * tau_se / tau if math.isfinite(tau_se) else None
    return {"value": K, "stderr": K_se, "naive": naive, "tau_steps": tau, "tau_stderr": tau_se,
            "r2": fit.r2, "learning_rate": eta, "learning_rate_source": src,
            "momentum": mu, "refresh_interval": ell, "metric": name, "source": os.fspath(path),
            "assumption": (f"earlier run overdamped with tau = {tau:.4g} steps; K chosen so that the "
                           f"core's L3 time scale gamma/k equals tau at the earlier run's eta = "
                           f"{eta:g}, mu = {mu:g}, refresh interval = {ell:g} (naive 1/(tau eta) = "
                           f"{naive:.4g} assumes gamma = 1); same task and model (K is a property "
                           "of the problem); the stderr ignores autocorrelated log noise")}


def _l3_prediction(eta, mu, refresh, K):
    """Regime and thresholds from the core's L3 coefficients (first order in the lag)."""
    from scipy.optimize import brentq

    from .oscillator import coefficients

    osc = coefficients(eta, mu, refresh, K)

    def damping_at_lag(ell):
        return coefficients(eta, mu, ell, K).damping

    def damping_at_lr(e):
        return coefficients(e, mu, refresh, K).damping

    # gamma is affine and decreasing in the lag and in eta: bracket its zero
    max_refresh = None
    hi = 1.0
    while damping_at_lag(hi) > 0 and hi < 1e12:
        hi *= 2
    if damping_at_lag(hi) <= 0:
        max_refresh = brentq(damping_at_lag, 0.0, hi) if damping_at_lag(0.0) > 0 else 0.0
    max_lr = None
    hi = eta
    while damping_at_lr(hi) > 0 and hi < 1e12 * eta:
        hi *= 2
    if damping_at_lr(hi) <= 0:
        lo = hi / 2 if damping_at_lr(hi / 2) > 0 else 1e-300
        max_lr = brentq(damping_at_lr, lo, hi)
    regime = osc.regime
    zeta = float(osc.damping_ratio) if osc.damping > 0 else None
    return {
        "level": "L3 (continuous, first order in the lag: the published threshold "
                 "K eta k_ref < 1 - mu)",
        "mass": osc.mass, "damping": osc.damping, "spring": osc.spring,
        "damping_ratio": zeta, "regime": regime, "stable": osc.damping > 0,
        "stability_margin": osc.damping / (1 - mu) if mu < 1 else None,
        "stability_margin_meaning": "gamma/(1 - mu): 1 = no lag erosion, 0 = at the threshold",
        "max_stable_refresh_interval": max_refresh,
        "max_stable_learning_rate": max_lr,
        "timescale_steps": osc.time_scale if osc.damping > 0 else None,
    }


def _l2_prediction(eta, mu, refresh, K):
    """The exact discrete analysis of :mod:`grpo_theory.discrete`, if the core provides it."""
    try:
        from .discrete import stability
    except ImportError:
        return None, "grpo_theory.discrete.stability is not available"
    kr = max(1, int(round(refresh)))
    try:
        res = stability(learning_rate=eta, momentum=mu, refresh_interval=kr, stiffness=K,
                        lag_model="refresh")
    except ParameterError:
        raise
    except Exception as exc:  # noqa: BLE001 - the core module is being written
        return None, f"grpo_theory.discrete.stability failed ({type(exc).__name__}: {exc})"
    out = {"level": "L2 (exact discrete monodromy over one refresh window, Jury conditions)"}
    for name in ("spectral_radius", "stable", "binding_condition", "max_stable_refresh_interval",
                 "max_stable_learning_rate", "discrete_regime", "alternating",
                 "critical_learning_rate_discrete", "max_stable_refresh_interval_continuous",
                 "damping_ratio", "regime", "notes"):
        v = res.get(name) if isinstance(res, dict) else getattr(res, name, None)
        if v is not None:
            out[name] = v.item() if hasattr(v, "item") else (list(v) if isinstance(v, tuple) else v)
    if "spectral_radius" in out:
        out["stability_margin"] = 1.0 - float(out["spectral_radius"])
    return out, None


def check_config(path, *, stiffness=None, from_log=None, from_log_lr=None) -> dict:
    """Map a config to the model and, with a stiffness, predict its dynamics (JSON-ready dict)."""
    cfg, kind = read_config(path)
    mp = map_config(cfg, kind)
    out = {"config": os.fspath(path), "kind": kind, "parameters": dict(mp), "missing": [],
           "assumptions": [f"{k}: {v['source']}" for k, v in mp.items() if v["assumed"]]}
    out["assumptions"].append("model: mean-field GRPO, Adam's beta1 read as momentum mu, the "
                              "refresh interval k used as the lag (as in the published threshold)")
    if mp.value("group_size") < 2:
        out["warnings"] = [f"group size {mp.value('group_size')} < 2: every group is degenerate "
                           "(no GRPO signal)"]
    K_info = None
    if stiffness is not None and from_log is not None:
        raise ParameterError("--stiffness/--from-log", "both", "only one of them")
    if stiffness is not None:
        K = check_real("stiffness", stiffness, low=0, low_open=True)
        K_info = {"value": K, "source": "given (--stiffness), per unit learning rate"}
    elif from_log is not None:
        K_info = stiffness_from_log(from_log, learning_rate=from_log_lr)
        out["assumptions"].append("stiffness: " + K_info["assumption"])
    out["stiffness"] = K_info
    if K_info is None:
        out["prediction"] = None
        out["note"] = "give --stiffness K or --from-log LOG for regime and stability predictions"
        return out
    K = K_info["value"]
    eta, mu, refresh = mp.value("learning_rate"), mp.value("momentum"), mp.value("refresh_interval")
    pred = {"eta_K": eta * K, "l3": _l3_prediction(eta, mu, refresh, K)}
    l2, why = _l2_prediction(eta, mu, refresh, K)
    pred["l2"] = l2
    if why:
        out["missing"].append(why + " (exact L2 threshold not reported; L3 used)")
    out["missing"].append("expected fluctuation: gradient-noise variance sigma^2 unknown from "
                          "a config (grpo_theory.noise.stationary_variance needs it)")
    pred["expected_fluctuation"] = _fluctuation(eta, mu, refresh, K, mp.value("group_size"))
    best = l2 if l2 else pred["l3"]
    pred["stable"] = best.get("stable")
    pred["regime"] = pred["l3"]["regime"]
    pred["max_stable_refresh_interval"] = best.get("max_stable_refresh_interval")
    pred["max_stable_learning_rate"] = best.get("max_stable_learning_rate")
    pred["stability_margin"] = best.get("stability_margin")
    pred["source"] = best["level"]
    out["prediction"] = pred
    return _json_safe(out)


def _has(module):
    import importlib.util
    return importlib.util.find_spec(f"grpo_theory.{module}") is not None


def _fluctuation(eta, mu, refresh, K, G):
    """Expected reward fluctuation: needs the gradient-noise variance, which a config does not hold."""
    return {"value": None,
            "source": "not computed: grpo_theory.noise.stationary_variance needs the per-step "
                      "gradient-noise variance sigma^2 (~1/G) at the fixed point, which is not in "
                      "a config (measure it from a run, e.g. the reward's scatter at the plateau)"}


def _json_safe(x):
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        try:
            return _json_safe(x.item())
        except (TypeError, ValueError):
            return str(x)
    return x
