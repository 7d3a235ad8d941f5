"""Readers for verl: the console logger and the JSONL file logger.

Console lines look like ``step:12 - critic/score/mean:0.731 - actor/entropy_loss:0.21 - ...``
(possibly behind a prefix such as ``(main_task pid=123)``); every other line
(prompts, samples, warnings) is ignored.  Values may be written as plain numbers,
``np.float64(0.5)`` or ``tensor(0.5)``.  The launch script often printed at the
top of the log (``python3 -m verl.trainer.main_ppo key=value ...``) is parsed into
``TrainingLog.config`` (dotted keys, ``$VAR`` references resolved from shell
assignments above them).

The JSONL file logger writes one ``{"step": N, "data": {...}}`` object per line.
"""

from __future__ import annotations

import json
import re

from grpo_theory.runs.logs.base import LogFormatError, TrainingLog, _to_float, records_to_metrics, text_lines

__all__ = ["read_verl_console", "read_verl_jsonl", "parse_overrides", "printed_config",
           "strip_ansi", "STEP_LINE"]

STEP_LINE = re.compile(r"(?:^|[\s)\]|])step:(\d+)\s+-\s+(.*)$")
_WRAPPED = re.compile(r"^(?:np\.float\d*|np\.int\d*|numpy\.float\d*|tensor|float)\((.*?)(?:,.*)?\)$")
_ASSIGN = re.compile(r"^\+{0,2}([A-Za-z_][\w.\-/]*)=(.*)$")
_SHELL = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=(\S*)")


#: a terminal escape sequence (ray colours its ``(TaskRunner pid=N)`` prefixes)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
#: the prefix ray puts in front of each line a worker prints: ``(TaskRunner pid=123)``,
#: ``(main_task pid=123, ip=10.0.0.1)``
_RAY_PREFIX = re.compile(r"^\([\w.:-]+ pid=\d+(?:, ip=[\d.]+)?\) ?")
#: the first line of verl's printed config: ``{'actor_rollout_ref': {...`` (``pprint`` of
#: ``OmegaConf.to_container(config, resolve=True)``, which ``main_ppo`` prints at start-up)
_PRINTED_OPEN = re.compile(r"^\s*\{'(?:actor_rollout_ref|algorithm|critic|data|"
                           r"reward_model|trainer|custom_reward_function)'\s*:")


#: a continuation line of a pprint-ed dict: indented, then a key, a value or a closing bracket
_CONTINUES = re.compile(r"^\s+(?:['\"\[\]{}()\d.+-]|None\b|True\b|False\b|inf\b|nan\b)")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (a coloured console log reads as a plain one,
    and no message quotes an escape sequence)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def _closes(body: str, depth: int, quote: str | None):
    """Scan ``body`` for brackets outside string literals; ``(depth, quote)`` after it."""
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        i += 1
    return depth, quote


def printed_config(lines, *, max_lines: int = 20000):
    """verl's resolved config as ``main_ppo`` prints it at start-up, ahead of the step lines.

    ``lines`` are text lines (str) or ``(lineno, line)`` pairs.  The dict opens with
    ``{'actor_rollout_ref': ...`` (or another of verl's top-level sections), possibly behind
    ray's ``(TaskRunner pid=N)`` prefix, and runs over the following lines of the same
    process (lines other processes interleave are skipped) until its braces close; it is
    read with :func:`ast.literal_eval`.  Returns ``(nested dict, line number of its first
    line)``, or ``(None, None)`` where the text holds no such dict (or an unreadable one).
    This is the configuration the engine ran with: defaults and overrides resolved."""
    import ast

    pairs = [(i + 1, ln) if isinstance(ln, str) else ln for i, ln in enumerate(lines)]
    for k, (lineno, raw) in enumerate(pairs):
        line = strip_ansi(raw)
        m = _RAY_PREFIX.match(line)
        prefix = m.group(0).rstrip() if m else ""
        body = line[m.end():] if m else line
        if not _PRINTED_OPEN.match(body):
            continue
        parts, (depth, quote) = [body], _closes(body, 0, None)
        for _, raw2 in pairs[k + 1:k + 1 + max_lines]:
            if depth <= 0:
                break
            nxt = strip_ansi(raw2)
            m2 = _RAY_PREFIX.match(nxt)
            if prefix and (not m2 or m2.group(0).rstrip() != prefix):
                continue                       # another process's line, interleaved
            if m2:
                nxt = nxt[m2.end():]
            if not _CONTINUES.match(nxt):
                continue                       # a warning the same process printed meanwhile
            parts.append(nxt)
            depth, quote = _closes(nxt, depth, quote)
        if depth != 0:
            continue
        text = "\n".join(parts)
        text = re.sub(r"(?<![\w'\"])(-?)inf(?![\w'\"])", r"\g<1>1e999", text)
        text = re.sub(r"(?<![\w'\"])nan(?![\w'\"])", "None", text)
        try:
            data = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(data, dict):
            return data, lineno
    return None, None


