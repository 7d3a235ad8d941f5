r"""The notation table: the one place that fixes what each symbol means, and the reader of
symbols that checks a text against it.

:data:`NOTATION` maps a key to ``(sympy symbol, meaning)``.  The symbol's LaTeX comes from
the project's printer (:func:`grpo_theory.theory.printing.latex`, with the names of
:data:`grpo_theory.theory.symbols.LATEX_NAMES`), so the table, the equations, the figures
(:func:`math_label`) and the terminal (:func:`notation`) write a symbol the same way.  The
PDF prints :func:`notation_table`, ``report.md`` and the book print :func:`notation_rows`.

:func:`symbols_in` reads the symbols of a LaTeX math string (a letter or Greek letter, with
its accent, its label subscript and a star; an index subscript such as the :math:`t` of
:math:`x_{t}` is read as the symbol with an index); :func:`unknown_symbols` lists those that
are not in the table.  The tests run it over every rendered expression and every formula in
the documents' prose.
"""

from __future__ import annotations

import functools
import re

import sympy as sp

from grpo_theory.prose import latex_argument, math_to_plain, split_math, to_tex
from grpo_theory.theory import symbols as S
from grpo_theory.theory.printing import latex

__all__ = ["NOTATION", "INDEX_KEYS", "notation", "math_label", "latex_of", "notation_table",
           "notation_rows", "symbols_in", "table_symbols", "unknown_symbols"]

