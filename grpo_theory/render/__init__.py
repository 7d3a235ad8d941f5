"""Rendering: the derivation chain and the findings as documents, above the theory.

- :mod:`.latex` — ``equations.tex`` (one section per chapter), the notation table, the
  bibliography and :func:`~.latex.citation`;
- :mod:`.chain` — what ``grpo-theory derive`` prints (:func:`~.chain.derive_chain`);
- :mod:`.page` — the theory page ``docs/theory.md``;
- :mod:`.findings` — the findings: where the derivation agrees with, corrects or extends
  the published claims, with their numbers computed from the theory.

Nothing in :mod:`grpo_theory.theory` imports this package; prose with inline math is
turned into plain text, Markdown or LaTeX by :mod:`grpo_theory.prose`.
"""
