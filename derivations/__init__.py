"""The derivation chain as runnable documents: ``python -m derivations [--out DIR]``.

Each ``chNN_*.py`` file is one chapter; run it alone (``python -m derivations.ch01_drift``)
or all of them through ``__main__``.  They print every derived result, rendered
from its sympy expression, with the checks that verified it.
"""