#: The notation table, by topic.  One symbol, one meaning, everywhere.
NOTATION = {
    # --- policy and rewards
    "theta": (S.theta, "parameters of the policy"),
    "pi_theta": (S.pi_theta, "the policy being trained"),
    "pi_old": (S.pi_old, "the sampling policy: the policy at the last refresh, which draws the groups"),
    "pi_ref": (S.pi_ref, "the reference policy of the KL penalty (also the initial policy)"),
    "z": (S.z, "logit of the success probability, $z = \\log(p/q)$"),
    "p": (S.p, "success probability (expected reward) of the policy"),
    "q": (S.q_fail, "failure probability, $q = 1 - p$"),
    "z_old": (S.z_old, "logit of the sampling policy"),
    "p_old": (S.p_old, "success probability of the sampling policy"),
    "q_old": (S.q_old, "failure probability of the sampling policy"),
    "z_ref": (S.z_ref, "logit of the reference policy"),
    "p_ref": (S.p_ref, "success probability of the reference policy"),
    "q_ref": (S.q_ref, "failure probability of the reference policy"),
    "z_star": (S.z_star, "logit at a fixed point"),
    "p_star": (S.p_star, "success probability at a fixed point"),
    "q_star": (S.q_star, "failure probability at a fixed point"),
    "K_a": (S.n_actions, "number of actions of the softmax bandit"),
    "c": (S.n_correct, "number of correct actions"),
    # --- the group and its advantages
    "G": (S.G, "group size: samples drawn per prompt"),
    "B": (S.B, "prompts (groups) per optimizer step"),
    "n": (S.n, "number of correct samples in a group"),
    "i": (S.i, "index of a sample in its group"),
    "A_i": (S.A_i, "advantage of sample $i$"),
    "sd_n": (S.sd_n, "Bessel-corrected standard deviation of the rewards of a group with $n$ correct"),
    "sd_inf": (S.sd_inf, "its large-$G$ limit $\\sqrt{p q}$, for the policy that draws the group"),
    "epsilon": (S.eps, "added to the group standard deviation in the std normalization"),
    "eps_adam": (S.eps_adam, "the constant Adam adds to the root of its second moment (neglected here)"),
    "A_plus": (S.A_plus, "advantage mass on the correct actions of a group with $n$ correct"),
    "A_G": (S.A_G, "expected advantage mass at group size $G$ (a binomial sum over $n$)"),
    "A_inf": (S.A_inf, "the $G \\to \\infty$ limit of $\\mathcal{A}_{G}$"),
    "A_1": (S.A_1, "coefficient of the $1/G$ correction, $\\mathcal{A}_{G} = \\mathcal{A}_{\\infty} + \\mathcal{A}^{(1)}/G + O(1/G^{2})$"),
    "w_n": (S.w_n, "binomial probability of $n$ correct samples in a group"),
    "P_deg": (S.P_deg, "probability that a group is degenerate (all rewards equal)"),
    # --- the drift
    "kappa": (S.kappa, "softmax metric factor: how far one update moves the logit"),
    "Psi": (S.Psi, "ratio factor: how the importance ratio rescales the policy-gradient force"),
    "beta": (S.beta, "KL coefficient"),
    "Phi_exact": (S.Phi_exact, "KL force of the analytic KL penalty"),
    "Phi_k3": (S.Phi_k3, "expected KL force of the k3 estimator"),
    "Phi_k1": (S.Phi_k1, "KL force of the k1 estimator added to the reward"),
    "F": (S.F, "drift: expected logit update per step per unit learning rate"),
    "sigma2": (S.sigma2, "variance of the gradient noise per step per unit learning rate"),
    "sigma2_1": (S.sigma2_1, "leading coefficient of the per-group noise variance, $\\sigma^{2} \\approx \\sigma_{1}^{2}/(B G)$"),
    # --- fixed points and stiffness
    "K": (S.K, "stiffness $-\\mathrm{d}F/\\mathrm{d}z$ at the fixed point (per unit learning rate): fresh plus stale part"),
    "K_f": (S.K_fresh, "the part of the stiffness acting on the current iterate (fresh)"),
    "K_s": (S.K_stale, "the part of the stiffness acting through the sampling policy (stale)"),
    "K_p": (S.K_p, "stiffness in reward coordinates, $-\\mathrm{d}\\dot p/\\mathrm{d}p$ at the fixed point"),
    # --- the optimizer and the lag
    "eta": (S.eta, "learning rate, per step: one step moves the logit by $\\eta F$ (so $\\eta K$ is dimensionless)"),
    "mu": (S.mu, "heavy-ball momentum"),
    "a": (S.a, "step stiffness $a = \\eta K$ (dimensionless)"),
    "k": (S.k_ref, "refresh interval: optimizer steps per sampling policy"),
    "d": (S.d, "constant delay (staleness) of the sampling policy, steps"),
    "t": (S.t, "time, optimizer steps"),
    "t_1": (S.t_1, "time of the first extremum of the underdamped oscillation"),
    "j": (S.j, "step inside a refresh window, $j = 0, \\dots, k - 1$ (with one batch reused over the window: a pass over that batch); $j(z)$ is the pass at which the logit reaches $z$"),
    "x": (S.x(S.t), "deviation of the logit from the fixed point, $z - z^{*}$"),
    "v": (S.v, "velocity (heavy-ball buffer): the last step of the deviation"),
    "x_s": (S.x_s, "the deviation at the last refresh (seen by the sampling policy)"),
    "x_0": (S.x0, "initial deviation"),
    "v_0": (S.v0, "initial velocity"),
    "z_0": (S.z_0, "initial logit"),
    # --- the discrete map (L2)
    "M": (S.M, "monodromy: the linear map over one refresh window"),
    "J": (S.J, "the linear map of one step inside a refresh window"),
    "S_1": (S.S_1, "geometric sum of a window, $S_{1} = \\mu (1 - \\mu^{k})/(1 - \\mu)$"),
    "S_2": (S.S_2, "second geometric sum of a window, $S_{2} = (k - S_{1})/(1 - \\mu)$"),
    "lambda": (S.lam, "eigenvalue of the discrete map"),
    "P_lambda": (S.P_char, "characteristic polynomial of the discrete map"),
    "P_d": (S.P_d, "characteristic polynomial of the map with constant delay $d$"),
    "I": (S.I_mat, "identity matrix"),
    "rho": (S.rho, "spectral radius of the discrete map (per window)"),
    "lambda_slow": (S.lam_slow, "slow eigenvalue of $M$ (the one closest to $1$)"),
    "a_flip": (S.a_flip, "step stiffness at which a real eigenvalue of $M$ reaches $-1$ (flip)"),
    "a_complex": (S.a_complex, "step stiffness at which a complex pair of eigenvalues of $M$ reaches the unit circle"),
    "a_c": (S.a_c, "step stiffness of critical damping: the eigenvalues of the map turn complex"),
    "a_max": (S.a_max, "largest stable step stiffness"),
    "a_pub": (S.a_pub, "the published first-order threshold, $(1 - \\mu)/k$"),
    "a_lag": (S.a_lag, "the first-order continuous threshold with the mean lag $\\bar{\\ell}$"),
    "k_max": (S.k_max, "largest stable refresh interval"),
    # --- the continuous model (L3)
    "chi": (S.chi(S.s), "characteristic function of the lagged discrete map in continuous time"),
    "ell": (S.ell, "lag of the continuous model, steps"),
    "ell_bar": (S.ell_bar, "mean lag of a refresh window, $(k - 1)/2$ steps"),
    "ell_max": (S.ell_max, "largest lag with positive damping (continuous model)"),
    "eta_max": (S.eta_max, "largest learning rate with positive damping (continuous model)"),
    "m": (S.m, "mass of the continuous model"),
    "gamma": (S.gamma, "damping of the continuous model"),
    "kappa_s": (S.spring, "spring constant of the continuous model: the step stiffness $a$ read per step$^{2}$ (the same number as $a$)"),
    "zeta": (S.zeta, "damping ratio, $\\gamma/(2\\sqrt{m \\kappa_{s}})$"),
    "eta_c": (S.eta_c, "learning rate of critical damping (continuous model)"),
    "mu_c": (S.mu_c, "momentum of critical damping (continuous model)"),
    "K_c": (S.K_c, "stiffness of critical damping (continuous model)"),
    "s_slow": (S.s_slow, "slow characteristic exponent (the late-time rate)"),
    "s_fast": (S.s_fast, "fast characteristic exponent of the overdamped model"),
    "tau_slow": (S.tau_slow, "late-time decay time of the overdamped model, $-1/s_{\\mathrm{slow}}$"),
    "tau_env": (S.tau_env, "decay time of the envelope of the underdamped oscillation"),
    "omega": (S.omega, "angular frequency of the underdamped oscillation, $\\sqrt{4 m \\kappa_{s} - \\gamma^{2}}/(2m)$"),
    "nu": (S.nu, "half-gap of the two real exponents of the overdamped model, $\\sqrt{\\gamma^{2} - 4 m \\kappa_{s}}/(2m)$"),
    "s": (S.s, "characteristic exponent of the continuous model (a root of $m s^{2} + \\gamma s + \\kappa_{s}$)"),
    "T": (S.T, "period of the underdamped oscillation, steps"),
    "tau": (S.tau, "saturation time of the single exponential, $\\gamma/\\kappa_{s}$, steps"),
    "xi": (S.xi, "gradient noise of one step (white, variance $\\sigma^{2}$)"),
    "R": (S.R_t, "reward curve of the single-exponential law"),
    "R_0": (S.R_0, "initial reward"),
    "R_inf": (S.R_inf, "reward plateau"),
    "N": (S.N, "model size (parameters)"),
    "alpha": (S.alpha, "exponent of the stiffness in the model size, $K = c_{K} N^{\\alpha}$"),
    "c_K": (S.c_K, "prefactor of the stiffness in the model size"),
    "r": (S.r, "rate of the closed forms without KL, per step: $\\eta \\kappa$ with std normalization at large $G$, $\\eta \\kappa (1 - 1/G)$ with mean normalization"),
    # --- reuse of one batch and the clip (chapter 10)
    "o": (sp.Symbol("o"), "an action of the softmax bandit (an output)"),
    "theta_b": (S.theta_b, "logit of action $o$ of the softmax bandit (its parameter)"),
    "n_b": (S.n_b, "number of samples of action $o$ in a group"),
    "A_b": (S.A_b, "advantage of the samples of action $o$"),
    "Delta": (S.Delta, "change of the quantity that follows, over one pass or one refresh window"),
    "V_A": (S.V_A, "variance of the advantage mass $A_{+}$ over groups (mean normalization)"),
    "eps_low": (S.eps_low, "lower width of the ratio clip: a negative advantage stops pushing below the ratio $1 - \\epsilon_{\\mathrm{low}}$"),
    "eps_high": (S.eps_high, "upper width of the ratio clip: a positive advantage stops pushing above the ratio $1 + \\epsilon_{\\mathrm{high}}$"),
    "eps_clip": (S.eps_clip, "the width of a symmetric ratio clip, $\\epsilon_{\\mathrm{low}} = \\epsilon_{\\mathrm{high}}$"),
    "p_sat": (S.p_sat, "success probability at which a clipped window over one batch stops moving"),
    "j_clip": (S.j_clip, "passes over one batch after which the correct samples' ratio leaves the clip"),
    "delta": (S.delta_push, "growth of a sample's log-ratio per pass over its batch (its own push)"),
    # --- collapse
    "D": (S.D, "diffusion coefficient of the logit walk"),
    "b": (S.b, "drift of the diffusion of the logit walk"),
    "phi": (S.phi, "potential of the diffusion, $\\phi' = b/D$"),
    "x_pm": (S.x_pm, "ends of the plateau's basin (an escape ends the plateau)"),
    "scale_S": (S.scale_S(S.y), "scale function of the diffusion, $\\int e^{-\\phi}$ from $x_{-}$"),
    "passage_T": (S.passage_T(S.y), "double integral of the first passage from $x_{-}$"),
    "y": (S.y, "variable of integration"),
    "w": (S.w, "variable of integration"),
    "p_min": (sp.Symbol(r"p_{\min}", positive=True), "a policy with $p < p_{\\min}$ or $p > 1 - p_{\\min}$ counts as collapsed (degenerate level)"),
    "tau_exit": (S.tau_exit, "mean first-passage time out of the basin, steps"),
    # --- Adam
    "v_hat": (S.v_hat, "Adam's second moment: the running mean of the squared gradient"),
    "beta_star": (S.beta_star(S.z), "the KL coefficient at which the logit $z$ is a fixed point (the level set of the fixed points)"),
    "p_bar": (sp.Symbol(r"\bar{p}"), "mean success probability over simulated runs (at a plateau: the stationary mean reward)"),
    "h_here": (sp.Symbol(r"h_{\mathrm{here}}"), "right-hand side of the fixed-point condition $z - z_{\\mathrm{ref}} = h_{\\mathrm{here}}$ of std normalization with the analytic KL at $G \\to \\infty$, a function of $p$"),
    "h_Mroueh": (sp.Symbol(r"h_{\mathrm{Mroueh}}"), "the same for the fixed points of Mroueh's recurrence"),
    "beta_fold": (S.beta_fold, "KL coefficient at a fold (saddle-node) of the fixed points"),
    "l_1": (S.l_1, "first Lyapunov coefficient of the window map at a Neimark--Sacker point"),
    "c_flip": (S.c_flip, "normal-form coefficient of the window map at a flip point"),
    "g_bar": (S.g_bar, "Adam's first moment: the running mean of the gradient"),
    "eta_theta": (S.eta_theta, "Adam's effective per-parameter learning rate"),
    "beta_2": (sp.Symbol("beta_2", positive=True), "Adam's second-moment decay rate (its first-moment "
               "decay rate is the momentum $\\mu$)"),
    # the symbol of grpo_theory.theory.adam.A_SIGMA (equal by name and assumptions)
    "a_sigma": (sp.Symbol(r"a_{\sigma}", positive=True),
                "Adam's step stiffness with the gradient noise alone in its second moment, "
                "$\\eta (1 - \\mu) \\kappa K/\\sigma$"),
}

