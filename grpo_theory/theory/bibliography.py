"""The bibliography: every work the documents cite, with its data, and how it is printed.

One entry per work in :data:`REFERENCES` (key -> fields).  ``authors`` lists the persons as
``"Family, Given"`` (``"{Name}"`` for an organization); ``et_al`` marks an author list that
is cut short.  Fields follow BibTeX (``journal``, ``booktitle``, ``publisher``, ``volume``,
``number``, ``pages``, ``year``, ``eprint`` for an arXiv identifier, ``url``, ``note``).
The bibliographic data were checked against the works' own pages or standard citations;
nothing here is guessed: a venue that could not be confirmed is left out (the arXiv
identifier is given instead).

:func:`bibtex` writes ``references.bib``; :func:`format_reference` prints one entry for the
PDF (``"tex"``), the Markdown report (``"md"``) or the terminal (``"text"``), with the
authors as initials and family names (at most :data:`MAX_AUTHORS`, then "et al.").
"""

from __future__ import annotations

import re

__all__ = ["REFERENCES", "MAX_AUTHORS", "format_authors", "format_reference", "bibtex"]

#: More authors than this print as the first three and "et al."
MAX_AUTHORS = 7

REFERENCES = {
    # --- the papers the theory reproduces, quotes or corrects -----------------------------
    "predictable_grpo": {
        "type": "article",
        "authors": ["Ghosh, Rajat", "Nimmaturi, Datta", "Singhal, Aryan", "Bhargava, Vaishnavi",
                    "Wong, Henry", "George, Johnu", "Dutta, Debojyoti"],
        "title": "Predictable {GRPO}: A Closed-Form Model of Training Dynamics",
        "eprint": "2606.30789", "year": "2026",
    },
    "mroueh2025": {
        "type": "article",
        "authors": ["Mroueh, Youssef"],
        "title": "Reinforcement Learning with Verifiable Rewards: {GRPO}'s Effective Loss, "
                 "Dynamics, and Success Amplification",
        "eprint": "2503.06639", "year": "2025",
    },
    # --- the algorithm and its variants ----------------------------------------------------
    "shao2024deepseekmath": {
        "type": "article",
        "authors": ["Shao, Zhihong", "Wang, Peiyi", "Zhu, Qihao", "Xu, Runxin", "Song, Junxiao",
                    "Bi, Xiao", "Zhang, Haowei", "Zhang, Mingchuan", "Li, Y. K.", "Wu, Y.",
                    "Guo, Daya"],
        "title": "{DeepSeekMath}: Pushing the Limits of Mathematical Reasoning in Open Language "
                 "Models",
        "eprint": "2402.03300", "year": "2024",
    },
    "liu2025drgrpo": {
        "type": "article",
        "authors": ["Liu, Zichen", "Chen, Changyu", "Li, Wenjun", "Qi, Penghui", "Pang, Tianyu",
                    "Du, Chao", "Lee, Wee Sun", "Lin, Min"],
        "title": "Understanding {R1-Zero}-Like Training: A Critical Perspective",
        "eprint": "2503.20783", "year": "2025",
    },
    "yu2025dapo": {
        "type": "article",
        "authors": ["Yu, Qiying", "Zhang, Zheng", "Zhu, Ruofei", "Yuan, Yufeng", "Zuo, Xiaochen",
                    "Yue, Yu"],
        "et_al": True,
        "title": "{DAPO}: An Open-Source {LLM} Reinforcement Learning System at Scale",
        "eprint": "2503.14476", "year": "2025",
    },
    "schulman2017ppo": {
        "type": "article",
        "authors": ["Schulman, John", "Wolski, Filip", "Dhariwal, Prafulla", "Radford, Alec",
                    "Klimov, Oleg"],
        "title": "Proximal Policy Optimization Algorithms",
        "eprint": "1707.06347", "year": "2017",
    },
    "schulman2020kl": {
        "type": "misc",
        "authors": ["Schulman, John"],
        "title": "Approximating {KL} Divergence",
        "howpublished": "blog post", "url": "http://joschu.net/blog/kl-approx.html",
        "year": "2020",
    },
    # --- the training libraries whose settings the theory maps -----------------------------
    "vonwerra2020trl": {
        "type": "misc",
        "authors": ["von Werra, Leandro", "Belkada, Younes", "Tunstall, Lewis",
                    "Beeching, Edward", "Thrush, Tristan", "Lambert, Nathan", "Huang, Shengyi",
                    "Rasul, Kashif", "Gallou{\\'e}dec, Quentin"],
        "title": "{TRL}: Transformer Reinforcement Learning",
        "howpublished": "software", "url": "https://github.com/huggingface/trl", "year": "2020",
    },
    "sheng2025hybridflow": {
        "type": "inproceedings",
        "authors": ["Sheng, Guangming", "Zhang, Chi", "Ye, Zilingfeng", "Wu, Xibin",
                    "Zhang, Wang", "Zhang, Ru", "Peng, Yanghua", "Lin, Haibin", "Wu, Chuan"],
        "title": "{HybridFlow}: A Flexible and Efficient {RLHF} Framework",
        "booktitle": "Proceedings of the Twentieth European Conference on Computer Systems "
                     "({EuroSys})",
        "eprint": "2409.19256", "year": "2025",
        "note": "the verl library",
    },
    # --- optimisation ------------------------------------------------------------------------
    "polyak1964": {
        "type": "article",
        "authors": ["Polyak, Boris T."],
        "title": "Some Methods of Speeding up the Convergence of Iteration Methods",
        "journal": "USSR Computational Mathematics and Mathematical Physics",
        "volume": "4", "number": "5", "pages": "1--17", "year": "1964",
    },
    "kingma2015adam": {
        "type": "inproceedings",
        "authors": ["Kingma, Diederik P.", "Ba, Jimmy"],
        "title": "Adam: A Method for Stochastic Optimization",
        "booktitle": "International Conference on Learning Representations ({ICLR})",
        "eprint": "1412.6980", "year": "2015",
    },
    # --- dynamical systems and numerics -------------------------------------------------------
    "jury1964": {
        "type": "book",
        "authors": ["Jury, Eliahu I."],
        "title": "Theory and Application of the z-Transform Method",
        "publisher": "Wiley", "year": "1964",
    },
    "schur1917": {
        "type": "article",
        "authors": ["Schur, Issai"],
        "title": "{\\\"U}ber {P}otenzreihen, die im {I}nnern des {E}inheitskreises beschr{\\\"a}nkt sind",
        "journal": "Journal f{\\\"u}r die reine und angewandte Mathematik",
        "volume": "147", "pages": "205--232", "year": "1917",
    },
    "cohn1922": {
        "type": "article",
        "authors": ["Cohn, Arthur"],
        "title": "{\\\"U}ber die {A}nzahl der {W}urzeln einer algebraischen {G}leichung in einem "
                 "{K}reise",
        "journal": "Mathematische Zeitschrift",
        "volume": "14", "pages": "110--148", "year": "1922",
    },
    "keller1977": {
        "type": "incollection",
        "authors": ["Keller, Herbert B."],
        "title": "Numerical Solution of Bifurcation and Nonlinear Eigenvalue Problems",
        "booktitle": "Applications of Bifurcation Theory", "editor": "Rabinowitz, Paul H.",
        "publisher": "Academic Press", "pages": "359--384", "year": "1977",
    },
    "kuznetsov2004": {
        "type": "book",
        "authors": ["Kuznetsov, Yuri A."],
        "title": "Elements of Applied Bifurcation Theory",
        "publisher": "Springer", "edition": "third", "series": "Applied Mathematical Sciences",
        "volume": "112", "year": "2004",
    },
    "brent1973": {
        "type": "book",
        "authors": ["Brent, Richard P."],
        "title": "Algorithms for Minimization without Derivatives",
        "publisher": "Prentice-Hall", "year": "1973",
    },
    # --- deep networks, data and the real run ---------------------------------------------------
    "jacot2018ntk": {
        "type": "inproceedings",
        "authors": ["Jacot, Arthur", "Gabriel, Franck", "Hongler, Cl{\\'e}ment"],
        "title": "Neural Tangent Kernel: Convergence and Generalization in Neural Networks",
        "booktitle": "Advances in Neural Information Processing Systems 31 ({NeurIPS})",
        "pages": "8571--8580", "year": "2018",
    },
    "cobbe2021gsm8k": {
        "type": "article",
        "authors": ["Cobbe, Karl", "Kosaraju, Vineet", "Bavarian, Mohammad", "Chen, Mark",
                    "Jun, Heewoo", "Kaiser, Lukasz", "Plappert, Matthias", "Tworek, Jerry",
                    "Hilton, Jacob", "Nakano, Reiichiro", "Hesse, Christopher",
                    "Schulman, John"],
        "title": "Training Verifiers to Solve Math Word Problems",
        "eprint": "2110.14168", "year": "2021",
    },
    "bi2024deepseekllm": {
        "type": "article",
        "authors": ["Bi, Xiao", "Chen, Deli", "Chen, Guanting", "Chen, Shanhuang", "Dai, Damai",
                    "Deng, Chengqi", "Ding, Honghui", "Dong, Kai", "Du, Qiushi", "Fu, Zhe"],
        "et_al": True,
        "title": "{DeepSeek LLM}: Scaling Open-Source Language Models with Longtermism",
        "eprint": "2401.02954", "year": "2024",
    },
    "su2025verllog": {
        "type": "misc",
        # the repository names its author only by a GitHub handle: said as such, not as a name
        "authors": ["{GitHub user yushengsu-thu}"],
        "title": "verl\\_training\\_log: {GRPO} run of deepseek-llm-7b-chat on {GSM8K}",
        "howpublished": "GitHub repository, file gsm8k/grpo\\_run\\_deepseek7b\\_llm.log, "
                        "commit deb1507",
        "url": "https://github.com/yushengsu-thu/verl_training_log", "year": "2025",
    },
    "khatri2025scalerl": {
        "type": "article",
        "authors": ["Khatri, Devvrit", "Madaan, Lovish", "Tiwari, Rishabh", "Bansal, Rachit",
                    "Duvvuri, Sai Surya", "Zaheer, Manzil", "Dhillon, Inderjit S.",
                    "Brandfonbrener, David", "Agarwal, Rishabh"],
        "title": "The Art of Scaling Reinforcement Learning Compute for {LLMs}",
        "eprint": "2510.13786", "year": "2025",
    },
    "cui2025entropy": {
        "type": "article",
        "authors": ["Cui, Ganqu", "Zhang, Yuchen", "Chen, Jiacheng", "Yuan, Lifan", "Wang, Zhi",
                    "Zuo, Yuxin"],
        "et_al": True,
        "title": "The Entropy Mechanism of Reinforcement Learning for Reasoning Language Models",
        "eprint": "2505.22617", "year": "2025",
    },
    # --- related work: asynchrony as momentum, edge of stability, SDE models of SGD -----------
    "mitliagkas2016asynchrony": {
        "type": "inproceedings",
        "authors": ["Mitliagkas, Ioannis", "Zhang, Ce", "Hadjis, Stefan", "R{\\'e}, Christopher"],
        "title": "Asynchrony Begets Momentum, with an Application to Deep Learning",
        "booktitle": "54th Annual Allerton Conference on Communication, Control, and Computing",
        "eprint": "1605.09774", "year": "2016",
    },
    "cohen2021eos": {
        "type": "inproceedings",
        "authors": ["Cohen, Jeremy M.", "Kaur, Simran", "Li, Yuanzhi", "Kolter, J. Zico",
                    "Talwalkar, Ameet"],
        "title": "Gradient Descent on Neural Networks Typically Occurs at the Edge of Stability",
        "booktitle": "International Conference on Learning Representations ({ICLR})",
        "eprint": "2103.00065", "year": "2021",
    },
    "li2017sme": {
        "type": "inproceedings",
        "authors": ["Li, Qianxiao", "Tai, Cheng", "E, Weinan"],
        "title": "Stochastic Modified Equations and Adaptive Stochastic Gradient Algorithms",
        "booktitle": "Proceedings of the 34th International Conference on Machine Learning ({ICML})",
        "eprint": "1511.06251", "year": "2017",
    },
    "mandt2017sgd": {
        "type": "article",
        "authors": ["Mandt, Stephan", "Hoffman, Matthew D.", "Blei, David M."],
        "title": "Stochastic Gradient Descent as Approximate {Bayesian} Inference",
        "journal": "Journal of Machine Learning Research", "volume": "18", "pages": "1--35",
        "year": "2017",
    },
    # --- the software the results are computed with ----------------------------------------------
    "meurer2017sympy": {
        "type": "article",
        "authors": ["Meurer, Aaron", "Smith, Christopher P.", "Paprocki, Mateusz",
                    "{\\v{C}}ert{\\'\\i}k, Ond{\\v{r}}ej", "Kirpichev, Sergey B.", "Rocklin, Matthew"],
        "et_al": True,
        "title": "{SymPy}: Symbolic Computing in {Python}",
        "journal": "PeerJ Computer Science", "volume": "3", "pages": "e103", "year": "2017",
    },
    "mpmath": {
        "type": "misc",
        "authors": ["{The mpmath development team}"],
        "title": "mpmath: a {Python} Library for Arbitrary-Precision Floating-Point Arithmetic "
                 "(version 1.3.0)",
        "url": "https://mpmath.org/", "year": "2023",
    },
    "virtanen2020scipy": {
        "type": "article",
        "authors": ["Virtanen, Pauli", "Gommers, Ralf", "Oliphant, Travis E."],
        "et_al": True,
        "title": "{SciPy} 1.0: Fundamental Algorithms for Scientific Computing in {Python}",
        "journal": "Nature Methods", "volume": "17", "pages": "261--272", "year": "2020",
    },
    "harris2020numpy": {
        "type": "article",
        "authors": ["Harris, Charles R.", "Millman, K. Jarrod", "van der Walt, St{\\'e}fan J.",
                    "Gommers, Ralf"],
        "et_al": True,
        "title": "Array Programming with {NumPy}",
        "journal": "Nature", "volume": "585", "pages": "357--362", "year": "2020",
    },
    "hunter2007matplotlib": {
        "type": "article",
        "authors": ["Hunter, John D."],
        "title": "Matplotlib: A {2D} Graphics Environment",
        "journal": "Computing in Science \\& Engineering", "volume": "9", "number": "3",
        "pages": "90--95", "year": "2007",
    },
    "paszke2019pytorch": {
        "type": "inproceedings",
        "authors": ["Paszke, Adam", "Gross, Sam", "Massa, Francisco", "Lerer, Adam"],
        "et_al": True,
        "title": "{PyTorch}: An Imperative Style, High-Performance Deep Learning Library",
        "booktitle": "Advances in Neural Information Processing Systems 32 ({NeurIPS})",
        "pages": "8024--8035", "year": "2019",
    },
}

