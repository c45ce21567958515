"""LaTeX: compiling (latexmk or pdflatex + bibtex), TeX's logs as messages, reading source, the
code checks before compiling, chktex, and the bibliography. May import: machine, pdf and the layers
below them; the layers are pyproject.toml's import-linter contract.
"""
