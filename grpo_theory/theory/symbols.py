"""The symbols of the theory, created once with their assumptions.

Every derivation imports its symbols from here so that expressions built in
different modules combine (sympy symbols with different assumptions are
different symbols).  Names follow the field; the LaTeX names are what the
generated equations show.

Units: time ``t`` in optimizer steps; ``z`` in logits; ``p`` in reward
(success probability); learning rate ``eta`` per step.
"""

from __future__ import annotations

import sympy as sp

# --- policy and rewards --------------------------------------------------------
z = sp.Symbol("z", real=True)                       #: logit of the success probability
z_old = sp.Symbol("z_old", real=True)               #: logit of the sampling policy pi_old
z_ref = sp.Symbol("z_ref", real=True)               #: logit of the reference policy
z_star = sp.Symbol("z_star", real=True)             #: logit at a fixed point
p = sp.Symbol("p", positive=True)                   #: success probability sigma(z)
p_ref = sp.Symbol("p_ref", positive=True)           #: success probability of pi_ref
p_star = sp.Symbol("p_star", positive=True)         #: success probability at a fixed point
u = sp.Symbol("u", positive=True)                   #: fraction of correct samples n/G

# --- GRPO hyper-parameters -------------------------------------------------------
G = sp.Symbol("G", integer=True, positive=True)     #: group size
n = sp.Symbol("n", integer=True, nonnegative=True)  #: number of correct samples in a group
beta = sp.Symbol("beta", nonnegative=True)          #: KL coefficient
eps = sp.Symbol("epsilon", nonnegative=True)        #: advantage epsilon (std normalization)
kappa = sp.Symbol("kappa", positive=True)           #: geometric factor K/(c(K-c)) of the softmax
eta = sp.Symbol("eta", positive=True)               #: learning rate
mu = sp.Symbol("mu", nonnegative=True)              #: heavy-ball momentum
K = sp.Symbol("K", positive=True)                   #: stiffness -F'(z*) (per unit learning rate)
K_fresh = sp.Symbol("K_f", real=True)           #: stiffness acting on the current iterate
K_stale = sp.Symbol("K_s", real=True)           #: stiffness acting through the sampling policy
k_ref = sp.Symbol("k_ref", integer=True, positive=True)  #: refresh interval (steps per pi_old)
d = sp.Symbol("d", integer=True, nonnegative=True)  #: constant staleness (delay), steps
ell = sp.Symbol("ell", nonnegative=True)            #: effective lag (continuous model), steps
a = sp.Symbol("a", positive=True)                   #: eta*K, the dimensionless step stiffness
q = sp.Symbol("q", positive=True)                   #: mu**k (geometric factor of one window)

# --- continuous model -------------------------------------------------------------
t = sp.Symbol("t", nonnegative=True)                #: time, optimizer steps
s = sp.Symbol("s")                                  #: characteristic exponent
lam = sp.Symbol("lambda")                           #: eigenvalue of the discrete map
m = sp.Symbol("m", positive=True)                   #: mass (inertia)
gamma = sp.Symbol("gamma", real=True)               #: damping coefficient
spring = sp.Symbol("k", positive=True)              #: spring constant (stiffness x learning rate)
x0 = sp.Symbol("x_0", real=True)                    #: initial deviation
v0 = sp.Symbol("v_0", real=True)                    #: initial velocity
x = sp.Function("x")                                #: deviation from the fixed point z - z*
omega = sp.Symbol("omega", positive=True)           #: |sqrt(gamma^2 - 4 m k)| / (2 m)
sigma2 = sp.Symbol("sigma^2", positive=True)        #: per-step gradient-noise variance
N = sp.Symbol("N", positive=True)                   #: model size (parameters)
alpha = sp.Symbol("alpha", real=True)               #: curvature scaling exponent K ~ N^alpha
c_K = sp.Symbol("c_K", positive=True)               #: curvature prefactor K = c_K N^alpha
R_inf = sp.Symbol("R_infty", positive=True)         #: reward plateau
R_0 = sp.Symbol("R_0", positive=True)               #: initial reward
tau = sp.Symbol("tau", positive=True)               #: saturation time scale, steps


#: LaTeX names used by every rendering (``Derived.latex``).
LATEX_NAMES = {
    R_inf: r"R_{\infty}",
    R_0: r"R_{0}",
    z_old: r"z_{\mathrm{old}}",
    z_ref: r"z_{\mathrm{ref}}",
    z_star: r"z^{*}",
    p_ref: r"p_{\mathrm{ref}}",
    p_star: r"p^{*}",
    k_ref: r"k",
    spring: r"\kappa_{s}",
    K_fresh: r"K_{f}",
    K_stale: r"K_{s}",
    sigma2: r"\sigma^{2}",
    c_K: r"c_{K}",
    eps: r"\epsilon",
}


def sigmoid(expr):
    """The logistic function as a sympy expression, ``1/(1+exp(-expr))``."""
    return 1 / (1 + sp.exp(-expr))


def logit(expr):
    """``log(expr/(1-expr))`` as a sympy expression."""
    return sp.log(expr / (1 - expr))


# --- added for the drift / fixed-point derivations ------------------------------------------
# Probabilities are carried as independent symbols p and q (= 1 - p) so that derivatives
# in z use d/dz = p q (d/dp - d/dq) exactly and numerics stay accurate as p -> 1.
q_fail = sp.Symbol("q", positive=True)              #: failure probability 1 - p
p_old = sp.Symbol("p_old", positive=True)           #: success probability of pi_old
q_old = sp.Symbol("q_old", positive=True)           #: 1 - p_old
q_ref = sp.Symbol("q_ref", positive=True)           #: 1 - p_ref
n_actions = sp.Symbol("K_a", integer=True, positive=True)   #: number of actions
n_correct = sp.Symbol("c", integer=True, positive=True)     #: number of correct actions
h = sp.Symbol("h", positive=True)                   #: 1/G, the expansion parameter
LATEX_NAMES.update({
    p_old: r"p_{\mathrm{old}}",
    q_old: r"q_{\mathrm{old}}",
    q_ref: r"q_{\mathrm{ref}}",
    n_actions: r"K_{a}",
})
