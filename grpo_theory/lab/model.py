r"""The policy: a tiny GPT-2 with an answer-restricted output head, and its placement.

:class:`ModelSpec` (width, layers, heads, seed) builds a randomly initialized GPT-2
(``transformers.GPT2LMHeadModel``, untied output head) whose output bias is fixed (not a
parameter): 0 on the task's answer tokens and :data:`MASK` on every other token, so the
policy puts all its mass on the answers (a verbalizer).  With two answers (``modulus =
2``) each prompt is then exactly the theory's two-action bandit: the expected GRPO
gradient of prompt n is a scalar times the gradient of its success log-odds
:math:`z_n = \ell_{correct} - \ell_{other}` (binary verifier), and so is the KL force of
the k3 estimator (with more answers the KL also pulls the distribution over the wrong
answers, which the bandit does not describe).

Placement.  The last hidden state :math:`h_n` of prompt n (after the final layer norm)
is linear in the output head, so the two answer rows can be moved (a minimum-norm
least-squares step in their difference) to put every prompt at a chosen log-odds exactly:
at the reference :math:`z_{ref}`, or at the bandit fixed point :math:`z^*` (the plateau).
It needs the N hidden states to be linearly independent (N <= width - 1: the layer norm
removes one direction).

The model is registered with the ``Auto*`` classes under ``model_type = "grpo_lab_gpt2"``
so that TRL's ``GRPOTrainer`` can load the reference model from the saved directory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grpo_theory.validate import ParameterError, check_int

__all__ = ["ModelSpec", "MASK", "parameter_count", "load_pretrained", "restrict_head",
           "save_tiny_model", "describe"]

#: logit bias of the non-answer tokens (finite, so that 0 * log p stays 0 in TRL's entropy)
MASK = -1.0e4
#: positions of the model (prompts are 4 tokens, completions 1)
POSITIONS = 8


@dataclass(frozen=True)
class ModelSpec:
    """Width (``n_embd``), ``layers``, attention ``heads`` and the initialization ``seed``."""

    width: int = 32
    layers: int = 2
    heads: int = 2
    seed: int = 0

    def __post_init__(self):
        w = check_int("width", self.width, low=2)
        check_int("layers", self.layers, low=1)
        h = check_int("heads", self.heads, low=1)
        if w % h:
            raise ParameterError("heads", h, f"a divisor of the width {w}")
        check_int("seed", self.seed, low=0)


def parameter_count(spec: ModelSpec, vocab: int = 14) -> int:
    """Trainable parameters of the GPT-2 of ``spec`` (the output bias is not one)."""
    d, L = spec.width, spec.layers
    per_layer = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d)
    return vocab * d + POSITIONS * d + L * per_layer + 2 * d + vocab * d


def _classes():
    """The config and model classes (defined on first use: they import transformers)."""
    global _CLASSES
    if _CLASSES is not None:
        return _CLASSES
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel

    class LabGPT2Config(GPT2Config):
        model_type = "grpo_lab_gpt2"

        def __init__(self, answer_token_ids=(2, 3), **kwargs):
            self.answer_token_ids = list(answer_token_ids)
            super().__init__(**kwargs)

    class AnswerHead(torch.nn.Module):
        """Linear output head with a fixed (buffer) bias: MASK off the answer tokens."""

        def __init__(self, width, vocab, answers):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(vocab, width))
            bias = torch.full((vocab,), MASK)
            bias[list(answers)] = 0.0
            self.register_buffer("bias", bias)

        def forward(self, hidden):
            return torch.nn.functional.linear(hidden, self.weight, self.bias)

    class LabGPT2ForCausalLM(GPT2LMHeadModel):
        config_class = LabGPT2Config

        def __init__(self, config):
            super().__init__(config)
            self.lm_head = AnswerHead(config.n_embd, config.vocab_size, config.answer_token_ids)
            with torch.no_grad():
                self.lm_head.weight.normal_(0.0, config.initializer_range)

    try:
        AutoConfig.register("grpo_lab_gpt2", LabGPT2Config)
        AutoModelForCausalLM.register(LabGPT2Config, LabGPT2ForCausalLM)
    except ValueError:  # already registered (a second import path)
        pass
    _CLASSES = (LabGPT2Config, LabGPT2ForCausalLM)
    return _CLASSES


_CLASSES = None


def build_model(spec: ModelSpec, answer_token_ids, vocab_size: int, *, pad_id=0, eos_id=1):
    """A freshly initialized (seeded) lab GPT-2, float32, dropout off."""
    import torch

    Config, Model = _classes()
    cfg = Config(answer_token_ids=answer_token_ids, vocab_size=vocab_size, n_positions=POSITIONS,
                 n_embd=spec.width, n_layer=spec.layers, n_head=spec.heads,
                 tie_word_embeddings=False, bos_token_id=eos_id, eos_token_id=eos_id,
                 pad_token_id=pad_id, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    cfg.auto_map = {}   # TRL's reference loader: not a transformers class, use AutoModelForCausalLM
    gen = torch.random.fork_rng()
    with gen:
        torch.manual_seed(spec.seed)
        model = Model(cfg)
    model.eval()
    return model


def answer_log_probs(model, input_ids):
    """log pi(answer | prompt) over the answer tokens, shape (N, m), at the last position."""
    logits = model(input_ids=input_ids.to(model.device)).logits[:, -1, :]
    ids = list(model.config.answer_token_ids)
    if str(logits.dtype) != "torch.float64":   # float64 (the tangent kernel) stays float64
        logits = logits.float()
    return logits.log_softmax(-1)[:, ids]


def last_hidden(model, input_ids):
    """Final hidden state (after ln_f) at the last prompt position, shape (N, width)."""
    return model.base_model(input_ids=input_ids.to(model.device)).last_hidden_state[:, -1, :]


def log_odds(model, input_ids, labels):
    """Success log-odds z_n of the two-answer task (labels: index of the correct answer)."""
    import torch

    lp = answer_log_probs(model, input_ids)
    idx = torch.arange(lp.shape[0])
    lab = torch.as_tensor(labels, device=lp.device)
    idx = idx.to(lp.device)
    return lp[idx, lab] - lp[idx, 1 - lab]


def pretrain(model, input_ids, labels, *, target=2.0, steps=1000, lr=3e-3, tol=1e-4):
    r"""Supervised warm start: Adam on the mean of :math:`(z_n - target_n)^2` over the prompts
    (``target``: a number or one per prompt), until the loss is below ``tol`` or after
    ``steps`` steps.

    A randomly initialized GPT-2 barely tells the prompts apart at the last position (its
    attention averages near-identical embeddings), so placing it would need an enormous head
    and an ill-conditioned tangent kernel.  A short supervised phase that pushes every
    prompt towards the correct answer gives the model features that encode the task; the
    placement then moves the head a little.  Seeded by the model's own initialization
    (no sampling).  Returns the final mean squared error.
    """
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    loss = None
    m = len(model.config.answer_token_ids)
    dev = model.device
    idx = torch.arange(len(labels), device=dev)
    lab = torch.as_tensor(labels, device=dev)
    # more than two answers: the same target, read as the log-odds of the correct answer
    # against the others (cross-entropy to p_correct = sigmoid(target), the rest uniform)
    tgt = torch.broadcast_to(torch.as_tensor(target, dtype=torch.float32, device=dev),
                             (len(labels),))
    q = torch.sigmoid(tgt)
    soft = ((1 - q) / max(m - 1, 1))[:, None].repeat(1, m)
    soft[idx, lab] = q
    for _ in range(int(steps)):
        if m == 2:
            z = log_odds(model, input_ids, labels)
            loss = ((z - tgt) ** 2).mean()
        else:
            lp = answer_log_probs(model, input_ids)
            loss = -(soft * lp).sum(-1).mean() + (soft * soft.log()).sum(-1).mean()
        if float(loss.detach()) < tol:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.zero_grad(set_to_none=True)
    return float(loss.detach())


def place(model, input_ids, labels, targets, *, tol=1e-3):
    r"""Move the two answer rows of the head so that :math:`z_n` = ``targets[n]`` exactly.

    :math:`z_n = s_n\,u\cdot h_n` with :math:`u = w_1 - w_0`, :math:`s_n = \pm 1`; the
    minimum-norm change of :math:`u` solves the N equations (float64 least squares) and is
    split evenly between the two rows.  Raises ``ParameterError`` when the prompts'
    hidden states are not independent (the placement would be inexact).
    """
    import numpy as np
    import torch

    targets = np.array(targets, dtype=float)   # a writable copy (torch warns on read-only views)
    ids = list(model.config.answer_token_ids)
    if len(ids) != 2:
        raise ParameterError("modulus", len(ids), "2 to place the policy (the two-answer task)")
    with torch.no_grad():
        H = last_hidden(model, input_ids).double()
        W = model.get_output_embeddings().weight
        s = torch.tensor([1.0 if lab == 1 else -1.0 for lab in labels], dtype=torch.float64,
                         device=H.device)
        t = torch.as_tensor(targets, dtype=torch.float64, device=H.device) * s
        for _ in range(3):   # float32 weights: a second pass removes the rounding residual
            u = (W[ids[1]] - W[ids[0]]).double()
            delta = torch.linalg.lstsq(H, t - H @ u, driver="gelsd").solution
            W[ids[1]] += (0.5 * delta).to(W.dtype)
            W[ids[0]] -= (0.5 * delta).to(W.dtype)
            err = float((log_odds(model, input_ids, labels).double()
                         - torch.as_tensor(targets, dtype=torch.float64, device=H.device))
                        .abs().max())
            if err <= tol:
                break
    if not math.isfinite(err) or err > tol:
        raise ParameterError("prompts", len(labels), f"at most width - 1 = {H.shape[1] - 1} "
                             f"prompts with independent hidden states to place the policy "
                             f"exactly (placement error {err:.2g})")
    return err


# ---------------------------------------------------------------------------------------------
# any Hugging Face causal LM (``grpo-theory lab --model NAME_OR_PATH``)
# ---------------------------------------------------------------------------------------------

_RESTRICTED = None


def _restricted_head_class():
    global _RESTRICTED
    if _RESTRICTED is not None:
        return _RESTRICTED
    import torch

    class RestrictedHead(torch.nn.Module):
        """The model's own output weight with a fixed, non-persistent bias: 0 on the answer
        tokens, :data:`MASK` elsewhere (the verbalizer of the built-in model, for any model).
        Non-persistent, so the state dict and ``save_pretrained`` keep the model's own keys;
        ``weight`` and ``bias`` are what TRL's fused log-probability head reads."""

        def __init__(self, weight, answers):
            super().__init__()
            self.weight = weight
            bias = torch.full((weight.shape[0],), MASK, dtype=weight.dtype, device=weight.device)
            bias[list(answers)] = 0.0
            self.register_buffer("bias", bias, persistent=False)

        def forward(self, hidden):
            return torch.nn.functional.linear(hidden, self.weight, self.bias.to(hidden.dtype))

    _RESTRICTED = RestrictedHead
    return RestrictedHead


