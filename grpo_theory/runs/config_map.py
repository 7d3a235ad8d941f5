r"""Read a training configuration and map every lag-relevant key onto the model.

Three families of config are understood:

``trl``
    a TRL ``GRPOConfig`` (JSON/YAML, e.g. an open-r1 recipe);
``verl``
    a verl config: nested YAML, dotted ``key=value`` overrides, or a launch
    script (also the top of a verl console log);
``cs336``
    the from-scratch trainer of CS336 assignment 5 (keys under ``training:``:
    ``epochs_per_rollout_batch``, ``train_batch_size``, ``loss_type``, ...).

The window of one sampling policy comes from
:func:`grpo_theory.theory.reuse.window_sampling` (passes over one generation x
distinct optimizer batches per generation):

=======  ======================================  ===================================================
kind     passes                                  batches
=======  ======================================  ===================================================
TRL      ``num_iterations``                      ``steps_per_generation / gradient_accumulation_steps``
verl     ``actor.ppo_epochs``                    ``data.train_batch_size / actor.ppo_mini_batch_size``
cs336    ``epochs_per_rollout_batch``            ``rollout_batch_size / train_batch_size``
=======  ======================================  ===================================================

Every entry of the returned mapping is ``{"value", "source", "assumed"}`` (plus a
``note`` where the model reads the key in a particular way).  Bad values raise a
one-line :class:`~grpo_theory.validate.ParameterError` naming the key.
"""

from __future__ import annotations

import json
import math
import os

from grpo_theory.validate import ParameterError, check_int, check_real

__all__ = ["ConfigFormatError", "ConfigMapping", "read_config", "map_config", "ADV_EPS"]

#: the advantage epsilon each framework adds to the group std (fixed in their code)
ADV_EPS = {"trl": 1e-4, "verl": 1e-6, "cs336": 1e-6}

#: TRL ``loss_type`` values: per-token aggregation of the loss.  On the one-token bandit they
#: differ only by a constant factor, which the learning rate (and Adam's normalisation) absorbs.
TRL_LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")

#: the CS336 trainer's ``loss_type`` values
CS336_LOSS_TYPES = ("grpo_clip", "reinforce_with_baseline", "no_baseline")


class ConfigFormatError(ParameterError):
    """A configuration file that cannot be read; one line naming the file (and line)."""

    def __init__(self, path, line, problem: str):
        self.path = os.fspath(path)
        where = f"config file {self.path}" + (f" line {line}" if line is not None else "")
        ValueError.__init__(self, f"{where}: {problem}")
        self.name, self.value, self.allowed = "config file", self.path, problem


