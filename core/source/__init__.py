"""A researcher's repository read safely and never run: bounded file reads and listings (files) and
Python modules parsed by ``ast`` (python). May import: the bottom layer only; the layers are
pyproject.toml's import-linter contract.
"""
