"""Numbers and claims held against the runs: the numbers a paper writes, the claims in prose, where
they are checked, the provenance record of a paper, and a run's checked analysis. May import:
search and every layer below it; the layers are pyproject.toml's import-linter contract.
"""
