"""The README and the pages of docs/ say only what is so: every relative link points at a file
that exists (and, into a page, at a heading it has), every page of docs/ is linked from the README,
the README stays short enough to read in five minutes, every path of the repository written in
them exists, every `labtui …` command shown names a real command with options it has, every
`[section] field` named is one labtui.toml has, and the configuration reference is the one
docs/make_configuration.py writes from the code. Read in-process, with labtui's own parser: a
second or so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
from functools import cache
from pathlib import Path

import pytest

from labtui.core.settings.config import Config
from labtui.tui.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 250

# `[llm] timeout_s` is named as the setting an old labtui.toml may still have (it loads)
GONE_FIELDS = {("llm", "timeout_s")}


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def prose_and_code(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """The page's lines outside fenced code blocks, and those inside, each with its number."""
    prose: list[tuple[int, str]] = []
    code: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        (code if fenced else prose).append((number, line))
    return prose, code


def code_spans(line: str) -> list[str]:
    return re.findall(r"`([^`]+)`", line)


def links(page: Path) -> list[tuple[int, str]]:
    """Each link and image target of the page, outside code."""
    prose, _ = prose_and_code(page.read_text(encoding="utf-8"))
    found = []
    for number, line in prose:
        line = re.sub(r"`[^`]*`", "", line)
        for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
            found.append((number, target))
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`|\*\*|\]\([^)]*\)", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    prose, _ = prose_and_code(page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    result = set()
    for _number, line in prose:
        heading = re.match(r"#{1,6}\s+(.*)", line)
        if not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return frozenset(result)


@pytest.mark.parametrize("page", pages(), ids=_name)
def test_every_relative_link_points_at_what_exists(page):
    broken = []
    for number, target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        where = (page.parent / path_part).resolve() if path_part else page
        if not where.exists():
            broken.append(f"{_name(page)}:{number}: {target} (no such file)")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{_name(page)}:{number}: {target} (no heading #{anchor} there)")
    assert not broken, "\n".join(broken)


def test_every_page_of_docs_is_linked_from_the_readme():
    linked = {
        (README.parent / target.partition("#")[0]).resolve()
        for _number, target in links(README)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)
    }
    unlinked = [_name(page) for page in sorted(DOCS.glob("*.md")) if page.resolve() not in linked]
    assert not unlinked, f"add a line to the README's Documentation list for: {unlinked}"


def test_the_readme_is_read_in_five_minutes():
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move a topic to docs/"
    )


# A path of the repository as the pages write it, in code or in prose: core/llm/server_idle.py,
# tests/bench/, core/settings/*_sections.py (a glob: something must match)
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:core|tui|tests|prompts|templates|screenshots|docs|\.ci)/[\w./*-]*)"
)


@pytest.mark.parametrize("page", pages(), ids=_name)
def test_every_path_of_the_repository_named_exists(page):
    missing = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for path in REPO_PATH.findall(line):
            path = path.rstrip(".")
            if "*" in path:
                if not any(ROOT.glob(path)):
                    missing.append(f"{_name(page)}:{number}: {path} (matches nothing)")
            elif not (ROOT / path).exists():
                missing.append(f"{_name(page)}:{number}: {path}")
    assert not missing, "\n".join(missing)


@cache
def parser():
    return build_parser()


def subparsers() -> dict:
    action = parser()._subparsers._group_actions[0]
    return action.choices


def shown_commands(page: Path) -> list[tuple[int, str, list[str]]]:
    """Each `labtui …` the page shows: lines of its code blocks (`labtui …`, `$ labtui …`), and
    code spans that begin with it (after any VAR=value), as (line, text, words). A code block's
    description after two spaces, or a comment, is not part of the command. `bash .ci/demo …`
    passes its options to `labtui run`."""
    prose, code = prose_and_code(page.read_text(encoding="utf-8"))
    found = []
    for number, line in code:
        command = re.split(r"\s{2,}|\s#", line.strip().removeprefix("$ "))[0]
        command = re.sub(r"^bash \.ci/demo\b", "labtui run", command)
        if command == "labtui" or command.startswith("labtui "):
            found.append((number, command, command.split()[1:]))
    for number, line in prose:
        for span in code_spans(line):
            words = span.split()
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
                words = words[1:]
            if words and words[0] == "labtui":
                found.append((number, span, words[1:]))
    return found


def _placeholder(word: str) -> bool:
    """DIR, PAPER.pdf, FILE..., "...", a value: not a word the parser must know."""
    return not re.fullmatch(r"[a-z][a-z-]*", word)


def command_problems(words: list[str]) -> list[str]:
    """What the parser does not know of a command shown: its name, an option, a choice."""
    words = [w for w in re.split(r"[\s\[\]|]+", " ".join(words)) if w]
    main_options = parser()._option_string_actions
    if not words or words[0].startswith("-"):
        return [
            f"labtui has no option {w}"
            for w in words
            if w.startswith("-") and w.split("=")[0] not in main_options
        ]
    name, rest = words[0], words[1:]
    if name == "COMMAND":  # `labtui COMMAND --help`
        return []
    sub = subparsers().get(name)
    if sub is None:
        return [f"no command {name!r} (labtui has {', '.join(subparsers())})"]
    problems = []
    options = sub._option_string_actions
    choices = [a.choices for a in sub._positionals._group_actions if a.choices]
    for word in rest:
        if word.startswith("-"):
            if word.split("=")[0] not in options:
                problems.append(f"labtui {name} has no option {word}")
        elif choices and not _placeholder(word) and word not in choices[0]:
            problems.append(f"labtui {name}: {word!r} is none of {sorted(choices[0])}")
    return problems


@pytest.mark.parametrize("page", pages(), ids=_name)
def test_every_command_shown_is_one_labtui_has(page):
    problems = [
        f"{_name(page)}:{number}: `{text}`: {problem}"
        for number, text, words in shown_commands(page)
        for problem in command_problems(words)
    ]
    assert not problems, "\n".join(problems)


def test_every_command_the_readme_lists_answers_help():
    named = {
        words[0] for _n, _t, words in shown_commands(README) if words and words[0] in subparsers()
    }
    assert len(named) == len(subparsers()), (
        f"the README's commands table lacks {sorted(set(subparsers()) - named)}"
    )
    for name in sorted(named):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
            parser().parse_args([name, "--help"])
        assert exit_.value.code == 0, name
        assert f"labtui {name}" in out.getvalue()


@cache
def sections() -> dict[str, frozenset[str]]:
    return {
        name: frozenset(field.annotation.model_fields)
        for name, field in Config.model_fields.items()
    }


@pytest.mark.parametrize("page", pages(), ids=_name)
def test_every_setting_named_is_one_labtui_toml_has(page):
    """`[limits] run_timeout_s`, `[climb] settings = [...]`, LABTUI_LIMITS__RUN_TIMEOUT_S."""
    unknown = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        named = re.findall(r"\[([a-z]+)\] ([a-z][a-z0-9_]*)\b(?!\()", line)
        named += [
            (section.lower(), field.lower())
            for section, field in re.findall(r"LABTUI_([A-Z]+)__([A-Z][A-Z0-9_]*)", line)
        ]
        for section, field in named:
            if section not in sections():
                continue  # [notify] on, a word in brackets: only the sections labtui has
            if field not in sections()[section] and (section, field) not in GONE_FIELDS:
                unknown.append(f"{_name(page)}:{number}: [{section}] {field}")
    assert not unknown, "\n".join(unknown)


def test_the_configuration_reference_is_the_codes():
    spec = importlib.util.spec_from_file_location(
        "make_configuration", DOCS / "make_configuration.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.MARKER in module.PAGE.read_text(encoding="utf-8")
    assert module.page_now() == module.PAGE.read_text(encoding="utf-8"), (
        "docs/configuration.md's reference is not the code's: run "
        ".venv/bin/python docs/make_configuration.py"
    )
