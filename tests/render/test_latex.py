"""The document's numbering: definitions tagged apart from the results, restatements under
their host without a number of their own."""

import re

from grpo_theory.render.latex import (DEFINITIONS, DUPLICATES, equation_numbers,
                                      equations_document, tex_label)
from grpo_theory.theory.derived import all_names, get


def test_definitions_and_restatements_are_not_numbered_as_results():
    names = list(all_names())
    nums = equation_numbers(names)
    results = [v for v in nums.values() if isinstance(v, int)]
    # the results are numbered 1..N without gaps; the definitions D1..Dm; a restatement has its host's
    assert sorted(set(results)) == list(range(1, len(names) - len(DEFINITIONS) - len(DUPLICATES) + 1))
    assert sorted(nums[n] for n in DEFINITIONS) == sorted(f"D{i + 1}" for i in range(len(DEFINITIONS)))
    for dup, host in DUPLICATES.items():
        assert nums[dup] == nums[host]
    # a restatement really restates its host (independent evaluation at one point)
    mu, K, ell = 0.4, 1.3, 0.25
    eta_c = get("oscillator.critical_learning_rate").numeric(mu, K, ell)
    assert abs(get("oscillator.critical_momentum").numeric(eta_c, K, ell) - mu) < 1e-12
    K_c = get("oscillator.critical_stiffness").numeric(mu, eta_c, ell)
    assert abs(K_c - K) < 1e-12
    assert abs(get("adam.critical_step").numeric(mu)
               - get("discrete.refresh_critical_damping").numeric(mu, 1)) < 1e-12
    assert get("noise.ar2_stability_bound").numeric(mu) == get("discrete.delay_threshold_d0").numeric(mu)
    tex = equations_document(names)
    for n in DEFINITIONS:                             # tagged, not counted
        assert re.search(r"\\label\{" + re.escape(tex_label(get(n).label)) + r"\}\\tag\{D\d+\}", tex), n
    for dup in DUPLICATES:                           # its label follows its host's equation
        lab = tex_label(get(dup).label)
        assert tex.count("\\label{" + lab + "}") == 1
        assert re.search(r"\\end\{(equation|multline)\}(\\label\{[^}]*\})*\\label\{" + re.escape(lab) + r"\}", tex)
    # one numbered display per numbered result (variant-table rows step the counter themselves)
    displays = len(re.findall(r"\\begin\{(?:equation|multline)\}\\label\{[^}]*\}(?!\\tag)", tex))
    rows = tex.count("\\refstepcounter{equation}")
    assert displays + rows == max(results)
