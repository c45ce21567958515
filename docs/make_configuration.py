"""Rewrite the field reference of docs/configuration.md from the code: every section of
``labtui.toml`` (core/settings/*_sections.py, in the order core/settings/config.py's ``Config``
holds them) with its docstring, and every field with its default and its description. The page's
text above the marker is written by hand and kept; tests/test_docs.py fails when the reference
below it is not what this script writes now.

    .venv/bin/python docs/make_configuration.py
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "configuration.md"
MARKER = "<!-- Below: written by docs/make_configuration.py from the code; run it, do not edit. -->"


def _prose(text: str) -> str:
    """A docstring or a description as Markdown: reST's double backticks single, lines joined."""
    text = re.sub(r"``(.+?)``", r"`\1`", text, flags=re.DOTALL)
    paragraphs = re.split(r"\n\s*\n", inspect.cleandoc(text))
    text = "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())
    # outside code, <name> would be read as an HTML tag and vanish
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(
        part if part.startswith("`") else re.sub(r"<(?=[A-Za-z/])", "&lt;", part) for part in parts
    )


def reference() -> str:
    """The generated part of the page, from the marker on."""
    from labtui.core.settings.config import Config, toml_value  # noqa: PLC0415

    names = list(Config.model_fields)
    lines = [MARKER, "", "## Every section and field", ""]
    lines.append(" · ".join(f"[[{name}]](#{name})" for name in names))
    lines.append("")
    for name in names:
        section = Config.model_fields[name].annotation
        lines += [f"### [{name}]", ""]
        if section.__doc__:
            lines += [_prose(section.__doc__), ""]
        for key, field in section.model_fields.items():
            default = toml_value(field.get_default(call_default_factory=True))
            lines.append(f"- `{key} = {default}`: {_prose(field.description or '')}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def page_now() -> str:
    """The page as this script would write it: its hand-written part, then the reference."""
    text = PAGE.read_text(encoding="utf-8")
    head = text.split(MARKER, 1)[0]
    return head + reference()


def main() -> int:
    new = page_now()
    if new == PAGE.read_text(encoding="utf-8"):
        print(f"{PAGE.name}: up to date")
        return 0
    PAGE.write_text(new, encoding="utf-8")
    print(f"{PAGE.name}: rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
