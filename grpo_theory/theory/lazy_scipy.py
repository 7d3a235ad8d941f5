"""The scipy functions the theory modules' numeric APIs call, imported on their first call.

Importing ``scipy.special``, ``scipy.optimize`` and ``scipy.linalg`` takes about a second, more
than the rest of ``grpo-theory derive`` from the cache, which prints the chain and calls none
of them (issue 33).  Each name here is the scipy function itself, imported when it is first
called: the same arguments, the same result.
"""

from __future__ import annotations

__all__ = ["brentq", "expit", "solve_continuous_lyapunov", "solve_discrete_lyapunov"]


def expit(x, *args, **kwargs):
    """``scipy.special.expit``."""
    from scipy.special import expit as fn

    return fn(x, *args, **kwargs)


def brentq(f, a, b, *args, **kwargs):
    """``scipy.optimize.brentq``."""
    from scipy.optimize import brentq as fn

    return fn(f, a, b, *args, **kwargs)


def solve_continuous_lyapunov(a, q):
    """``scipy.linalg.solve_continuous_lyapunov``."""
    from scipy.linalg import solve_continuous_lyapunov as fn

    return fn(a, q)


def solve_discrete_lyapunov(a, q, *args, **kwargs):
    """``scipy.linalg.solve_discrete_lyapunov``."""
    from scipy.linalg import solve_discrete_lyapunov as fn

    return fn(a, q, *args, **kwargs)