def _value(raw: str):
    s = raw.strip()
    m = _WRAPPED.match(s)
    if m:
        s = m.group(1)
    return _to_float(s)


def _strip_quotes(s: str) -> str:
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


def parse_overrides(lines, *, shell_vars: dict | None = None, added: set | None = None,
                    where: dict | None = None) -> dict:
    """Hydra-style ``key=value`` overrides (and ``\\``-continued shell lines) -> dict.

    Numbers become floats/ints, ``True``/``False`` booleans, ``$VAR``/``${VAR}``
    are replaced from ``shell_vars`` (and from ``VAR=value`` lines seen earlier; a
    dict passed as ``shell_vars`` is updated with them).  Keys keep their dots
    (``actor_rollout_ref.rollout.n``).  An override quoted in prose (`` `key=value` ``,
    ``key=value,``) is read too.  ``added`` collects the keys written ``+key=`` or
    ``++key=`` (Hydra's way of adding a key the schema does not have); ``where``
    maps each key to the index (in ``lines``) of the line that set it.
    """
    shell = shell_vars if shell_vars is not None else {}
    out: dict = {}
    for idx, line in enumerate(lines):
        line = re.split(r"(?:^|\s)#", line, maxsplit=1)[0]
        stripped = line.strip().rstrip("\\").strip()
        if not stripped:
            continue
        m = _SHELL.match(stripped)
        if m and "." not in m.group(1) and " " not in stripped.split("=", 1)[0]:
            shell[m.group(1)] = _strip_quotes(m.group(2))
        for tok in stripped.split():
            if "`" in tok:                      # `key=value` quoted in prose
                tok = tok.strip("`").split("`")[0]
            elif tok.endswith((",", ";")):
                tok = tok.rstrip(",;")
            am = _ASSIGN.match(tok)
            if not am or "." not in am.group(1):
                continue
            key, val = am.group(1), _strip_quotes(am.group(2))
            val = re.sub(r"\$\{?(\w+)\}?", lambda mm: shell.get(mm.group(1), mm.group(0)), val)
            out[key] = _convert(val)
            if added is not None and tok.startswith("+"):
                added.add(key)
            if where is not None:
                where[key] = idx
    return out


def _convert(val: str):
    low = val.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    try:
        return int(val)
    except ValueError:
        pass
    try:
        return float(val)
    except ValueError:
        return val


def _same(printed, override) -> bool:
    """Whether a printed config value is the one an override set (numbers as numbers; a
    list or mapping the override wrote as text is not compared)."""
    if isinstance(printed, (list, dict)) or isinstance(override, (list, dict)):
        return True
    num = (int, float)
    if isinstance(printed, num) and isinstance(override, num) \
            and not isinstance(printed, bool) and not isinstance(override, bool):
        return float(printed) == float(override)
    return str(printed) == str(override)


def read_verl_console(path, text: str | None = None) -> TrainingLog:
    """Read a verl console log (see module docstring)."""
    if text is None:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    text = strip_ansi(text)
    lines = text_lines(text)
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        lines = lines[:-1]
    warnings: list[str] = []
    records = []
    header: list[str] = []
    seen_step = False
    last_idx = len(lines) - 1
    for idx, (lineno, line) in enumerate(lines):
        m = STEP_LINE.search(line)
        if not m:
            if not seen_step:
                header.append(line)
            continue
        seen_step = True
        step = float(m.group(1))
        pairs = m.group(2).rstrip().split(" - ")
        truncated = idx == last_idx and not ends_with_newline
        values = {}
        for j, pair in enumerate(pairs):
            key, sep, raw = pair.partition(":")
            key = key.strip()
            is_last_pair = j == len(pairs) - 1
            if truncated and is_last_pair:
                warnings.append(f"{path} line {lineno}: last line is cut off; dropped its "
                                f"incomplete last entry {pair.strip()!r}")
                break
            if not sep or not key:
                raise LogFormatError(path, lineno, f"step {int(step)}: entry {pair.strip()!r} is "
                                                   f"not of the form key:value")
            v = _value(raw)
            if v is None:
                raise LogFormatError(path, lineno, f"step {int(step)}: value of {key!r} is not a "
                                                   f"number: {raw.strip()!r}")
            values[key] = v
        records.append((step, lineno, values))
    if not records:
        raise LogFormatError(path, None, "no verl console line of the form "
                                         "'step:N - key:value - ...' found (a verl run logs "
                                         "one per training step: this one has not logged its "
                                         "first, or stopped before it)")
    printed, at = printed_config(header)
    # the launch above the printed config (below it, prose such as "set critic.enable=True")
    config = parse_overrides(header if printed is None else header[:at - 1])
    if printed is not None:       # the values the engine ran with: they decide
        from grpo_theory.runs.logs.base import flatten

        resolved = flatten(printed, sep=".")
        differ = sorted(k for k, v in config.items()
                        if k in resolved and not _same(resolved[k], v))
        if differ:
            warnings.append(f"{path} line {at}: verl's printed config differs from the launch "
                            "overrides above it in " + ", ".join(differ[:5])
                            + (", ..." if len(differ) > 5 else "") + ": read the printed values")
        config.update(resolved)
    metrics = records_to_metrics(records, warnings=warnings, source=str(path))
    return TrainingLog(metrics=metrics, source=str(path), format="verl", config=config,
                       warnings=warnings, default_metric="critic/score/mean")