def restrict_head(model, answer_token_ids):
    """Untie the output head from the input embeddings (placement moves two of its rows; a
    tied head would move the answers' input embeddings too) and restrict it to the answer
    tokens; records ``answer_token_ids`` in the config.  In place; returns ``model``."""
    import torch

    head = model.get_output_embeddings()
    if head is None or not hasattr(head, "weight"):
        raise ParameterError("model", type(model).__name__, "a causal LM with an output "
                             "embedding (get_output_embeddings) to restrict to the answers")
    weight = head.weight
    emb = model.get_input_embeddings()
    if emb is not None and emb.weight.data_ptr() == weight.data_ptr():
        weight = torch.nn.Parameter(weight.detach().clone())
    for cfg in {id(model.config): model.config,
                id(model.config.get_text_config()): model.config.get_text_config()}.values():
        cfg.tie_word_embeddings = False
    if getattr(head, "bias", None) is not None and not isinstance(head, _restricted_head_class()):
        if isinstance(head.bias, torch.nn.Parameter):
            raise ParameterError("model", type(model).__name__, "an output head without a "
                                 "trained bias (the lab fixes the head's bias to restrict it "
                                 "to the answers)")
    model.set_output_embeddings(_restricted_head_class()(weight, answer_token_ids))
    model.config.answer_token_ids = list(int(i) for i in answer_token_ids)
    return model


