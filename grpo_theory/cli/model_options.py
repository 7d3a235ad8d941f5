"""The model's options on the command line: generated from :class:`~grpo_theory.model.GRPOModel`.

Every command that takes a model gets its variant, optimizer and lag options from
:func:`add_model_options`, the one function that makes them: one option per model field
(``--learning-rate`` for ``learning_rate``), with the field's help text and metavar, its
default (the default model's, shown in ``--help``) and the model's validation (a bad value
is refused by :class:`~grpo_theory.model.GRPOModel` with one line naming the field).
:func:`model_from_options` builds the model from the options given; the options not given
keep the base model's values (the default model, or e.g. a config file's).
"""

from __future__ import annotations

import argparse

from grpo_theory.cli._common import number
from grpo_theory.model import DEFAULT_MODEL, DEFAULTS, FIELD_GROUPS, GRPOModel, field_help

__all__ = ["GROUP_TITLES", "add_model_options", "model_options_given", "model_from_options"]

#: the argument groups of ``--help``, in order
GROUP_TITLES = {
    "variant": "variant (the loss)",
    "optimizer": "optimizer",
    "lag": "lag (how the sampling policy trails the trained one)",
}


def option(name: str) -> str:
    """The command-line spelling of a model field: ``--learning-rate``."""
    return "--" + name.replace("_", "-")


def _default_text(value) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def add_model_options(parser: argparse.ArgumentParser, groups=("variant", "optimizer", "lag"), *,
                      fields=None, defaults: str | dict = "", texts: dict | None = None) -> None:
    """Add one option per field of the model's ``groups`` (or only the named ``fields``) to
    ``parser``.

    The options default to "not given" (``argparse.SUPPRESS``), so :func:`model_options_given`
    knows what the user typed; ``--help`` shows the default model's value, or ``defaults``
    where a command starts from another base: a phrase for every option (``"the config's"``)
    or a dict ``{field: phrase}`` for some of them.  ``texts`` replaces the allowed-values text
    of a field where a command takes fewer values than the model (the lab: a finite G only)."""
    for group in groups:
        names = [n for n in FIELD_GROUPS[group] if fields is None or n in fields]
        if not names:
            continue
        g = parser.add_argument_group(GROUP_TITLES[group])
        for name in names:
            text, metavar = field_help(name)
            text = (texts or {}).get(name, text)
            shown = (defaults.get(name) if isinstance(defaults, dict) else defaults) \
                or _default_text(DEFAULTS[name])
            g.add_argument(option(name), dest=name, type=number, default=argparse.SUPPRESS,
                           metavar=metavar, help=f"{text} (default: {shown})")


def model_options_given(args) -> dict:
    """The model fields given on the command line, ``{field: value}``."""
    return {name: getattr(args, name) for name in DEFAULTS if hasattr(args, name)}


def model_from_options(args, base: GRPOModel = DEFAULT_MODEL) -> GRPOModel:
    """``base`` with the fields given on the command line (validated by the model)."""
    return base.replace(**model_options_given(args))