def read_config(path) -> tuple[dict, str]:
    """Read a config into a flat dict with dotted keys; returns ``(config, kind)``.

    ``kind`` is ``"verl"``, ``"cs336"`` or ``"trl"`` (decided by the keys).
    """
    from grpo_theory.runs.logs.base import flatten
    from grpo_theory.runs.logs.verl import STEP_LINE, parse_overrides

    p = os.fspath(path)
    if not os.path.isfile(p):
        raise ParameterError("config file", p, "an existing file")
    try:
        with open(p, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        raise ConfigFormatError(p, None, f"cannot be read ({exc.strerror})") from None
    data = None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigFormatError(p, exc.lineno, f"not valid JSON ({exc.msg})") from None
    elif p.endswith((".yaml", ".yml")):
        import yaml
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise ConfigFormatError(p, mark.line + 1 if mark else None,
                                    f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if data is None:
        header = []
        for line in text.split("\n"):
            if STEP_LINE.search(line):
                break
            header.append(line)
        data = parse_overrides(header)
        if not data:
            raise ConfigFormatError(p, None, "no configuration found (expected JSON, YAML or "
                                             "dotted key=value overrides)")
    if not isinstance(data, dict):
        raise ConfigFormatError(p, 1, "the configuration must be a mapping of keys to values")
    if isinstance(data.get("log_history"), list):
        raise ConfigFormatError(p, None, "this is a TRL trainer_state.json (a log), not a "
                                         "GRPOConfig: give the run's config file")
    flat = flatten(data, sep=".")
    if any(k.startswith(("actor_rollout_ref.", "algorithm.", "data.", "trainer.")) for k in flat):
        kind = "verl"
    elif any(k.split(".")[-1] in ("epochs_per_rollout_batch", "n_grpo_steps",
                                  "old_log_probs_train_size", "use_std_normalization")
             or (k.split(".")[-1] == "loss_type" and v in CS336_LOSS_TYPES)
             for k, v in flat.items()):
        kind = "cs336"
    else:
        kind = "trl"
    return flat, kind


class ConfigMapping(dict):
    """name -> ``{"value", "source", "assumed"[, "note"]}``."""

    def value(self, name):
        return self[name]["value"]

    def put(self, name, value, source, assumed=False, note=None):
        entry = {"value": value, "source": source, "assumed": bool(assumed)}
        if note:
            entry["note"] = note
        self[name] = entry


def _get(cfg, *keys):
    """(key, value) of the first key present (exact, then as a dotted suffix), else (None, None)."""
    for k in keys:
        if cfg.get(k) is not None:
            return k, cfg[k]
    for k in keys:
        for ck, v in cfg.items():
            if v is not None and ck.endswith("." + k):
                return ck, v
    return None, None


def _real(key, value, **bounds):
    return check_real(key, value, **bounds)


def _count(key, value, low=1):
    """A positive integer count from a config value (``8``, ``8.0``, ``"8"``)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ParameterError(key, value, f"an integer >= {low}") from None
    if not math.isfinite(f) or f != int(f):
        raise ParameterError(key, value, f"an integer >= {low}")
    return check_int(key, int(f), low=low)


def _bool(key, value):
    s = str(value).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no", "none", "null"):
        return False
    raise ParameterError(key, value, "true or false")


def _lookup(mp, cfg, name, keys, default, default_source, conv, note=None):
    k, v = _get(cfg, *keys)
    if k is None:
        mp.put(name, default, default_source, assumed=True, note=note)
        return default
    val = conv(k, v)
    mp.put(name, val, k, note=note)
    return val


def _batches(key_num, num, key_den, den):
    """Distinct optimizer batches per generation: an integer ratio, or a one-line error."""
    if num % den:
        raise ParameterError(key_num, num, f"a multiple of {key_den} = {den} (a whole number of "
                             "optimizer steps per generation)")
    return num // den


def _window(mp, passes, batches, passes_src, batches_src, assumed):
    from grpo_theory.theory.reuse import window_sampling

    w = window_sampling(passes, batches)
    src = (f"window_sampling(passes = {passes} [{passes_src}], batches = {batches} "
           f"[{batches_src}])")
    mp.put("refresh_interval", w["refresh_interval"], src, assumed=assumed,
           note="optimizer steps per sampling policy")
    mp.put("reuse", w["reuse"], src, assumed=assumed,
           note="fresh: each batch used once; batch: the window's batches are re-used "
                "(epochs per rollout) -- same mean force, window-correlated noise")
    mp.put("window_batches", w["window_batches"], src, assumed=assumed)


def _momentum_from_betas(k, v):
    try:
        if isinstance(v, (list, tuple)):
            b1 = v[0]
        else:
            b1 = str(v).strip("[]() ").split(",")[0]
    except IndexError:
        raise ParameterError(k, v, "a pair (beta1, beta2)") from None
    return _real(k, b1, low=0, high=1, high_open=True)


def map_config(cfg: dict, kind: str) -> ConfigMapping:
    """Map a flat config of ``kind`` (``trl``/``verl``/``cs336``) to the model's parameters."""
    mp = ConfigMapping()
    pos = dict(low=0, low_open=True)
    nonneg = dict(low=0)
    if kind == "trl":
        G = _lookup(mp, cfg, "group_size", ("num_generations",), 8,
                    "TRL default num_generations = 8", _count)
        _lookup(mp, cfg, "learning_rate", ("learning_rate",), 1e-6,
                "GRPOConfig default learning_rate = 1e-6", lambda k, v: _real(k, v, **pos))
        ko, optim = _get(cfg, "optim")
        if ko is not None and str(optim).lower().startswith("sgd"):
            # torch SGD: the heavy-ball momentum is in optim_args ("momentum=0.5"), default 0
            ka, args = _get(cfg, "optim_args")
            mom = 0.0
            for part in str(args or "").split(","):
                key, _, val = part.partition("=")
                if key.strip() == "momentum":
                    mom = _real(ka, val.strip(), low=0, high=1, high_open=True)
            mp.put("momentum", mom, f"{ko} = {optim}" + (f", {ka} = {args}" if ka else ""),
                   note="SGD's heavy-ball momentum (torch default 0)")
        else:
            _lookup(mp, cfg, "momentum", ("adam_beta1",), 0.9, "AdamW default adam_beta1 = 0.9",
                    lambda k, v: _real(k, v, low=0, high=1, high_open=True),
                    note="Adam's beta1 = the heavy-ball momentum mu (adam.momentum_form)")
        beta = _lookup(mp, cfg, "kl_coef", ("beta",), 0.0,
                       "GRPOConfig default beta = 0.0 (TRL >= 0.18; earlier versions 0.04)",
                       lambda k, v: _real(k, v, **nonneg))
        mp.put("kl", "k3" if beta > 0 else "none",
               "TRL puts the per-token k3 estimator in the loss when beta > 0")
        k, v = _get(cfg, "scale_rewards")
        if k is None:
            mp.put("normalization", "std", "TRL default scale_rewards = 'group' (group std)",
                   assumed=True)
        else:
            s = str(v).strip().lower()
            if s in ("true", "group"):
                mp.put("normalization", "std", f"{k} = {v!r}: divide by the group std")
            elif s in ("false", "none"):
                mp.put("normalization", "mean", f"{k} = {v!r}: group mean only (Dr. GRPO)")
            elif s == "batch":
                mp.put("normalization", "mean", f"{k} = 'batch'",
                       note="TRL subtracts the group mean and divides by the std of the whole "
                            "batch: one common scale, not the group's own std, so the force is "
                            "that of mean normalization times a constant the learning rate "
                            "(and Adam) absorbs")
            else:
                raise ParameterError(k, v, "one of True/'group', False/'none', 'batch'")
        k, v = _get(cfg, "loss_type")
        lt = str(v) if k else "dapo"
        if lt not in TRL_LOSS_TYPES:
            raise ParameterError(k, v, "one of " + ", ".join(TRL_LOSS_TYPES))
        mp.put("loss_type", lt, k or "GRPOConfig default loss_type = 'dapo' (TRL >= 0.20)",
               assumed=k is None, note="per-token aggregation only: on the one-token bandit a "
                                       "constant factor, absorbed in the learning rate")
        mp.put("surrogate", "ratio", "TRL's loss is the clipped importance ratio "
               "pi/pi_old (num_iterations > 1 or steps_per_generation > GAS make it off-policy)")
        _clip(mp, cfg, ("epsilon",), ("epsilon_high",), 0.2, "GRPOConfig default epsilon = 0.2")
        kg, gas = _get(cfg, "gradient_accumulation_steps")
        gas = _count(kg, gas) if kg else 1
        ks, spg = _get(cfg, "steps_per_generation")
        spg = _count(ks, spg) if ks else gas
        ki, it = _get(cfg, "num_iterations")
        it = _count(ki, it) if ki else 1
        _window(mp, it, _batches(ks or "steps_per_generation (default = GAS)", spg,
                                 kg or "gradient_accumulation_steps", gas),
                ki or "num_iterations default 1",
                f"{ks or 'steps_per_generation (default = gradient_accumulation_steps)'} / "
                f"{kg or 'gradient_accumulation_steps (default 1)'}",
                assumed=not (ki or ks))
        kp, pdb = _get(cfg, "per_device_train_batch_size")
        kw, ws = _get(cfg, "num_processes", "world_size")
        pdb = _count(kp, pdb) if kp else 8
        ws = _count(kw, ws) if kw else 1
        _prompts(mp, pdb * ws * gas, G, f"per_device_train_batch_size ({pdb}{'' if kp else ', default'})"
                 f" x processes ({ws}{'' if kw else ', assumed'}) x GAS ({gas}) / num_generations",
                 assumed=not (kp and kw))
        mp.put("adv_eps", ADV_EPS["trl"], "TRL adds 1e-4 to the group std")
        k, v = _get(cfg, "max_steps")
        if k is not None and _real(k, v) > 0:
            mp.put("steps", _count(k, v), k)
    elif kind == "verl":
        G = _lookup(mp, cfg, "group_size", ("actor_rollout_ref.rollout.n", "rollout.n"), 1,
                    "verl default rollout.n = 1 (not GRPO)", lambda k, v: _count(k, v))
        _lookup(mp, cfg, "learning_rate", ("actor_rollout_ref.actor.optim.lr", "actor.optim.lr"),
                1e-6, "verl default actor lr = 1e-6", lambda k, v: _real(k, v, **pos))
        _lookup(mp, cfg, "momentum", ("actor_rollout_ref.actor.optim.betas", "actor.optim.betas"),
                0.9, "AdamW default betas = (0.9, 0.999)", _momentum_from_betas,
                note="Adam's beta1 = the heavy-ball momentum mu (adam.momentum_form)")
        norm_k, norm_v = _get(cfg, "algorithm.norm_adv_by_std_in_grpo")
        std = _bool(norm_k, norm_v) if norm_k else True
        mp.put("normalization", "std" if std else "mean",
               norm_k or "verl default norm_adv_by_std_in_grpo = True", assumed=norm_k is None)
        ku, use_kl = _get(cfg, "actor_rollout_ref.actor.use_kl_loss", "actor.use_kl_loss")
        kr, in_reward = _get(cfg, "algorithm.use_kl_in_reward")
        use_kl = _bool(ku, use_kl) if ku else False
        in_reward = _bool(kr, in_reward) if kr else False
        if use_kl and in_reward:
            raise ParameterError(kr, True, "false when use_kl_loss is true (the model has one KL "
                                           "term: in the loss or in the reward)")
        if use_kl:
            _lookup(mp, cfg, "kl_coef", ("actor_rollout_ref.actor.kl_loss_coef",
                                         "actor.kl_loss_coef"), 0.001,
                    "verl default kl_loss_coef = 0.001", lambda k, v: _real(k, v, **nonneg))
            kt, ktype = _get(cfg, "actor_rollout_ref.actor.kl_loss_type", "actor.kl_loss_type")
            ktype = str(ktype) if kt else "low_var_kl"
            kind_kl = {"low_var_kl": "k3", "k3": "k3", "mse": "exact", "k2": "exact",
                       "kl": "none", "k1": "none"}.get(ktype)
            if kind_kl is None:
                raise ParameterError(kt, ktype, "one of low_var_kl/k3, mse/k2, kl/k1")
            note = {"exact": "k2 in the loss: its gradient is the exact KL gradient",
                    "none": "k1 in the loss: its expected gradient E[grad log pi] is zero, no "
                            "mean KL force"}.get(kind_kl)
            mp.put("kl", kind_kl, f"{kt} = {ktype}" if kt else "verl default low_var_kl = k3",
                   assumed=kt is None, note=note)
            if kind_kl == "none":
                mp.put("kl_coef", 0.0, mp["kl_coef"]["source"], note="no mean KL force (k1)")
        elif in_reward:
            _lookup(mp, cfg, "kl_coef", ("algorithm.kl_ctrl.kl_coef",), 0.001,
                    "verl default kl_ctrl.kl_coef = 0.001", lambda k, v: _real(k, v, **nonneg))
            mp.put("kl", "k1_reward", f"{kr} = True (k1 penalty in the reward)")
        else:
            mp.put("kl_coef", 0.0, "neither use_kl_loss nor use_kl_in_reward", assumed=ku is None)
            mp.put("kl", "none", "no KL to the reference", assumed=ku is None)
        mp.put("surrogate", "ratio", "verl's actor loss is the PPO clipped ratio pi/pi_old")
        _clip(mp, cfg, ("actor_rollout_ref.actor.clip_ratio_low", "actor.clip_ratio_low",
                        "actor_rollout_ref.actor.clip_ratio", "actor.clip_ratio"),
              ("actor_rollout_ref.actor.clip_ratio_high", "actor.clip_ratio_high"), 0.2,
              "verl default clip_ratio = 0.2")
        ke, ep = _get(cfg, "actor_rollout_ref.actor.ppo_epochs", "actor.ppo_epochs")
        ep = _count(ke, ep) if ke else 1
        kb, tbs = _get(cfg, "data.train_batch_size")
        tbs = _count(kb, tbs) if kb else 1024
        km, mbs = _get(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size",
                       "actor.ppo_mini_batch_size")
        mbs = _count(km, mbs) if km else 256
        _window(mp, ep, _batches(kb or "data.train_batch_size (default 1024)", tbs,
                                 km or "ppo_mini_batch_size (default 256)", mbs),
                ke or "ppo_epochs default 1",
                f"{kb or 'train_batch_size default 1024'} / {km or 'ppo_mini_batch_size default 256'}",
                assumed=not (kb and km))
        mp.put("prompts", mbs, km or "verl default ppo_mini_batch_size = 256",
               assumed=km is None, note="prompts per optimizer step (verl counts the mini-batch "
                                        "in prompts; x rollout.n responses)")
        mp.put("adv_eps", ADV_EPS["verl"], "verl adds 1e-6 to the group std")
    elif kind == "cs336":
        G = _lookup(mp, cfg, "group_size", ("group_size",), 8,
                    "CS336 default group_size = 8", _count)
        _lookup(mp, cfg, "learning_rate", ("learning_rate",), 1e-5,
                "CS336 default learning_rate = 1e-5", lambda k, v: _real(k, v, **pos))
        mp.put("momentum", 0.9, "CS336 AdamW betas = (0.9, 0.95)", assumed=True,
               note="Adam's beta1 = the heavy-ball momentum mu (adam.momentum_form)")
        mp.put("kl_coef", 0.0, "the CS336 trainer has no KL term", assumed=True)
        mp.put("kl", "none", "the CS336 trainer has no KL term", assumed=True)
        k, v = _get(cfg, "loss_type")
        lt = str(v) if k else "reinforce_with_baseline"
        if lt not in CS336_LOSS_TYPES:
            raise ParameterError(k, v, "one of " + ", ".join(CS336_LOSS_TYPES))
        mp.put("loss_type", lt, k or "CS336 default reinforce_with_baseline", assumed=k is None)
        ku, use_std = _get(cfg, "use_std_normalization")
        std = _bool(ku, use_std) if ku else True
        if lt == "no_baseline":
            mp.put("normalization", None, f"{k} = no_baseline",
                   note="raw rewards, no group baseline: not a GRPO variant of the model")
        else:
            mp.put("normalization", "std" if std else "mean",
                   ku or "CS336 default use_std_normalization = True", assumed=ku is None)
        mp.put("surrogate", "ratio" if lt == "grpo_clip" else "stale",
               f"loss_type = {lt}" + (": clipped ratio pi/pi_old" if lt == "grpo_clip" else
                                      ": policy gradient on the sampled log-probs, no ratio"))
        if lt == "grpo_clip":
            _clip(mp, cfg, ("cliprange",), (), 0.2, "CS336 default cliprange = 0.2")
        ke, ep = _get(cfg, "epochs_per_rollout_batch")
        ep = _count(ke, ep) if ke else 1
        kr, rbs = _get(cfg, "rollout_batch_size")
        rbs = _count(kr, rbs) if kr else 256
        kb, tbs = _get(cfg, "train_batch_size")
        tbs = _count(kb, tbs) if kb else 256
        _window(mp, ep, _batches(kr or "rollout_batch_size (default 256)", rbs,
                                 kb or "train_batch_size (default 256)", tbs),
                ke or "epochs_per_rollout_batch default 1",
                f"{kr or 'rollout_batch_size default 256'} / {kb or 'train_batch_size default 256'}",
                assumed=not (ke or kb))
        _prompts(mp, tbs, G, f"train_batch_size ({tbs}) / group_size ({G})", assumed=kb is None)
        mp.put("adv_eps", ADV_EPS["cs336"], "CS336 adds 1e-6 to the group std")
        k, v = _get(cfg, "n_grpo_steps")
        if k is not None:
            mp.put("steps", _count(k, v) * mp.value("refresh_interval"),
                   f"{k} x refresh interval (optimizer steps)")
    else:
        raise ParameterError("kind", kind, "one of trl, verl, cs336")
    return mp


def _clip(mp, cfg, low_keys, high_keys, default, default_source):
    k, v = _get(cfg, *low_keys)
    lo = _real(k, v, low=0, low_open=True) if k else default
    kh, vh = _get(cfg, *high_keys) if high_keys else (None, None)
    hi = _real(kh, vh, low=0, low_open=True) if kh else lo
    mp.put("clip", [lo, hi], " / ".join(x for x in (k, kh) if x) or default_source,
           assumed=k is None,
           note="the ratio stays within 1 +- O(eta) near the fixed point, inside the clip "
                "range: the clip is inactive in the linear theory (it bounds large excursions, "
                "which the linear thresholds do not describe)")


def _prompts(mp, samples, G, source, assumed):
    B = max(1, round(samples / G))
    mp.put("prompts", B, source, assumed=assumed,
           note="prompts per optimizer step" + ("" if samples % G == 0 else
                                                f" ({samples}/{G} rounded)"))