_BIBTEX_FIELDS = ("title", "journal", "booktitle", "editor", "series", "edition", "publisher",
                  "volume", "number", "pages", "howpublished", "year", "note", "url")

#: LaTeX accents and escapes in the data, and their Unicode for text and Markdown
_ACCENTS = [(r"{\'e}", "é"), (r"{\'\i}", "í"), (r'{\"U}', "Ü"), (r'{\"u}', "ü"), (r'{\"a}', "ä"),
            (r"{\v{C}}", "Č"), (r"{\v{r}}", "ř"), (r"\&", "&"), (r"\_", "_")]


def _unbrace(text: str) -> str:
    """Plain text of a BibTeX field (accents to Unicode, protecting braces dropped)."""
    for tex, uni in _ACCENTS:
        text = text.replace(tex, uni)
    return text.replace("{", "").replace("}", "")


def _tex(text: str) -> str:
    """A field for the LaTeX document: its plain text (accents to Unicode, BibTeX's protecting
    braces dropped), escaped by the one escaping function (a special character in a field
    prints as itself)."""
    from grpo_theory.prose import escape_tex
    return escape_tex(_unbrace(text))


def _tex_url(url: str) -> str:
    """A URL in typewriter type (the document loads no url package)."""
    from grpo_theory.prose import escape_tex
    return f"\\texttt{{{escape_tex(url)}}}"


