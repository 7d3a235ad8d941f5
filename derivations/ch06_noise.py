"""Chapter 6 of the derivation chain: ``noise``.

Run: ``python -m derivations.ch06_noise``.  The narrative and the list of
results live in :data:`grpo_theory.chain.CHAPTERS`; the derivations themselves in
``grpo_theory/noise.py`` (each a sympy derivation with its proof log).
"""

from grpo_theory.chain import CHAPTERS, run_chapter

CHAPTER = next(c for c in CHAPTERS if c.key == "noise")


def main():
    records = run_chapter(CHAPTER)
    return 0 if all(r["verified"] or not r["verifications"] for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
