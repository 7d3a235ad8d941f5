"""Chapter 3 of the derivation chain: ``closed_forms``.

Run: ``python -m derivations.ch03_closed_forms``.  The narrative and the list of
results live in :data:`grpo_theory.chain.CHAPTERS`; the derivations themselves in
``grpo_theory/closed_forms.py`` (each a sympy derivation with its proof log).
"""

from grpo_theory.chain import CHAPTERS, run_chapter

CHAPTER = next(c for c in CHAPTERS if c.key == "closed_forms")


def main():
    records = run_chapter(CHAPTER)
    return 0 if all(r["verified"] or not r["verifications"] for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