def _initials(given: str) -> str:
    parts = re.split(r"([ \-])", given.strip())
    return "".join(p if p in (" ", "-") else (p if p.endswith(".") else p[0] + ".")
                   for p in parts if p)


def _person(name: str, style: str) -> str:
    if name.startswith("{") and name.endswith("}"):      # an organization
        core = name[1:-1]
        return _unbrace(core) if style != "tex" else _tex(core)
    family, _, given = name.partition(",")
    text = f"{_initials(given)} {family.strip()}" if given.strip() else family.strip()
    if style == "tex":
        return _tex(text).replace(". ", ".~")
    return _unbrace(text)


def format_authors(key: str, style: str = "text") -> str:
    """The authors of ``key`` as initials and family names: "A. B. Name", two joined by
    "and", up to :data:`MAX_AUTHORS` listed in full, longer lists as three and "et al."."""
    ref = REFERENCES[key]
    names = [_person(a, style) for a in ref["authors"]]
    if len(names) > MAX_AUTHORS or ref.get("et_al"):
        return ", ".join(names[:3]) + ", et al."
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + ", and " + names[-1]


def _venue(ref: dict, style: str) -> str:
    conv = _tex if style == "tex" else _unbrace
    parts = []
    if "journal" in ref:
        j = conv(ref["journal"])
        vol = ref.get("volume", "")
        if vol:
            j += f" {vol}" + (f"({ref['number']})" if "number" in ref else "")
        if "pages" in ref:
            j += (", " if vol else " ") + ref["pages"].replace("--", "–" if style != "tex" else "--")
        parts.append(j)
    elif "booktitle" in ref:
        b = "In " + conv(ref["booktitle"])
        if "editor" in ref:
            b += f", edited by {_person(ref['editor'], style)}"
        if "pages" in ref:
            b += ", pp. " + ref["pages"].replace("--", "–" if style != "tex" else "--")
        parts.append(b)
        if "publisher" in ref:
            parts.append(conv(ref["publisher"]))
    elif "publisher" in ref:
        p = conv(ref["publisher"])
        if "edition" in ref:
            p = f"{ref['edition']} edition, {p}"
        if "series" in ref:
            p = f"{conv(ref['series'])} {ref.get('volume', '')}".strip() + ", " + p
        parts.append(p)
    if "howpublished" in ref:
        how = conv(ref["howpublished"])
        parts.append(how[:1].upper() + how[1:])
    if "eprint" in ref:
        parts.append(f"arXiv:{ref['eprint']}")
    if "url" in ref and "eprint" not in ref:
        url = ref["url"]
        parts.append(_tex_url(url) if style == "tex" else (f"<{url}>" if style == "md" else url))
    return ". ".join(parts)


