"""Runs as Slurm jobs through submitit: the job arrays, the part that runs on the compute node,
Slurm's own words about jobs, following a job's output, and doctor's cluster check. May import:
machine and the layers below it; the layers are pyproject.toml's import-linter contract.
"""