#: Keys of the index symbols: a subscript made of these (and digits) indexes a symbol
#: (:math:`x_{t}`, :math:`A_{i}`, :math:`x_{j+1}`) instead of naming a new one.
INDEX_KEYS = ("t", "j", "i", "n")


def latex_of(key: str) -> str:
    """LaTeX of the symbol of ``key``, by the project's printer."""
    return latex(NOTATION[key][0])


def math_label(key: str) -> str:
    """The symbol of ``key`` as matplotlib mathtext (``$...$``), e.g. for axis labels."""
    return f"${latex_of(key)}$"


def notation(key: str) -> str:
    """The symbol of ``key`` as plain terminal text (``κₛ``, ``k``, ``p_ref``), from the same
    LaTeX as the PDF's notation table."""
    return math_to_plain(latex_of(key))


#: names the documents write as words or with an index (an operator, a statistic, an upright
#: abbreviation): listed in the table after the symbols, ``(LaTeX, meaning)``; the reader of
#: symbols reads the words among them as no symbol and the others as a symbol of the table
NAMED = (
    (r"\operatorname{Var}", "variance over the sampling noise (stationary unless a time is given)"),
    (r"\operatorname{E}", "expectation over the sampling noise"),
    (r"R^{2}", "coefficient of determination of a fitted curve"),
    (r"\mathrm{OS}", "overshoot of the underdamped oscillation, $-x(t_{1})/x_{0}$, with "
                     "$t_{1}$ the time of its first extremum"),
    (r"\mathrm{KL}_{\mathrm{sat}}", "KL a clipped window can travel on its batch before it stalls"),
)


