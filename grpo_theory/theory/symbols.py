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
u = sp.Symbol(r"\hat{p}", positive=True)           #: fraction of correct samples n/G (printed p-hat; u is an integration variable)

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
    n_actions: r"N_{\mathrm{act}}",
})


# --- named quantities of the documents: symbols that stand for a sub-expression in a displayed
# form (each is defined where it is used) and the symbols the notation table lists --------
theta = sp.Symbol("theta", real=True)               #: policy parameters
pi_theta = sp.Symbol("pi_theta")                    #: the policy being trained
pi_old = sp.Symbol("pi_old")                        #: the sampling policy
pi_ref = sp.Symbol("pi_ref")                        #: the reference policy
q_star = sp.Symbol("q_star", positive=True)         #: 1 - p_star
B = sp.Symbol("B", integer=True, positive=True)     #: prompts (groups) per step
i = sp.Symbol("i", integer=True, positive=True)     #: sample index in a group
A_i = sp.Symbol("A_i", real=True)                   #: advantage of sample i
sd_n = sp.Symbol("sd_n", nonnegative=True)          #: Bessel-corrected group std at n correct
sd_inf = sp.Symbol("sd_inf", positive=True)         #: its large-G limit sqrt(p q)
A_plus = sp.Symbol("A_plus", real=True)             #: advantage mass on the correct actions
A_G = sp.Symbol("A_G", nonnegative=True)            #: expected advantage mass at group size G
A_inf = sp.Symbol("A_inf", nonnegative=True)        #: its G -> infinity limit
A_1 = sp.Symbol("A_1", real=True)                   #: its 1/G coefficient
w_n = sp.Symbol("w_n", nonnegative=True)            #: binomial weight of n correct
P_deg = sp.Symbol("P_deg", nonnegative=True)        #: probability of a degenerate group
Psi = sp.Symbol("Psi", positive=True)               #: ratio factor
Phi_exact = sp.Symbol("Phi_exact", real=True)       #: KL force, analytic KL
Phi_k3 = sp.Symbol("Phi_k3", real=True)             #: KL force, k3 estimator
Phi_k1 = sp.Symbol("Phi_k1", real=True)             #: KL force, k1 estimator in the reward
F = sp.Symbol("F", real=True)                       #: the drift
sigma2_1 = sp.Symbol("sigma_1^2", positive=True)    #: leading noise coefficient
K_p = sp.Symbol("K_p", real=True)                   #: stiffness in reward coordinates
j = sp.Symbol("j", integer=True, nonnegative=True)  #: step inside a refresh window
v = sp.Symbol("v", real=True)                       #: velocity (heavy-ball buffer)
x_s = sp.Symbol("x_s", real=True)                   #: deviation at the last refresh
z_0 = sp.Symbol("z_0", real=True)                   #: initial logit
z_next = sp.Symbol("z_next", real=True)             #: the next iterate's logit, z_{t+1}
var_z = sp.Symbol("V_z", positive=True)             #: the stationary variance of the logit
M = sp.Symbol("M")                                  #: monodromy
J = sp.Symbol("J")                                  #: one-step map inside a window
S_1 = sp.Symbol("S_1", positive=True)               #: mu (1 - mu^k)/(1 - mu)
S_2 = sp.Symbol("S_2", positive=True)               #: (k - S_1)/(1 - mu)
P_char = sp.Symbol("P_lambda")                      #: characteristic polynomial
rho = sp.Symbol("rho", nonnegative=True)            #: spectral radius
zeta = sp.Symbol("zeta", positive=True)             #: damping ratio
T = sp.Symbol("T", positive=True)                   #: period
xi = sp.Symbol("xi", real=True)                     #: gradient noise of one step
R_t = sp.Symbol("R", positive=True)                 #: reward curve
r = sp.Symbol("r", positive=True)                   #: rate eta*kappa of the no-KL closed forms
D = sp.Function("D")                                #: diffusion coefficient
b = sp.Function("b")                                #: drift of the diffusion
phi = sp.Function("phi")                            #: potential, phi' = b/D
x_pm = sp.Symbol("x_pm", real=True)                 #: ends of the basin
tau_exit = sp.Function(r"\tau_{\mathrm{exit}}")      #: mean first-passage time
beta_1 = sp.Symbol("beta_1", positive=True)         #: Adam beta_1
v_hat = sp.Symbol(r"\overline{g^{2}}", positive=True)  #: Adam second moment (running mean of g^2)
eta_theta = sp.Symbol("eta_theta", positive=True)   #: Adam per-parameter learning rate
# chapter 10, reuse of one batch and the clip of the ratio
theta_b = sp.Symbol("theta_b", real=True)           #: logit of action b of the softmax bandit
n_b = sp.Symbol("n_b", integer=True, positive=True)  #: samples of action b in a group
A_b = sp.Symbol("A_b", real=True)                   #: advantage of the samples of action b
Delta = sp.Symbol("Delta")                          #: change over one pass or one window
V_A = sp.Symbol("V_A", positive=True)               #: variance of A_+ over groups
eps_low = sp.Symbol("epsilon_low", positive=True)   #: lower clip width (ratio >= 1 - eps_low)
eps_high = sp.Symbol("epsilon_high", positive=True)  #: upper clip width (ratio <= 1 + eps_high)
eps_clip = sp.Symbol("epsilon_clip", positive=True)  #: a symmetric clip width
p_sat = sp.Symbol("p_sat", positive=True)           #: where a clipped window stalls
j_clip = sp.Symbol("j_clip", positive=True)         #: passes until the ratio leaves the clip
delta_push = sp.Symbol("delta", positive=True)      #: per-pass growth of a sample's log-ratio
LATEX_NAMES.update({
    pi_theta: r"\pi_{\theta}", pi_old: r"\pi_{\mathrm{old}}", pi_ref: r"\pi_{\mathrm{ref}}",
    q_star: r"q^{*}", A_i: r"A_{i}", sd_n: r"\hat{\sigma}_{n}", sd_inf: r"\hat{\sigma}_{\infty}", A_plus: r"A_{+}",
    A_G: r"\mathcal{A}_{G}", A_inf: r"\mathcal{A}_{\infty}", A_1: r"\mathcal{A}^{(1)}",
    w_n: r"w_{n}", P_deg: r"P_{\mathrm{deg}}", Psi: r"\Psi", Phi_exact: r"\Phi_{\mathrm{exact}}",
    Phi_k3: r"\Phi_{\mathrm{k3}}", Phi_k1: r"\Phi_{\mathrm{k1}}", sigma2_1: r"\sigma_{1}^{2}",
    K_p: r"K_{p}", x_s: r"x_{s}", z_0: r"z_{0}", z_next: r"z_{t+1}", var_z: r"\operatorname{Var} z", P_char: r"P",
    x_pm: r"x_{\pm}", beta_1: r"\beta_{1}", eta_theta: r"\eta_{\theta}",
    theta_b: r"\theta_{o}", n_b: r"n_{o}", A_b: r"A_{o}", Delta: r"\Delta", V_A: r"V_{A}",
    eps_low: r"\epsilon_{\mathrm{low}}", eps_high: r"\epsilon_{\mathrm{high}}",
    eps_clip: r"\epsilon_{\mathrm{clip}}", p_sat: r"p_{\mathrm{sat}}", j_clip: r"j_{\mathrm{clip}}",
    delta_push: r"\delta",
})

