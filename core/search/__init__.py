"""The experiment strategies (like aider's coders/): what a hill-climb and a tree search share, one
search's frame, its git worktrees, seeds, its ledger, the tree's rules, the climb and the tree. May
import: steps and every layer below it; the layers are pyproject.toml's import-linter contract.
"""
