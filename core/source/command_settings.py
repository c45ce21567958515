"""The settings a command line gives, read and edited exactly: an option's value
(``--lr 3e-4``, ``--epochs=20``) and a Hydra override (``trainer.max_steps=500``,
``+model.depth=4``), each a span of the command that an edit replaces and nothing around it.

A value is typed by reading its word (an int, a float, true/false, else a string), as the
script's parser will. A placeholder labtui fills in (``{out_dir}``) or anything the shell
expands (``$HOME``) is no setting; an option without a value is a switch and no setting either;
a single-dash option (``-n 5``) is left to the researcher. The words before the program
(``CUDA_VISIBLE_DEVICES=0``) set its environment, not its settings.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from .setting_text import literal_text
from .setting_values import Editable, Located, edit_located, setting_type

# a shell word: unquoted characters, quoted strings and escapes, with no space between
_WORD = re.compile(r"""(?:[^\s'"\\]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+""", re.DOTALL)
_CONTROL = frozenset({"&&", "||", "|", ";", "&"})  # a new command starts after these
_REDIRECT = re.compile(r"\d*(?:>>|&>|[<>])")  # ``>``, ``2>``, ``>>``: the next word is a file
_SHELL = re.compile(r"\d*[<>&]")  # a redirection, ``2>&1``, ``>log``: no value
_ENVIRONMENT = re.compile(r"[A-Za-z_]\w*=")
_OPTION = re.compile(r"--[A-Za-z][\w.-]*")
_OVERRIDE = re.compile(r"\+{0,2}([A-Za-z_][\w.-]*)=")  # key=v, +key=v (add), ++key=v (force)
_INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_EXPANDED = re.compile(r"\{\w*\}|\$|`")  # {out_dir} labtui fills in, $VAR and `…` the shell


def command_editables(command: str) -> list[Editable]:
    """The options with values and the Hydra overrides of ``command``; an option given twice
    counts once, as the last (the one its parser keeps)."""
    return [located.setting for located in command_located(command)]


def set_command_setting(command: str, setting: Editable, value: Any) -> str:
    """``command`` with that one value replaced by ``value``, a plain word where it can be,
    quoted for the shell where it must."""
    return edit_located(
        command,
        command_located(command),
        setting,
        value,
        write=lambda new, like: literal_text(new, like, "command"),
        reread=command_located,
        read_back=lambda word: word_value(shlex.split(word)[0]),
    )


def word_value(word: str) -> Any:
    """A command word as a value: 500, 3e-4, True (true/false/True/False), else the word."""
    if word in ("true", "True", "false", "False"):
        return word.lower() == "true"
    if _INT.fullmatch(word):
        return int(word)
    if _FLOAT.fullmatch(word):
        return float(word)
    return word


def command_located(command: str) -> list[Located]:
    # a backslash at a line's end continues the command: no word
    words = [word for word in _WORD.finditer(command) if word.group() not in ("\\\n", "\\\r")]
    found: dict[str, Located] = {}
    program = False  # whether this command's program is behind: its arguments come now
    index = 0
    while index < len(words):
        word = words[index].group()
        index += 1
        if word in _CONTROL:
            program = False
        elif _REDIRECT.fullmatch(word):
            index += 1  # its file
        elif not program:
            program = not _ENVIRONMENT.match(word)
        elif located := _option_or_override(command, words, index - 1):
            found.pop(located.setting.name, None)  # the last in force, in its own place
            found[located.setting.name] = located
            index += 1 if located.start >= words[index - 1].end() else 0
    return list(found.values())


def _option_or_override(command: str, words: list[re.Match[str]], index: int) -> Located | None:
    """The setting the word at ``index`` gives: ``--name=value``, ``--name value`` (the next
    word, when it is no option itself) or ``key=value``; None for any other word."""
    word = words[index]
    text = word.group()
    option = _OPTION.match(text)
    override = _OVERRIDE.match(text)
    if option and option.end() < len(text) and text[option.end()] == "=":
        return _located(command, option.group(), word.start() + option.end() + 1, word.end())
    if option and option.end() == len(text) and index + 1 < len(words):
        value = words[index + 1]
        if _is_value(value.group()):
            return _located(command, text, value.start(), value.end())
    if override and not option:
        return _located(command, override.group(1), word.start() + override.end(), word.end())
    return None


def _is_value(word: str) -> bool:
    """Whether a word after an option is its value: not another option (a negative number
    is a value), not the shell's ``&&`` or ``>``."""
    if word in _CONTROL or _SHELL.match(word):
        return False
    return not word.startswith("-") or bool(_FLOAT.fullmatch(word))


def _located(command: str, name: str, start: int, end: int) -> Located | None:
    raw = command[start:end]
    if not raw or _EXPANDED.search(raw):
        return None
    try:
        words = shlex.split(raw)
    except ValueError:
        return None
    if len(words) != 1 or not words[0]:
        return None
    value = word_value(words[0])
    setting = Editable(name, value, setting_type(value), "command", "command")
    return Located(setting, start, end, raw)