def format_reference(key: str, style: str = "text") -> str:
    """One entry: authors, title (emphasised in ``tex`` and ``md``), venue, year."""
    if style not in ("text", "tex", "md"):
        raise ValueError(f"style must be 'text', 'tex' or 'md', got {style!r}")
    ref = REFERENCES[key]
    title = _tex(ref["title"]) if style == "tex" else _unbrace(ref["title"])
    title = {"tex": f"\\emph{{{title}}}", "md": f"*{title}*", "text": f"\"{title}\""}[style]
    venue = _venue(ref, style)
    authors = format_authors(key, style)
    return f"{authors}{'' if authors.endswith('.') else '.'} {title}. " + \
        (f"{venue}, " if venue else "") + f"{ref['year']}."


def bibtex(keys=None) -> str:
    """BibTeX of ``keys`` (default: every entry), authors joined by ``and`` (``and others``
    where the list is cut short), arXiv identifiers as ``eprint``/``archivePrefix``."""
    out = []
    for key in (REFERENCES if keys is None else keys):
        ref = REFERENCES[key]
        authors = " and ".join(ref["authors"]) + (" and others" if ref.get("et_al") else "")
        fields = [("author", authors)]
        fields += [(f, ref[f]) for f in _BIBTEX_FIELDS if f in ref]
        if "eprint" in ref:
            fields += [("eprint", ref["eprint"]), ("archivePrefix", "arXiv")]
            if ref["type"] == "article" and "journal" not in ref:
                fields.append(("journal", f"arXiv preprint arXiv:{ref['eprint']}"))
        body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields)
        out.append(f"@{ref['type']}{{{key},\n{body}\n}}")
    return "\n\n".join(out) + "\n"
