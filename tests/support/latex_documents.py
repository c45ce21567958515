"""LaTeX documents for the tests, and the mark of tests that need TeX."""

from __future__ import annotations

import pytest

from labtui.core.latex.compile import tool_available

requires_tex = pytest.mark.skipif(
    not (tool_available("latexmk") or tool_available("pdflatex")), reason="TeX is not installed"
)


BIB = r"""
@misc{kingma2014adam,
  title         = {{Adam: A Method for Stochastic Optimization}},
  author        = {Diederik P. Kingma and Jimmy Ba},
  year          = {2014},
  eprint        = {1412.6980},
  archivePrefix = {arXiv},
  primaryClass  = {cs.LG},
  url           = {https://arxiv.org/abs/1412.6980},
}
"""


def document(body: str, bib: str = BIB) -> str:
    return (
        "\\begin{filecontents}{references.bib}" + bib + "\\end{filecontents}\n"
        "\\documentclass{article}\n"
        "\\usepackage{natbib}\n"
        "\\usepackage{graphicx}\n"
        "\\begin{document}\n"
        f"{body}\n"
        "\\bibliographystyle{plainnat}\n"
        "\\bibliography{references}\n"
        "\\end{document}\n"
    )


GOOD_BODY = "We train a small MLP on the two moons dataset with Adam \\citep{kingma2014adam}."