def iter_jsonl(path, text: str, warnings: list):
    """Yield ``(lineno, obj)`` for each JSON-object line (lines as :func:`~.base.text_lines` splits them),
    or for each object of a JSON array (``[{...}, {...}]``: the same records; ``lineno`` is the line
    the object starts on).

    A broken *last* line (a log cut off while being written) is skipped with a
    note in ``warnings``; any other broken line raises :class:`LogFormatError`.
    """
    if text.lstrip().startswith("["):
        yield from _iter_json_array(path, text, warnings)
        return
    lines = text_lines(text)
    nonblank = [i for i, (_, line) in enumerate(lines) if line.strip()]
    last = nonblank[-1] if nonblank else -1
    for i, (lineno, line) in enumerate(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == last:
                warnings.append(f"{path} line {lineno}: last line is not complete JSON (cut off); skipped")
                continue
            raise LogFormatError(path, lineno, f"not valid JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise LogFormatError(path, lineno, "each line must be a JSON object")
        yield lineno, obj


_WS = re.compile(r"[ \t\n\r]*")


def _iter_json_array(path, text: str, warnings: list):
    """The objects of a JSON array, each with the line it starts on (see :func:`iter_jsonl`).

    An array whose end is cut off (no closing ``]``, the last object incomplete) keeps its
    complete objects, with a note in ``warnings``."""
    decoder = json.JSONDecoder()
    closed = text.rstrip().endswith("]")
    line, counted = 1, 0

    def lineno(pos):
        nonlocal line, counted
        line += text.count("\n", counted, pos)
        counted = pos
        return line

    i = _WS.match(text, text.index("[") + 1).end()
    k = 0
    while True:
        if i >= len(text):
            warnings.append(f"{path} line {lineno(i)}: the JSON array is not closed (cut off); "
                            f"read its {k} complete objects")
            return
        if text[i] == "]":
            rest = _WS.match(text, i + 1).end()
            if rest < len(text):
                raise LogFormatError(path, lineno(rest), "text after the end of the JSON array")
            return
        if k:
            if text[i] != ",":
                raise LogFormatError(path, lineno(i), f"not valid JSON (expected ',' or ']' after "
                                                      f"object {k} of the array)")
            i = _WS.match(text, i + 1).end()
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            if not closed and "}" not in text[exc.pos:]:
                warnings.append(f"{path} line {lineno(i)}: the JSON array is cut off in an "
                                f"object; read its {k} complete objects")
                return
            raise LogFormatError(path, exc.lineno, f"not valid JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(obj, dict):
            kind = ("numbers (one value per step?)" if isinstance(obj, (int, float))
                    else "arrays (rows without column names?)" if isinstance(obj, list)
                    else f"{type(obj).__name__} values")
            raise LogFormatError(path, lineno(i), f"a JSON array of {kind}, not of per-step "
                                                  f"objects (element {k}: {json.dumps(obj)[:40]}): "
                                                  'write [{"step": 1, "<metric>": value}, ...]')
        yield lineno(i), obj
        k += 1
        i = _WS.match(text, end).end()


def read_verl_jsonl(path, text: str | None = None) -> TrainingLog:
    """Read verl's JSONL file logger output: ``{"step": N, "data": {...}}`` per line.

    Flat records ``{"step": N, "critic/score/mean": ..., ...}`` (the metrics dict dumped
    with its step, as several verl forks write it) are read too.
    """
    if text is None:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    warnings: list[str] = []
    records = []
    for lineno, obj in iter_jsonl(path, text, warnings):
        step = obj.get("step")
        data = obj.get("data", {k: v for k, v in obj.items() if k != "step"})
        if not isinstance(step, (int, float)) or isinstance(step, bool):
            raise LogFormatError(path, lineno, "no numeric 'step'")
        if not isinstance(data, dict):
            raise LogFormatError(path, lineno, "no 'data' object")
        records.append((float(step), lineno, data))
    if not records:
        raise LogFormatError(path, None, "no {'step': N, 'data': {...}} line found")
    text_columns: dict = {}
    metrics = records_to_metrics(records, warnings=warnings, source=str(path),
                                 text_columns=text_columns)
    return TrainingLog(metrics=metrics, source=str(path), format="verl-jsonl",
                       warnings=warnings, default_metric="critic/score/mean",
                       text_columns=text_columns)
