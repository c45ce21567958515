"""A paper PDF as a reader sees it: the document opened in one place, its visual lines and pages in
reading order, page furniture left out, its headings and outline, and the paper as Markdown-ish
text. May import: the bottom layer only; the layers are pyproject.toml's import-linter contract.
"""
