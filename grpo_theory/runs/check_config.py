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
from the core: the exact discrete (L2) analysis of :mod:`grpo_theory.theory.discrete`
when present, otherwise the L3 coefficients of :mod:`grpo_theory.theory.oscillator`
(the published first-order threshold), labelled as such.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

from grpo_theory.runs.logs.base import flatten
from grpo_theory.results import Result, jsonable
from grpo_theory.validate import ParameterError, check_real

__all__ = ["ConfigCheck", "ModelParameters", "read_config", "map_config", "stiffness_from_log", "check_config",
           "predict_fluctuation", "observed_fluctuation"]

#: the advantage epsilon each framework adds to the group std (fixed in their code)
ADV_EPS = {"trl": 1e-4, "verl": 1e-6}


def _flatten(d):
    """Dotted keys, as in verl's overrides (``actor_rollout_ref.rollout.n``)."""
    return flatten(d, sep=".")


def read_config(path) -> tuple[dict, str]:
    """Read a config file into a flat dict with dotted keys; returns ``(config, kind)``.

    ``kind`` is ``"verl"`` or ``"trl"`` (decided by the keys).  JSON, YAML, and
    text with ``key=value`` overrides (a shell launch script, a verl log whose
    top holds the launch script) are accepted.
    """
    from grpo_theory.runs.logs import LogFormatError
    from grpo_theory.runs.logs.verl import STEP_LINE, parse_overrides

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
            raise LogFormatError(p, exc.lineno, f"not valid JSON ({exc.msg})", what="config file") from None
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
                                          "dotted key=value overrides)", what="config file")
    if not isinstance(data, dict):
        raise LogFormatError(p, 1, "the configuration must be a mapping of keys to values",
                                 what="config file")
    if isinstance(data.get("log_history"), list):
        raise LogFormatError(p, None, "this is a TRL trainer_state.json, not a GRPOConfig "
                                      "(use the run's training arguments / config file)",
                                 what="config file")
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


def _number(name, value, key, *, low=None, low_open=False):
    try:
        if isinstance(value, str):
            value = float(value)
        value = float(value)
    except (TypeError, ValueError):
        raise ParameterError(key or name, value, "a number") from None
    if low is not None:
        value = check_real(key or name, value, low=low, low_open=low_open)
    return value


def _record_lag_keys(mp, cfg, kind):
    """Record the keys that set batch reuse, the loss, the clip and the KL placement.

    ``reuse``: ``"batch"`` when one generation batch feeds several optimizer passes
    (TRL ``num_iterations`` > 1, verl ``ppo_epochs`` > 1), ``"fresh"`` otherwise
    (TRL ``steps_per_generation`` > ``gradient_accumulation_steps`` takes fresh
    mini-batches generated by a stale policy).
    """
    if kind == "trl":
        ki, it = _get(cfg, "num_iterations")
        reuse = "batch" if ki and _number("num_iterations", it, ki, low=1) > 1 else "fresh"
        mp.put("reuse", reuse, ki or "TRL default num_iterations = 1", assumed=ki is None)
        for key, default in (("loss_type", "TRL default (version dependent: 'bnpo'/'dapo')"),
                             ("epsilon", "TRL default epsilon = 0.2"),
                             ("epsilon_high", "TRL default epsilon_high = epsilon")):
            k, v = _get(cfg, key)
            mp.put(key, v if k else None, k or default, assumed=k is None)
        k, v = _get(cfg, "beta")
        mp.put("kl_placement", "loss" if (v or 0) else "none", k or "TRL default beta = 0.0",
               assumed=k is None)
    else:
        ke, ep = _get(cfg, "actor_rollout_ref.actor.ppo_epochs", "actor.ppo_epochs")
        reuse = "batch" if ke and _number("ppo_epochs", ep, ke, low=1) > 1 else "fresh"
        mp.put("reuse", reuse, ke or "verl default ppo_epochs = 1", assumed=ke is None)
        for name, keys in (("loss_type", ("actor_rollout_ref.actor.loss_agg_mode",)),
                           ("epsilon", ("actor_rollout_ref.actor.clip_ratio_low",
                                        "actor_rollout_ref.actor.clip_ratio")),
                           ("epsilon_high", ("actor_rollout_ref.actor.clip_ratio_high",
                                             "actor_rollout_ref.actor.clip_ratio"))):
            k, v = _get(cfg, *keys)
            mp.put(name, v if k else None, k or "verl default (clip_ratio = 0.2)", assumed=k is None)
        ku, use_kl = _get(cfg, "actor_rollout_ref.actor.use_kl_loss", "actor.use_kl_loss")
        kr, in_reward = _get(cfg, "algorithm.use_kl_in_reward")
        placement = ("loss" if ku and str(use_kl).lower() == "true" else
                     "reward" if kr and str(in_reward).lower() == "true" else "none")
        mp.put("kl_placement", placement, ku or kr or "verl defaults: no KL loss, no KL in reward",
               assumed=not (ku or kr))


