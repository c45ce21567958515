"""A fresh aider chat for one edit, set up as labtui needs it: the model made and registered
offline, every call streamed and retried by labtui's policy, labtui's IO (``EventIO``) answering
for the terminal, and no git, shell, web, repo map, lint or reflections of aider's own.
``core.coding.coder`` opens one per edit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..events import Event
from ..llm.streaming import Limits
from ..settings.config import ModelSpec
from ..workspace.project import Project
from .aider_io import NoAnalytics, event_io_class
from .aider_model import (
    choose_edit_format,
    fence_from_editable_files,
    make_model,
    prepare_offline_litellm,
    register_with_aider,
    retry_model_calls,
    size_whole_file_replies,
    stream_completions,
    tidy_whole_file_edits,
)

AIDER_STATE = "aider"  # under <project>/.labtui/: aider's chat log and input history


@dataclass(frozen=True)
class AiderChat:
    """One open chat: labtui's IO, aider's coder, the list its model calls' final failures go
    to, and the (first_token_s, seconds) of each completed call, appended as they come."""

    io: Any
    coder: Any
    failures: list[BaseException]
    timings: list[tuple[float, float]]


def open_chat(
    project: Project,
    spec: ModelSpec,
    targets: list[Path],
    readonly: list[Path],
    *,
    allowed: Callable[[Path], bool],
    emit: Callable[[Event], None],
    stage: str,
    edit_format: str,
    max_tokens: int,
    notice: Callable[[str], None],
) -> AiderChat:
    """A fresh aider chat on the targets, with labtui's IO and no git, shell or web; aider may
    write where ``allowed`` says."""
    state_dir = project.state_dir / AIDER_STATE
    state_dir.mkdir(parents=True, exist_ok=True)
    prepare_offline_litellm(spec)
    register_with_aider(spec, state_dir)
    limits = Limits.of(project.config.llm)
    model = make_model(spec, max_tokens, limits)
    timings = stream_completions(model, spec, limits, emit, stage)
    edit_format = choose_edit_format(edit_format, model.edit_format)
    if edit_format == "whole":
        size_whole_file_replies(model, targets, max_tokens, notice)
    event_io = event_io_class()(
        emit=emit,
        stage=stage,
        root=project.root,
        state_dir=state_dir,
        allowed=allowed,
    )
    from aider.coders import Coder as AiderCoder  # noqa: PLC0415 -- aider takes ~1.5 s to import; only an edit needs it

    aider_coder = AiderCoder.create(
        main_model=model,
        edit_format=edit_format,
        io=event_io,
        fnames=[str(p) for p in targets],
        read_only_fnames=[str(p) for p in readonly],
        use_git=False,  # labtui commits; aider must never touch the repository
        auto_commits=False,
        dirty_commits=False,
        # Streaming without aider's "pretty" console writes raw chunks to sys.stdout, which
        # would tear the TUI: aider runs unstreamed, and stream_completions streams below
        # it (AgentChunk events as the reply comes, then the whole AgentMessage).
        stream=False,
        map_tokens=0,  # no repo map: the caller chooses exactly which files aider sees
        auto_lint=False,
        auto_test=False,
        suggest_shell_commands=False,
        detect_urls=False,
        analytics=NoAnalytics(),
    )
    # Without git aider roots the chat at the files' common folder; the model must name
    # files relative to the project (experiment.py, latex/template.tex) instead.
    aider_coder.root = str(project.root)
    aider_coder.abs_root_path_cache = {}
    # labtui's own retry (with aider's complaint quoted) replaces aider's reflections, so
    # every model call is one that edit() counts and bills.
    aider_coder.max_reflections = 0
    # Nor may aider summarise the chat in a thread of its own: an unbilled, uncounted call
    # that costs minutes on a slow local model, for a chat that lives one edit.
    aider_coder.summarize_start = lambda: None
    fence_from_editable_files(aider_coder)
    tidy_whole_file_edits(aider_coder)
    failures = retry_model_calls(model, spec, project.config.llm.retries, notice)
    return AiderChat(event_io, aider_coder, failures, timings)
