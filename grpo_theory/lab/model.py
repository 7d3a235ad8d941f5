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

__all__ = ["ModelSpec", "MASK", "parameter_count"]

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
    logits = model(input_ids=input_ids).logits[:, -1, :]
    ids = list(model.config.answer_token_ids)
    return logits.float().log_softmax(-1)[:, ids]


def last_hidden(model, input_ids):
    """Final hidden state (after ln_f) at the last prompt position, shape (N, width)."""
    return model.transformer(input_ids=input_ids).last_hidden_state[:, -1, :]


def log_odds(model, input_ids, labels):
    """Success log-odds z_n of the two-answer task (labels: index of the correct answer)."""
    import torch

    lp = answer_log_probs(model, input_ids)
    idx = torch.arange(lp.shape[0])
    lab = torch.as_tensor(labels)
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
    idx = torch.arange(len(labels))
    lab = torch.as_tensor(labels)
    # more than two answers: the same target, read as the log-odds of the correct answer
    # against the others (cross-entropy to p_correct = sigmoid(target), the rest uniform)
    tgt = torch.broadcast_to(torch.as_tensor(target, dtype=torch.float32), (len(labels),))
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
        W = model.lm_head.weight
        s = torch.tensor([1.0 if lab == 1 else -1.0 for lab in labels], dtype=torch.float64)
        t = torch.as_tensor(targets, dtype=torch.float64) * s
        for _ in range(3):   # float32 weights: a second pass removes the rounding residual
            u = (W[ids[1]] - W[ids[0]]).double()
            delta = torch.linalg.lstsq(H, t - H @ u, driver="gelsd").solution
            W[ids[1]] += (0.5 * delta).to(W.dtype)
            W[ids[0]] -= (0.5 * delta).to(W.dtype)
            err = float((log_odds(model, input_ids, labels).double()
                         - torch.as_tensor(targets, dtype=torch.float64)).abs().max())
            if err <= tol:
                break
    if not math.isfinite(err) or err > tol:
        raise ParameterError("prompts", len(labels), f"at most width - 1 = {H.shape[1] - 1} "
                             f"prompts with independent hidden states to place the policy "
                             f"exactly (placement error {err:.2g})")
    return err
