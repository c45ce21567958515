"""The project on disk: the workspace itself, the files stages hand each other (artifacts), a
run's folder and its record (run_folder), the idea archive, the lab notebook, rewind, and a
read-only view of its git history. May import: answers, settings, journal, checkpoints, retry and
the bottom layer; the layers are pyproject.toml's import-linter contract.
"""
