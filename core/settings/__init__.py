"""labtui.toml and the research contract: the typed config and its sections, the profiles that fit
a model, templates, prompt texts, and how one experiment is run (contract). May import: errors,
stage_list; the layers are pyproject.toml's import-linter contract.
"""
