"""What a run changed against the baseline, computed from git and the runs' records, so that the
paper's Experimental Setup states it from records and no model retypes it: the settings it set
(by name, old value and new, in the code or on the command line), then the rest of the code it
changed (each file's lines, and the functions whose code differs). And the baseline's settings
themselves (``baseline_settings``), its command line's values over its script's defaults.

Both runs' ``labtui_run.json`` name the commit and the command line (core/workspace/run_folder.py);
what cannot be known (an imported result, a record that does not read, a commit git does not
have) is an empty ``RunChanges``, never an error: a write-up states less, it does not stop.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..source.argparse_options import option_dest
from ..source.script_settings import Setting, script_settings, without_setting_values
from ..workspace.run_folder import RunFolderError, RunRecord, read_run_record
from .code_changes import FileChange, changed_definitions, is_experiment_code, numstat
from .script_constants import (
    command_and_commit,
    committed_text,
    git_output,
    number_in,
    script_code,
    script_of,
)

Where = Literal["code", "command"]


@dataclass(frozen=True)
class SettingChange:
    """A setting whose value differs between the baseline and the run: a constant by its name,
    an option by its flag (``--epochs``). None on one side: the setting is not set there."""

    name: str
    before: Any
    after: Any
    where: Where  # "command": a command line gave one of the values; "code": the script did

    def words(self) -> str:
        if self.before is None:
            return f"sets {self.name} to {self.after!r}"
        if self.after is None:
            return f"unsets {self.name} (it was {self.before!r})"
        return f"sets {self.name} from {self.before!r} to {self.after!r}"


@dataclass(frozen=True)
class RunChanges:
    """What run ``run`` changed against ``baseline``. ``commit`` is the run's; '' when what it
    changed cannot be known (then nothing is listed)."""

    run: str
    baseline: str
    commit: str
    settings: tuple[SettingChange, ...] = ()
    files: tuple[FileChange, ...] = ()

    def summary(self) -> str:
        """In plain words, settings first: ``sets N_FEATURES from 64 to 512; changes
        experiment.py (+12/−3 lines in train, evaluate)``."""
        if not self.commit:
            return f"what {self.run} changed against {self.baseline} is not recorded"
        said = [change.words() for change in self.settings] + [f.words() for f in self.files]
        return "; ".join(said) or f"changes nothing against {self.baseline}"


@dataclass(frozen=True)
class _Ran:
    """A run as its record says: the commit, the script and its settings as the run used them
    (by ``_key``), and the keys the command line gave."""

    commit: str
    script: str
    code: str
    values: dict[str, Any]
    given: frozenset[str]


def run_changes(root: Path, run_dir: Path, baseline_dir: Path) -> RunChanges:
    """What the run in ``run_dir`` changed against the baseline in ``baseline_dir``, from their
    records and git (an empty ``RunChanges`` where either cannot be read)."""
    root = Path(root)
    run_name, base_name = Path(run_dir).name, Path(baseline_dir).name
    base, ran = _ran(root, Path(baseline_dir)), _ran(root, Path(run_dir))
    if base is None or ran is None:
        return RunChanges(run_name, base_name, "")
    settings = _setting_changes(base, ran, (base_name, run_name))
    files = _file_changes(root, base.commit, ran.commit, _relative(root, Path(run_dir)))
    if _only_settings(base, ran, settings):
        files = [f for f in files if f.path != ran.script]
    return RunChanges(run_name, base_name, ran.commit, tuple(settings), tuple(files))


def baseline_settings(root: Path, baseline_dir: Path) -> list[Setting]:
    """The baseline script's settings at its commit (the working copy where the commit is
    unknown), each option's default replaced by the value its command line gave, and the
    command line's options the script does not declare (a Hydra key, a click option) after
    them (line 0)."""
    argv, commit = command_and_commit(Path(baseline_dir))
    script = script_of(argv)
    settings = script_settings(script_code(Path(root), script, commit))
    return _applied(settings, _command_values(argv, settings))


# -- the settings --------------------------------------------------------------------------------


def _ran(root: Path, folder: Path) -> _Ran | None:
    """The run's record read, its commit's script and settings; None when it is an import, has
    no commit, or git does not have the commit."""
    try:
        record = read_run_record(folder)
    except RunFolderError:
        return None
    if not isinstance(record, RunRecord) or not record.commit:
        return None
    if git_output(root, "cat-file", "-e", f"{record.commit}^{{commit}}") is None:
        return None
    script = script_of(record.argv)
    code = committed_text(root, record.commit, script) or ""
    settings = script_settings(code)
    given = _command_values(record.argv, settings)
    values = {_key(s): s.value for s in _applied(settings, given)}
    declared = _declared(settings)
    keys = frozenset(declared.get(name, name) for name in given)
    return _Ran(record.commit, script, code, values, keys)


def _key(setting: Setting) -> str:
    """A constant by its name, an option by its flag: the name the command line gives it."""
    return setting.flag if setting.kind == "option" and setting.flag else setting.name


def _setting_changes(base: _Ran, ran: _Ran, names: tuple[str, str]) -> list[SettingChange]:
    changes = []
    for key in [*base.values, *(k for k in ran.values if k not in base.values)]:
        before, after = base.values.get(key), ran.values.get(key)
        if before == after or _names_its_folder(before, after, names):
            continue
        where: Where = "command" if key in base.given | ran.given else "code"
        changes.append(SettingChange(key, before, after, where))
    return changes


def _names_its_folder(before: Any, after: Any, names: tuple[str, str]) -> bool:
    """``--out_dir=run_0`` against ``--out_dir=run_1``: each run writes to its own folder, which
    is no change the run makes."""
    base_name, run_name = names
    return (
        isinstance(before, str)
        and isinstance(after, str)
        and base_name in before
        and after.replace(run_name, base_name) == before
    )


# -- the command line ---------------------------------------------------------------------------


def _command_values(argv: list[str], settings: list[Setting]) -> dict[str, Any]:
    """{flag or key: value} of the options a command line gives its script (the words after
    it): ``--epochs 20``, ``--lr=3e-4``, ``trainer.max_steps=500``; a number as a number, any
    other value as its text, a switch as None (a flag with no value after it, or one the
    script declares with a bool default)."""
    switches = _switches(settings)
    words = _script_words(argv)
    found: dict[str, Any] = {}
    index = 0
    while index < len(words):
        word, index = words[index], index + 1
        name, equals, text = word.partition("=")
        if equals and name.lstrip("-"):
            found[name] = _word_value(text)
        elif _is_flag(word):
            takes_value = word not in switches and index < len(words)
            value = words[index] if takes_value and not _is_flag(words[index]) else None
            found[word] = _word_value(value) if value is not None else None
            index += value is not None
    return found


def _script_words(argv: list[str]) -> list[str]:
    """The words after the script (after the program where no ``.py`` word names one)."""
    script = script_of(argv)
    return argv[argv.index(script) + 1 :] if script in argv else argv[1:]


def _is_flag(word: str) -> bool:
    return word.startswith("-") and word.strip("-") != "" and number_in(word) is None


def _word_value(text: str) -> Any:
    number = number_in(text)
    return number if number is not None else text


def _switches(settings: list[Setting]) -> set[str]:
    """The flags, as a command line may spell them, of the options whose default is a bool:
    they take no value after them."""
    switch = {_key(s) for s in settings if s.kind == "option" and isinstance(s.value, bool)}
    return {spelled for spelled, key in _declared(settings).items() if key in switch}


def _applied(settings: list[Setting], given: dict[str, Any]) -> list[Setting]:
    """``settings`` with the values ``given`` by the command line in place of the defaults of
    the same option, and the options the script does not declare after them."""
    declared = _declared(settings)
    by_key = {declared.get(name, name): value for name, value in given.items()}
    used = []
    for setting in settings:
        key = _key(setting)
        if setting.kind == "option" and key in by_key:
            used.append(replace(setting, value=_given_value(setting.value, by_key.pop(key))))
        else:
            used.append(setting)
    return used + [_undeclared(key, value) for key, value in by_key.items()]


def _given_value(default: Any, given: Any) -> Any:
    """A switch named with no value turns its default over (``store_false``: False)."""
    if given is not None:
        return given
    return not default if isinstance(default, bool) else True


def _undeclared(key: str, value: Any) -> Setting:
    """An option the script's code does not declare (a Hydra key, a click option, an option
    read by hand): named as argparse would name it, its flag where it has one."""
    flag = key if key.startswith("-") else ""
    name = option_dest((key,)) if flag else key  # trainer.max_steps stays as it is written
    return Setting(name, _given_value(None, value), "option", 0, flag)


def _declared(settings: list[Setting]) -> dict[str, str]:
    """{a flag as a command line may spell it: the option's key}: its flag, and its dest
    dashed or not (``--n-features`` and ``--n_features`` are the same option)."""
    found = {}
    for setting in settings:
        if setting.kind == "option" and setting.flag:
            found[setting.flag] = setting.flag
            found[f"--{setting.name}"] = setting.flag
            found[f"--{setting.name.replace('_', '-')}"] = setting.flag
    return found


# -- the code ------------------------------------------------------------------------------------


def _file_changes(root: Path, base: str, commit: str, own_folder: str) -> list[FileChange]:
    output = git_output(root, "diff", "--numstat", "-z", "--no-renames", base, commit, "--")
    changes = []
    for path, added, removed in numstat(output or ""):
        if is_experiment_code(path, own_folder):
            functions = _functions(root, base, commit, path) if path.endswith(".py") else ()
            changes.append(FileChange(path, added, removed, functions))
    return changes


def _functions(root: Path, base: str, commit: str, path: str) -> tuple[str, ...]:
    before, after = committed_text(root, base, path), committed_text(root, commit, path)
    return changed_definitions(before, after)


def _only_settings(base: _Ran, ran: _Ran, settings: list[SettingChange]) -> bool:
    """Whether all the script's change is the settings already listed: said once, as settings."""
    if base.script != ran.script or not any(s.where == "code" for s in settings):
        return False
    skeleton = without_setting_values(ran.code)
    return skeleton is not None and skeleton == without_setting_values(base.code)


def _relative(root: Path, folder: Path) -> str:
    """``folder`` relative to the project, as git names paths; '' when it lies outside."""
    try:
        return folder.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return ""