# thresholds and named quantities that appear as left-hand sides (one symbol each)
a_flip = sp.Symbol("a_flip", positive=True)         #: a where an eigenvalue of M reaches -1
a_complex = sp.Symbol("a_complex", positive=True)   #: a where a complex pair reaches |lambda| = 1
a_c = sp.Symbol("a_c", positive=True)               #: a at critical damping (eigenvalues turn complex)
a_max = sp.Symbol("a_max", positive=True)           #: largest stable a
a_pub = sp.Symbol("a_pub", positive=True)           #: the published threshold (1 - mu)/k
a_lag = sp.Symbol("a_lag", positive=True)           #: first-order threshold with the mean lag
eta_max = sp.Symbol("eta_max", positive=True)       #: largest eta with positive L3 damping
eta_c = sp.Symbol("eta_c", positive=True)           #: eta at L3 critical damping
mu_c = sp.Symbol("mu_c", positive=True)             #: mu at L3 critical damping
K_c = sp.Symbol("K_c", positive=True)               #: K at L3 critical damping
k_max = sp.Symbol("k_max", positive=True)           #: largest stable refresh interval
ell_max = sp.Symbol("ell_max", positive=True)       #: largest lag with positive L3 damping
ell_bar = sp.Symbol("ell_bar", positive=True)       #: mean lag (k - 1)/2 of a refresh window
s_slow = sp.Symbol("s_slow", real=True)             #: slow characteristic exponent
s_fast = sp.Symbol("s_fast", real=True)             #: fast characteristic exponent
t_1 = sp.Symbol("t_1", positive=True)               #: time of the first extremum
tau_slow = sp.Symbol("tau_slow", positive=True)     #: late-time decay time, overdamped
tau_env = sp.Symbol("tau_env", positive=True)       #: envelope decay time, underdamped
lam_slow = sp.Symbol("lambda_slow", real=True)      #: slow eigenvalue of M
chi = sp.Function("chi")                            #: characteristic function of the lagged map
P_d = sp.Symbol("P_d")                              #: characteristic polynomial with delay d
g_bar = sp.Symbol("g_bar", real=True)               #: Adam's first moment
I_mat = sp.Symbol("I")                              #: identity matrix
y = sp.Symbol("y", real=True)                       #: variable of integration
w = sp.Symbol("w", real=True)                       #: variable of integration (printed u)
scale_S = sp.Function(r"\mathcal{S}")                    #: scale function of the diffusion
passage_T = sp.Function(r"\mathcal{T}")                #: double integral of the first passage
LATEX_NAMES.update({
    a_flip: r"a_{\mathrm{flip}}", a_complex: r"a_{\mathrm{complex}}", a_c: r"a_{c}",
    a_max: r"a_{\max}", a_pub: r"a_{\mathrm{pub}}", a_lag: r"a_{\bar{\ell}}",
    eta_max: r"\eta_{\max}", eta_c: r"\eta_{c}", mu_c: r"\mu_{c}", K_c: r"K_{c}",
    k_max: r"k_{\max}", ell_max: r"\ell_{\max}", ell_bar: r"\bar{\ell}",
    s_slow: r"s_{\mathrm{slow}}", s_fast: r"s_{\mathrm{fast}}", t_1: r"t_{1}", tau_slow: r"\tau_{\mathrm{slow}}", tau_env: r"\tau_{\mathrm{env}}",
    lam_slow: r"\lambda_{\mathrm{slow}}", P_d: r"P_{d}", g_bar: r"\bar{g}",
})

# the atlas: the level set of the fixed points, the folds, the normal-form coefficients
beta_star = sp.Function(r"\beta^{*}")               #: KL coefficient at which z is a fixed point
beta_fold = sp.Symbol("beta_fold", positive=True)   #: KL coefficient at a fold
l_1 = sp.Symbol("l_1", real=True)                   #: first Lyapunov coefficient (Neimark-Sacker)
c_flip = sp.Symbol("c_flip", real=True)             #: normal-form coefficient of a flip
# the half-gap of the two real exponents of the overdamped model (the underdamped model's
# angular frequency is omega); Adam's epsilon (the std normalization's is epsilon)
nu = sp.Symbol("nu", positive=True)                 #: sqrt(gamma^2 - 4 m k)/(2 m), overdamped
eps_adam = sp.Symbol("epsilon_Adam", positive=True)  #: Adam's epsilon
LATEX_NAMES.update({w: "u", eps_adam: r"\epsilon_{\mathrm{Adam}}"})
LATEX_NAMES.update({beta_fold: r"\beta_{\mathrm{fold}}", l_1: r"l_{1}", c_flip: r"c_{\mathrm{flip}}"})
