"""The background engine: one process per project that runs a Session and outlives the terminal
(host), the wire front ends attach by, where its files live, and where a project stands read from
them (status). May import: pipeline and every layer below it; the layers are pyproject.toml's
import-linter contract.
"""
