"""aider's model, set up by labtui: offline metadata, limits, streaming, billing, failures.

This room holds everything about the model aider calls:

- registering it with litellm and aider without the network (:func:`prepare_offline_litellm`,
  :func:`register_with_aider`) and building aider's ``Model`` with labtui's limits
  (:func:`make_model`), in the edit format configured or aider's choice
  (:func:`choose_edit_format`);
- every completion streamed under labtui's inactivity limits (:func:`stream_completions`) and
  retried by labtui's one policy instead of aider's own loop (:func:`retry_model_calls`); what a
  failed call means is ``core.llm.failures.final_error``, its price ``core.llm.litellm_setup``;
- aider's code fence chosen from the edited files only (:func:`fence_from_editable_files`) and
  the texts aider itself sends (:func:`aider_prompt_texts`).

aider is imported inside the functions, and litellm reached through ``load_litellm``: importing
this module stays cheap.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..events import AgentChunk, Event, Notice
from ..llm.failures import model_retry_policy
from ..llm.litellm_setup import api_key_for, load_litellm, prepare_litellm, register_model
from ..llm.local_server import ready_spec
from ..llm.server_idle import abandons_request, note_abandoned, wait_for_abandoned
from ..llm.streaming import InactivityTimeout, Limits, consume_stream
from ..settings.config import ModelSpec
from .aider_types import AiderCoder, AiderModel


def prepare_offline_litellm(spec: ModelSpec) -> None:
    """Offline-safe litellm: local price map, our model registered (core/llm/client.py does the work)."""
    # Belt and braces: litellm fetches its price map over the network unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    prepare_litellm()
    register_model(spec)


def _model_metadata(spec: ModelSpec) -> dict[str, Any]:
    """aider's metadata for ``spec``: litellm's entry (core/llm/client.py registers unknown models with
    labtui.toml's prices first), else a minimal chat entry.

    aider looks every model up in its own metadata first and otherwise downloads litellm's price
    list (5 s timeout) on each Model(...); registering the entry keeps it offline and quiet.
    """
    litellm = load_litellm()
    try:
        info = {k: v for k, v in dict(litellm.get_model_info(spec.name)).items() if v is not None}
    except Exception:
        info = {}
    provider = spec.name.split("/", 1)[0] if "/" in spec.name else "openai"
    info.setdefault("litellm_provider", provider)
    info.setdefault("mode", "chat")
    return info


def register_with_aider(spec: ModelSpec, state_dir: Path) -> None:
    from aider.models import register_litellm_models  # noqa: PLC0415 -- aider takes ~1.5 s to import; only an edit needs it

    path = state_dir / "model-metadata.json"
    path.write_text(json.dumps({spec.name: _model_metadata(spec)}, default=str), encoding="utf-8")
    register_litellm_models([str(path)])


def valid_edit_formats() -> list[str]:
    from aider import coders  # noqa: PLC0415 -- aider takes ~1.5 s to import; only an edit needs it

    return sorted({str(c.edit_format) for c in coders.__all__ if getattr(c, "edit_format", None)})


def choose_edit_format(explicit: str, aider_choice: str | None) -> str:
    """The configured format; else aider's choice for the model (``whole`` for models it does
    not know: small local models fail ``diff`` but manage ``whole``)."""
    if explicit:
        formats = valid_edit_formats()
        if explicit not in formats:
            raise ConfigError(
                f"unknown aider edit format {explicit!r}",
                f"set [models] edit_format to one of: {', '.join(formats)} (or leave it empty)",
            )
        return explicit
    return aider_choice or "whole"


def make_model(spec: ModelSpec, max_tokens: int, limits: Limits) -> AiderModel:
    from aider.models import Model  # noqa: PLC0415 -- aider takes ~1.5 s to import; only an edit needs it

    # The same name for weak and editor models: aider would otherwise build (and look up over
    # the network) a second model for commit messages we never let it write.
    model = Model(spec.name, weak_model=spec.name, editor_model=spec.name)
    params: dict[str, Any] = dict(model.extra_params or {})
    params["max_tokens"] = max_tokens  # a looping small model otherwise runs to its context end
    # Every call streams (stream_completions); the HTTP timeout is only the watchdog's backstop.
    params["timeout"] = limits.http_timeout_s
    params["stream_options"] = {"include_usage": True}  # the usage aider bills, in the last chunk
    params["num_retries"] = 0  # labtui retries (retry_model_calls): no second layer in litellm
    if spec.api_base:
        params["api_base"] = spec.api_base
    if api_key := api_key_for(spec):
        params["api_key"] = api_key
    model.extra_params = params  # aider passes these straight to litellm.completion
    return model


# A whole-file reply repeats every file it edits: code runs about 3.6 characters a token
# (Qwen2.5-Coder's tokenizer on the templates); 3 keeps room, and the reply's prose gets its own.
WHOLE_FILE_CHARS_PER_TOKEN = 3.0
WHOLE_FILE_PROSE_TOKENS = 512
WHOLE_FILE_MAX_TOKENS = 8192  # what a local server's 16k context can answer after the prompt


def whole_file_reply_tokens(files: list[Path], floor: int) -> int:
    """The reply budget of a whole-file edit of ``files``: room for each of them written out
    again, at least ``floor`` ([llm] max_tokens), at most WHOLE_FILE_MAX_TOKENS unless the floor
    is higher. With 4,096 tokens the 1.5B model's copy of the diffusion template's 446-line
    experiment.py was cut at line 330, and refused for the run contract its lost tail held."""
    chars = sum(len(f.read_text(encoding="utf-8", errors="replace")) for f in files if f.is_file())
    needed = int(chars / WHOLE_FILE_CHARS_PER_TOKEN) + WHOLE_FILE_PROSE_TOKENS
    return max(floor, min(needed, WHOLE_FILE_MAX_TOKENS))


def size_whole_file_replies(
    model: AiderModel, files: list[Path], floor: int, notice: Callable[[str], None]
) -> None:
    """Give a whole-file edit's replies room for ``files`` (whole_file_reply_tokens), said when
    that is over [llm] max_tokens."""
    budget = whole_file_reply_tokens(files, floor)
    model.extra_params["max_tokens"] = budget
    if budget > floor:
        names = ", ".join(f.name for f in files)
        notice(
            f"a whole-file reply repeats {names}: up to {budget} tokens allowed for it "
            f"([llm] max_tokens is {floor})"
        )


def fence_from_editable_files(aider_coder: AiderCoder) -> None:
    """Pick aider's code fence from the files being edited, ignoring read-only context.

    aider avoids any fence that occurs in *any* file of the chat, so one ``` in read-only notes
    switches every reply to ```` — and models, small ones above all, answer with ``` anyway
    (aider's own note on its fences: issue #2879), which aider then cannot parse. A read-only file
    shown in a ``` fence it contains only blurs its display; the edit format stays parseable.
    """

    def choose_fence() -> None:
        lines = [
            line
            for _name, content in aider_coder.get_abs_fnames_content()
            for line in content.splitlines()
        ]
        for fence in aider_coder.fences:
            if not any(line.startswith(fence) for line in lines):
                aider_coder.fence = fence
                return
        aider_coder.fence = aider_coder.fences[0]

    aider_coder.choose_fence = choose_fence  # aider calls it before every message


def chat_file_named(name: str, chat_files: list[str]) -> str | None:
    """The one chat file that the file name line ``name`` mentions among other words, or None.

    aider's ``whole`` format takes the line above a fence as the file's name; Qwen2.5-Coder-1.5B
    wrote "**Changes to `experiment.py`:**" above the whole file, which aider read as a new file
    called "Changes to `experiment.py" (refused: nothing was edited). A name mentioned as a word
    of its own, and only one chat file so mentioned, is certain enough."""
    if name in chat_files:
        return None
    mentioned = [
        chat_file
        for chat_file in chat_files
        if re.search(rf"(?<![\w./-]){re.escape(chat_file)}(?![\w/-])", name)
    ]
    return mentioned[0] if len(mentioned) == 1 else None


def copies_the_example(content: str, examples: list[str]) -> bool:
    """Whether a block's ``content`` is aider's own format example, word for word
    (``examples``: the example messages as aider's prompts hold them, braces doubled)."""
    text = content.strip()
    return bool(text) and any(
        text in example.replace("{{", "{").replace("}}", "}") for example in examples
    )


def tidy_whole_file_edits(aider_coder: AiderCoder) -> None:
    """What a small model wraps its whole-format answer in, taken off before labtui judges it: a
    block that is aider's format example word for word under a name that is no chat file
    (Qwen2.5-Coder-1.5B pasted ``show_greeting.py`` above its whole experiment.py, and the
    placeholder name refused the reply) is dropped, and a block under a line of prose that names
    one chat file is that file's new text (:func:`chat_file_named`), unless the reply also gave
    that file a block of its own. Only for the ``whole`` format: the others name files inside
    their blocks."""
    if aider_coder.edit_format != "whole":
        return
    parsed = aider_coder.get_edits
    examples = [m["content"] for m in aider_coder.gpt_prompts.example_messages]

    def get_edits(mode: str = "update") -> Any:
        edits = parsed(mode=mode)
        if mode == "diff":  # aider's live display, not the edits
            return edits
        chat_files = aider_coder.get_inchat_relative_files()
        edits = [
            (fname, source, lines)
            for fname, source, lines in edits
            if fname in chat_files or not copies_the_example("".join(lines), examples)
        ]
        named = {fname for fname, _source, _lines in edits}
        renamed = []
        for fname, source, lines in edits:
            target = chat_file_named(fname, chat_files)
            if target is not None and target not in named:
                named.add(target)
                fname = target
            renamed.append((fname, source, lines))
        return renamed

    aider_coder.get_edits = get_edits


def stream_completions(
    model: AiderModel, spec: ModelSpec, limits: Limits, emit: Callable[[Event], None], stage: str
) -> list[tuple[float, float]]:
    """Make every completion aider asks for a streamed one, read under labtui's inactivity limits.

    aider itself runs unstreamed (its streaming writes raw chunks to stdout, which would tear
    the TUI), and an unstreamed call can only have a total timeout, which cuts off a slow local
    model that is still writing. So the model's ``send_completion`` asks litellm for a stream,
    reads it with core/llm/streaming.py, shows each piece as an AgentChunk (role "aider") and hands
    aider a non-streamed response rebuilt from the chunks: aider's own code path, and the usage
    it bills, stay the non-streaming ones.

    A call that goes quiet too long is given up: the Notice says which limit, and the call fails
    with a litellm Timeout, which labtui's policy retries (:func:`retry_model_calls`); that retry
    (like any next call) first waits until a local server has finished the abandoned request.
    Returns the list that the timing ``(first_token_s, seconds)`` of each completed call is
    appended to.
    """
    litellm = load_litellm()
    timings: list[tuple[float, float]] = []
    send_completion = model.send_completion

    def notice(text: str) -> None:
        emit(Notice(stage=stage, text=text))

    def show(piece: str) -> None:
        emit(AgentChunk(stage=stage, role="aider", text=piece))

    def streamed(
        messages: list[dict[str, Any]], functions: Any, stream: bool, temperature: Any = None
    ) -> tuple[Any, Any]:
        ready_spec(spec, notice)  # labtui's own model: started again if it stopped since
        wait_for_abandoned(spec.api_base, limits, notice, spec.api_key)
        sent: list[Any] = []

        def open_stream() -> Any:
            hash_object, response = send_completion(messages, functions, True, temperature)
            sent.append(hash_object)
            return response

        try:
            result = consume_stream(open_stream, limits, show, what=spec.name)
        except Exception as exc:
            if spec.api_base and abandons_request(exc):
                note_abandoned(spec.api_base)
            if not isinstance(exc, InactivityTimeout):
                raise
            notice(str(exc))
            # Exactly litellm.Timeout: aider looks its retry rule up by the exception's class.
            raise litellm.Timeout(
                message=exc.reason, model=spec.name, llm_provider=_provider_name(spec)
            ) from exc
        timings.append((result.first_token_s, result.seconds))
        response = litellm.stream_chunk_builder(result.chunks, messages=messages)
        return sent[0], response if response is not None else _empty_response(spec)

    model.send_completion = streamed
    return timings


def _provider_name(spec: ModelSpec) -> str:
    return spec.name.split("/", 1)[0] if "/" in spec.name else "openai"


def _empty_response(spec: ModelSpec) -> Any:
    """What a stream without a single chunk amounts to: an empty reply, which aider reports."""
    litellm = load_litellm()
    return litellm.ModelResponse(
        model=spec.name,
        choices=[
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ""}}
        ],
    )


