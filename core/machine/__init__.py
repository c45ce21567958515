"""A child process on this machine and what contains it: process groups and trees, the watcher and
its disk, OOM and host limits, the sandbox and its policy, GPUs, the experiment interpreter, and
metrics read from log lines. May import: settings and the layers below; the layers are
pyproject.toml's import-linter contract.
"""