def map_config(cfg: dict, kind: str) -> ModelParameters:
    """Map a flat config to the model's parameters (see module docstring)."""
    mp = ModelParameters()
    if kind == "trl":
        k, v = _get(cfg, "num_generations")
        mp.put("group_size", int(_number("num_generations", v, k)) if k else 8, k or
               "TRL default num_generations = 8", assumed=k is None)
        k, v = _get(cfg, "learning_rate")
        mp.put("learning_rate", _number("learning_rate", v, k, low=0, low_open=True) if k else 1e-6,
               k or "GRPOConfig default learning_rate = 1e-6", assumed=k is None)
        k, v = _get(cfg, "adam_beta1")
        mp.put("momentum", _number("adam_beta1", v, k) if k else 0.9, k or
               "Adam default beta1 = 0.9", assumed=k is None,
               note="Adam's beta1 read as the momentum mu of the model")
        k, v = _get(cfg, "beta")
        mp.put("kl_coef", _number("beta", v, k, low=0) if k else 0.0, k or
               "GRPOConfig default beta = 0.0 (TRL >= 0.18; earlier versions 0.04)", assumed=k is None)
        mp.put("kl_estimator", "k3", "TRL computes the per-token k3 estimator")
        k, v = _get(cfg, "scale_rewards")
        if k is None:
            norm, src, assumed = "std", "TRL default scale_rewards = True (group std)", True
        else:
            s = str(v).lower()
            if s in ("false", "none", "0"):
                norm, src = "mean", f"{k} = {v}"
            elif s in ("true", "group", "1"):
                norm, src = "std", f"{k} = {v} (group std)"
            elif s == "batch":
                # TRL: group-mean centring divided by the std of the whole batch, one scalar per
                # step -- the mean-normalized variant with the learning rate rescaled by it
                norm, src = "mean", (f"{k} = batch: group-mean centring over one batch-wide std, "
                                     "read as normalization 'mean' with the learning rate divided "
                                     "by the batch reward std")
            else:
                raise ParameterError(k, v, "True/'group', False/'none' or 'batch'")
            assumed = False
        mp.put("normalization", norm, src, assumed=assumed)
        ks, spg = _get(cfg, "steps_per_generation")
        ki, it = _get(cfg, "num_iterations")
        kg, gas = _get(cfg, "gradient_accumulation_steps")
        gas_v = _number("gradient_accumulation_steps", gas, kg) if kg else 1.0
        spg_v = _number("steps_per_generation", spg, ks) if ks else gas_v
        it_v = _number("num_iterations", it, ki) if ki else 1.0
        refresh = spg_v * it_v / gas_v
        kp, pdb = _get(cfg, "per_device_train_batch_size")
        kw, ws = _get(cfg, "world_size", "num_processes")
        pdb_v = _number("per_device_train_batch_size", pdb, kp) if kp else 8.0
        ws_v = _number("world_size", ws, kw) if kw else 1.0
        G_v = float(mp.value("group_size"))
        mp.put("prompts_per_step", pdb_v * gas_v * ws_v / G_v,
               f"per_device_train_batch_size ({pdb_v:g}{'' if kp else ', TrainingArguments default'})"
               f" x gradient_accumulation_steps ({gas_v:g}{'' if kg else ', default'}) x world_size "
               f"({ws_v:g}{'' if kw else ', assumed: not in a GRPOConfig'}) / num_generations "
               f"({G_v:g})", assumed=not (kp and kw))
        mp.put("rollout_prompts", pdb_v * spg_v * ws_v / G_v,
               "per_device_train_batch_size x steps_per_generation x world_size / num_generations "
               "(prompts per generation batch)", assumed=not (kp and kw))
        mp.put("adv_eps", ADV_EPS["trl"], "TRL adds 1e-4 to the group std")
        mp.put("refresh_interval", refresh,
               f"steps_per_generation ({spg_v:g}{'' if ks else ', default = GAS'}) x num_iterations "
               f"({it_v:g}{'' if ki else ', default'}) / gradient_accumulation_steps "
               f"({gas_v:g}{'' if kg else ', default'})", assumed=not (ks or ki))
    else:
        k, v = _get(cfg, "actor_rollout_ref.rollout.n", "rollout.n")
        mp.put("group_size", int(_number("rollout.n", v, k)) if k else 1, k or
               "verl default rollout.n = 1 (not GRPO!)", assumed=k is None)
        k, v = _get(cfg, "actor_rollout_ref.actor.optim.lr", "actor.optim.lr", "optim.lr")
        mp.put("learning_rate", _number("lr", v, k, low=0, low_open=True) if k else 1e-6, k or
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
            mp.put("kl_coef", _number("kl_loss_coef", coef, kc, low=0) if kc else 0.001,
                   kc or "verl default kl_loss_coef = 0.001", assumed=kc is None)
            kt, ktype = _get(cfg, "actor_rollout_ref.actor.kl_loss_type", "actor.kl_loss_type")
            ktype = str(ktype) if kt else "low_var_kl"
            est = {"low_var_kl": "k3", "k3": "k3", "kl": "k1", "k1": "k1", "mse": "k2",
                   "k2": "k2", "abs": "abs"}.get(ktype, ktype)
            mp.put("kl_estimator", est, f"{kt} = {ktype}" if kt else "verl default low_var_kl = k3",
                   assumed=kt is None)
        elif kr and str(kl_in_reward).lower() == "true":
            kc, coef = _get(cfg, "algorithm.kl_ctrl.kl_coef")
            mp.put("kl_coef", _number("kl_coef", coef, kc, low=0) if kc else 0.001,
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
        if km:
            mp.put("prompts_per_step", _number("ppo_mini_batch_size", mbs, km),
                   f"{km} (prompts per optimizer update; verl multiplies it by rollout.n)")
        elif kb:
            mp.put("prompts_per_step", _number("train_batch_size", tbs, kb),
                   f"{kb}: ppo_mini_batch_size missing, one update per rollout batch assumed",
                   assumed=True)
        else:
            mp.put("prompts_per_step", None, "ppo_mini_batch_size and train_batch_size missing",
                   assumed=True)
        mp.put("rollout_prompts", _number("train_batch_size", tbs, kb) if kb else None,
               kb or "train_batch_size missing", assumed=kb is None)
        mp.put("adv_eps", ADV_EPS["verl"], "verl adds 1e-6 to the group std")
        if kb and km:
            refresh = ep_v * _number("train_batch_size", tbs, kb) / _number("ppo_mini_batch_size", mbs, km)
            mp.put("refresh_interval", refresh,
                   f"ppo_epochs ({ep_v:g}{'' if ke else ', default'}) x {kb} ({tbs}) / {km} ({mbs})",
                   assumed=ke is None)
        else:
            mp.put("refresh_interval", ep_v, "train_batch_size or ppo_mini_batch_size missing: "
                   "assumed one mini-batch per rollout", assumed=True)
    _record_lag_keys(mp, cfg, kind)
    return mp


def stiffness_from_log(path, *, learning_rate=None, metric=None, momentum=None,
                       refresh_interval=None) -> dict:
    r"""Measure the stiffness per unit learning rate from an earlier run's log.

    Fits the single exponential (time constant :math:`\tau`, steps) and reports

    - ``naive``: :math:`K = 1/(\tau\,\eta)` — assumes :math:`\tau = 1/(\eta K)`, i.e.
      damping :math:`\gamma = 1` (no heavy-ball inertia, no lag);
    - ``value`` (used for predictions): the :math:`K` for which the core's L3
      model (:func:`grpo_theory.theory.oscillator.coefficients`) with the earlier run's
      momentum :math:`\mu` and refresh interval has time scale
      :math:`\gamma/k = \tau` — consistent with the model the prediction uses, so
      the earlier run's own configuration is predicted stable, as observed.

    ``learning_rate``, ``momentum`` and ``refresh_interval`` default to the
    earlier log's config (verl launch script), else lr must be given.
    """
    from scipy.optimize import brentq

    from grpo_theory.runs.fitting import fit_curve
    from grpo_theory.runs.logs import read_log
    from grpo_theory.theory.oscillator import coefficients

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
    step_90 = fit.t0 + fit.time_to_90 if math.isfinite(fit.time_to_90) else None
    return {"value": K, "stderr": K_se, "naive": naive, "tau_steps": tau, "tau_stderr": tau_se,
            "r2": fit.r2, "plateau_reward": fit.params["plateau"],
            "plateau_reward_stderr": fit.stderr["plateau"],
            "initial_reward": fit.params["initial"], "step_90": step_90,
            "observed_fluctuation": observed_fluctuation(steps, values, step_90),
            "earlier_group_size": earlier.value("group_size") if earlier else None,
            "earlier_rollout_prompts": earlier.value("rollout_prompts") if earlier else None,
            "learning_rate": eta, "learning_rate_source": src,
            "momentum": mu, "refresh_interval": ell, "metric": name, "source": os.fspath(path),
            "assumption": (f"earlier run overdamped with tau = {tau:.4g} steps; K chosen so that the "
                           f"core's L3 time scale gamma/k equals tau at the earlier run's eta = "
                           f"{eta:g}, mu = {mu:g}, refresh interval = {ell:g} (naive 1/(tau eta) = "
                           f"{naive:.4g} assumes gamma = 1); same task and model (K is a property "
                           "of the problem); the stderr ignores autocorrelated log noise")}


def _l3_prediction(eta, mu, refresh, K):
    """Regime and thresholds from the core's L3 coefficients (first order in the lag)."""
    from scipy.optimize import brentq

    from grpo_theory.theory.oscillator import coefficients

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
    """The exact discrete analysis of :mod:`grpo_theory.theory.discrete`."""
    from grpo_theory.theory.discrete import stability

    kr = max(1, int(round(refresh)))
    res = stability(learning_rate=eta, momentum=mu, refresh_interval=kr, stiffness=K,
                    lag_model="refresh")
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
    return out


def observed_fluctuation(steps, values, plateau_start=None, *, window=50) -> dict:
    r"""Late-run reward fluctuation of a log: rolling standard deviation over the plateau.

    The plateau is the last half of the run, or from ``plateau_start`` (e.g. the
    step at which a fit covered 90 % of its rise) if that is later.  The reward is
    cut into consecutive windows of ``window`` points; the reported ``std`` is the
    pooled within-window standard deviation (RMS of the windows' sample sd,
    ddof = 1), which removes the slow drift of a still-creeping plateau.  Also
    returned: the plateau mean and the plain standard deviation over the plateau.
    """
    import numpy as np

    steps = np.asarray(steps, dtype=float)
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(steps) & np.isfinite(values)
    steps, values = steps[ok], values[ok]
    out = {"std": None, "mean": None, "plain_std": None, "window": int(window), "windows": 0,
           "plateau_start_step": None, "n": 0,
           "definition": f"pooled sd within consecutive {window}-point windows over the plateau "
                         "(last half of the run, or after the fit's 90 % point if later)"}
    if steps.size < 2 * window:
        out["note"] = f"fewer than {2 * window} points: no observed fluctuation"
        return out
    start = float(steps[steps.size // 2])
    if plateau_start is not None and math.isfinite(plateau_start):
        start = max(start, float(plateau_start))
    y = values[steps >= start]
    nw = y.size // window
    if nw < 1:
        out["note"] = "plateau shorter than one window"
        return out
    sds = [float(np.std(y[i * window:(i + 1) * window], ddof=1)) for i in range(nw)]
    out.update(std=float(np.sqrt(np.mean(np.square(sds)))), mean=float(np.mean(y)),
               plain_std=float(np.std(y, ddof=1)), windows=nw, plateau_start_step=start,
               n=int(y.size))
    return out


def _kl_kind(estimator, kl_coef):
    """The drift variant's KL kind for a config's estimator (``none``/``exact``/``k3``) and a note."""
    if not kl_coef or estimator is None:
        return "none", None
    if estimator == "k3":
        return "k3", None
    return "exact", (f"KL estimator {estimator} modelled by the analytic (exact) KL gradient: "
                     "no sampled KL noise (only none/exact/k3 are derived)")


def predict_fluctuation(mp, *, stiffness=None, stiffness_source=None, reward_level=None,
                        reward_level_source=None, p_ref=None, p_ref_source=None,
                        observed=None, measurement_samples=None) -> dict:
    r"""Predicted stationary reward fluctuation at the plateau, from the config and the theory.

    Chain (every piece from the core):

    1. :math:`\sigma^2` = :func:`grpo_theory.theory.drift.update_variance` at the reward
       level :math:`p`, group size :math:`G`, normalization, KL variant and
       coefficient, the framework's advantage epsilon and :math:`B` prompts per
       optimizer step (exact binomial sum; :math:`\propto 1/(BG)`);
    2. :math:`\operatorname{Var} z` = :func:`grpo_theory.theory.noise.stationary_variance`
       (exact L2, refresh interval rounded to an integer, momentum = Adam
       :math:`\beta_1`, all stiffness delayed by the lag: ``fresh_fraction = 0``);
    3. :math:`\operatorname{sd}\,p = \sqrt{\,}` :func:`grpo_theory.theory.noise.reward_fluctuation`.

    The reward level is, in order: ``reward_level`` (a fit's plateau or given), else
    the stable fixed point of the bandit model when a KL is set (needs ``p_ref``),
    else missing.  Without a stiffness the fixed point's own stiffness is used when
    it was computed.  Everything missing is listed under ``needed``; values are
    ``None`` then (never NaN).  With ``observed`` (see :func:`observed_fluctuation`)
    the predicted and observed std are reported side by side with their ratio.
    ``measurement_samples`` (prompts x G behind one logged reward) gives the
    binomial sampling floor of the logged batch mean, which the model does not contain.
    """
    from grpo_theory.theory.drift import update_variance
    from grpo_theory.theory.noise import reward_fluctuation, stationary_variance

    G = mp.value("group_size")
    B = mp["prompts_per_step"]["value"] if "prompts_per_step" in mp else None
    norm = mp.value("normalization")
    kl_coef = mp.value("kl_coef") or 0.0
    kl, kl_note = _kl_kind(mp.value("kl_estimator"), kl_coef)
    eps = mp["adv_eps"]["value"] if "adv_eps" in mp else 0.0
    eta, mu = mp.value("learning_rate"), mp.value("momentum")
    k_raw = mp.value("refresh_interval")
    k_int = max(1, int(round(k_raw)))
    out = {"reward_std": None, "var_z": None, "logit_std": None, "noise_variance": None,
           "noise_variance_per_prompt": None, "reward_level": None, "reward_level_source": None,
           "p_ref": p_ref, "p_ref_source": p_ref_source, "stiffness": stiffness,
           "stiffness_source": stiffness_source, "group_size": G, "prompts_per_step": B,
           "normalization": norm, "kl": kl, "kl_coef": kl_coef, "adv_eps": eps,
           "learning_rate": eta, "momentum": mu, "refresh_interval": k_int,
           "model": "exact L2 (noise.stationary_variance, model='discrete')",
           "needed": [], "assumptions": [], "observed": observed, "ratio_observed_over_predicted": None}
    out["value"] = None
    A = out["assumptions"]
    A.append("noise model: the per-step gradient noise of the logit update on the two-action "
             "softmax bandit (drift.update_variance: binomial number of correct samples per "
             "group, exact in G) transferred to the LLM's reward logit -- the LLM's "
             "gradient-to-logit gain (Adam preconditioning, parameter sharing across prompts) is "
             "not modelled, so the sigma^2 per unit lr^2 is the bandit's")
    A.append(f"B = {B} prompts per optimizer step from the batch sizes "
             f"({mp['prompts_per_step']['source'] if 'prompts_per_step' in mp else 'n/a'}); "
             "prompts treated as independent draws at the same reward level p (no difficulty "
             "spread)")
    A.append(f"momentum mu = Adam beta1 = {mu:g} (heavy-ball reading; Adam's second moment ignored)")
    A.append(f"refresh interval {k_raw:g} used as {k_int} (integer window for the exact L2 "
             "variance); fresh_fraction = 0 (the whole stiffness acts through the sampling policy)")
    A.append(f"advantage epsilon {eps:g} (the framework's constant)")
    if kl_note:
        A.append(kl_note)
    if G < 2:
        out["needed"].append(f"group size >= 2 (got {G})")
    if B is None or B < 1:
        out["needed"].append("prompts per optimizer step B (batch sizes not in the config)")
    Bi = max(1, int(round(B))) if B else None
    if B is not None and B >= 1 and abs(Bi - B) > 1e-9:
        A.append(f"B = {B:g} rounded to {Bi}")
    if kl == "k3" and p_ref is None:
        out["needed"].append("p_ref, the reference policy's reward (--p-ref or --from-log; "
                             "enters the sampled k3 gradient)")
    p = reward_level
    src = reward_level_source
    fp_stiffness = None
    if p is None:
        if kl != "none" and p_ref is not None and G >= 2:
            from grpo_theory.theory.fixed_points import stable_fixed_point
            try:
                fp = stable_fixed_point(p_ref=p_ref, kl_coef=kl_coef, normalization=norm, kl=kl,
                                        group_size=G, adv_eps=eps)
                p, fp_stiffness = fp.p, fp.stiffness
                src = (f"stable fixed point of the bandit mean-field drift ({norm}, {kl} KL, "
                       f"beta = {kl_coef:g}, p_ref = {p_ref:g}, G = {G})")
            except ParameterError as exc:
                out["needed"].append(f"a reward level: the bandit model has no stable fixed point "
                                     f"here ({exc}); give --reward-level or --from-log")
        elif kl == "none":
            out["needed"].append("a reward level p (--reward-level or --from-log): without a KL "
                                 "the model has no interior fixed point")
        elif p_ref is None:
            out["needed"].append("a reward level p (--reward-level, --from-log, or --p-ref for "
                                 "the model's fixed point)")
    if p is not None and not (0.0 < p < 1.0):
        out["needed"].append(f"a reward level strictly between 0 and 1 (got {p:.6g}; the noise "
                             "model is for a binary reward)")
        p = None
    out["reward_level"], out["reward_level_source"] = p, src
    K, Ksrc = stiffness, stiffness_source
    if K is None and fp_stiffness is not None and fp_stiffness > 0:
        K, Ksrc = fp_stiffness, "stiffness of the bandit fixed point (bandit units, per unit lr)"
    out["stiffness"], out["stiffness_source"] = K, Ksrc
    if K is None:
        out["needed"].append("a stiffness K (--stiffness or --from-log)")
    if p is not None and measurement_samples:
        out["measurement_floor_std"] = math.sqrt(p * (1 - p) / measurement_samples)
        A.append(f"measurement floor: a logged reward averages {measurement_samples:g} samples; "
                 "their binomial sd sqrt(p(1-p)/n) is sampling noise of the log, not a policy "
                 "fluctuation (an upper bound: a difficulty spread lowers it)")
    if out["needed"]:
        out["source"] = "not computed: " + "; ".join(out["needed"])
        return out
    s2 = float(update_variance(p, normalization=norm, kl=kl, group_size=G, kl_coef=kl_coef,
                               p_ref=p_ref if p_ref is not None else 0.5, adv_eps=eps, prompts=Bi))
    out["noise_variance"] = s2
    out["noise_variance_per_prompt"] = s2 * Bi
    vz = stationary_variance(eta, mu, K, s2, refresh_interval=k_int, model="discrete")
    if not math.isfinite(vz):
        out["source"] = "no stationary state: the exact L2 window map is unstable at this K"
        out["needed"].append("a stable configuration")
        return out
    out["var_z"] = vz
    out["logit_std"] = math.sqrt(vz)
    out["reward_std"] = out["value"] = math.sqrt(reward_fluctuation(p, vz))
    out["source"] = ("sd p = sqrt(noise.reward_fluctuation(p, noise.stationary_variance(eta, mu, K, "
                     "drift.update_variance(p, ..., prompts=B), refresh_interval=k)))")
    out["gain_matched"] = _gain_matched(out, p, norm, kl, G, kl_coef, p_ref, eps, s2, K, fp_stiffness)
    obs = (observed or {}).get("std")
    if obs is not None and out["reward_std"] > 0:
        out["ratio_observed_over_predicted"] = obs / out["reward_std"]
        gm = out["gain_matched"].get("reward_std")
        out["gain_matched"]["ratio_observed_over_predicted"] = obs / gm if gm else None
        floor = out.get("measurement_floor_std")
        if floor is not None:
            out["observed_above_floor_std"] = math.sqrt(max(obs * obs - floor * floor, 0.0))
    return out


def _gain_matched(out, p, norm, kl, G, kl_coef, p_ref, eps, s2, K, fp_stiffness):
    r"""Second reading: the LLM logit as a bandit logit with a gain :math:`c = K/K_{bandit}`.

    If the LLM's per-unit-lr response to the GRPO force is :math:`c` times the
    bandit's, its drift slope is :math:`cK_{bandit}` (= the measured :math:`K`) and its
    noise variance :math:`c^2\sigma^2`.  :math:`K_{bandit} = -(\partial_z F + \partial_{z_{old}} F)`
    of the bandit drift at :math:`z = \mathrm{logit}(p)` (on-policy), not a fit to the
    observed fluctuation.  Not computed when the stiffness already is the bandit's.
    """
    from grpo_theory.theory.drift import drift_components
    from grpo_theory.theory.noise import reward_fluctuation, stationary_variance

    res = {"reward_std": None, "gain": None, "bandit_slope": None,
           "meaning": "LLM logit = bandit logit with gain c = K_measured / K_bandit(p): noise "
                      "variance scaled by c^2 (c from the stiffness, not from the observed "
                      "fluctuation); K_bandit = -(dF/dz + dF/dz_old) of the bandit drift at "
                      "logit(p), on-policy (a flow slope when p is not a fixed point)"}
    if fp_stiffness is not None and K == fp_stiffness:
        res["note"] = "stiffness already in bandit units: gain 1"
        return res
    z = math.log(p / (1 - p))
    c = drift_components(z, normalization=norm, kl=kl, group_size=G, kl_coef=kl_coef,
                         p_ref=p_ref if p_ref is not None else 0.5, adv_eps=eps)
    kb = -(float(c["dF_dz"]) + float(c["dF_dzold"]))
    res["bandit_slope"] = kb
    if not (kb > 0):
        res["note"] = "the bandit drift is not restoring at this p: no gain defined"
        return res
    gain = K / kb
    vz = stationary_variance(out["learning_rate"], out["momentum"], K, gain * gain * s2,
                             refresh_interval=out["refresh_interval"], model="discrete")
    res["gain"] = gain
    if math.isfinite(vz):
        res["var_z"] = vz
        res["reward_std"] = math.sqrt(reward_fluctuation(p, vz))
    return res


_PREDICTED = ("stable", "regime", "stability_margin", "max_stable_refresh_interval", "eta_K")


@dataclass(frozen=True)
class ConfigCheck(Result):
    """A config mapped to the model, and what the theory predicts of it (``None`` = unknown)."""

    config: str
    kind: str
    parameters: dict
    stiffness: dict | None
    prediction: dict
    expected_fluctuation: dict
    assumptions: list
    missing: list
    warnings: list

    def __str__(self) -> str:
        f = _f
        lines = [f"{self.config} ({self.kind} config)"]
        for name, p in self.parameters.items():
            tag = " [assumed]" if p["assumed"] else ""
            lines.append(f"  {name:<19} = {f(p['value'])}   ({p['source']}){tag}")
        lines += [f"  warning: {w}" for w in self.warnings]
        K = self.stiffness
        if K is not None:
            lines.append(f"stiffness K = {f(K['value'])} ± {f(K.get('stderr'))} per unit lr "
                         f"({K.get('source')})")
        pr = self.prediction
        lines.append(f"prediction: stable {f(pr['stable'])}, regime {f(pr['regime'])}, eta K = "
                     f"{f(pr['eta_K'])}, margin {f(pr['stability_margin'])}, largest stable "
                     f"refresh interval {f(pr['max_stable_refresh_interval'])}")
        if pr.get("stable_range"):
            lines.append(f"  over K ± 2 stderr: stable {pr['stable_range']}")
        for u in pr["unknown"]:
            lines.append(f"  unknown: {u['name']} ({u['reason']})")
        fl = self.expected_fluctuation
        if fl.get("reward_std") is not None:
            lines.append(f"expected reward fluctuation (exact L2, bandit noise model): sd p = "
                         f"{f(fl['reward_std'])} at p = {f(fl['reward_level'])}")
        lines.append("assumptions:")
        lines += [f"  - {a}" for a in self.assumptions]
        lines += [f"  missing: {m}" for m in self.missing]
        return "\n".join(lines)


def _f(x, spec=".4g"):
    if x is None:
        return "unknown"
    return format(x, spec) if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_config(path, *, stiffness=None, from_log=None, from_log_lr=None, reward_level=None,
                 p_ref=None) -> ConfigCheck:
    """Map a config to the model and predict what the theory can; the rest is ``unknown``.

    Without a stiffness nothing is called stable: ``stable`` is ``None`` and the
    quantities that need K are listed under ``prediction["unknown"]`` with the reason.
    With ``from_log`` (a *different* run's log) K carries its standard error: the
    verdict is the one at K ± 2 stderr, ``None`` when the two ends disagree.
    """
    cfg, kind = read_config(path)
    mp = map_config(cfg, kind)
    assumptions = [f"{k}: {v['source']}" for k, v in mp.items() if v["assumed"]]
    assumptions.append("model: mean-field GRPO, Adam's beta1 read as momentum mu, the "
                       "refresh interval k used as the lag (as in the published threshold)")
    warnings, missing = [], []
    if mp.value("group_size") < 2:
        warnings.append(f"group size {mp.value('group_size')} < 2: every group is degenerate "
                        "(no GRPO signal)")
    if mp.value("reuse") == "batch":
        warnings.append("batch reuse (num_iterations / ppo_epochs > 1): each generation batch "
                        "is used for several optimizer passes; the lag model treats them as a "
                        "refresh window")
    K_info = None
    if stiffness is not None and from_log is not None:
        raise ParameterError("--stiffness/--from-log", "both", "only one of them")
    if stiffness is not None:
        K = check_real("stiffness", stiffness, low=0, low_open=True)
        K_info = {"value": K, "stderr": None, "source": "given (--stiffness), per unit learning rate"}
    elif from_log is not None:
        if _same_file(path, from_log):
            raise ParameterError("--from-log", os.fspath(from_log), "the log of a different run "
                                 "than CONFIG (on the same run the verdict is true by construction)")
        K_info = stiffness_from_log(from_log, learning_rate=from_log_lr)
        assumptions.append("stiffness: " + K_info["assumption"])
    fl = _fluctuation(mp, K_info, reward_level, p_ref)
    assumptions.extend("fluctuation: " + a for a in fl["assumptions"])
    if fl["needed"]:
        missing.append("expected fluctuation needs: " + "; ".join(fl["needed"]))
    pred = {name: None for name in _PREDICTED}
    unknown = []
    if K_info is None:
        unknown += [{"name": n, "reason": "needs a stiffness K (--stiffness, or --from-log with "
                                           "an earlier run of the same task)"} for n in _PREDICTED]
    else:
        K = K_info["value"]
        eta, mu, refresh = (mp.value("learning_rate"), mp.value("momentum"),
                            mp.value("refresh_interval"))
        l2 = _l2_prediction(eta, mu, refresh, K)
        pred.update(eta_K=eta * K, stable=l2.get("stable"), regime=l2["discrete_regime"],
                    stability_margin=l2.get("stability_margin"),
                    max_stable_refresh_interval=l2.get("max_stable_refresh_interval"),
                    max_stable_learning_rate=l2.get("max_stable_learning_rate"),
                    source=l2["level"], l2=l2, l3=_l3_prediction(eta, mu, refresh, K))
        se = K_info.get("stderr")
        if se is not None and math.isfinite(se) and se > 0:
            ends = [_l2_prediction(eta, mu, refresh, max(K - 2 * se, 1e-12 * K)).get("stable"),
                    _l2_prediction(eta, mu, refresh, K + 2 * se).get("stable")]
            pred["stable_range"] = ends
            if len({l2.get("stable"), *ends}) > 1:
                pred["stable"] = None
                unknown.append({"name": "stable", "reason": "the verdict changes within K ± 2 "
                                "stderr of the measured stiffness"})
    unknown.append({"name": "collapse_risk", "reason": "needs the collapse model"})
    pred["collapse_risk"] = None
    pred["unknown"] = unknown
    return ConfigCheck(config=os.fspath(path), kind=kind, parameters=jsonable(dict(mp)),
                       stiffness=jsonable(K_info), prediction=jsonable(pred),
                       expected_fluctuation=jsonable(fl), assumptions=assumptions,
                       missing=missing, warnings=warnings)


def _fluctuation(mp, K_info, reward_level, p_ref):
    """Gather the reward level, p_ref, stiffness and observation, then :func:`predict_fluctuation`."""
    p_src = pr_src = None
    observed = None
    samples = None
    if reward_level is not None:
        reward_level = check_real("reward_level", reward_level, low=0, high=1, low_open=True,
                                  high_open=True)
        p_src = "given (--reward-level)"
    if p_ref is not None:
        p_ref = check_real("p_ref", p_ref, low=0, high=1, low_open=True, high_open=True)
        pr_src = "given (--p-ref)"
    K = K_src = None
    if K_info is not None:
        K, K_src = K_info["value"], K_info.get("source")
        if "plateau_reward" in K_info:  # --from-log
            if reward_level is None:
                reward_level = K_info["plateau_reward"]
                p_src = (f"plateau of the single-exponential fit of {K_info['source']} "
                         f"({K_info['plateau_reward']:.4g})")
            ini = K_info.get("initial_reward")
            if p_ref is None and ini is not None and 0 < ini < 1:
                p_ref = ini
                pr_src = ("initial reward of the earlier run's fit (the reference policy is the "
                          "initial policy)")
            observed = K_info.get("observed_fluctuation")
            if K_info.get("earlier_rollout_prompts") and K_info.get("earlier_group_size"):
                samples = K_info["earlier_rollout_prompts"] * K_info["earlier_group_size"]
        else:
            K_src = "given (--stiffness), per unit learning rate"
    if samples is None and (mp.get("rollout_prompts") or {}).get("value"):
        samples = mp.value("rollout_prompts") * mp.value("group_size")
    out = predict_fluctuation(mp, stiffness=K, stiffness_source=K_src, reward_level=reward_level,
                              reward_level_source=p_src, p_ref=p_ref, p_ref_source=pr_src,
                              observed=observed, measurement_samples=samples)
    if observed is not None:
        out["assumptions"].append("observed: " + observed["definition"] + " of the earlier log; "
                                  "it also contains the log's sampling noise and any slow drift "
                                  "within a window")
    return out


