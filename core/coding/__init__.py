"""aider, staged and guarded: one chat per edit (coder), its IO as events, its model set up
offline, the guard every edit passes, the repair of a headless file, and the feedback for one more
try. May import: llm, source, workspace and the layers below them; the layers are pyproject.toml's
import-linter contract.
"""
