"""``labtui init`` and ``labtui import``: the repository survey (scan, facts, python_survey, script
options, command lines, result files, LaTeX, README), the set-up drafted from it, the model's
proposal checked against it, and imported evidence. May import: writeup and every layer below it
(never pipeline or engine); the layers are pyproject.toml's import-linter contract.
"""
