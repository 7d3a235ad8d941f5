r"""The synthetic verifiable task and its tokenizer (built locally, nothing downloaded).

Task: single-token modular arithmetic.  A prompt is ``"a + b ="`` with one-digit operands
:math:`a, b \in \{0, \dots, n_{op}-1\}`; the answer is the single digit
:math:`(a + b) \bmod m`.  The verifier returns 1 for the correct answer token and 0 for any
other.  ``modulus = 2`` (parity) makes every prompt a two-answer bandit, which is the case
the theory describes exactly (see :mod:`grpo_theory.lab.model`).

The *exploitable* verifier (``shortcut``) also accepts one fixed answer token for every
prompt (a checker that treats a default answer as correct): a policy that always says it
collects full training reward while the true verifier, logged as the evaluation metric,
does not improve - reward hacking of known cause.

Tokenizer: a :mod:`tokenizers` WordLevel model over ``<pad> <eos> 0 ... 9 + =`` with a
whitespace pre-tokenizer, wrapped as a ``transformers`` fast tokenizer.  A task the
tokenizer cannot express (an answer or an operand of two digits) is refused with a
one-line :class:`~grpo_theory.validate.ParameterError`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from grpo_theory.validate import ParameterError, check_int

__all__ = ["VOCAB", "TaskSpec", "Task", "build_tokenizer", "load_tokenizer", "answer_token_ids"]

#: the whole vocabulary: specials, the ten digits, the two symbols
VOCAB = ("<pad>", "<eos>", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "=")
DIGITS = tuple(str(d) for d in range(10))


@dataclass(frozen=True)
class TaskSpec:
    """``modulus`` m (answers 0..m-1), ``operands`` (operands 0..operands-1), ``prompts`` N
    distinct prompts chosen with ``seed``, and an optional exploitable ``shortcut`` answer."""

    modulus: int = 2
    operands: int = 10
    prompts: int = 16
    seed: int = 0
    shortcut: str | None = None

    def __post_init__(self):
        m = check_int("modulus", self.modulus, low=2)
        if m > len(DIGITS):
            raise ParameterError("modulus", m, f"2..{len(DIGITS)}: every answer must be one "
                                 "token of the tokenizer (the single digits 0-9)")
        n = check_int("operands", self.operands, low=1)
        if n > len(DIGITS):
            raise ParameterError("operands", n, f"1..{len(DIGITS)}: every operand must be one "
                                 "token of the tokenizer (the single digits 0-9)")
        N = check_int("prompts", self.prompts, low=2)
        if N > n * n:
            raise ParameterError("prompts", N, f"at most {n * n} (the distinct prompts "
                                 f"'a + b =' with a, b < {n})")
        check_int("seed", self.seed, low=0)
        if self.shortcut is not None and self.shortcut not in DIGITS[:m]:
            raise ParameterError("shortcut", self.shortcut,
                                 f"None or an answer token of the task ({', '.join(DIGITS[:m])})")


class Task:
    """Prompts, answers and the verifiers of a :class:`TaskSpec`."""

    def __init__(self, spec: TaskSpec):
        self.spec = spec
        pairs = [(a, b) for a in range(spec.operands) for b in range(spec.operands)]
        rng = random.Random(spec.seed)
        rng.shuffle(pairs)
        chosen = sorted(pairs[: spec.prompts])
        self.operands = chosen
        self.prompts = [f"{a} + {b} =" for a, b in chosen]
        self.answers = [str((a + b) % spec.modulus) for a, b in chosen]
        self.answer_tokens = list(DIGITS[: spec.modulus])

    @property
    def binary(self) -> bool:
        return self.spec.modulus == 2

    def labels(self):
        """Index of the correct answer among :attr:`answer_tokens`, per prompt."""
        return [self.answer_tokens.index(a) for a in self.answers]

    # -- verifiers (TRL reward functions: keyword ``answer`` is the dataset column) ----
    def verifier(self):
        """The training verifier: exact, or with the exploitable shortcut."""
        shortcut = self.spec.shortcut

        def verifier(completions, answer, **kwargs):
            out = []
            for c, a in zip(completions, answer):
                c = c.strip()
                out.append(1.0 if (c == a or (shortcut is not None and c == shortcut)) else 0.0)
            return out

        return verifier

    @staticmethod
    def true_verifier():
        """The exact verifier (logged with weight 0 next to an exploitable one)."""

        def true_verifier(completions, answer, **kwargs):
            return [1.0 if c.strip() == a else 0.0 for c, a in zip(completions, answer)]

        return true_verifier


def build_tokenizer():
    """The WordLevel tokenizer over :data:`VOCAB` as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(VOCAB)}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token=None))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>")
    tok.padding_side = "left"
    return tok


def load_tokenizer(source):
    """The tokenizer of a Hugging Face model (``AutoTokenizer.from_pretrained``; a local
    directory is read with ``local_files_only``): left padding, the EOS token as the pad
    token when it has none."""
    import os

    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(source, local_files_only=os.path.isdir(str(source)))
    except (OSError, ValueError) as exc:
        raise ParameterError("model", source, "a Hugging Face model with a tokenizer "
                             f"({str(exc).splitlines()[0][:120]})") from exc
    if tok.pad_token is None:
        if tok.eos_token is None:
            raise ParameterError("model", source, "a tokenizer with a pad or an EOS token")
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def answer_token_ids(tokenizer, answers, source="the tokenizer") -> list:
    """One token id per answer string: its space-prefixed form (the natural continuation of
    ``"... ="`` in a BPE vocabulary) if that is one token decoding to the answer, else the bare
    form; a one-line ``ParameterError`` when an answer is no single token (the task samples a
    one-token completion)."""
    out = []
    for a in answers:
        for text in (" " + a, a):
            ids = tokenizer.encode(text, add_special_tokens=False)
            if len(ids) == 1 and tokenizer.decode(ids).strip() == a:
                out.append(int(ids[0]))
                break
        else:
            raise ParameterError("model", source, f"a tokenizer in which the answer {a!r} is "
                                 "one token (the task's completion is one token)")
    if len(set(out)) != len(out):
        raise ParameterError("model", source, "a tokenizer with a distinct token per answer")
    return out