class _GaveUp(Exception):
    """Ends aider's turn: a plain exception, which aider reports and does not retry."""


def retry_model_calls(
    model: AiderModel, spec: ModelSpec, retries: int, notice: Callable[[str], None]
) -> list[BaseException]:
    """aider's model calls retried by labtui's policy, the one every model call has
    (``model_retry_policy``: backoff, Retry-After, a notice per retry), instead of aider's own
    loop; a call that fails for good ends aider's turn. Returns the list its final failures
    go to, which the coder explains."""
    failures: list[BaseException] = []
    send_completion = model.send_completion

    def retried(*args: Any, **kwargs: Any) -> Any:
        try:
            return model_retry_policy(spec, retries, notice).call(
                lambda: send_completion(*args, **kwargs)
            )
        except Exception as exc:
            failures.append(exc)
            raise _GaveUp(f"gave up on the model call: {exc}") from exc

    model.send_completion = retried
    return failures


def aider_prompt_texts() -> list[str]:
    """Every instruction and example aider itself sends (all edit formats): a small model copies
    them back as its explanation, and the notebook must keep only the model's own words."""
    import aider.coders  # noqa: PLC0415 -- aider takes ~1.5 s to import; only an edit needs it

    texts: list[str] = []
    for module_info in pkgutil.iter_modules(aider.coders.__path__):
        if not module_info.name.endswith("_prompts"):
            continue
        module = importlib.import_module(f"aider.coders.{module_info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and value.__name__.endswith("Prompts"):
                texts += _strings_of(vars(value))
    return texts


def _strings_of(namespace: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for value in namespace.values():
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            found += [m["content"] for m in value if isinstance(m, dict) and "content" in m]
    return found
