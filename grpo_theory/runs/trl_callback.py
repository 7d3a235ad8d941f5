"""A TRL / transformers ``TrainerCallback`` that runs the diagnostics during training.

Add it to a ``GRPOTrainer`` (or any ``transformers.Trainer``)::

    from grpo_theory.runs.trl_callback import GRPOTheoryCallback
    trainer = GRPOTrainer(..., callbacks=[GRPOTheoryCallback()])

At the start of training it maps the trainer's arguments onto the model
(:func:`grpo_theory.runs.check_config.check_config`, the same as ``grpo-theory
check-config``) and logs what is known before launch: whether a refresh threshold exists,
the exact threshold in ηK for the configured refresh interval and momentum, and with a
``stiffness`` the verdict and the margin.  At every log it reads ``state.log_history``,
runs the same detectors as ``grpo-theory watch`` and, for each detector that fires for the
first time, logs ``grpo_theory/<detector> = 1`` next to the trainer's own metrics (so W&B,
TensorBoard, ... record it) and emits a Python warning with the evidence and the knob.
Needs the optional extra ``pip install 'grpo-theory[trl]'`` (transformers).
"""

from __future__ import annotations

import warnings as _warnings

try:
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - depends on the optional extra
    raise ImportError("grpo_theory.runs.trl_callback needs transformers: "
                      "pip install 'grpo-theory[trl]'") from exc

from grpo_theory.runs.logs.trl import log_from_history
from grpo_theory.runs.watch import new_warnings
from grpo_theory.validate import ParameterError

__all__ = ["GRPOTheoryCallback", "GRPOTheoryWarning"]


class GRPOTheoryWarning(UserWarning):
    """A diagnostic that fired during training (evidence, first step and knob in the text)."""


class GRPOTheoryCallback(TrainerCallback):
    """Diagnostics during training (see the module docstring).

    ``stiffness``: K per unit learning rate, if known (e.g. measured on an earlier run), for
    the stability verdict; ``metric``/``group_size``: as for ``grpo-theory diagnose``;
    ``check_arguments=False`` skips the pre-launch check.  ``config_check`` (the
    :class:`~grpo_theory.runs.check_config.ConfigCheck`, or ``None`` with
    ``config_check_error`` saying why) and ``warnings`` (the
    :class:`~grpo_theory.runs.watch.Warning` list) are kept on the callback.
    """

    def __init__(self, *, stiffness=None, metric=None, group_size=None, check_arguments=True):
        self.stiffness = stiffness
        self.metric = metric
        self.group_size = group_size
        self.check_arguments = check_arguments
        self.config_check = None
        self.config_check_error = None
        self.warnings = []
        self._fired = set()
        self._pending = {}

    def on_train_begin(self, args, state, control, **kwargs):
        if not self.check_arguments:
            return
        from grpo_theory.runs.check_config import check_config

        try:
            self.config_check = check_config(args.to_dict(), stiffness=self.stiffness)
        except ParameterError as exc:  # arguments the model cannot map: say so, keep training
            self.config_check_error = str(exc)
            return
        pred = self.config_check.prediction
        self._pending["grpo_theory/stable"] = (None if pred["stable"] is None
                                               else float(pred["stable"]))
        if pred.get("stability_margin") is not None:
            self._pending["grpo_theory/stability_margin"] = float(pred["stability_margin"])
        if pred.get("eta_K") is not None:
            self._pending["grpo_theory/eta_K"] = float(pred["eta_K"])

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and self._pending:
            logs.update({k: v for k, v in self._pending.items() if v is not None})
            self._pending = {}
        try:
            log = log_from_history(state.log_history, "<trainer state>")
            fired = new_warnings(log, self._fired, metric=self.metric,
                                 group_size=self.group_size)
        except ParameterError:  # no reward logged yet, or too little to judge
            return
        for w in fired:
            self.warnings.append(w)
            if logs is not None:
                logs[f"grpo_theory/{w.detector}"] = 1.0
            _warnings.warn(str(w), GRPOTheoryWarning, stacklevel=2)
