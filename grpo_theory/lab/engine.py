r"""The harness around TRL's ``GRPOTrainer``: one training run = one ``trainer.train()``.

:class:`Lab` holds what every run of an experiment shares: the task and its tokenizer,
the model specification, the prompts' token ids and a scratch directory where reference
models are saved (TRL loads the reference itself, from the policy's ``_name_or_path``).
:class:`RunSpec` holds TRL's own knobs.  :meth:`Lab.train` builds the policy from a state
dict (optionally kicked along a parameter direction), the ``GRPOConfig`` and the trainer,
and trains it on CPU; the :class:`Observer` callback records, after every optimizer step,
the exact answer probabilities of every prompt (one forward pass over the N prompts):
the success log-odds, the top-mode coordinate of the stiffness experiments, the exact
expected reward (written into TRL's ``log_history`` as ``lab/expected_reward``) and, every
``eval_every`` steps, the true verifier's expected reward as an ``eval_reward`` entry.

A run whose parameters or log-probabilities become non-finite (or whose generation fails
on them) is stopped and recorded as diverged with its step; it never raises.

Units: ``steps`` are optimizer steps (TRL ``global_step``); rewards are 0/1 verifier
rewards and their means.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import os
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from grpo_theory.validate import ParameterError, check_choice, check_int, check_real

from ._deps import require_lab
from .model import (ModelSpec, answer_log_probs, build_model, describe, load_pretrained, place,
                    pretrain, restrict_head)
from .task import VOCAB, Task, TaskSpec, answer_token_ids, build_tokenizer, load_tokenizer

__all__ = ["RunSpec", "Lab", "RunRecord", "OPTIMIZERS"]

OPTIMIZERS = ("sgd", "adamw")
SCALE_REWARDS = ("group", "none", "batch")
LOSS_TYPES = ("dapo", "grpo", "bnpo", "dr_grpo")


@dataclass(frozen=True)
class RunSpec:
    """TRL's knobs of one run (names as in ``trl.GRPOConfig`` where they exist).

    ``optimizer``: ``"sgd"`` (torch SGD, heavy-ball ``momentum`` via ``optim_args``) or
    ``"adamw"`` (``adam_beta1``, ``adam_beta2``, ``adam_epsilon``, no weight decay).
    ``steps``: optimizer steps (``max_steps``).  ``epsilon=None``: TRL's default clip 0.2.
    """

    group_size: int = 8
    learning_rate: float = 0.1
    optimizer: str = "sgd"
    momentum: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    beta: float = 0.0
    scale_rewards: str = "group"
    loss_type: str = "dapo"
    epsilon: float = 0.2
    epsilon_high: float | None = None
    bias_corrected_kl: bool = False
    steps_per_generation: int = 1
    num_iterations: int = 1
    steps: int = 50
    seed: int = 0

    def __post_init__(self):
        check_int("group_size", self.group_size, low=2)
        check_real("learning_rate", self.learning_rate, low=0, low_open=True)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_real("momentum", self.momentum, low=0, high=1, high_open=True)
        if self.optimizer != "sgd" and self.momentum:
            raise ParameterError("momentum", self.momentum, "0 with adamw (use adam_beta1)")
        check_real("adam_beta1", self.adam_beta1, low=0, high=1, high_open=True)
        check_real("adam_beta2", self.adam_beta2, low=0, high=1, high_open=True)
        check_real("adam_epsilon", self.adam_epsilon, low=0, low_open=True)
        check_real("beta", self.beta, low=0)
        check_choice("scale_rewards", self.scale_rewards, SCALE_REWARDS)
        check_choice("loss_type", self.loss_type, LOSS_TYPES)
        check_real("epsilon", self.epsilon, low=0, low_open=True)
        if self.epsilon_high is not None:
            check_real("epsilon_high", self.epsilon_high, low=0, low_open=True)
        check_int("steps_per_generation", self.steps_per_generation, low=1)
        check_int("num_iterations", self.num_iterations, low=1)
        check_int("steps", self.steps, low=1)
        check_int("seed", self.seed, low=0)

    @property
    def refresh_interval(self) -> int:
        """Optimizer steps per sampling policy (one ``GRPOConfig`` generation)."""
        return self.steps_per_generation * self.num_iterations

    def replace(self, **changes) -> "RunSpec":
        return replace(self, **changes)

    def grpo_config_kwargs(self, prompts: int, processes: int = 1) -> dict:
        """Keyword arguments of ``trl.GRPOConfig`` for ``prompts`` prompts per optimizer step
        (the global batch, prompts x G, split evenly over ``processes`` data-parallel ones)."""
        batch = prompts * self.group_size
        if batch % processes:
            raise ParameterError("num_processes", processes, f"a divisor of the global batch "
                                 f"prompts x G = {prompts} x {self.group_size} = {batch}")
        kw = dict(
            num_generations=self.group_size, learning_rate=self.learning_rate,
            beta=self.beta, scale_rewards=self.scale_rewards, loss_type=self.loss_type,
            epsilon=self.epsilon, steps_per_generation=self.steps_per_generation,
            num_iterations=self.num_iterations, max_steps=self.steps, seed=self.seed,
            per_device_train_batch_size=batch // processes,
            gradient_accumulation_steps=1, max_completion_length=1, temperature=1.0,
            lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, max_grad_norm=0.0,
            use_bias_correction_kl=self.bias_corrected_kl,
            adam_beta1=self.adam_beta1, adam_beta2=self.adam_beta2,
            adam_epsilon=self.adam_epsilon)
        if self.epsilon_high is not None:
            kw["epsilon_high"] = self.epsilon_high
        if processes > 1:   # every parameter gets a gradient: skip DDP's search for unused ones
            kw["ddp_find_unused_parameters"] = False
        if self.optimizer == "sgd":
            kw.update(optim="sgd", optim_args=f"momentum={self.momentum:g}")
        else:
            kw.update(optim="adamw_torch")
        return kw


@dataclass
class RunRecord:
    """One TRL run: its log and what the observer saw.

    ``log_history``: TRL's ``TrainerState.log_history`` (with the lab's keys added);
    ``observed_steps`` (T,), ``log_odds`` (T, N) (two-answer task, else empty),
    ``p_correct`` (T, N) exact success probabilities; row 0 is the state before training.
    ``diverged_step``: the optimizer step at which the run became non-finite (None if not).
    """

    spec: RunSpec
    log_history: list
    observed_steps: np.ndarray
    p_correct: np.ndarray
    log_odds: np.ndarray
    diverged_step: int | None
    diverged_reason: str
    seconds: float
    observer_seconds: float
    steps_done: int
    trainer_state_path: str | None = None
    config_path: str | None = None
    extra: dict = field(default_factory=dict)

    def mode_coordinate(self, vector, z_star):
        """Top-mode coordinate e . (z - z*) at every observed step."""
        return (self.log_odds - z_star) @ np.asarray(vector, float)


def _observer_class():
    from transformers import TrainerCallback

    class Observer(TrainerCallback):
        """Records the exact answer probabilities after every step (see the module docstring)."""

        def __init__(self, lab, *, true_answers=None, eval_every=0, adam_state=None):
            self.lab = lab
            self.eval_every = int(eval_every)
            self.adam_state = adam_state
            self.steps, self.p, self.z = [], [], []
            self.train_p, self.true_p = [], []
            self.diverged_step = None
            self.diverged_reason = ""
            self.seconds = 0.0

        def _observe(self, model, step):
            import torch

            t0 = time.perf_counter()
            lab = self.lab
            with torch.no_grad():
                lp = answer_log_probs(model, lab.input_ids).double().cpu()
            ok = bool(torch.isfinite(lp).all())
            p = lp.exp().numpy()
            idx = np.arange(p.shape[0])
            pc = p[idx, lab.labels]
            self.steps.append(step)
            self.p.append(pc)
            if lab.task.binary:
                lpn = lp.numpy()
                self.z.append(lpn[idx, lab.labels] - lpn[idx, 1 - lab.labels])
            sc = lab.task.spec.shortcut
            if sc is not None:
                j = lab.task.answer_tokens.index(sc)
                train = np.where(lab.labels == j, pc, pc + p[:, j])
            else:
                train = pc
            self.train_p.append(float(np.mean(train)))
            self.true_p.append(float(np.mean(pc)))
            self.seconds += time.perf_counter() - t0
            return ok

        def on_train_begin(self, args, state, control, model=None, optimizer=None, **kw):
            if self.adam_state is not None and optimizer is not None:
                self.adam_state(optimizer, model)
            self._observe(model, 0)

        def on_train_end(self, args, state, control, model=None, optimizer=None, **kw):
            end = getattr(getattr(self.adam_state, "__self__", None), "end", None)
            if callable(end) and optimizer is not None:
                end(optimizer, model)

        def on_step_end(self, args, state, control, model=None, **kw):
            if self.diverged_step is not None:
                return
            ok = self._observe(model, state.global_step)
            if not ok:
                self.diverged_step = state.global_step
                self.diverged_reason = "non-finite answer log-probabilities"
                control.should_training_stop = True

        def on_log(self, args, state, control, logs=None, **kw):
            # TRL logs the reward only at generation steps; the lab's keys go into every
            # training entry (the one with a loss) and the eval entries every eval_every steps
            if not state.log_history or "loss" not in state.log_history[-1]:
                return
            t0 = time.perf_counter()
            entry = state.log_history[-1]
            if self.steps and self.steps[-1] == state.global_step:
                entry["lab/expected_reward"] = self.train_p[-1]
                if self.eval_every and state.global_step % self.eval_every == 0:
                    state.log_history.append({"eval_reward": self.true_p[-1],
                                              "step": state.global_step})
            loss = entry.get("loss")
            if (self.diverged_step is None and isinstance(loss, float)
                    and not math.isfinite(loss)):
                self.diverged_step = state.global_step
                self.diverged_reason = "non-finite loss"
                control.should_training_stop = True
            self.seconds += time.perf_counter() - t0

    return Observer


def _rank_seed(seed, rank):
    """A callback that gives every process but the first its own sampling stream when training
    starts.  The Trainer seeds every process with the same ``seed``; the lab's prompts repeat
    (every rank holds the same prompts), so identical streams would draw identical completions
    on every rank: half the global batch would be a copy of the other half."""
    from transformers import TrainerCallback

    class RankSeed(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            if rank:
                import torch

                torch.manual_seed(int(seed) + 1_000_003 * int(rank))

    return RankSeed()


class Lab:
    """Task, tokenizer, model spec and scratch directory shared by an experiment's runs."""

    def __init__(self, task: TaskSpec | None = None, model: ModelSpec | None = None, *,
                 workdir=None, threads: int = 1, source=None, device: str = "cpu"):
        mods = require_lab()
        self.torch = mods["torch"]
        self.task = Task(task or TaskSpec())
        self.model_spec = model or ModelSpec()
        self.source = None if source is None else str(source)
        self.device = check_choice("device", device, ("cpu", "cuda"))
        if self.device == "cuda":   # this process's GPU under accelerate launch (its LOCAL_RANK)
            self.device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
        self._template = None
        if self.source is None:
            self.tokenizer = build_tokenizer()
            self.answer_ids = [VOCAB.index(a) for a in self.task.answer_tokens]
        else:
            self.tokenizer = load_tokenizer(self.source)
            self.answer_ids = answer_token_ids(self.tokenizer, self.task.answer_tokens,
                                               self.source)
        enc = self.tokenizer(self.task.prompts)["input_ids"]
        if len({len(e) for e in enc}) != 1:
            raise ParameterError("model", self.source or "built-in",
                                 "a tokenizer that gives every prompt 'a + b =' the same "
                                 f"number of tokens (got {sorted({len(e) for e in enc})})")
        self.input_ids = self.torch.tensor(enc)
        self.labels = np.array(self.task.labels())
        self._tmp = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="grpo_lab_")
            workdir = self._tmp.name
        self.workdir = str(workdir)
        self.threads = int(threads)
        self._ref_dirs = {}
        self._pretrained = None
        self._pretrained_target = None
        self.pretrain_loss = None
        gc.freeze()   # the frameworks' objects: out of every later collection (accelerate runs one per train)
        self._observer_cls = _observer_class()
        #: where the experiments' independent runs go (:mod:`grpo_theory.lab.parallel`);
        #: None: this process
        self.executor = None

    # -- models ----------------------------------------------------------------------
    def new_model(self):
        """A fresh policy on the lab's device: the built-in GPT-2 (seeded), or a copy of the
        model loaded once from ``source`` (``from_pretrained``), head restricted to the answers."""
        if self.source is None:
            m = build_model(self.model_spec, self.answer_ids, len(VOCAB),
                            pad_id=self.tokenizer.pad_token_id, eos_id=self.tokenizer.eos_token_id)
        else:
            import copy

            if self._template is None:
                self._template = load_pretrained(self.source, self.answer_ids)
            m = copy.deepcopy(self._template)
        return m.to(self.device)

    def config(self) -> dict:
        """What rebuilds this lab in another process (a Ray worker): :meth:`from_config`."""
        return {"task": self.task.spec, "model": self.model_spec, "threads": self.threads,
                "source": self.source, "device": "cpu" if self.device == "cpu" else "cuda"}

    @classmethod
    def from_config(cls, config: dict) -> "Lab":
        return cls(config["task"], config["model"], threads=config["threads"],
                   source=config["source"], device=config["device"])

    def describe(self) -> str:
        """The policy in one line (the built-in GPT-2 or the loaded model)."""
        m = self.new_model()
        where = "built-in" if self.source is None else f"from_pretrained({self.source!r})"
        return f"{describe(m)}, {where}"

    @property
    def prompts(self) -> int:
        return len(self.task.prompts)

    def parameter_count(self) -> int:
        m = self.new_model()
        return int(sum(p.numel() for p in m.parameters() if p.requires_grad))

    def pretrained_state(self, target=2.0):
        """The seeded initial model after the supervised warm start (:func:`.model.pretrain`)
        towards ``target`` (a log-odds, or one per prompt), computed once per target."""
        target = (float(target) if np.ndim(target) == 0 else tuple(float(t) for t in target))
        if self._pretrained is None or self._pretrained_target != target:
            model = self.new_model()
            torch = self.torch
            old = torch.get_num_threads()
            torch.set_num_threads(self.threads)
            try:
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(self.model_spec.seed)
                    self.pretrain_loss = pretrain(model, self.input_ids, self.labels,
                                                  target=np.asarray(target, float))
            finally:
                torch.set_num_threads(old)
            self._pretrained = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
            self._pretrained_target = target
        return self._pretrained

    def placed_state(self, targets, *, warm_start=2.0):
        """State dict of the warm-started model with every prompt's success log-odds at
        ``targets`` (a number or one per prompt), placed exactly (:func:`.model.place`)."""
        model = self.new_model()
        model.load_state_dict(self.pretrained_state(warm_start))
        t = np.broadcast_to(np.asarray(targets, float), (self.prompts,))
        place(model, self.input_ids, self.labels, t)
        return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}

    def initial_state(self):
        return {k: v.detach().cpu().clone() for k, v in self.new_model().state_dict().items()}

    def reference_dir(self, state, key) -> str:
        """Save a reference model once (TRL loads it from disk) and return its directory."""
        if key not in self._ref_dirs:
            d = os.path.join(self.workdir, f"reference_{len(self._ref_dirs)}")
            m = self.new_model()
            m.load_state_dict(state)
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            m.save_pretrained(d)
            self.tokenizer.save_pretrained(d)
            self._ref_dirs[key] = d
        return self._ref_dirs[key]

    # -- one run -----------------------------------------------------------------------
    def train(self, spec: RunSpec, *, state, reference, kick=None, out_dir=None, eval_every=0,
              adam_state=None, observe=True, extra_callbacks=()) -> RunRecord:
        """Train with TRL's GRPOTrainer from ``state``; ``reference`` is ``(state, key)``.

        ``kick``: a list of tensors (one per trainable parameter, in ``named_parameters``
        order) added to the initial parameters.  ``out_dir``: write ``trainer_state.json``
        (TRL's own file) and ``config.json`` (the GRPOConfig) there.  ``observe=False``: a
        bare ``GRPOTrainer`` without the lab's observer (the overhead benchmark's reference).
        """
        torch = self.torch
        # the frameworks are imported here, not at module top: the lab's modules import
        # without the extra (run_lab names the missing package in one line)
        from datasets import Dataset
        from transformers.trainer_callback import PrinterCallback, ProgressCallback
        from transformers.utils import logging as hf_logging
        from trl import GRPOConfig, GRPOTrainer

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        logging.getLogger("datasets").setLevel(logging.ERROR)
        old_threads = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            ref_dir = self.reference_dir(*reference)
            model = self.new_model()
            model.load_state_dict(state)
            if kick is not None:
                with torch.no_grad():
                    for p, d in zip([p for p in model.parameters() if p.requires_grad], kick):
                        p.add_(d.to(device=p.device, dtype=p.dtype))
            model.config._name_or_path = ref_dir
            model.train()
            N = self.prompts
            gens = math.ceil(spec.steps / spec.refresh_interval) + 1
            reps = gens * spec.steps_per_generation
            ds = Dataset.from_dict({"prompt": self.task.prompts * reps,
                                    "answer": self.task.answers * reps})
            rank, processes = process_rank()
            if rank != 0 and out_dir is not None:   # one writer per run directory: the other
                out_dir = tempfile.mkdtemp(dir=self.workdir, prefix="rank_")   # ranks' copies
            out = out_dir or tempfile.mkdtemp(dir=self.workdir, prefix="run_")
            funcs = [self.task.verifier()]
            kw = spec.grpo_config_kwargs(N, processes)
            if self.task.spec.shortcut is not None:
                funcs.append(self.task.true_verifier())
                kw["reward_weights"] = [1.0, 0.0]
            with warnings.catch_warnings():   # transformers renames gradient_checkpointing
                warnings.simplefilter("ignore", FutureWarning)
                args = GRPOConfig(output_dir=out, use_cpu=self.device == "cpu", bf16=False,
                                  fp16=False,
                                  gradient_checkpointing=False, logging_steps=1,
                                  save_strategy="no", report_to="none", disable_tqdm=True,
                                  shuffle_dataset=False, dataloader_num_workers=0, **kw)
            observer = self._observer_cls(self, eval_every=eval_every, adam_state=adam_state)
            if processes > 1:
                extra_callbacks = [_rank_seed(spec.seed, rank)] + list(extra_callbacks)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trainer = GRPOTrainer(model=model, reward_funcs=funcs, args=args,
                                      train_dataset=ds, processing_class=self.tokenizer,
                                      callbacks=([observer] if observe else [])
                                      + list(extra_callbacks))
                for cb in (PrinterCallback, ProgressCallback):   # the lab prints its own results
                    trainer.remove_callback(cb)
                ref_model = getattr(trainer, "ref_model", None)
                if self.source is not None and ref_model is not None:
                    # TRL loaded the reference with from_pretrained: the same answer restriction
                    restrict_head(getattr(ref_model, "module", ref_model), self.answer_ids)
                t0 = time.perf_counter()
                reason = ""
                try:
                    trainer.train()
                except (RuntimeError, ValueError) as exc:   # generation on non-finite logits
                    if observer.diverged_step is None:
                        observer.diverged_step = trainer.state.global_step + 1
                        observer.diverged_reason = f"{type(exc).__name__}: {str(exc)[:120]}"
                seconds = time.perf_counter() - t0
            reason = observer.diverged_reason
            rec = RunRecord(
                spec=spec, log_history=list(trainer.state.log_history),
                observed_steps=np.array(observer.steps),
                p_correct=np.array(observer.p), log_odds=np.array(observer.z),
                diverged_step=observer.diverged_step, diverged_reason=reason, seconds=seconds,
                observer_seconds=observer.seconds, steps_done=int(trainer.state.global_step),
                extra={"final_state": {k: v.detach().cpu().clone()
                                       for k, v in trainer.model.state_dict().items()}})
            if out_dir is not None:
                os.makedirs(out_dir, exist_ok=True)
                rec.trainer_state_path = os.path.join(out_dir, "trainer_state.json")
                trainer.state.save_to_json(rec.trainer_state_path)
                rec.config_path = os.path.join(out_dir, "config.json")
                with open(rec.config_path, "w") as fh:
                    json.dump(grpo_config_record(args), fh, indent=1, sort_keys=True)
            return rec
        finally:
            torch.set_num_threads(old_threads)

    def close(self):
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


