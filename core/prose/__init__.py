"""Prose as a reviewer reads it, before any run is consulted: markup of another format, LaTeX
commands that lost their backslash, text copied from labtui's own prompts and feedback,
instructions left in the text, promises where finished work is reported, and stray lines. Each
defect is a record with the text it quotes, the problem and the fix. The write-up's checks, the
notebook's analyses and ``labtui review``/``labtui check`` of any PDF read with these same rules.
May import: latex, settings and the layers below them; the layers are pyproject.toml's
import-linter contract.
"""
