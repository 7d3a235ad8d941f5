r"""The transformer's stiffness, measured two independent ways (as ``deepnet`` does for the MLP).

Linearized at the plateau, the expected GRPO update of the prompts' success log-odds is
:math:`\Delta z = \eta\,\frac{\Theta}{N}\,\frac{F(z)}{\kappa}` (THEORY §8):
:math:`\Theta = JJ^\top` is the empirical tangent kernel of the log-odds
(:math:`J_{n} = \partial z_n/\partial\theta` over the trainable parameters), :math:`F` the
bandit drift of each prompt (same group statistics, normalization and KL form as the
bandit) and :math:`\kappa = 2` the two-logit softmax factor the bandit carries.  Every
eigenmode of :math:`\Theta` is the scalar map of the theory; the top one binds, with

.. math::  K_{top} = \frac{K_{bandit}}{\kappa}\,\frac{\lambda_{\max}(\Theta)}{N}

and the bandit's fresh/stale split (the k3 KL and the importance ratio act on the current
iterate, the advantage on the sampling policy).

1. **Tangent-kernel route** (:func:`top_mode`): :math:`\lambda_{\max}` of :math:`\Theta` in
   float64, times the bandit theory's stiffness.  Two ways to the top eigenpair, the one used
   is recorded (``TopMode.route``): ``"full"`` builds J (N x P) and diagonalizes
   :math:`JJ^\top` (a small model); ``"lanczos"`` never forms J: Lanczos (full
   reorthogonalization) on the operator :math:`v \mapsto J(J^\top v)`, each product one
   vector-Jacobian product (a backward pass) and one Jacobian-vector product (the
   double-backward form: the derivative of the linear map :math:`J^\top v` in v), O(P)
   memory - the route for a large model (``"auto"``: full while N x P float64 fits in
   :data:`FULL_J_BYTES`).
2. **Linear response** (:func:`response_series`): a kick :math:`\pm\delta` of the
   parameters along :math:`d = J^\top e/\lambda` (so :math:`Jd = e`, the top eigenvector),
   trained by TRL with identical seeds for the two signs (common random numbers: the
   same uniforms draw the answers, so most of the sampling noise cancels in the
   difference); the top-mode coordinate :math:`x = e\cdot(z - z^*)` of the half
   difference relaxes as :math:`(1-\eta K)^t` at k = 1, so :math:`K = (1-c)/\eta` from
   the pooled AR(1) coefficient :math:`c`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import log_odds

__all__ = ["TopMode", "jacobian", "top_mode", "lanczos_top_mode", "response_series", "ROUTES",
           "FULL_J_BYTES"]

#: the tangent kernel's routes (``auto``: full while J fits in FULL_J_BYTES)
ROUTES = ("auto", "full", "lanczos")
#: the largest full Jacobian (N x P float64) the ``auto`` route builds
FULL_J_BYTES = 2 ** 28


@dataclass
class TopMode:
    """Top eigenpair of the tangent kernel and the parameter kick that excites it."""

    eigenvalue: float           # lambda_max(Theta)
    eigenvector: np.ndarray     # e (N,), unit norm, sum(e) > 0
    direction: list             # d (tensors, trainable-parameter order) with J d = e
    spectrum: np.ndarray        # eigenvalues of Theta, descending (Ritz values by Lanczos)
    prompts: int
    route: str = "full"         # "full" (J built, eigh) or "lanczos" (J-vector products)
    iterations: int = 0         # Lanczos iterations (0 on the full route)
    residual: float = 0.0       # |Theta e - lambda e| / lambda of the returned pair

    @property
    def ntk_over_n(self) -> float:
        return self.eigenvalue / self.prompts

    @property
    def uniform_overlap(self) -> float:
        """|e . 1/sqrt(N)|: how much the top mode moves all prompts together."""
        return float(abs(self.eigenvector.sum()) / np.sqrt(self.prompts))


def jacobian(lab, state):
    """J (N, P) of the success log-odds w.r.t. the trainable parameters, float64."""
    torch = lab.torch
    model = lab.new_model()
    model.load_state_dict(state)
    model = model.double()
    params = [p for p in model.parameters() if p.requires_grad]
    z = log_odds(model, lab.input_ids, lab.labels)
    rows = []
    for n in range(z.shape[0]):
        g = torch.autograd.grad(z[n], params, retain_graph=True)
        rows.append(torch.cat([gi.reshape(-1) for gi in g]))
    return torch.stack(rows).cpu(), [p.shape for p in params]


def top_mode(lab, state, route: str = "auto") -> TopMode:
    """The top mode of the empirical tangent kernel J J^T at ``state`` by ``route`` (one of
    :data:`ROUTES`)."""
    from grpo_theory.validate import check_choice

    route = check_choice("kernel", route, ROUTES)
    if route == "auto":
        P = lab.parameter_count()
        route = "full" if lab.prompts * P * 8 <= FULL_J_BYTES else "lanczos"
    if route == "lanczos":
        return lanczos_top_mode(lab, state)
    J, shapes = jacobian(lab, state)
    return kernel_top_mode(lab.torch, J, J, shapes)


def lanczos_top_mode(lab, state, *, tol=1e-10, seed=0) -> TopMode:
    r"""Top eigenpair of :math:`\Theta = JJ^\top` without forming J (see the module doc).

    The graph of the N log-odds is built once (float64); :math:`J^\top v` is a backward pass
    with ``grad_outputs = v``, and :math:`Ju` the derivative of the linear map
    :math:`v \mapsto J^\top v` (built once with ``create_graph``) contracted with u.  Lanczos
    with full reorthogonalization from a seeded start stops when the top Ritz pair's residual
    :math:`\beta_j |y_j|` is below ``tol`` x its value (or after N steps, where it is exact).
    """
    torch = lab.torch
    model = lab.new_model()
    model.load_state_dict(state)
    model = model.double()
    params = [p for p in model.parameters() if p.requires_grad]
    shapes = [p.shape for p in params]
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):   # differentiable twice (the fused kernels are not)
        z = log_odds(model, lab.input_ids, lab.labels)
    N = z.shape[0]
    v0 = torch.zeros_like(z, requires_grad=True)
    g = torch.autograd.grad(z, params, grad_outputs=v0, create_graph=True)

    def vjp(v):     # J^T v, one tensor per parameter
        return torch.autograd.grad(z, params, grad_outputs=v, retain_graph=True)

    def jvp(u):     # J u
        return torch.autograd.grad(g, v0, grad_outputs=u, retain_graph=True)[0]

    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(N, generator=gen, dtype=torch.float64).to(z.device)
    q = q / q.norm()
    Q, alphas, betas = [], [], []
    beta, q_prev = 0.0, torch.zeros_like(q)
    theta, y, res = float("nan"), None, float("inf")
    for j in range(N):
        Q.append(q)
        w = jvp(vjp(q)).detach()
        alpha = float(q @ w)
        w = w - alpha * q - beta * q_prev
        Qm = torch.stack(Q)
        for _ in range(2):   # full reorthogonalization
            w = w - Qm.T @ (Qm @ w)
        alphas.append(alpha)
        beta = float(w.norm())
        T = np.diag(alphas) + np.diag(betas, 1) + np.diag(betas, -1)
        vals, vecs = np.linalg.eigh(T)
        theta, y = float(vals[-1]), vecs[:, -1]
        res = beta * abs(y[-1]) / max(abs(theta), 1e-300)
        if res <= tol or beta <= 1e-14 * max(abs(theta), 1.0) or j == N - 1:
            break
        betas.append(beta)
        q_prev, q = q, w / beta
    Qm = torch.stack(Q)
    e = Qm.T @ torch.as_tensor(y, dtype=torch.float64, device=Qm.device)
    e = e / e.norm()
    if float(e.sum()) < 0:
        e = -e
    d = torch.cat([gi.reshape(-1) for gi in vjp(e)]) / theta
    out, i = [], 0
    for sh in shapes:
        n = int(np.prod(sh))
        out.append(d[i:i + n].reshape(sh).float().cpu())
        i += n
    return TopMode(eigenvalue=theta, eigenvector=e.detach().cpu().numpy().copy(), direction=out,
                   spectrum=np.sort(vals)[::-1].copy(), prompts=N, route="lanczos",
                   iterations=len(Q), residual=float(res))


def kernel_top_mode(torch, J, JP, shapes) -> TopMode:
    """The top eigenpair of the kernel ``JP @ J.T`` (``JP = J`` for the plain tangent kernel,
    ``J P`` for a diagonal preconditioner P), with its parameter-space direction
    ``JP.T e / lambda`` split into the parameters' shapes; the eigenvector's sign is the one
    with a positive sum."""
    w, V = torch.linalg.eigh(JP @ J.T)
    lam = float(w[-1])
    e = V[:, -1]
    if float(e.sum()) < 0:
        e = -e
    d = JP.T @ e / lam
    out, i = [], 0
    for s in shapes:
        n = int(np.prod(s))
        out.append(d[i:i + n].reshape(s).float())
        i += n
    return TopMode(eigenvalue=lam, eigenvector=e.numpy().copy(), direction=out,
                   spectrum=w.flip(0).numpy().copy(), prompts=J.shape[0])


def response_tasks(spec, *, amplitude, pairs, seed=0, name="response", out_dir=None):
    """The runs of ``pairs`` common-random-number pairs: pair i is seeded ``seed + i`` and
    kicked by +-``amplitude`` x the top mode's direction (see :mod:`.parallel`)."""
    import os

    from .parallel import TrainTask

    tasks = []
    for i in range(int(pairs)):
        s = spec.replace(seed=seed + i)
        for sign, tag in ((1.0, "plus"), (-1.0, "minus")):
            tasks.append(TrainTask(
                name=f"{name}/pair{i}_{tag}", spec=s, kick=sign * amplitude,
                out_dir=None if out_dir is None else os.path.join(out_dir, f"pair{i}_{tag}"),
                record={"pair": i, "sign": tag}))
    return tasks


def response_from(records, spec, *, mode: TopMode, z_star, every=1):
    """Half-difference top-mode series (T, pairs) of the records of :func:`response_tasks`
    (in order); a pair with a failed run is left out (its failure is reported by the caller)."""
    series = []
    for plus, minus in zip(records[0::2], records[1::2]):
        if not hasattr(plus, "log_odds") or not hasattr(minus, "log_odds"):
            continue
        xs = []
        for rec in (plus, minus):
            x = np.full(spec.steps + 1, np.nan)
            if rec.log_odds.size:
                x[rec.observed_steps] = rec.mode_coordinate(mode.eigenvector, z_star)
            xs.append(x)
        series.append(0.5 * (xs[0] - xs[1])[::every])
    if not series:
        return np.full((len(range(0, spec.steps + 1, every)), 0), np.nan)
    return np.stack(series, axis=1)


def response_series(lab, spec, *, state, reference, mode: TopMode, z_star, amplitude, pairs,
                    seed=0, every=1, adam_state=None, name="response", out_dir=None):
    """Half-difference top-mode response of ``pairs`` common-random-number pairs.

    Returns ``(response (T, pairs) at steps 0, every, 2 every, ..., records)``; a pair whose
    either run diverged contributes its finite prefix (NaN after); the records are
    :class:`~grpo_theory.lab.engine.RunRecord` or, for a run that failed twice,
    :class:`~grpo_theory.lab.parallel.TaskFailure` (that pair is left out).  The runs go to
    ``lab.executor`` (this process, or Ray); with ``adam_state`` (a callback that reads the
    optimizer in this process) they run here.
    """
    from .parallel import SerialExecutor

    tasks = response_tasks(spec, amplitude=amplitude, pairs=pairs, seed=seed, name=name,
                           out_dir=out_dir)
    if adam_state is not None:
        recs = []
        for t in tasks:
            kick = [t.kick * d for d in mode.direction]
            recs.append(lab.train(t.spec, state=state, reference=reference, kick=kick,
                                  adam_state=adam_state, out_dir=t.out_dir))
    else:
        ex = getattr(lab, "executor", None) or SerialExecutor()
        recs = ex.run(lab, tasks, state=state, reference=reference, direction=mode.direction)
    return response_from(recs, spec, mode=mode, z_star=z_star, every=every), recs
