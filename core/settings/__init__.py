"""labtui.toml and the research contract: the typed config and its sections, the profiles that fit
a model, templates, prompt texts, and how one experiment is run (contract). May import: errors,
stage_list; the layers are pyproject.toml's import-linter contract.
"""

# Here rather than in config.py: a front end tells a project folder by this file before it
# imports the typed config (pydantic: ~200 ms of a first paint).
CONFIG_NAME = "labtui.toml"
