"""A researcher's repository read safely and never run: bounded file reads and listings (files),
Python modules parsed by ``ast`` (python), a script's settings — constants and argparse
defaults — by name and value (script_settings, argparse_options), the settings labtui changes
itself, one value's span rewritten each (setting_edit, config_settings, toml_settings,
command_settings, setting_values, setting_text), and every parse of Python source one thread at
a time (parse). In the bottom layer, under settings, which checks templates with it: it imports nothing
of labtui; the layers are pyproject.toml's import-linter contract.
"""