def notation_rows() -> list[tuple[str, str]]:
    """``(symbol LaTeX, meaning prose)`` for every entry, in the table's order (the symbols,
    then the :data:`NAMED` words)."""
    return [(latex_of(k), meaning) for k, (_, meaning) in NOTATION.items()] + list(NAMED)


def notation_table() -> str:
    """LaTeX of the notation table: symbol and meaning, in two columns (``multicol``)."""
    rows = [f"\\hangindent=4em\\hangafter=1\\makebox[4em][l]{{${tex}$}}{to_tex(meaning)}\\par"
            for tex, meaning in notation_rows()]
    return ("{\\small\\setlength{\\parskip}{1pt}\\begin{multicols}{2}\\raggedright\n"
            + "\n".join(rows) + "\n\\end{multicols}}")


# ------------------------------------------------------------------------------------
# reading the symbols of a LaTeX math string
# ------------------------------------------------------------------------------------

_GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
          "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "pi", "varpi", "rho",
          "varrho", "sigma", "varsigma", "tau", "upsilon", "phi", "varphi", "chi", "psi",
          "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi",
          "Psi", "Omega", "ell"}
#: accents: the accented letter is one symbol (\hat{v}, \mathcal{A})
_ACCENTS = {"hat", "bar", "tilde", "mathcal", "vec", "check", "widehat", "mathbb", "overline"}
#: time derivatives: \dot{x} is the symbol x
_DERIVATIVES = {"dot", "ddot"}
#: words: their argument is text, not symbols (a named function, a unit, a label)
_WORDS = {"mathrm", "operatorname", "text", "textrm", "textit", "mathsf", "texttt", "mbox",
          "emph", "textbf", "mathit", "label", "eqref", "ref", "cite"}
