"""The session that runs the stages in order with a checkpoint after each and resumes from the
journal, and the researcher's own notify command. May import: stages' protocol and context, the
services and the layers below (never a stage module directly); the layers are pyproject.toml's
import-linter contract.
"""
