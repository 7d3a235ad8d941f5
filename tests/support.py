"""Helpers shared by test modules (importable because ``tests`` is on pytest's ``pythonpath``)."""

from grpo_theory.model import DEFAULTS, GRPOModel
from grpo_theory.simulation import simulate as simulate_model

#: the tests' base model: on-policy SGD at learning rate 0.1, TRL's advantage epsilon 1e-4, no KL
#: (every test names what it varies)
BASE = dict(learning_rate=0.1, optimizer="sgd", momentum=0.0, adv_eps=1e-4, kl="none",
            kl_coef=0.0, refresh_interval=1)


def simulate(**kw):
    """``simulate(model, ...)`` with the model's fields and the simulation's arguments given
    together as keywords, from :data:`BASE` (``optimizer="momentum"``: heavy ball)."""
    fields = {k: kw.pop(k) for k in list(kw) if k in DEFAULTS}
    if fields.get("optimizer") == "momentum":
        fields["optimizer"] = "sgd"
    if "adam_betas" in kw:
        fields["adam_beta1"], fields["adam_beta2"] = kw.pop("adam_betas")
    if fields.get("delay") == 0 and fields.get("lag_model") != "delay":
        del fields["delay"]
    return simulate_model(GRPOModel(**{**BASE, **fields}), **kw)