#: Euler's number, pi, the gamma function and Landau's O where they stand alone (the imaginary
#: unit is written \mathrm{i})
_CONSTANTS = {"e", "\\pi", "\\Gamma", "O"}


def _group(s: str, i: int) -> tuple[str, int]:
    """The argument at ``s[i]`` (brace group or one token) and the index after it; an unclosed
    group runs to the end (a symbol reader, not a validator)."""
    return latex_argument(s, i, strict=False)


def _canon(text: str) -> str:
    """A subscript or accent argument in one spelling: no spaces, words unwrapped."""
    text = re.sub(r"\\(?:mathrm|text|operatorname)\s*\{([^{}]*)\}", r"\1", text)
    return re.sub(r"[\s{}]", "", text)


def _is_index(sub: str) -> bool:
    return bool(sub) and bool(re.fullmatch(r"[tjin0-9+\-,]+", sub))


def symbols_in(tex: str) -> list[str]:
    """The symbols of a LaTeX math string, each as ``base`` or ``base_{label}`` (with ``^{*}``
    or ``^{(1)}`` when starred), in reading order; an index subscript gives
    ``base_{<index>}`` and its index letters are read too."""
    out: list[str] = []
    s, i = tex, 0
    while i < len(s):
        c = s[i]
        base = None
        if c == "\\":
            m = re.match(r"\\[A-Za-z]+|\\.", s[i:])
            name = m.group(0)[1:]
            i += len(m.group(0))
            if name in _WORDS:
                _, i = _group(s, i)
                continue
            if name in _GREEK:
                base = "\\" + name
            elif name in _ACCENTS:
                arg, i = _group(s, i)
                if name == "overline" and re.search(r"\\(?:operatorname|mathrm)", arg):
                    out.extend(symbols_in(arg))     # a bar over a statistic: \overline{\operatorname{Var} z}
                    continue
                base = f"\\{name}{{{_canon(arg)}}}"
            elif name in _DERIVATIVES:
                arg, i = _group(s, i)
                inner = symbols_in(arg)
                base = inner[0] if len(inner) == 1 else None
                out.extend(inner[1:] if base else inner)
                if base is None:
                    continue
            else:
                continue                     # \frac, \sqrt, \log, \left, ...: read on
        elif c.isalpha():
            base = c
            i += 1
        else:
            i += 1
            continue
        sub = sup = ""
        j = i
        while j < len(s) and s[j] in "_^":
            arg, k = _group(s, j + 1)
            if s[j] == "_" and not sub:
                sub = arg
            elif s[j] == "^" and not sup:
                sup = arg
            else:
                break
            j = k
        label = ""
        if sup.strip() in ("*", "\\ast", "(1)"):
            label = f"^{{{sup.strip()}}}"
        elif sup:
            out.extend(symbols_in(sup))      # a power: its letters are symbols
        if sub:
            csub = _canon(sub)
            out.append(f"{base}_{{{csub}}}{label}")
            if _is_index(csub):
                out.extend(ch for ch in csub if ch.isalpha())
        else:
            if base not in _CONSTANTS or label:
                out.append(base + label)
        i = j
    return out


