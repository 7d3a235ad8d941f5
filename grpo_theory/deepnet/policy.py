r"""A batched MLP policy over prompt embeddings, with a verifiable binary task.

Task: ``prompts`` fixed prompt embeddings :math:`x_n\in\mathbb R^{d}` (standard
normal) and random labels :math:`y_n\in\{0,1\}`: the answer :math:`y_n` is correct,
the other is wrong (a deterministic verifier; the noisy verifier of
:mod:`.grpo` flips the reward with a given probability).

Policy: an MLP ``d -> hidden -> hidden -> 2`` (tanh) gives two logits per prompt.
All runs of an ensemble share the task and the initial weights and are stored with
a leading run axis (weights of shape ``(R, fan_in, fan_out)``), so one batched
forward/backward pass advances every run.

Placement at the plateau: the policy's logits are
:math:`f_\theta(x) - f_{\theta_0}(x) + b(x)` with :math:`b(x)_{y} = z^*`,
:math:`b(x)_{1-y} = 0`, so that every prompt starts exactly at the log-odds
:math:`z^*` of the bandit fixed point (the centring is a constant function: the
gradients, the NTK and the training dynamics are those of the plain network).  The
reference policy has log-odds :math:`z_{\mathrm{ref}}` on every prompt, placed by
the bandit theory so that :math:`z^*` is the fixed point of the chosen objective.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grpo_theory.validate import check_int, check_real
from ._torch import require_torch

__all__ = ["TaskSpec", "Policy", "parameter_count"]


@dataclass(frozen=True)
class TaskSpec:
    """Prompts, embedding width, hidden width and the init/task seed."""

    prompts: int = 64
    embed_dim: int = 16
    hidden: int = 64
    seed: int = 0

    def __post_init__(self):
        check_int("prompts", self.prompts, low=2)
        check_int("embed_dim", self.embed_dim, low=1)
        check_int("hidden", self.hidden, low=1)
        check_int("seed", self.seed, low=0)


def parameter_count(spec: TaskSpec) -> int:
    d, h = spec.embed_dim, spec.hidden
    return d * h + h + h * h + h + h * 2 + 2


class Policy:
    """Task + batched policy network (see the module docstring).

    ``z_star`` and ``z_ref`` are log-odds of the correct answer (plateau, reference).
    ``dtype`` is ``torch.float32`` by default.
    """

    def __init__(self, spec: TaskSpec, z_star: float, z_ref: float, dtype=None):
        torch = require_torch()
        self.torch = torch
        self.spec = spec
        self.dtype = dtype or torch.float32
        self.z_star = check_real("z_star", z_star)
        self.z_ref = check_real("z_ref", z_ref)
        g = torch.Generator().manual_seed(spec.seed)
        N, d, h = spec.prompts, spec.embed_dim, spec.hidden
        X = torch.randn(N, d, generator=g, dtype=torch.float64)
        self.labels = torch.randint(0, 2, (N,), generator=g)

        def uni(shape, fan_in):  # LeCun-uniform: variance 1/fan_in
            b = math.sqrt(3.0 / fan_in)
            return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * b

        params64 = [uni((d, h), d), uni((h,), d), uni((h, h), h), uni((h,), h),
                    uni((h, 2), h), uni((2,), h)]
        self._X64 = X
        self._params64 = params64
        self.X = X.to(self.dtype)
        self.params0 = [p.to(self.dtype) for p in params64]
        y = self.labels
        onehot = torch.nn.functional.one_hot(y, 2).to(torch.float64)
        self._base64 = onehot * z_star
        self._ref64 = onehot * z_ref
        with torch.no_grad():
            self._out0_64 = self.forward([p[None] for p in params64], X)[0]
        self._set_buffers()

    def _set_buffers(self):
        torch = self.torch
        self.base = self._base64.to(self.dtype)
        self.out0 = self._out0_64.to(self.dtype)
        self.ref_log_probs = torch.log_softmax(self._ref64, -1).to(self.dtype)   # (N, 2)

    def to(self, dtype) -> "Policy":
        """A copy in another dtype (same task, same initial weights)."""
        new = object.__new__(Policy)
        new.__dict__.update(self.__dict__)
        new.dtype = dtype
        new.X = self._X64.to(dtype)
        new.params0 = [p.to(dtype) for p in self._params64]
        new._set_buffers()
        return new

    # --- network ---------------------------------------------------------------
    @staticmethod
    def forward(params, X):
        """Raw network output (R, N, 2) for parameters with a leading run axis."""
        torch = require_torch()
        W1, b1, W2, b2, W3, b3 = params
        h = torch.tanh(torch.einsum("nd,rdh->rnh", X, W1) + b1[:, None, :])
        h = torch.tanh(torch.bmm(h, W2) + b2[:, None, :])
        return torch.bmm(h, W3) + b3[:, None, :]

    def replicate(self, runs: int):
        """The initial parameters repeated along a leading run axis (fresh tensors)."""
        return [p[None].expand((runs,) + tuple(p.shape)).clone() for p in self.params0]

    def logits(self, params):
        return self.forward(params, self.X) - self.out0 + self.base

    def log_probs(self, params):
        """log pi(a | x_n), shape (R, N, 2)."""
        return self.torch.log_softmax(self.logits(params), -1)

    def log_odds(self, log_probs):
        """z_n = log pi(y_n) - log pi(1 - y_n), shape (R, N), from :meth:`log_probs`."""
        torch = self.torch
        y = self.labels
        idx = torch.arange(y.shape[0])
        return log_probs[:, idx, y] - log_probs[:, idx, 1 - y]

    def correct_probability(self, log_probs):
        idx = self.torch.arange(self.labels.shape[0])
        return log_probs[:, idx, self.labels].exp()

    @property
    def n_params(self) -> int:
        return parameter_count(self.spec)
