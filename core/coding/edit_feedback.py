"""Why an aider attempt did not land, and what the model is told for the one more try it gets.

:func:`attempt_problem` says why an attempt changed nothing or only part (labtui's refusals,
aider's complaint, an empty reply), for ``EditResult.error`` and the researcher. :class:`~labtui.core.coding.coder.Coder` then asks again with :func:`retry_prompt`: that
problem quoted, or each reason labtui refused the reply (core/coding/edit_guard.py) with what to do
instead, and the edit format once more in plain words (:data:`FORMAT_REMINDERS`) in aider's fence.
:func:`explanation_of` keeps what a reply says besides its edits, for the notebook.
"""

from __future__ import annotations

import re

from .aider_types import AiderCoder, EditEvents
from .edit_guard import EditPolicy, Problem

MAX_QUOTE_CHARS = 2000  # how much of aider's complaint a retry prompt quotes

# The edit format once more, in plain words, for the retry prompt ({open}/{close}: aider's fence).
FORMAT_REMINDERS = {
    "whole": (
        "For each file you change, write the file's path alone on one line, then a line "
        "{open}, then the complete new content of the file, then a line {close}. Do not leave "
        "anything out."
    ),
    "diff": (
        "Use *SEARCH/REPLACE* blocks: the file's path alone on one line, then {open}, "
        "<<<<<<< SEARCH, lines copied exactly from the current file, =======, the new lines, "
        ">>>>>>> REPLACE, {close}."
    ),
    "diff-fenced": (
        "Use *SEARCH/REPLACE* blocks inside {open} ... {close}: the file's path on the first line "
        "inside the fence, then <<<<<<< SEARCH, lines copied exactly from the current file, "
        "=======, the new lines, >>>>>>> REPLACE."
    ),
    "udiff": "Use a unified diff (--- path / +++ path / @@ ... @@ hunks) for each change.",
}


def attempt_problem(
    aider_coder: AiderCoder,
    event_io: EditEvents,
    reply: str,
    names: str,
    changed: bool,
    refused: list[Problem] | None = None,
) -> str:
    """Why this attempt did not (fully) apply: a sentence first, aider's details after.

    '' when everything applied. ``names``: the files the step edits, comma-separated.
    """
    if refused:
        reasons = "; ".join(f"it {p.reason}" for p in refused)
        return f"labtui refused the reply, so no file was changed: {reasons}"
    complaint = (aider_coder.reflected_message or "").strip()
    declined = sorted(set(event_io.refused))  # files labtui did not let aider write
    parts = []
    if complaint:
        headline = complaint.splitlines()[0].lstrip("# ").strip()
        verb = "applied only part of the edit" if changed else "could not apply the edit"
        parts.append(f"aider {verb} ({headline}):\n{complaint}")
    if declined:
        parts.append(f"labtui refused edits outside the editable files: {', '.join(declined)}")
    if changed:
        return "\n".join(parts)
    if not reply.strip():
        parts.append("the model returned an empty reply")
    elif aider_coder.aider_edited_files and not complaint:
        parts.append("the model's edit left the file content exactly as it was")
    elif not complaint and not declined:
        parts.append(
            f"the reply contained no edit of {names} in aider's {aider_coder.edit_format!r} format"
        )
    if not complaint:  # aider's complaint already says what its generic errors would
        parts += event_io.errors
    return "\n".join(parts)


def retry_prompt(
    names: str,
    aider_coder: AiderCoder,
    problem: str,
    refused: list[Problem] | None = None,
    policy: EditPolicy | None = None,
) -> str:
    """The next attempt's message after one that changed nothing: aider's complaint quoted
    (``problem``), or each refusal explained, and the edit format once more in plain words.

    ``names``: the files the step edits, comma-separated, as the model should name them.
    """
    quoted = problem[:MAX_QUOTE_CHARS] + ("\n[...]" if len(problem) > MAX_QUOTE_CHARS else "")
    reminder = FORMAT_REMINDERS.get(
        aider_coder.edit_format, "Use exactly the edit format the system prompt describes."
    ).format(open=aider_coder.fence[0], close=aider_coder.fence[1])
    if refused:
        return _refusal_prompt(names, refused, policy or EditPolicy(), reminder)
    return (
        f"Your previous reply did not change {names}. What went wrong:\n\n{quoted}\n\n"
        f"Please make the requested change now and return the complete edit in the required "
        f"format. {reminder}"
    )


def _refusal_prompt(names: str, refused: list[Problem], policy: EditPolicy, reminder: str) -> str:
    """The retry after a refused reply: each problem with its numbers, then what to do."""
    kinds = {p.kind for p in refused}
    lines = [f"labtui refused your previous reply, so {names} is unchanged:"]
    lines += [f"- Your reply {p.reason}." for p in refused]
    lines.append("")
    if kinds & {"shrink", "elision"}:
        lines.append(
            f"Return the COMPLETE content of {names}: every line of the current file, changed "
            "only where the request asks. Never leave code out, and never stand in for it "
            'with "..." or comments such as "rest of the code" or "unchanged".'
        )
    if kinds & {"syntax", "contract"}:
        lines.append(
            "Keep the file working: it must stay valid and keep everything the list above "
            "says your reply would drop."
        )
    if kinds & {"placeholder", "new-file", "other-file", "place"}:
        may_create = (
            f"New files may only match: {', '.join(policy.create)}."
            if policy.create
            else "Create no other file."
        )
        lines.append(
            f"Edit only {names}, named exactly so. {may_create} Do not copy the file names "
            "of the format example (such as path/to/filename.js or show_greeting.py)."
        )
    lines.append(f"Please make the requested change now in the required format. {reminder}")
    return "\n".join(lines)


_FENCE = re.compile(r"^(`{3,}|~{3,})")


def explanation_of(reply: str) -> str:
    """Strip every fenced block (aider's whole, diff and udiff edits are all fenced) and the file
    name line aider puts above it; the code itself lives in the commit."""
    kept: list[str] = []
    closing = ""
    for line in reply.splitlines():
        fence = _FENCE.match(line.strip())
        if closing:
            if fence and line.strip() == closing:
                closing = ""
            continue
        if fence:
            closing = fence.group(1)
            if kept and _looks_like_path(kept[-1]):
                kept.pop()
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def _looks_like_path(line: str) -> bool:
    text = line.strip()
    return bool(text) and " " not in text and ("." in text or "/" in text)