def table_symbols() -> dict[str, str]:
    """The table's symbols as :func:`symbols_in` reads them -> their key.  Each entry must read
    as exactly one symbol (a function's arguments are left out: ``x(t)`` is ``x``).  A new
    dict each call; the reading itself is computed once (the table is a constant)."""
    return dict(_table_symbols())


@functools.cache
def _table_symbols() -> dict[str, str]:
    out = {}
    for key in NOTATION:
        tex = re.sub(r"\{?\\left\(.*\\right\)\}?$", "", latex_of(key))   # x(t) -> x
        found = symbols_in(tex)
        m = re.fullmatch(r".+?_\{([^{}]*)\}(\^\{.*\})?", found[0]) if found else None
        if m and _is_index(m.group(1)):      # an indexed symbol: A_{i} is read with its index i
            found = found[:1] + [f for f in found[1:] if f not in m.group(1)]
        if len(found) != 1:
            raise ValueError(f"notation {key!r} reads as {found} (one symbol expected)")
        if found[0] in out:
            raise ValueError(f"notation {key!r} and {out[found[0]]!r} are the same symbol "
                             f"{found[0]!r}")
        out[found[0]] = key
    return out


def unknown_symbols(tex: str) -> list[str]:
    """The symbols of a LaTeX math string that are not in the notation table (an indexed
    symbol is known when its base and its index letters are)."""
    known = _table_symbols()
    bad = []
    for sym in symbols_in(tex):
        if sym in known:
            continue
        m = re.fullmatch(r"(.+?)_\{([^{}]*)\}(\^\{.*\})?", sym)
        if m and _is_index(m.group(2)) and (m.group(1) + (m.group(3) or "")) in known:
            continue
        bad.append(sym)
    return bad


def unknown_in_prose(text: str) -> list[str]:
    """:func:`unknown_symbols` of every formula of a prose text (``$...$`` spans)."""
    return [sym for is_math, piece in split_math(text) if is_math for sym in unknown_symbols(piece)]


# ------------------------------------------------------------------------------------
# reading the symbols of a plain-text document (report.md)
# ------------------------------------------------------------------------------------

_PLAIN_GREEK = "αβγδεζηθικλμνξπρστυφχψωΓΔΘΛΞΠΣΦΨΩϵϕℓ"
_PLAIN_SUB = "₀₁₂₃₄₅₆₇₈₉₊₋ₐₑₒₓₔₕₖₗₘₙₚₛₜᵢⱼᵣᵤᵥ"
#: a Greek letter (with its accents), its subscript (Unicode subscript letters, ``_(...)`` or
#: ``_word``) and a star, not inside a subscript (the σ of a_σ belongs to that symbol)
_PLAIN_SYMBOL = re.compile(rf"(?<![_A-Za-z])[{_PLAIN_GREEK}][\u0300-\u036f]*"
                           rf"(?:[{_PLAIN_SUB}]+|_\([^)\s]*\)|_[A-Za-z0-9]+)?(?:\*|⁽¹⁾)?")
#: plain symbols that are not table entries of their own: the roots of the table's σ² and σ₁²,
#: and π
_PLAIN_EXTRA = {"σ", "σ₁", "π"}


def plain_symbols() -> set[str]:
    """The table's symbols as the plain-text documents write them (:func:`notation`, a
    function's argument left out: ``x(t)`` is ``x``)."""
    return {re.sub(r"\([a-z]\)$", "", notation(key)) for key in NOTATION} | _PLAIN_EXTRA


def unknown_in_plain(text: str) -> list[str]:
    """The Greek symbols of a plain-text document (``report.md``) that are not in the notation
    table, in reading order: a symbol the table does not list (``ρ₁``, ``δᵥ``, ``β₁``) is either
    a second meaning of a letter or a missing entry."""
    known = plain_symbols()
    return [m.group(0) for m in _PLAIN_SYMBOL.finditer(text)
            if m.group(0) not in known and m.group(0).rstrip("*") not in known]
