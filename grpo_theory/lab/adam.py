r"""Adam on the engine: the reduction to a heavy ball on a preconditioned tangent kernel.

Near a fixed point Adam's first moment is a heavy-ball buffer with :math:`\mu = \beta_1`
(``adam.momentum_form`` in the theory) and its step is :math:`\eta(1-\beta_1)` per unit of the
preconditioned gradient :math:`P g`, :math:`P = \mathrm{diag}(1/(\sqrt{\hat v} + \epsilon))`.
For the network the kernel of the log-odds becomes :math:`J P J^\top`; its top eigenvalue
:math:`\lambda_P` gives :math:`K_{Adam} = (K_{bandit}/\kappa)\lambda_P/N` and the exact heavy-ball
threshold applies with :math:`\eta K = \eta(1-\beta_1)K_{Adam}`.

:math:`\hat v` is measured on the engine: TRL's AdamW at a learning rate too small to move the
policy, for ``steps`` steps at the plateau, the squared gradients averaged (sampling noise is
what keeps them non-zero at a fixed point).  The kicked runs start Adam's state there
(``exp_avg_sq`` = the measured v, ``exp_avg`` = 0, a step count that makes the bias
corrections 1), so the reduction's assumption - v frozen at its plateau value - holds at the
start; during a growing run the signal enlarges v and lowers the step (measured, not hidden).
"""

from __future__ import annotations

from dataclasses import dataclass


from . import _theory as th
from .stiffness import TopMode, jacobian, kernel_top_mode

__all__ = ["AdamSetup", "measure_second_moment"]


def measure_second_moment(plat, *, steps=32, beta1=0.9, beta2=0.999, seed=900):
    """Mean squared gradient of TRL's loss per trainable parameter at the plateau."""
    from transformers import TrainerCallback

    torch = plat.lab.torch
    acc = {"sum": None, "n": 0}

    class Grab(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, model=None, **kw):
            g = [p.grad.detach().double() ** 2 for p in model.parameters() if p.requires_grad]
            acc["sum"] = g if acc["sum"] is None else [a + b for a, b in zip(acc["sum"], g)]
            acc["n"] += 1

    spec = plat.base.replace(optimizer="adamw", learning_rate=1e-12, adam_beta1=beta1,
                             adam_beta2=beta2, steps=steps, seed=seed)
    plat.lab.train(spec, state=plat.state, reference=plat.reference, extra_callbacks=[Grab()])
    return [s / acc["n"] for s in acc["sum"]], torch


@dataclass
class AdamSetup:
    """v, the preconditioned top mode and the Adam stiffness of a plateau."""

    beta1: float
    beta2: float
    eps: float
    v: list
    mode: TopMode
    K: float
    note: str
    J: object = None
    growth: list = None
    plain_eigenvalue: float = float("nan")

    @classmethod
    def measure(cls, plat, *, beta1=0.9, beta2=0.999, eps=1e-8, steps=32):
        """v on the engine, the preconditioned kernel's top mode and K_Adam at ``plat``."""
        v, torch = measure_second_moment(plat, steps=steps, beta1=beta1, beta2=beta2)
        P = torch.cat([(1.0 / (vi.sqrt() + eps)).reshape(-1) for vi in v])
        J, shapes = jacobian(plat.lab, plat.state)
        JP = J * P[None, :]
        mode = kernel_top_mode(torch, J, JP, shapes)
        K = plat.fp.stiffness * mode.ntk_over_n / th.KAPPA
        note = (f"Adam reduction: heavy ball with mu = beta1 = {beta1:g} and eta (1 - beta1) on the "
                f"kernel J P J^T, P = 1/(sqrt(v) + eps), v measured on the engine over {steps} "
                f"steps at the plateau (K_Adam = {K:.4g} per unit learning rate); Adam's state "
                "starts there")
        return cls(beta1=beta1, beta2=beta2, eps=eps, v=[vi.float() for vi in v], mode=mode,
                   K=K, note=note, J=J, growth=[], plain_eigenvalue=plat.mode.eigenvalue)

    @property
    def gain(self) -> float:
        """The preconditioner's gain on the top mode: lambda_P / lambda (plays 1/sqrt(v_hat))."""
        return self.mode.eigenvalue / self.plain_eigenvalue

    def theory(self, plat, spec):
        """The heavy-ball model of the AdamW run ``spec`` at the plateau: the lab's Adam model
        (``optimizer="adam"``, the run's betas) reduced with the measured gain
        (:func:`grpo_theory.lab._theory.adam_heavy_ball`)."""
        return th.adam_heavy_ball(plat.theory(spec), self.gain)

    def learning_rate(self, plat, eta_K) -> float:
        """The AdamW learning rate whose reduced heavy ball has ``eta_K`` on the top mode."""
        unit = self.theory(plat, plat.base.replace(
            learning_rate=1.0, optimizer="adamw", adam_beta1=self.beta1, adam_beta2=self.beta2,
            adam_epsilon=self.eps))
        return eta_K / (unit.learning_rate * plat.fp.stiffness)

    def state(self, optimizer, model):
        """Start Adam's moments at the plateau (called by the observer at train begin)."""
        import torch

        opt = getattr(optimizer, "optimizer", optimizer)
        trainable = [p for p in model.parameters() if p.requires_grad]
        v_of = {id(p): self.v[i] for i, p in enumerate(trainable)}
        for group in opt.param_groups:
            for p in group["params"]:
                opt.state[p] = {"step": torch.tensor(1.0e6),
                                "exp_avg": torch.zeros_like(p),
                                "exp_avg_sq": v_of[id(p)].reshape(p.shape).to(p.dtype).clone()}

    def end(self, optimizer, model):
        """At the end of a kicked run: the preconditioned kernel's top eigenvalue with Adam's
        final v, relative to the plateau's (appended to ``growth``)."""
        import torch

        opt = getattr(optimizer, "optimizer", optimizer)
        trainable = [p for p in model.parameters() if p.requires_grad]
        v_end = [opt.state[p]["exp_avg_sq"].double() for p in trainable if p in opt.state]
        if len(v_end) != len(trainable):
            return
        P = torch.cat([(1.0 / (v.sqrt() + self.eps)).reshape(-1) for v in v_end])
        lam = float(torch.linalg.eigvalsh((self.J * P[None, :]) @ self.J.T)[-1])
        self.growth.append(lam / self.mode.eigenvalue)
