"""Mutation test of the proofs: every derived record's proof log must fail when its own
expression is perturbed.  A proof that still passes proves nothing (issue 9, item 3).

Each record is rebuilt with :func:`grpo_theory.theory.derived.mutated`: the builder runs its
own checks on ``expr * (1 + 1e-3)`` (entry-wise for matrices), and on ``expr + 1e-3 * x``
with x the record's first argument, bypassing the caches.
"""

import pytest
import sympy as sp

from grpo_theory.theory.derived import VerificationError, all_names, build, get, mutated

NAMES = all_names()
SMALL = sp.Rational(1, 1000)


def _scaled(expr):
    if isinstance(expr, sp.MatrixBase):
        return sp.ImmutableMatrix(expr.applyfunc(lambda e: e * (1 + SMALL)))
    return expr * (1 + SMALL)


def _shifted_by(term):
    def shift(expr):
        if isinstance(expr, sp.MatrixBase):
            return sp.ImmutableMatrix(expr.applyfunc(lambda e: e + SMALL * term))
        return expr + SMALL * term
    return shift


@pytest.mark.parametrize("name", NAMES)
def test_perturbed_expression_fails_its_proof(name):
    record = get(name)                    # dependencies built (or loaded) unperturbed
    assert record.verified
    with mutated(name, _scaled):
        with pytest.raises(VerificationError):
            build(name)
    term = record.args[0] if record.args else sp.Integer(1)
    with mutated(name, _shifted_by(term)):
        with pytest.raises(VerificationError):
            build(name)


def test_build_bypasses_the_cache_and_leaves_it_intact():
    name = "oscillator.mass"
    expr = get(name).expr
    with mutated(name, _scaled):
        with pytest.raises(VerificationError):
            build(name)
    assert get(name).expr == expr
