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

__all__ = ["ConfigFormatError", "ConfigMapping", "read_config", "map_config", "torch_sgd",
           "ADV_EPS"]

#: the advantage epsilon each framework adds to the group std (fixed in their code)
ADV_EPS = {"trl": 1e-4, "verl": 1e-6, "cs336": 1e-6}

#: TRL ``loss_type`` values: per-token aggregation of the loss.  On the one-token bandit they
#: differ only by a constant factor, which the learning rate (and Adam's normalization) absorbs.
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


def read_config(path, *, warnings: list | None = None) -> tuple[dict, str]:
    """Read a config into a flat dict with dotted keys; returns ``(config, kind)``.

    ``kind`` is ``"verl"``, ``"cs336"`` or ``"trl"`` (decided by the keys).  Every key of a
    TRL or verl config is checked against the trainers' own keys (:func:`check_keys`): a
    near miss of a known key (``learnig_rate``) raises naming the key meant, a file with no
    GRPO key at all (a PEFT ``adapter_config.json``, an SFT config) is refused, and the keys
    the model does not read because the trainer does not know them either are listed in one
    line appended to ``warnings``.
    """
    from grpo_theory.runs.logs.base import flatten

    p = os.fspath(path)
    if not os.path.isfile(p):
        raise ParameterError("config file", p, "an existing file")
    try:
        with open(p, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        raise ConfigFormatError(p, None, f"cannot be read ({exc.strerror})") from None
    from grpo_theory.runs.logs.verl import printed_config, strip_ansi

    text = strip_ansi(text)
    data, syntax, added, lines_of, own_script = None, None, set(), {}, False
    printed, at = (None, None) if p.endswith((".json", ".yaml", ".yml")) else \
        printed_config(text.split("\n"))
    if printed is not None:
        # verl's own printed config (a console log's start-up dict): the values the engine
        # ran with, every key its own (none is a typo), defaults resolved
        data, syntax = printed, "printed"
        added = set(flatten(printed, sep="."))
        if warnings is not None:
            warnings.append(f"read verl's printed config (line {at}): the values the engine "
                            "ran with, its defaults included")
    elif text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigFormatError(p, exc.lineno, f"not valid JSON ({exc.msg})") from None
        syntax = "json"
    elif p.endswith((".yaml", ".yml")):
        import yaml
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise ConfigFormatError(p, mark.line + 1 if mark else None,
                                    f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
        syntax = "yaml"
    if data is None:
        data, added, lines_of, own_script = _launch_overrides(p, text, warnings)
        syntax = "overrides"
        if isinstance(data.get("config"), str):          # `... --config recipe.yaml --flag v`
            data = _with_config_file(p, data, lines_of, warnings)
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

    def line(key):
        if key in lines_of:
            return lines_of[key]
        return _key_line(text, key, syntax)

    found = check_keys(flat, kind, added=added)
    if not found["grpo"]:                   # another tool's file: say so, not "typo"
        raise ConfigFormatError(p, None, f"not a GRPO config: {found['why_not_grpo']}")
    if found["typos"] and own_script:
        # flags of one's own training script: its own arguments may be named anything, so a
        # near miss is not surely a typo (TRL's own `trl grpo` would refuse it: an error there)
        if warnings is not None:
            warnings.append("near misses of GRPOConfig keys, read as the script's own "
                            "arguments (the model does not read them): "
                            + ", ".join(f"--{k} (line {line(k)}; GRPOConfig has --{m})"
                                        for k, m in found["typos"]))
    elif found["typos"]:
        key, meant = found["typos"][0]
        more = "".join(f"; {k!r}: {m!r}?" for k, m in found["typos"][1:])
        raise ConfigFormatError(p, line(key), f"unknown {_KIND_NAME[kind]} key {key!r}: did you "
                                              f"mean {meant!r}?{more}")
    if warnings is not None:
        warnings.extend(found["warnings"])
        if kind == "trl":
            warnings.extend(_nested_trl_keys(flat))
        if found["foreign"]:
            warnings.append(f"not read ({len(found['foreign'])} key(s) that are not "
                            f"{_KIND_NAME[kind]} keys; another tool's?): "
                            + ", ".join(found["foreign"]))
    return flat, kind


_KIND_NAME = {"trl": "TRL GRPOConfig", "verl": "verl", "cs336": "CS336"}


def _nested_trl_keys(flat: dict) -> list:
    """GRPOConfig keys written under a section (``smoke:``, ``curriculum:``) that are not read:
    the mapping reads a key by its last part, from the top level first, then from the first
    section that sets it (:func:`_get`); the others were silently dropped.  One line naming
    them with the key read instead, or ``[]``."""
    voc = _vocabulary()["trl"]
    by_leaf: dict = {}
    for key, value in flat.items():
        leaf = key.rsplit(".", 1)[-1]
        if value is not None and leaf in voc and (key == leaf or "." in key):
            by_leaf.setdefault(leaf, []).append(key)
    unread = []
    for leaf, keys in by_leaf.items():
        keys = sorted(keys, key=lambda k: "." in k)             # the top-level key first
        unread += [f"{k} (read: {keys[0]})" for k in keys[1:]]
    if unread:
        return ["not read (the same GRPOConfig key set above them): " + ", ".join(unread)]
    return []


def _with_config_file(path, flags: dict, lines_of: dict, warnings):
    """A launch whose GRPOConfig is a file (``--config recipe.yaml``, as TRL's parser and
    open-r1 take it) with flags on top: the file is read (relative to the current directory,
    then to the launch script's directory and its parents), the flags override it, as
    they do in the trainer.  A file that is not there is an error naming it."""
    name = flags["config"]
    here = os.path.dirname(os.path.abspath(path))
    places = [os.getcwd()] + [here] + [os.path.dirname(here), os.path.dirname(os.path.dirname(here))]
    found = next((os.path.join(d, name) for d in places
                  if os.path.isfile(os.path.join(d, name))), None)
    if found is not None and os.path.samefile(found, path):
        found = None                                   # the launch naming itself
    if found is None:
        raise ConfigFormatError(path, lines_of.get("config"), f"the launch reads its "
                                f"configuration from --config {name}, which is not in the current "
                                "directory nor next to the script: give that file (its flags "
                                "alone are not the run's configuration)")
    base, _ = read_config(found, warnings=warnings)
    if warnings is not None:
        warnings.append(f"read with the file of its --config, {found}; the flags override it")
    return {**base, **{k: v for k, v in flags.items() if k != "config"}}

#: TRL keys that say a file configures GRPO (GRPOConfig's own fields, less the sampling
#: settings every generation config has); open-r1's ``reward_funcs`` too
#: keys the TRL mapping reads that are the launcher's, not GRPOConfig's (accelerate)
_TRL_LAUNCH_KEYS = ("num_processes", "world_size")
_TRL_NOT_GRPO_SIGNAL = frozenset({
    "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "trust_remote_code",
    "model_init_kwargs", "disable_dropout", "pad_to_multiple_of", "cache_implementation",
    "generation_kwargs", "chat_template_kwargs", "shuffle_dataset"})
#: verl keys the model reads from the actor, the rollout and the algorithm (data.* and
#: trainer.* alone do not make a GRPO config)
VERL_GRPO_KEYS = ("actor_rollout_ref.rollout.n", "algorithm.adv_estimator",
                  "actor_rollout_ref.actor.ppo_epochs", "actor_rollout_ref.actor.use_kl_loss",
                  "actor_rollout_ref.actor.kl_loss_coef", "actor_rollout_ref.actor.kl_loss_type",
                  "algorithm.use_kl_in_reward", "algorithm.norm_adv_by_std_in_grpo")


def _vocabulary() -> dict:
    """The trainers' keys (``grpo_theory/data/config_keys.json``, provenance inside)."""
    global _VOCAB
    if _VOCAB is None:
        from importlib import resources

        raw = json.loads(resources.files("grpo_theory.data").joinpath("config_keys.json")
                         .read_text(encoding="utf-8"))
        trl = (set(raw["trl_grpo"]) | set(raw["training_arguments"]) | set(raw["trl_model_script"])
               | set(raw["open_r1"]) | set(_TRL_LAUNCH_KEYS))
        verl = set(raw["verl"])
        children: dict[str, set] = {}
        for k in verl:
            head, _, leaf = k.rpartition(".")
            children.setdefault(head, set()).add(leaf)
        _VOCAB = {"trl": trl, "trl_grpo": set(raw["trl_grpo"]) - _TRL_NOT_GRPO_SIGNAL,
                  "verl": verl, "verl_open": set(raw["verl_open"]), "verl_children": children}
    return _VOCAB


_VOCAB = None


def _edits(a: str, b: str) -> int:
    """Optimal-string-alignment distance (insertions, deletions, substitutions, swaps)."""
    prev2, prev = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def _near_miss(word: str, known) -> str | None:
    """The known key ``word`` most likely misspells: difflib's closest match, accepted when it
    is one edit away (two for words of 12 characters or more).  Another tool's keys are often
    two edits from a trainer's (PEFT ``use_qalora`` / ``use_rslora``): a typo is a slip of one
    or two keys, not a different word."""
    import difflib

    if len(word) < 4 or word in known:
        return None
    for cand in difflib.get_close_matches(word, list(known), n=3, cutoff=0.8):
        if _edits(word, cand) <= (2 if len(word) >= 12 else 1):
            return cand
    return None


def check_keys(cfg: dict, kind: str, *, added=()) -> dict:
    """Sort a flat config's keys against the trainer's own (``_vocabulary``).

    Returns ``{"typos": [(key, meant)], "foreign": [key], "grpo": bool, "why_not_grpo": str,
    "warnings": [str]}``: a typo is a key the trainer does not know within two edits of one it
    does (so the file meant to set that one) -- at the top level or in a section that sets some
    trainer key exactly (a section that sets none is the file's own); a foreign key is unknown and not near a known
    one (another tool's, or a newer trainer's); ``grpo`` says whether any key configures
    GRPO.  verl keys written ``+key=`` (``added``) are declared new and not checked; keys
    under a verl entry whose default is free-form (``null`` or ``{}``) are not checked either.
    CS336 configs are not checked (their trainer has no published key list).
    """
    out = {"typos": [], "foreign": [], "grpo": True, "why_not_grpo": "", "warnings": []}
    if kind not in ("trl", "verl"):
        return out
    voc = _vocabulary()
    if kind == "trl":
        # a section (``grpo:``, ``training:``) that sets at least one trainer key exactly is the
        # trainer's: a near miss there is a typo; the keys of a section that sets none
        # (``sweep:``, ``gating:``) are the file's own, however close to a trainer key
        trainer_sections = {k.rsplit(".", 1)[0] for k in cfg
                            if "." in k and k.rsplit(".", 1)[1] in voc["trl"]}
        for key in cfg:
            parts = key.split(".")
            if parts[0] in voc["trl"] or parts[-1] in voc["trl"]:
                continue                         # a known key (nested: read by its last part)
            own_section = len(parts) > 1 and ".".join(parts[:-1]) not in trainer_sections
            meant = None if own_section else _near_miss(parts[-1], voc["trl"])
            if meant:
                out["typos"].append((key, ".".join(parts[:-1] + [meant])))
            else:
                out["foreign"].append(key)
        leaves = ({k.split(".")[-1] for k in cfg} | {k.split(".")[0] for k in cfg}
                  | {m.split(".")[-1] for _, m in out["typos"]})
        signal = sorted(leaves & (voc["trl_grpo"] | {"reward_funcs"}))
        if not signal:
            out["grpo"] = False
            out["why_not_grpo"] = ("no GRPO key (none of GRPOConfig's own keys such as "
                                   "num_generations, beta, num_iterations, epsilon, loss_type, "
                                   "scale_rewards, max_completion_length)")
        opt_k, opt = _get(cfg, "optim")
        if opt_k and not any(w in str(opt).lower() for w in ("adam", "sgd")):
            out["warnings"].append(f"{opt_k} = {opt!r}: the model reads the optimizer as "
                                   "Adam(W) (momentum = adam_beta1); for another optimizer the "
                                   "momentum and the effective step are not those of the model")
        return out
    children, open_ = voc["verl_children"], voc["verl_open"]
    for key in cfg:
        if key in voc["verl"] or key in added:
            continue
        parts = key.split(".")
        i = len(parts) - 1
        while i > 0 and ".".join(parts[:i]) not in voc["verl"]:
            i -= 1
        prefix = ".".join(parts[:i])
        if prefix in open_ or (prefix and prefix not in children):
            continue                             # under a free-form entry
        meant = _near_miss(parts[i], children.get(prefix, ()))
        if meant:
            out["typos"].append((key, ".".join(parts[:i] + [meant] + parts[i + 1:])))
        else:
            out["foreign"].append(key)
    nk, n = _get(cfg, "actor_rollout_ref.rollout.n")
    ek, est = _get(cfg, "algorithm.adv_estimator")
    meant = {m for _, m in out["typos"]}
    if meant & {"actor_rollout_ref.rollout.n", "algorithm.adv_estimator"}:
        return out                               # a GRPO config with a typo in its GRPO keys
    if ek and str(est) == "gae":
        out["grpo"] = False
        out["why_not_grpo"] = (f"{ek} = gae is PPO with a learned critic (a value baseline, not "
                               "the group's)")
    elif not any(_get(cfg, k)[0] for k in VERL_GRPO_KEYS) or (ek is None and nk is None):
        out["grpo"] = False
        out["why_not_grpo"] = ("no GRPO key: neither actor_rollout_ref.rollout.n (verl default "
                               "1) nor algorithm.adv_estimator (verl default gae: PPO with a "
                               "critic) is set")
    elif ek and str(est) != "grpo":
        out["warnings"].append(f"{ek} = {est}: read as GRPO's group-normalized advantage (the "
                               "model's); this estimator's own baseline is not modelled")
    return out


def _launch_overrides(path, text: str, warnings):
    """verl ``key=value`` overrides of a launch script, a console log or a README.

    The text is cut into blocks at the runs of console step lines (a README may paste one
    launch and its log after another); the first block with a GRPO key is read, with the shell
    variables of everything above it.  Returns ``(config, added_keys, line_of_key)``.
    """
    from grpo_theory.runs.logs.verl import STEP_LINE, parse_overrides

    lines = text.split("\n")
    blocks, cur, start, in_steps = [], [], 0, False
    for i, ln in enumerate(lines):
        if STEP_LINE.search(ln):
            if not in_steps:
                blocks.append((start, cur))
                in_steps = True
            continue
        if in_steps:
            cur, start, in_steps = [], i, False
        cur.append(ln)
    if not in_steps:
        blocks.append((start, cur))
    shell, chosen, fallback, others = {}, None, None, []
    for start, block in blocks:
        added, where = set(), {}
        cfg = parse_overrides(block, shell_vars=shell, added=added, where=where)
        if not cfg:
            continue
        entry = (cfg, added, {k: start + i + 1 for k, i in where.items()})
        if not any(_get(cfg, k)[0] for k in VERL_GRPO_KEYS):
            fallback = fallback or entry
        elif chosen is None:
            chosen = entry
        elif cfg != chosen[0]:
            others.append(min(entry[2].values()))
    if chosen is None:                       # no verl GRPO launch: a TRL one with --flags?
        flags = _cli_flags(lines)
        if flags[0] and (check_keys(flags[0], "trl")["grpo"] or isinstance(flags[0].get("config"), str)):
            return flags
        if flags[0] and fallback is None:
            shown = ", ".join(list(flags[0])[:4]) + (", ..." if len(flags[0]) > 4 else "")
            raise ConfigFormatError(path, min(flags[2].values()), "a launch whose flags "
                                    f"({shown}) are neither TRL GRPOConfig nor verl keys: a "
                                    "trainer of its own, whose keys the model cannot read (give "
                                    "its values to `grpo-theory stability` or `simulate` as "
                                    "options)")
    chosen = chosen or fallback
    if chosen is None:
        raise ConfigFormatError(path, None, "no configuration found (expected JSON, YAML, "
                                            "dotted key=value overrides or a launch command "
                                            "with --key value flags)")
    if others and warnings is not None:
        warnings.append(f"{len(others) + 1} launch commands with GRPO keys in this file: read "
                        f"the first (line {min(chosen[2].values())}), not the one(s) at line "
                        + ", ".join(str(x) for x in others))
    return (*chosen, False)


_LAUNCHERS = ("accelerate", "python", "python3", "torchrun", "deepspeed", "trl")
_SHELL_STOP = ("|", "||", "&&", ";", ">", ">>", "2>&1", "&", "<")


def _cli_flags(lines):
    """``--key value`` / ``--key=value`` flags of the launch commands in a shell script or a
    README (``accelerate launch train.py --num_generations 8 ...``, ``trl grpo ...``): the way
    TRL scripts pass a GRPOConfig through HfArgumentParser.  A flag without a value is
    ``True``, several values a list; ``-`` in a name reads as ``_``; ``$VAR`` resolves from
    the shell assignments above.  Returns ``(config, set(), line_of_key)``."""
    import re
    import shlex

    from grpo_theory.runs.logs.verl import _SHELL, _convert, _strip_quotes

    shell, out, where = {}, {}, {}
    logical, start, physical, own_script = "", 0, [], False
    for i, raw in enumerate(lines + [""]):
        text = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].rstrip()
        if not logical:
            start, physical = i + 1, []
        physical.append((i + 1, text))
        if text.endswith("\\"):
            logical += text[:-1] + " "
            continue
        logical += text
        command, logical = logical.strip(), ""
        try:
            toks = shlex.split(command)
        except ValueError:
            toks = command.split()
        m = _SHELL.match(command)
        if m and " " not in command.split("=", 1)[0] and len(toks) <= 2:
            shell[m.group(1)] = _strip_quotes(m.group(2))     # VAR=value, export VAR=value
            continue
        while toks and _SHELL.match(toks[0]):                 # VAR=value before a command
            toks = toks[1:]
        if not toks or not any(t.split("/")[-1] in _LAUNCHERS for t in toks[:3]):
            continue
        # `trl grpo ...` parses its flags as a GRPOConfig (an unknown one is an error there);
        # a script of one's own (`python train.py`, `accelerate launch train.py`) may have
        # arguments of its own
        own_script = own_script or not any(t.split("/")[-1] == "trl" for t in toks[:3])
        # flags before the script (`accelerate launch --config_file X train.py`) are the
        # launcher's: of them only the number of processes is read
        script = next((k + (1 if toks[k] == "-m" else 0) for k, t in enumerate(toks)
                       if t.endswith(".py") or t == "-m"), -1)
        j = 0
        while j < len(toks):
            tok = toks[j]
            launcher_flag = j < script
            j += 1
            if tok in _SHELL_STOP or tok.startswith((">", "2>")):
                break
            if not tok.startswith("--") or len(tok) < 3:
                continue
            key, eq, val = tok[2:].partition("=")
            vals = [val] if eq else []
            while not eq and j < len(toks) and not toks[j].startswith("--") \
                    and toks[j] not in _SHELL_STOP and not toks[j].startswith((">", "2>")):
                vals.append(toks[j])
                j += 1
            vals = [re.sub(r"\$\{?(\w+)\}?", lambda mm: shell.get(mm.group(1), mm.group(0)), v)
                    for v in vals]
            flag = "--" + key
            key = key.replace("-", "_")
            if launcher_flag and key not in _TRL_LAUNCH_KEYS:
                continue
            out[key] = (True if not vals else _convert(vals[0]) if len(vals) == 1
                        else [_convert(v) for v in vals])
            where[key] = next((n for n, t in physical if re.search(
                rf"(?:^|\s){re.escape(flag)}(?:[\s=]|$)", t)), start)
    return out, set(), where, own_script


def _key_line(text: str, key: str, syntax) -> int | None:
    """Line (1-based) where a JSON/YAML file sets ``key``'s last component, if found."""
    import re

    leaf = re.escape(key.split(".")[-1])
    pat = (re.compile(rf'"{leaf}"\s*:') if syntax == "json" else
           re.compile(rf"^\s*(?:-\s*)?['\"]?{leaf}['\"]?\s*:"))
    for i, ln in enumerate(text.split("\n"), start=1):
        if pat.search(ln):
            return i
    return None


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


def _num_generations(key, value):
    """TRL's own rule (GRPOConfig.__post_init__): "GRPO requires at least 2 generations per
    prompt to calculate the advantages"."""
    g = _count(key, value)
    if g < 2:
        raise ParameterError(key, value, "an integer >= 2 (TRL: GRPO requires at least 2 "
                             "generations per prompt to calculate the advantages)")
    return g


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


def log_config_kind(cfg: dict | None) -> str | None:
    """The kind of a config kept with a log: ``"verl"`` for a launch script's overrides at the
    top of the log, ``"trl"`` for a ``GRPOConfig`` saved beside ``trainer_state.json``, else
    ``None``."""
    if not cfg:
        return None
    if any(k.startswith("actor_rollout_ref.") for k in cfg):
        return "verl"
    return "trl" if "num_generations" in cfg else None


def torch_sgd(cfg: dict, kind: str) -> bool:
    """Whether the config trains with torch SGD (TRL ``optim`` naming sgd: heavy ball with the
    momentum of ``optim_args``) rather than Adam(W) (every other case the model reads)."""
    ko, optim = _get(cfg, "optim")
    return kind == "trl" and bool(ko) and "sgd" in str(optim).lower()


def map_config(cfg: dict, kind: str) -> ConfigMapping:
    """Map a flat config of ``kind`` (``trl``/``verl``/``cs336``) to the model's parameters."""
    mp = ConfigMapping()
    pos = dict(low=0, low_open=True)
    nonneg = dict(low=0)
    if kind == "trl":
        G = _lookup(mp, cfg, "group_size", ("num_generations",), 8,
                    "TRL default num_generations = 8", _num_generations)
        _lookup(mp, cfg, "learning_rate", ("learning_rate",), 1e-6,
                "GRPOConfig default learning_rate = 1e-6", lambda k, v: _real(k, v, **pos))
        if torch_sgd(cfg, kind):
            import re
            ko, optim = _get(cfg, "optim")
            ka, args = _get(cfg, "optim_args")
            m = re.search(r"momentum\s*=\s*([^,\s]+)", str(args)) if ka else None
            if m:
                mp.put("momentum", _real(ka, m.group(1), low=0, high=1, high_open=True),
                       f"{ka} ({ko} = {optim!r})", note="torch SGD's heavy-ball momentum")
            else:
                mp.put("momentum", 0.0, f"{ko} = {optim!r}: torch SGD, momentum 0 unless "
                       "optim_args sets it", note="plain SGD: no heavy ball")
        else:
            _lookup(mp, cfg, "momentum", ("adam_beta1",), 0.9, "AdamW default adam_beta1 = 0.9",
                    lambda k, v: _real(k, v, low=0, high=1, high_open=True),
                    note="Adam's beta1 = the heavy-ball momentum mu (adam.momentum_form)")
        beta = _lookup(mp, cfg, "kl_coef", ("beta",), 0.0,
                       "GRPOConfig default beta = 0.0 (TRL >= 0.18; earlier versions 0.04)",
                       lambda k, v: _real(k, v, **nonneg))
        kb, bias_corr = _get(cfg, "use_bias_correction_kl")
        if beta > 0 and kb is not None and _bool(kb, bias_corr):
            mp.put("kl", "exact", f"{kb} = True",
                   note="TRL multiplies the k3 term by the importance ratio pi/pi_old: its "
                        "expectation under the sampling policy is the exact KL(pi || pi_ref) of "
                        "the current policy, so the loss carries the exact-KL force")
        else:
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
        kp, pdb = _get(cfg, "per_device_train_batch_size")
        kw, ws = _get(cfg, "num_processes", "world_size")
        pdb = _count(kp, pdb) if kp else 8
        ws = _count(kw, ws) if kw else 1
        ks, spg = _get(cfg, "steps_per_generation")
        kgb, gbs = _get(cfg, "generation_batch_size")
        # TRL: generation_batch_size = per-device batch x processes x steps_per_generation; a
        # config sets one of the two, a dumped GRPOConfig holds both (then they give processes)
        if ks and kgb:
            spg, gbs = _count(ks, spg), _count(kgb, gbs)
            if gbs % (pdb * spg):
                raise ParameterError(kgb, gbs, f"a multiple of per_device_train_batch_size x "
                                     f"steps_per_generation = {pdb} x {spg}")
            implied = gbs // (pdb * spg)
            if kw and implied != ws:
                raise ParameterError(kgb, gbs, f"{pdb} x {ws} x {spg} (per-device batch x "
                                     f"{kw} x steps_per_generation)")
            ws, kw = implied, f"{kgb} / (per_device_train_batch_size x {ks})"
            kgb = None
        if kgb:
            gbs = _count(kgb, gbs)
            if gbs % (pdb * ws):
                raise ParameterError(kgb, gbs, f"a multiple of per_device_train_batch_size x "
                                     f"processes = {pdb} x {ws}")
            spg = gbs // (pdb * ws)
            ks = (f"{kgb} / (per_device_train_batch_size x processes{'' if kw else ', assumed 1'}) "
                  f"= {spg} steps_per_generation")
        else:
            spg = _count(ks, spg) if ks else gas
        # TRL (GRPOConfig.__post_init__): "generation_batch_size must be divisible by
        # num_generations" -- the generation batch holds whole prompt groups
        ws_why = "assumed"
        if (pdb * ws * spg) % G:
            if kw or kgb:            # the batch is the config's: TRL refuses it
                rule = (f"divisible by num_generations = {G} (TRL refuses a generation batch "
                        "of partial prompt groups)")
                if kgb:
                    raise ParameterError(kgb, gbs, rule)
                raise ParameterError(kw, ws, f"such that the generation batch, "
                                     f"per_device_train_batch_size x processes x "
                                     f"steps_per_generation = {pdb} x {ws} x {spg} = "
                                     f"{pdb * ws * spg}, is {rule}")
            # the process count is not in the file: the fewest with which TRL accepts it (one
            # process would be refused), instead of rounding the prompts per step
            ws = G // math.gcd(pdb * spg, G)
            ws_why = (f"assumed: the fewest with which TRL accepts the generation batch "
                      f"{pdb} x processes x {spg} as whole groups of {G}")
        ki, it = _get(cfg, "num_iterations")
        it = _count(ki, it) if ki else 1
        _window(mp, it, _batches(ks or "steps_per_generation (default = GAS)", spg,
                                 kg or "gradient_accumulation_steps", gas),
                ki or "num_iterations default 1",
                f"{ks or 'steps_per_generation (default = gradient_accumulation_steps)'} / "
                f"{kg or 'gradient_accumulation_steps (default 1)'}",
                assumed=not (ki or ks) or bool(kgb and not kw))
        _prompts(mp, pdb * ws * gas, G, f"per_device_train_batch_size ({pdb}{'' if kp else ', default'})"
                 f" x processes ({ws}{'' if kw else ', ' + ws_why}) x GAS ({gas}) / num_generations",
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
    hi = _real(kh, vh, low=0) if kh else lo
    note = ("the ratio stays within 1 +- O(eta) near the fixed point, inside the clip range: "
            "the clip is inactive in the linear theory (it bounds large excursions, which the "
            "linear thresholds do not describe)")
    if lo >= 1:
        # the engine runs it (TRL checks no range; a large epsilon is how one turns the clip
        # off), but 1 - epsilon <= 0 is no lower bound on a ratio: the model's clip_low is in
        # [0, 1), so only the upper clip 1 + epsilon_high is read
        note = (f"{k} = {lo:g} >= 1: 1 - {k.rsplit('.', 1)[-1]} <= 0 never clips the ratio "
                "from below (the model's lower clip is in [0, 1)): no lower clip; the upper "
                f"clip 1 + {hi:g} is the one read. " + note)
    source = " / ".join(x for x in (k, kh) if x) or default_source
    if lo >= 1:
        source += f"; {k} >= 1: no lower clip"
    mp.put("clip", [lo, hi], source, assumed=k is None, note=note)


def _prompts(mp, samples, G, source, assumed):
    B = max(1, round(samples / G))
    mp.put("prompts", B, source, assumed=assumed,
           note="prompts per optimizer step" + ("" if samples % G == 0 else
                                                f" ({samples}/{G} rounded)"))
