"""``labtui init`` and ``labtui import``: the repository survey (scan, facts, python_survey, script
options, command lines, result files, LaTeX, README), the set-up drafted from it (setup_draft;
command_draft with how long a run trains, run_length and run_budget; the metrics the code
writes, metric_names and metric_choice; the README's set-up steps), the model's proposal checked
against it, the checks that run it before anything is committed (init_check), and imported
evidence. May import: writeup and every layer below it (never pipeline or engine); the layers are
pyproject.toml's import-linter contract.
"""
