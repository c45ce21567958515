"""The model labtui brings when none is configured: its weights (where they come from, verified
before use, kept once per machine in the user's cache) and its server (llama-cpp-python's, in a
virtual environment of its own, one per machine and model, shared by every project, started on
demand and stopped when idle). May import: machine, settings and the layers below; the layers are
pyproject.toml's import-linter contract.
"""