def load_pretrained(source, answer_token_ids):
    """``AutoModelForCausalLM.from_pretrained(source)`` in float32 with eager attention (the
    tangent kernel differentiates it twice), dropout off, head restricted to the answers.
    A local directory is read with ``local_files_only`` (nothing is downloaded)."""
    import os

    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    _classes()   # the lab's own GPT-2 class is loadable too
    try:
        model = AutoModelForCausalLM.from_pretrained(
            source, dtype="float32", attn_implementation="eager",
            local_files_only=os.path.isdir(str(source)))
    except (OSError, ValueError) as exc:
        raise ParameterError("model", source, "a Hugging Face causal LM: a local directory "
                             "written by save_pretrained, or a hub name on a machine with the "
                             f"network ({str(exc).splitlines()[0][:120]})") from exc
    for m in model.modules():   # dropout off: the theory's policy is deterministic given theta
        if isinstance(m, __import__("torch").nn.Dropout):
            m.p = 0.0
    restrict_head(model, answer_token_ids)
    model.eval()
    return model


def describe(model) -> str:
    """One line: the class, parameters, layers and width of a loaded model."""
    cfg = model.config.get_text_config()
    n = sum(p.numel() for p in model.parameters() if p.requires_grad)
    layers = getattr(cfg, "num_hidden_layers", getattr(cfg, "n_layer", "?"))
    width = getattr(cfg, "hidden_size", getattr(cfg, "n_embd", "?"))
    return f"{type(model).__name__} ({n:,} parameters, {layers} layers, width {width})"


