"""arXiv and Semantic Scholar: the searches, one record per paper whichever service found it, the
on-disk cache, a paper's full text, and the rate-gated HTTP both services use. May import: latex,
pdf, retry and the bottom layer; the layers are pyproject.toml's import-linter contract.
"""
