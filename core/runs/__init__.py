"""One run placed, executed and read: the runner, a run made ready (run_setup), where it executes
(placement), how it is judged (judging), what it may not leave in the project (project_guard),
plot runs, where a run's numbers come from and in which format, the script's constants, what a
run changed against the baseline from its commit (run_changes, code_changes), the settings a plan
names, and the effects a run had against the baseline. May import: slurm,
machine, workspace and the layers below them; the layers are pyproject.toml's import-linter
contract.
"""