def save_tiny_model(directory, spec: ModelSpec = ModelSpec()):
    """The built-in tiny model as a plain ``transformers.GPT2LMHeadModel`` (untied head, no
    lab code needed to load it) with the lab's tokenizer, written by ``save_pretrained``:
    the same weights as :func:`build_model`, so ``lab --model DIR`` runs the any-model path
    on the built-in model."""
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging as hf_logging

    from .task import VOCAB, build_tokenizer

    hf_logging.disable_progress_bar()
    tok = build_tokenizer()
    answers = [VOCAB.index(str(d)) for d in range(2)]
    lab_model = build_model(spec, answers, len(VOCAB), pad_id=tok.pad_token_id,
                            eos_id=tok.eos_token_id)
    c = lab_model.config
    cfg = GPT2Config(vocab_size=c.vocab_size, n_positions=c.n_positions, n_embd=c.n_embd,
                     n_layer=c.n_layer, n_head=c.n_head, tie_word_embeddings=False,
                     bos_token_id=c.bos_token_id, eos_token_id=c.eos_token_id,
                     pad_token_id=c.pad_token_id, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0)
    plain = GPT2LMHeadModel(cfg)
    state = {k: v for k, v in lab_model.state_dict().items() if k != "lm_head.bias"}
    missing, unexpected = plain.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if not k.endswith("attn.bias")]:   # pragma: no cover
        raise RuntimeError(f"weights do not map: missing {missing}, unexpected {unexpected}")
    plain.save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory
