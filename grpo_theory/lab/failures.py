r"""Failures of known cause: labelled TRL runs whose labels come from how they were built.

Each :class:`FailureSetting` fixes the task, the model, where the reference and the policy
start (placed exactly, :func:`grpo_theory.lab.model.place`) and TRL's knobs; its labels
and their cause are part of the construction, never read off the run by a detector.  The
learning rate of SGD runs is given in the theory's bandit units (``bandit_lr``): the run
uses :math:`\eta = \eta_{bandit} N\kappa/\lambda_{\max}(\Theta)` with the tangent kernel
measured at the starting state, so that a setting means the same dynamics at any width.

Label keys are those of ``benchmarks/real_runs`` (``collapse``, ``divergence``,
``entropy_collapse``, ``entropy_explosion``, ``reward_hacking``, ``advantage_degeneracy``,
``oscillation``; true / false / "unknown") plus ``stable``: the exact (L2) verdict of the
configuration at its plateau where the theory applies ("unknown" where it does not, e.g.
without a KL anchor there is no plateau), and ``instability``: built past the exact
threshold (the plateau cannot hold in the linear theory).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from . import _theory as th
from .engine import Lab, RunSpec
from .model import ModelSpec
from .stiffness import top_mode
from .task import TaskSpec

__all__ = ["FailureSetting", "SETTINGS", "LABEL_KEYS"]

LABEL_KEYS = ("collapse", "divergence", "entropy_collapse", "entropy_explosion", "reward_hacking",
              "advantage_degeneracy", "oscillation", "instability", "stable")


def _labels(**true) -> dict:
    out = {k: False for k in LABEL_KEYS}
    out.update(true)
    return out


@dataclass(frozen=True)
class FailureSetting:
    """One labelled construction (run with several seeds).

    ``reference_z``/``start_z``: success log-odds the reference and the initial policy are
    placed at (a number, or ``("by_answer", z1, z0)``: the prompts whose correct answer is
    '1' at z1, the others at z0); ``None``:
    the warm-started model itself (more than two answers).  ``bandit_lr``: SGD learning
    rate in bandit units (see the module docstring); ``spec.learning_rate`` is used as is
    otherwise (Adam).
    """

    name: str
    mode: str
    cause: str
    spec: RunSpec
    labels: dict
    task: TaskSpec = field(default_factory=TaskSpec)
    model: ModelSpec = field(default_factory=ModelSpec)
    reference_z: object = None
    start_z: object = None
    bandit_lr: float | None = None
    p_ref: float | None = None
    pretrain_target: object = 2.0


def _z(p):
    return math.log(p / (1 - p))


_STD = dict(scale_rewards="group")
#: the plateau of the stability settings: std, k3 with beta = 2 to p_ref = 0.1 (p* = 0.290,
#: K = 0.597, fresh fraction 0.31: a refresh threshold exists)
_PLATEAU = dict(beta=2.0, **_STD)

SETTINGS = (
    FailureSetting(
        "healthy_sgd", "healthy",
        "control: std advantages, k3 KL (beta 0.5) to a reference at p = 0.2, SGD at bandit "
        "learning rate 0.2, on-policy (k = 1): the exact theory says stable, the reward relaxes "
        "to its fixed point p* = 0.81",
        RunSpec(beta=0.5, steps=150, **_STD), _labels(stable=True),
        reference_z=_z(0.2), start_z=_z(0.2), bandit_lr=0.2, p_ref=0.2),
    FailureSetting(
        "healthy_momentum", "healthy",
        "control: as healthy_sgd with heavy-ball momentum 0.5 and bandit learning rate 0.1",
        RunSpec(beta=0.5, momentum=0.5, steps=150, **_STD), _labels(stable=True),
        reference_z=_z(0.2), start_z=_z(0.2), bandit_lr=0.1, p_ref=0.2),
    FailureSetting(
        "healthy_adam", "healthy",
        "control: as healthy_sgd with AdamW (lr 3e-4, betas 0.9/0.999)",
        RunSpec(beta=0.5, optimizer="adamw", learning_rate=3e-4, steps=150, **_STD),
        _labels(stable="unknown"),
        reference_z=_z(0.2), start_z=_z(0.2), p_ref=0.2),
    FailureSetting(
        "stable_refresh", "healthy",
        "control at the plateau of the stability experiments (std, k3 beta 2, p_ref 0.1, "
        "p* 0.290, fresh fraction 0.31): steps_per_generation 4 at eta K = 0.45 (bandit "
        "learning rate 0.75), below the exact largest stable refresh interval 6; clip off "
        "(epsilon 10) as in unstable_refresh",
        RunSpec(steps_per_generation=4, epsilon=10.0, steps=240, **_PLATEAU),
        _labels(stable=True), reference_z=_z(0.1), start_z="plateau", bandit_lr=0.75, p_ref=0.1),
    FailureSetting(
        "unstable_refresh", "dynamical_instability",
        "past the exact threshold: the plateau of stable_refresh with steps_per_generation 12 "
        "(exact largest stable k = 6 at eta K = 0.45): a real window eigenvalue below -1, so "
        "the deviation flips sign and grows every window; clip off (epsilon 10) - with TRL's "
        "clip 0.2 the growth stops at the clip's scale",
        RunSpec(steps_per_generation=12, epsilon=10.0, steps=480, **_PLATEAU),
        _labels(instability=True, oscillation=True, stable=False, collapse="unknown",
                divergence="unknown", entropy_collapse="unknown"),
        reference_z=_z(0.1), start_z="plateau", bandit_lr=0.75, p_ref=0.1),
    FailureSetting(
        "stable_momentum", "healthy",
        "control with momentum: the plateau of stable_refresh, heavy ball mu = 0.5, "
        "steps_per_generation 3 at eta K = 0.42 (exact largest stable k = 4); clip off",
        RunSpec(momentum=0.5, steps_per_generation=3, epsilon=10.0, steps=240, **_PLATEAU),
        _labels(stable=True), reference_z=_z(0.1), start_z="plateau", bandit_lr=0.70, p_ref=0.1),
    FailureSetting(
        "unstable_momentum", "dynamical_instability",
        "past the exact threshold with momentum: as stable_momentum with steps_per_generation 8 "
        "(exact largest stable k = 4): a complex pair of window eigenvalues outside the unit "
        "circle, a growing oscillation",
        RunSpec(momentum=0.5, steps_per_generation=8, epsilon=10.0, steps=320, **_PLATEAU),
        _labels(instability=True, oscillation=True, stable=False, collapse="unknown",
                divergence="unknown", entropy_collapse="unknown"),
        reference_z=_z(0.1), start_z="plateau", bandit_lr=0.70, p_ref=0.1),
    FailureSetting(
        "entropy_collapse", "entropy_collapse",
        "no KL anchor (beta 0) and a large learning rate (bandit 4.0) from an undecided "
        "reference (p = 0.5 on every prompt): within a few steps every prompt puts all its "
        "mass on one answer and nothing holds the distribution open (on this two-answer task "
        "the answer it locks onto is the rewarded one)",
        RunSpec(beta=0.0, steps=120, **_STD),
        _labels(entropy_collapse=True, stable="unknown", collapse="unknown",
                advantage_degeneracy="unknown"),
        reference_z=0.0, start_z=0.0, bandit_lr=4.0),
    FailureSetting(
        "reward_hacking", "reward_hacking",
        "exploitable training verifier: answers mod 10, the checker also accepts '0' for every "
        "prompt; the true verifier is logged as eval_reward.  Warm start to uniform answers "
        "(10 % accuracy), k3 beta 0.04, AdamW lr 3e-3: answering '0' everywhere is the "
        "easiest way to reward 1",
        RunSpec(beta=0.04, optimizer="adamw", learning_rate=3e-3, steps=150, **_STD),
        _labels(reward_hacking=True, entropy_collapse="unknown", stable="unknown",
                advantage_degeneracy="unknown"),
        task=TaskSpec(modulus=10, shortcut="0"), pretrain_target=_z(0.1)),
    FailureSetting(
        "advantage_degeneracy", "advantage_degeneracy",
        "prompts too easy or too hard for the model: a policy that (almost) always answers "
        "'1' - the prompts whose answer is 1 placed at p = 0.993, the others at p = 0.007 "
        "(reference identical): about 95 % of the groups have zero reward variance, against "
        "about 1 % for homogeneous prompts at the same mean reward",
        RunSpec(beta=0.1, steps=100, **_STD),
        _labels(advantage_degeneracy=True, stable="unknown", entropy_collapse="unknown"),
        reference_z=("by_answer", 5.0, -5.0), start_z=("by_answer", 5.0, -5.0),
        pretrain_target=("by_answer", 5.0, -5.0), bandit_lr=0.2),
    FailureSetting(
        "reuse_unclipped", "dynamical_instability",
        "heavy batch reuse without clipping: from the plateau of stable_refresh, one batch "
        "reused num_iterations = 16 times with epsilon = 1e3 (no clip) at eta K = 0.45: 16 "
        "steps along one noisy batch per window, past the exact largest stable k = 6 (same "
        "mean force as steps_per_generation), nothing bounds the importance ratio",
        RunSpec(num_iterations=16, epsilon=1e3, steps=640, **_PLATEAU),
        _labels(instability=True, oscillation=True, stable=False, collapse="unknown",
                divergence="unknown", entropy_collapse="unknown"),
        reference_z=_z(0.1), start_z="plateau", bandit_lr=0.75, p_ref=0.1),
    FailureSetting(
        "reuse_clipped", "clip_bounded",
        "control for reuse_unclipped: the same batch reuse and learning rate with TRL's clip "
        "epsilon = 0.2; the linear theory still says unstable, the clip stops each window's "
        "push once a sample's ratio leaves [0.8, 1.2], which bounds the excursion",
        RunSpec(num_iterations=16, steps=640, **_PLATEAU),
        _labels(instability=True, stable=False, oscillation="unknown", collapse="unknown",
                divergence="unknown", entropy_collapse="unknown"),
        reference_z=_z(0.1), start_z="plateau", bandit_lr=0.75, p_ref=0.1),
    FailureSetting(
        "reuse_divergence", "divergence",
        "heavy batch reuse without clipping at a large step: as reuse_unclipped at eta K = 1.8 "
        "(bandit learning rate 3): the k3 term of answers pushed towards zero probability grows "
        "like exp(log pi_ref - log pi) on the reused batch and the parameters overflow",
        RunSpec(num_iterations=16, epsilon=1e3, steps=640, **_PLATEAU),
        _labels(instability=True, stable=False, divergence=True, collapse="unknown",
                oscillation="unknown", entropy_collapse="unknown"),
        reference_z=_z(0.1), start_z="plateau", bandit_lr=3.0, p_ref=0.1),
    # issue 32: collapses that start high (warm-started models, SFT checkpoints, resumed runs)
    FailureSetting(
        "warm_anchor", "collapse",
        "a warm-started model anchored to a weak reference: supervised warm start to 90 % "
        "success (the start), k3 KL with beta 2 to a reference at p = 0.1, on-policy SGD at "
        "bandit learning rate 0.2 (stable, eta K about 0.12): the fixed point of this "
        "configuration is p* = 0.290, below half of the start, so the training reward falls "
        "from about 0.9 to about 0.3 within a few tens of steps and stays (a KL to the base "
        "model, with the policy resumed from a stronger checkpoint)",
        RunSpec(beta=2.0, steps=150, **_STD), _labels(collapse=True, stable=True),
        reference_z=_z(0.1), start_z=_z(0.9), bandit_lr=0.2, p_ref=0.1),
    FailureSetting(
        "warm_hold", "healthy",
        "control for warm_anchor: the same warm start (90 % success) with k3 beta 0.5 to a "
        "reference at p = 0.5, whose fixed point p* = 0.898 is where the run starts, on-policy "
        "SGD at bandit learning rate 0.2: the reward holds its level",
        RunSpec(beta=0.5, steps=150, **_STD), _labels(stable=True),
        reference_z=_z(0.5), start_z=_z(0.9), bandit_lr=0.2, p_ref=0.5),
    FailureSetting(
        "plateau_overshoot", "collapse",
        "started at a high plateau and pushed past the one-step threshold: std, k3 beta 0.5 to a "
        "reference at p = 0.5 (p* = 0.898), on-policy SGD at bandit learning rate 20 (eta K "
        "about 7, the exact largest stable step is eta K = 2): each update overshoots the "
        "plateau by several times its distance and the policy is thrown off it within a few "
        "steps (to the maximum-entropy state, or with overflowing parameters): the training "
        "reward falls from about 0.9 to 0.44-0.5 and stays",
        RunSpec(beta=0.5, steps=150, **_STD),
        _labels(collapse=True, instability=True, stable=False, divergence="unknown",
                entropy_explosion="unknown", oscillation="unknown", entropy_collapse="unknown",
                advantage_degeneracy="unknown"),
        reference_z=_z(0.5), start_z="plateau", bandit_lr=20.0, p_ref=0.5),
)


def _targets(spec, lab, plateau_z):
    if spec is None:
        return None
    if spec == "plateau":
        return plateau_z
    if isinstance(spec, tuple) and spec[0] == "by_answer":
        # prompts whose correct answer is '1' at spec[1], the others at spec[2]
        return [spec[1] if lab_ == 1 else spec[2] for lab_ in lab.labels]
    return spec


def prepare(setting: FailureSetting, seed: int, *, lab=None):
    """The lab, reference/start states, the run spec with its learning rate, and the facts
    recorded with the run (fixed point, tangent-kernel scale, exact verdict)."""
    if lab is None:
        lab = Lab(setting.task, replace(setting.model, seed=seed))
    facts = {}
    plateau_z = None
    if setting.p_ref is not None and setting.spec.beta > 0:
        m = th.lab_model(setting.spec, p_ref=setting.p_ref, prompts=lab.prompts)
        fp = th.fixed_point_of(m)
        plateau_z = fp.z
        facts["fixed_point"] = {"p": fp.p, "z": fp.z, "stiffness_bandit": fp.stiffness,
                                "fresh_fraction": fp.fresh_fraction}
    warm = _targets(setting.pretrain_target, lab, plateau_z)
    rz = _targets(setting.reference_z, lab, plateau_z)
    sz = _targets(setting.start_z, lab, plateau_z)
    ref = lab.pretrained_state(warm) if rz is None else lab.placed_state(rz, warm_start=warm)
    start = ref if sz is None or sz == rz else lab.placed_state(sz, warm_start=warm)
    spec = setting.spec.replace(seed=seed)
    if setting.bandit_lr is not None:
        mode = top_mode(lab, start)
        scale = mode.ntk_over_n / th.KAPPA
        spec = spec.replace(learning_rate=setting.bandit_lr / scale)
        facts["ntk_top_over_n"] = mode.ntk_over_n
        facts["ntk_scale"] = scale
        facts["bandit_learning_rate"] = setting.bandit_lr
        if plateau_z is not None:
            m = th.lab_model(spec, p_ref=setting.p_ref, prompts=lab.prompts, ntk_scale=scale)
            st = th.exact(m)
            km = th.exact_k_max(m)
            facts["eta_K"] = spec.learning_rate * scale * th.fixed_point_of(m).stiffness
            facts["exact"] = {"stable": bool(st.stable), "spectral_radius": st.spectral_radius,
                              "k_max": None if math.isinf(km) else int(km),
                              "k_max_published": th.published_k_max(m)}
    return lab, ref, start, spec, facts
