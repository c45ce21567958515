"""What a model is asked for in JSON: the typed records (schemas), the checks their fields must
pass, the variants a schema states, the example strings a model copies, and reading JSON out of a
reply. May import: the bottom layer only (errors, events, stage_list); the layers are
pyproject.toml's import-linter contract.
"""
