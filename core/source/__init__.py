"""A researcher's repository read safely and never run: bounded file reads and listings (files),
Python modules parsed by ``ast`` (python), a script's settings — constants and argparse
defaults — by name and value (script_settings, argparse_options), and every parse of Python source one thread at a time
(parse). In the bottom layer, under settings, which checks templates with it: it imports nothing
of labtui; the layers are pyproject.toml's import-linter contract.
"""
