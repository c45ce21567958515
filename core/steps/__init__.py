"""Work that stages share: the baseline, planning, the scaffold of a topic-only project, one
planned run's attempts, several ideas in lanes, and the persona panel. May import: stage_context
and every layer below it; the layers are pyproject.toml's import-linter contract.
"""