#: GRPOConfig fields kept in a run's config.json (what check-config and the readers use)
CONFIG_FIELDS = (
    "num_generations", "learning_rate", "beta", "scale_rewards", "loss_type", "epsilon",
    "epsilon_high", "steps_per_generation", "num_iterations", "gradient_accumulation_steps",
    "per_device_train_batch_size", "generation_batch_size", "max_steps", "seed", "optim",
    "optim_args", "adam_beta1", "adam_beta2", "adam_epsilon", "weight_decay", "max_grad_norm",
    "lr_scheduler_type", "max_completion_length", "temperature", "use_bias_correction_kl",
    "reward_weights", "num_iterations", "importance_sampling_level")


def grpo_config_record(args) -> dict:
    d = args.to_dict()
    out = {k: d.get(k) for k in CONFIG_FIELDS if k in d}
    processes = process_rank()[1]
    out["num_processes"] = processes
    if processes > 1:   # the global batch (what the theory's prompts x G is)
        out["global_train_batch_size"] = d["per_device_train_batch_size"] * processes
    return out


def process_rank() -> tuple:
    """(rank, world size) of this process under ``accelerate launch`` / ``torchrun`` (their
    ``RANK`` and ``WORLD_SIZE``), (0, 1) otherwise."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def spec_dict(spec: RunSpec) -> dict:
    return asdict(spec)
