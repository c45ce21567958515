"""The aider bridge, with real aider edits against the scripted OpenAI-compatible server."""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.recorded_replies import replies
from support.scripted_llm import Fault, ScriptedLLMServer

from labtui.core.coding.aider_io import EventIO, file_question_verdict, may_write
from labtui.core.coding.aider_model import (
    chat_file_named,
    choose_edit_format,
    copies_the_example,
    whole_file_reply_tokens,
)
from labtui.core.coding.coder import Coder, EditResult
from labtui.core.coding.edit_guard import EditPolicy
from labtui.core.errors import ConfigError, LabtuiError, LLMError
from labtui.core.events import AgentMessage, CodeDiff, CostUpdate, Event, Notice, Refused
from labtui.core.llm.budget import Ledger
from labtui.core.settings.config import ModelSpec
from labtui.core.workspace.project import Project

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
MODEL = "scripted-coder"  # as the server sees it; labtui calls it openai/scripted-coder

EXPERIMENT = """\
import argparse

LEARNING_RATE = 0.1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="run_0")
    print(parser.parse_args().out_dir, LEARNING_RATE)


if __name__ == "__main__":
    main()
"""

EDITED = EXPERIMENT.replace("LEARNING_RATE = 0.1", "LEARNING_RATE = 0.05  # smaller steps")

LATEX = r"""\documentclass{article}
\begin{filecontents}{references.bib}
@article{a, title={A}, author={B}, year={2020}, journal={C}}
\end{filecontents}
\begin{document}
Hello \cite{a}.
\bibliography{references}
\bibliographystyle{plain}
\end{document}
"""


def whole(path: str, content: str, preamble: str = "Here is the updated file.") -> str:
    """A reply in aider's `whole` format: the path alone on a line, then the fenced file."""
    return f"{preamble}\n\n{path}\n```python\n{content}```\n"


@pytest.fixture(autouse=True)
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """aider must never read the terminal: any attempt fails the test loudly."""

    def refuse(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("aider tried to read the terminal")

    class NoStdin:
        read = readline = readlines = refuse

        def isatty(self) -> bool:
            return False

        def fileno(self) -> int:
            raise OSError("no stdin in tests")

    monkeypatch.setattr(builtins, "input", refuse)
    monkeypatch.setattr(sys, "stdin", NoStdin())


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template")
    (root / "experiment.py").write_text(EXPERIMENT)
    (root / "plot.py").write_text("print('plot')\n")
    (root / "notes.txt").write_text("Keep the learning rate small.\n")
    (root / "prompt.json").write_text(
        json.dumps({"system": "You are a researcher.", "task_description": "Tune a model."})
    )
    (root / "seed_ideas.json").write_text(
        json.dumps([{"Name": "lr", "Title": "Learning rate", "Experiment": "Try smaller ones."}])
    )
    (root / "latex").mkdir()
    (root / "latex" / "template.tex").write_text(LATEX)
    return root


@pytest.fixture
def project(tmp_path: Path, template: Path) -> Project:
    return Project.create(tmp_path / "p", template=str(template))


@pytest.fixture
def server():
    with ScriptedLLMServer() as scripted:
        yield scripted


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def make_coder(
    project: Project, server: ScriptedLLMServer, edit_format: str = "", **spec: Any
) -> tuple[Coder, Recorder, Ledger]:
    recorder = Recorder()
    ledger = Ledger(10.0, recorder)
    model = ModelSpec(name=f"openai/{MODEL}", api_base=server.url, **spec)
    coder = Coder(
        project,
        model,
        emit=recorder,
        stage="experiments",
        ledger=ledger,
        edit_format=edit_format,
        max_tokens=512,
    )
    return coder, recorder, ledger


def last_user_message(request: dict[str, Any]) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


# -- edits that land --------------------------------------------------------------------------


def test_whole_edit_changes_file_commits_and_reports(project: Project, server) -> None:
    server.script(MODEL, whole("experiment.py", EDITED))
    coder, recorder, ledger = make_coder(project, server)
    before = project.head()

    result = coder.edit(["experiment.py"], "Halve the learning rate.", commit_message="halve lr")

    assert isinstance(result, EditResult)
    assert result.changed and result.error == ""
    assert result.files == ["experiment.py"]
    assert (project.root / "experiment.py").read_text() == EDITED
    assert result.commit is not None and project.head() == result.commit.sha != before
    diff = project.diff_of(result.commit.sha)
    assert "-LEARNING_RATE = 0.1" in diff and "+LEARNING_RATE = 0.05  # smaller steps" in diff
    assert "halve lr" in project.repo.head.commit.message
    [code_diff] = recorder.of(CodeDiff)
    assert (code_diff.commit, code_diff.files, code_diff.stage) == (
        result.commit.sha,
        ["experiment.py"],
        "experiments",
    )
    assert "LEARNING_RATE = 0.05" in code_diff.diff
    replies = [m for m in recorder.of(AgentMessage) if m.role == "aider"]
    assert replies and "LEARNING_RATE = 0.05" in replies[0].text
    assert "LEARNING_RATE = 0.05" in result.reply
    [cost] = recorder.of(CostUpdate)
    assert cost.tokens_in == server.usage[MODEL]["prompt_tokens"] > 0
    assert cost.tokens_out == server.usage[MODEL]["completion_tokens"] > 0
    assert ledger.stage_totals("experiments")[:2] == (cost.tokens_in, cost.tokens_out)
    # One call in the whole format (aider does not know the model), capped at [llm] max_tokens
    # or, where more, room for the file written out again; no errors.
    [request] = server.requests
    assert request["max_tokens"] == max(512, int(len(EXPERIMENT) / 3) + 512)
    assert "*file listing*" in request["messages"][0]["content"]
    assert server.errors == []
    # aider kept its chat log under .labtui/, not in the project's tracked files.
    assert (project.root / ".labtui" / "aider" / "chat.md").is_file()
    assert not list(project.root.glob(".aider*"))
    assert project.repo.git.status("--porcelain") == ""


def test_a_block_under_a_line_of_prose_that_names_the_file_edits_that_file(
    project: Project, server
) -> None:
    # Written by hand after Qwen2.5-Coder-1.5B on moons (2026-11-28), which put "**Changes to
    # `experiment.py`:**" above its code: aider read a new file "Changes to `experiment.py",
    # labtui said no, and nothing changed. The recorded reply is replayed below.
    server.script(MODEL, whole("**Changes to `experiment.py`:**", EDITED, "To do it, I will:"))
    coder, _recorder, _ledger = make_coder(project, server)

    result = coder.edit(["experiment.py"], "Halve the learning rate.", commit_message="halve lr")

    assert result.changed and (project.root / "experiment.py").read_text() == EDITED
    assert not (project.root / "Changes to `experiment.py").exists()
    assert len(server.requests_for(MODEL)) == 1, "no re-ask"


def _moons_run_1_edit(
    project: Project, server, reply: str, name: str = "experiment.py"
) -> tuple[str, EditResult, Any]:
    """The moons template's ``name``, committed, edited by one recorded whole-file ``reply`` (no
    re-ask): the template's text, the edit's result and the events it sent."""
    moons = (TEMPLATES / "moons" / name).read_text()
    (project.root / name).write_text(moons)
    project.commit(f"the moons {name}", [name])
    server.script(MODEL, reply)
    coder, recorder, _ = make_coder(project, server, edit_format="whole")
    result = coder.edit([name], "Add run_1.", commit_message="run_1", retries=0)
    return moons, result, recorder


def test_the_real_reply_under_a_prose_name_is_judged_as_experiment_py(
    project: Project, server
) -> None:
    # Recorded (qwen15_moons_prose_name_experiments.jsonl): twelve blocks, each under "**Changes
    # to `experiment.py`:**", each a fragment of the file. Read as experiment.py, the fragment is
    # refused for what it would delete, a reason the re-ask can quote; before, aider read a new
    # file's name and the model was only told that nothing changed.
    (reply,) = replies("qwen15_moons_prose_name_experiments", "experiments")
    moons, result, _recorder = _moons_run_1_edit(project, server, reply)

    assert not result.changed and (project.root / "experiment.py").read_text() == moons
    assert result.refusals and "Changes to" not in " ".join(result.refusals)
    assert not (project.root / "Changes to `experiment.py").exists()


def test_a_verbatim_copy_of_aiders_example_beside_the_real_file_is_dropped(
    project: Project, server
) -> None:
    # Recorded (qwen15_moons_example_copy_experiments.jsonl): aider's example show_greeting.py,
    # word for word, then the whole experiment.py for run_1 (early stopping). The placeholder
    # name refused the whole reply; the example block is now dropped and experiment.py judged.
    (reply,) = replies("qwen15_moons_example_copy_experiments", "experiments")
    moons, result, _recorder = _moons_run_1_edit(project, server, reply)

    assert not any("show_greeting" in refusal for refusal in result.refusals)
    assert not (project.root / "show_greeting.py").exists()
    assert result.changed and (project.root / "experiment.py").read_text() != moons


def test_only_a_chat_file_named_alone_among_other_words_is_taken_for_the_block() -> None:
    chat = ["experiment.py", "plot.py"]
    assert chat_file_named("Changes to `experiment.py", chat) == "experiment.py"
    assert chat_file_named("The new plot.py, whole", chat) == "plot.py"
    assert chat_file_named("experiment.py", chat) is None, "aider's own name: nothing to do"
    assert chat_file_named("experiment.py and plot.py", chat) is None, "two named: unsure"
    assert chat_file_named("old_experiment.py", chat) is None
    assert chat_file_named("src/experiment.py", chat) is None
    assert chat_file_named("Then run:", chat) is None


def test_only_aiders_example_word_for_word_is_taken_for_a_copy() -> None:
    from aider.coders.wholefile_prompts import WholeFilePrompts

    examples = [m["content"] for m in WholeFilePrompts.example_messages]
    greeting = 'import sys\n\ndef greeting(name):\n    print(f"Hey {name}")\n'
    assert copies_the_example(greeting, examples)
    assert not copies_the_example(greeting.replace("Hey", "Hi there"), examples)
    assert not copies_the_example("   \n", examples)


def test_a_whole_file_reply_gets_room_for_the_whole_file(project: Project, server) -> None:
    # The 1.5B model's whole experiment.py of the diffusion template (19,818 characters) was cut
    # at [llm] max_tokens = 4,096, at line 330 of 446, and refused for the tail it lost.
    big = EXPERIMENT + "".join(
        f"CONSTANT_{i} = {i}  # a setting the run reads\n" for i in range(400)
    )
    (project.root / "experiment.py").write_text(big)
    project.commit("a long experiment", ["experiment.py"])
    server.script(MODEL, whole("experiment.py", big.replace("0.1", "0.05")))
    coder, recorder, _ = make_coder(project, server)
    coder.edit(["experiment.py"], "Halve the learning rate.", commit_message="halve lr")
    [request] = server.requests
    assert request["max_tokens"] == int(len(big) / 3) + 512 > len(big) / 3.6
    assert any("up to" in n.text and "max_tokens is 512" in n.text for n in recorder.of(Notice))
    assert whole_file_reply_tokens([project.root / "experiment.py"], 512) == request["max_tokens"]
    huge = project.root / "huge.py"
    huge.write_text("x = 1\n" * 20000)
    assert whole_file_reply_tokens([huge], 4096) == 8192, "what a 16k context can answer"
    assert whole_file_reply_tokens([huge], 10000) == 10000, "[llm] max_tokens, when higher"


def test_read_only_files_are_shown_but_not_editable(project: Project, server) -> None:
    def reply(request: dict[str, Any]) -> str:
        shown = json.dumps(request["messages"])
        assert "Keep the learning rate small." in shown  # notes.txt reached the model
        return whole("notes.txt", "overwritten\n") + whole("experiment.py", EDITED, "And:")

    server.script(MODEL, reply, whole("experiment.py", EDITED))
    coder, recorder, _ = make_coder(project, server)
    result = coder.edit(
        ["experiment.py"], "Halve it.", commit_message="lr", read_only=["notes.txt"]
    )
    # A reply is written whole or not at all: the one that also rewrote notes.txt was refused.
    assert result.changed and result.files == ["experiment.py"] and len(server.requests) == 2
    assert (project.root / "notes.txt").read_text() == "Keep the learning rate small.\n"
    assert result.refusals == ["would write notes.txt, a read-only or git-ignored file"]
    assert [r.subject for r in recorder.of(Refused)] == ["notes.txt"]
    assert "notes.txt" in last_user_message(server.requests[1])


def test_fences_in_read_only_files_do_not_change_the_reply_format(project: Project, server) -> None:
    # aider would switch to ```` fences because notes.md contains ```; models answer with ```.
    (project.root / "notes.txt").write_text("Baseline:\n```\naccuracy 0.9\n```\n")
    server.script(MODEL, whole("experiment.py", EDITED))
    coder, _, _ = make_coder(project, server)
    result = coder.edit(
        ["experiment.py"], "Halve it.", commit_message="lr", read_only=["notes.txt"]
    )
    assert result.changed, result.error
    assert "````" not in server.requests[0]["messages"][0]["content"]


def test_unchanged_reply_is_retried_once_then_reported(project: Project, server) -> None:
    server.script(MODEL, whole("experiment.py", EXPERIMENT), "I think the code is fine as it is.")
    coder, recorder, _ = make_coder(project, server)
    head = project.head()

    result = coder.edit(["experiment.py"], "Halve the learning rate.", commit_message="lr")

    assert not result.changed and result.commit is None and result.files == []
    assert "did not change experiment.py after 2 attempts" in result.error
    assert "no edit of experiment.py" in result.error
    assert result.reply == "I think the code is fine as it is."
    assert project.head() == head and recorder.of(CodeDiff) == []
    assert len(server.requests) == 2 and server.errors == []
    retry = last_user_message(server.requests[1])
    assert "did not change experiment.py" in retry
    assert "exactly as it was" in retry  # why the first attempt failed
    assert "then a line ```, then the complete new content" in retry  # the format again
    assert any("did not change" in n.text for n in recorder.of(Notice))
    assert len(recorder.of(CostUpdate)) == 2  # both calls billed


def test_retry_that_lands_is_committed(project: Project, server) -> None:
    server.script(MODEL, "Sure, I will lower it.", whole("experiment.py", EDITED))
    coder, recorder, _ = make_coder(project, server)
    result = coder.edit(["experiment.py"], "Halve the learning rate.", commit_message="lr")
    assert result.changed and result.error == "" and result.commit is not None
    assert len(server.requests) == 2
    assert len(recorder.of(CodeDiff)) == 1


def test_retries_zero_means_one_call(project: Project, server) -> None:
    server.script(MODEL, "No.")
    coder, _, _ = make_coder(project, server)
    result = coder.edit(["experiment.py"], "Halve it.", commit_message="lr", retries=0)
    assert not result.changed and "1 attempt:" in result.error
    assert len(server.requests) == 1


def test_non_matching_search_replace_is_reported(project: Project, server) -> None:
    bad = (
        "experiment.py\n```python\n<<<<<<< SEARCH\nLEARNING_RATE = 0.7\n=======\n"
        "LEARNING_RATE = 0.05\n>>>>>>> REPLACE\n```\n"
    )
    server.script(MODEL, bad, bad)
    coder, _, _ = make_coder(project, server, edit_format="diff")

    result = coder.edit(["experiment.py"], "Halve the learning rate.", commit_message="lr")

    assert not result.changed and result.commit is None
    assert result.error.startswith(
        "aider did not change experiment.py after 2 attempts: aider could not apply the edit "
        "(1 SEARCH/REPLACE block failed to match!)"
    )
    assert "LEARNING_RATE = 0.7" in result.error  # aider's details follow the sentence
    assert (project.root / "experiment.py").read_text() == EXPERIMENT
    assert "SEARCH" in server.requests[0]["messages"][0]["content"]  # aider's diff prompt
    retry = last_user_message(server.requests[1])
    assert "failed to match" in retry and "SEARCH/REPLACE" in retry


def test_matching_search_replace_applies(project: Project, server) -> None:
    good = (
        "experiment.py\n```python\n<<<<<<< SEARCH\nLEARNING_RATE = 0.1\n=======\n"
        "LEARNING_RATE = 0.05  # smaller steps\n>>>>>>> REPLACE\n```\n"
    )
    server.script(MODEL, good)
    coder, _, _ = make_coder(project, server, edit_format="diff")
    result = coder.edit(["experiment.py"], "Halve it.", commit_message="lr")
    assert result.changed and (project.root / "experiment.py").read_text() == EDITED


def test_files_in_subfolders_are_named_from_the_project_root(project: Project, server) -> None:
    def reply(request: dict[str, Any]) -> str:
        # aider shows the file by its project-relative path, as the model must name it.
        assert "latex/template.tex\n```" in json.dumps(request["messages"]).replace("\\n", "\n")
        return whole("latex/template.tex", LATEX.replace("Hello", "Hello world"))

    server.script(MODEL, reply)
    coder, _, _ = make_coder(project, server)
    result = coder.edit(["latex/template.tex"], "Greet the world.", commit_message="tex")
    assert result.changed and result.files == ["latex/template.tex"], result.error
    assert "Hello world" in (project.root / "latex" / "template.tex").read_text()
    assert not (project.root / "latex" / "latex").exists()


def test_partly_applied_edit_is_committed_and_reported(project: Project, server) -> None:
    blocks = (
        "experiment.py\n```python\n<<<<<<< SEARCH\nLEARNING_RATE = 0.1\n=======\n"
        "LEARNING_RATE = 0.05  # smaller steps\n>>>>>>> REPLACE\n```\n\n"
        "experiment.py\n```python\n<<<<<<< SEARCH\nEPOCHS = 3\n=======\nEPOCHS = 6\n"
        ">>>>>>> REPLACE\n```\n"
    )
    server.script(MODEL, blocks)
    coder, _, _ = make_coder(project, server, edit_format="diff")
    result = coder.edit(["experiment.py"], "Halve lr, double epochs.", commit_message="lr")
    assert result.changed and result.commit is not None and len(server.requests) == 1
    assert result.error.startswith("aider applied only part of the edit")
    assert "EPOCHS = 3" in result.error


def test_new_files_the_policy_allows_are_committed(project: Project, server) -> None:
    server.script(
        MODEL,
        whole("experiment.py", EDITED) + whole("helpers/schedule.py", "STEPS = 3\n", "And:"),
    )
    coder, _, _ = make_coder(project, server)
    result = coder.edit(
        ["experiment.py"],
        "Add a schedule.",
        commit_message="schedule",
        policy=EditPolicy(create=("helpers/*.py",)),
    )
    assert result.changed and result.files == ["experiment.py", "helpers/schedule.py"]
    assert result.commit is not None
    assert sorted(result.commit.files) == ["experiment.py", "helpers/schedule.py"]


def test_edits_outside_the_project_are_refused(project: Project, server, tmp_path: Path) -> None:
    outside = tmp_path / "escape.py"
    server.script(
        MODEL,
        whole("../escape.py", "owned = True\n"),
        whole(".git/config", "[core]\n") + "Then run:\n```bash\ntouch pwned\n```\n",
    )
    coder, _, _ = make_coder(project, server)
    result = coder.edit(["experiment.py"], "Edit things.", commit_message="x")
    assert not result.changed and not outside.exists()
    assert "labtui refused the reply" in result.error and ".git/config" in result.error
    assert result.refusals == [
        "would write ../escape.py, outside the project",
        "would write .git/config, inside the project's .git state",
    ]
    assert "../escape.py" in last_user_message(server.requests[1])  # quoted in the retry
    assert not (project.root / "Then run").exists()  # prose is no file name
    assert "[core]" in (project.root / ".git" / "config").read_text()
    assert (project.root / ".git" / "config").read_text() != "[core]\n"


def test_paths_outside_the_project_are_rejected_up_front(project: Project, server) -> None:
    coder, _, _ = make_coder(project, server)
    with pytest.raises(LabtuiError, match="outside the project"):
        coder.edit(["../elsewhere.py"], "x", commit_message="x")
    with pytest.raises(LabtuiError, match="git ignores it"):
        coder.edit(["latex/build/paper.log"], "x", commit_message="x")
    with pytest.raises(LabtuiError, match="outside the project"):
        coder.edit([".git/config"], "x", commit_message="x")
    with pytest.raises(LabtuiError, match="no such file"):
        coder.edit(["experiment.py"], "x", commit_message="x", read_only=["missing.txt"])
    assert server.requests == []


# -- replies checked before they touch the tree (shapes seen from a real 1.5B model) ------------

# 60 non-blank lines in the template's shape: argparse --out_dir, writes final_info.json.
LONG_EXPERIMENT = (
    "import argparse\nimport json\nimport os\n\n"
    + "".join(f"WEIGHT_{i} = {i / 10}\n" for i in range(44))
    + "\n\ndef train(seed: int) -> dict:\n"
    "    result = {'accuracy': 0.8 + seed / 1000}\n"
    "    return result\n\n\n"
    "def main() -> None:\n"
    "    parser = argparse.ArgumentParser()\n"
    '    parser.add_argument("--out_dir", type=str, default="run_0")\n'
    "    args = parser.parse_args()\n"
    "    os.makedirs(args.out_dir, exist_ok=True)\n"
    "    result = train(0)\n"
    '    with open(os.path.join(args.out_dir, "final_info.json"), "w") as f:\n'
    '        json.dump({"moons": {"means": result}}, f)\n\n\n'
    'if __name__ == "__main__":\n    main()\n'
)
LONG_EDITED = LONG_EXPERIMENT.replace("WEIGHT_3 = 0.3", "WEIGHT_3 = 0.6  # doubled")

# Written by hand, not recorded, after issue 13's report of Qwen2.5-Coder-1.5B: a "whole file"
# that is one function (2 of its 8 lines were in the old file). tests/recorded/real_model/README.md
# lists it under "Written by hand".
HAND_WRITTEN_ONE_FUNCTION_FILE = (
    "def train(seed: int) -> dict:\n"
    "    # Use a smaller learning rate for better accuracy.\n"
    "    learning_rate = 0.01\n"
    "    accuracy = 0.8 + seed / 1000\n"
    "    accuracy = accuracy + learning_rate\n"
    "    result = {'accuracy': accuracy}\n"
    "    print(result)\n"
    "    return result\n"
)

# Written by hand, not recorded, after issue 13's report: aider's own `whole` example copied as
# the reply (its system prompt's file listing and its example reply). What a real model did with
# aider's examples is replayed from qwen15_moons_plots.jsonl (`path/to/plot.py`) and
# qwen15_moons_example_copy_experiments.jsonl (`show_greeting.py`).
HAND_WRITTEN_FORMAT_EXAMPLE_COPY = (
    "To change the learning rate, I will update the code as follows:\n\n"
    "path/to/filename.js\n```\n// entire file content ...\n// ... goes in between\n```\n"
)
SHOW_GREETING = (
    'import sys\n\ndef greeting(name):\n    print(f"Hey {name}")\n\n'
    "if __name__ == '__main__':\n    greeting(sys.argv[1])\n"
)


@pytest.fixture
def long_project(project: Project) -> Project:
    (project.root / "experiment.py").write_text(LONG_EXPERIMENT)
    project.commit("a 60-line experiment", ["experiment.py"])
    assert len([x for x in LONG_EXPERIMENT.splitlines() if x.strip()]) == 60
    return project


def untouched(project: Project, head: str, files: dict[str, bytes]) -> Callable[..., str]:
    """A scripted reply that first checks the refused attempt left the tree exactly as it was."""

    def check(request: dict[str, Any]) -> str:
        assert project.head() == head
        for name, content in files.items():
            assert (project.root / name).read_bytes() == content, name
        assert project.repo.git.status("--porcelain", "--untracked-files=all") == ""
        return whole("experiment.py", LONG_EDITED, "Here is the COMPLETE file.")

    return check


def test_a_copied_format_example_creates_nothing_and_is_asked_again(
    long_project: Project, server
) -> None:
    head = long_project.head()
    before = {"experiment.py": LONG_EXPERIMENT.encode()}
    server.script(MODEL, HAND_WRITTEN_FORMAT_EXAMPLE_COPY, untouched(long_project, head, before))
    coder, recorder, _ = make_coder(long_project, server)

    result = coder.edit(["experiment.py"], "Halve the learning rate.", commit_message="lr")

    assert not (long_project.root / "path").exists()
    [refused] = recorder.of(Refused)
    assert (refused.what, refused.subject, refused.stage) == (
        "edit",
        "path/to/filename.js",
        "experiments",
    )
    assert "placeholder name copied from the format example" in refused.reason
    retry = last_user_message(server.requests[1])
    assert "labtui refused your previous reply, so experiment.py is unchanged" in retry
    assert "path/to/filename.js" in retry and "Edit only experiment.py" in retry
    # The retry landed, and only experiment.py is in the commit.
    assert result.changed and result.target_changed and result.files == ["experiment.py"]
    assert result.commit is not None and result.commit.files == ["experiment.py"]
    assert result.refusals == [refused.reason]


def test_the_error_of_a_failed_edit_keeps_the_earlier_refusals(project: Project, server) -> None:
    server.script(MODEL, HAND_WRITTEN_FORMAT_EXAMPLE_COPY, "The code already does what you ask.")
    coder, _, _ = make_coder(project, server)
    result = coder.edit(["experiment.py"], "Halve the learning rate.", commit_message="lr")
    assert not result.changed and len(result.refusals) == 1
    first, *rest = result.error.splitlines()
    assert "no edit of experiment.py" in first
    assert rest[-1].startswith("labtui refused earlier replies: it would create path/to/")


def test_a_whole_file_that_is_one_function_is_refused_before_it_is_written(
    long_project: Project, server
) -> None:
    head = long_project.head()
    before = {"experiment.py": LONG_EXPERIMENT.encode()}
    reply = whole("experiment.py", HAND_WRITTEN_ONE_FUNCTION_FILE, "Here is the updated code:")
    server.script(MODEL, reply, untouched(long_project, head, before))
    coder, recorder, _ = make_coder(long_project, server)

    result = coder.edit(["experiment.py"], "Use a smaller learning rate.", commit_message="lr")

    reason = "would delete 58 of 60 lines of experiment.py, leaving 8 lines"
    refused = recorder.of(Refused)
    assert [r.reason for r in refused][:1] == [reason]  # then the contracts it lost with them
    assert {r.subject for r in refused} == {"experiment.py"} and len(refused) == 4
    assert "__main__" in refused[1].reason and "--out_dir" in refused[2].reason
    assert "final_info.json" in refused[3].reason
    retry = last_user_message(server.requests[1])
    assert f"Your reply {reason}." in retry
    assert "Return the COMPLETE content of experiment.py" in retry
    assert result.changed and result.refusals == [r.reason for r in refused]
    assert (long_project.root / "experiment.py").read_text() == LONG_EDITED


def test_a_reply_that_drops_out_dir_is_refused_every_time(long_project: Project, server) -> None:
    dropped = LONG_EXPERIMENT.replace(
        '    parser.add_argument("--out_dir", type=str, default="run_0")\n', ""
    ).replace("args.out_dir", '"results"')
    reply = whole("experiment.py", dropped, "I simplified the output handling.")
    server.script(MODEL, reply, reply)
    coder, recorder, _ = make_coder(long_project, server)
    head = long_project.head()

    result = coder.edit(["experiment.py"], "Write results elsewhere.", commit_message="out")

    assert not result.changed and not result.target_changed and result.commit is None
    assert long_project.head() == head
    assert (long_project.root / "experiment.py").read_text() == LONG_EXPERIMENT
    assert len(recorder.of(Refused)) == 2 and len(result.refusals) == 2
    assert "would drop the --out_dir option from experiment.py" in result.refusals[0]
    assert "labtui refused the reply" in result.error and "--out_dir" in result.error
    assert "--out_dir" in last_user_message(server.requests[1])


def test_an_unrelated_new_file_refuses_the_whole_reply(long_project: Project, server) -> None:
    # Written by hand after issue 13's report (a good edit beside aider's example file, here
    # changed from aider's words, so not taken for a copy of the example: that is dropped, as
    # test_a_real_small_models_example_file_is_dropped_and_its_good_edit_kept replays).
    greeting = SHOW_GREETING.replace("Hey", "Hi there")
    reply = whole("experiment.py", LONG_EDITED, "I doubled the third weight.") + whole(
        "show_greeting.py", greeting, "Ok, I will switch the greeting text:"
    )
    head = long_project.head()
    before = {"experiment.py": LONG_EXPERIMENT.encode()}
    server.script(MODEL, reply, untouched(long_project, head, before))
    coder, recorder, _ = make_coder(long_project, server)

    result = coder.edit(["experiment.py"], "Double the third weight.", commit_message="w")

    assert not (long_project.root / "show_greeting.py").exists()
    [refused] = recorder.of(Refused)
    assert refused.subject == "show_greeting.py"
    assert "show_greeting.py" in last_user_message(server.requests[1])
    assert result.changed and result.files == ["experiment.py"]
    assert "show_greeting.py" not in long_project.repo.git.ls_files()


def test_a_refused_reply_leaves_no_file_aider_created(long_project: Project, server) -> None:
    # The step may create helpers/*.py, so aider creates helpers/schedule.py (empty) before
    # writing it; the reply is refused for its experiment.py, so that file must go again.
    reply = whole("experiment.py", HAND_WRITTEN_ONE_FUNCTION_FILE) + whole(
        "helpers/schedule.py", "STEPS = 3\n", "And:"
    )
    head = long_project.head()
    before = {"experiment.py": LONG_EXPERIMENT.encode()}
    server.script(MODEL, reply, untouched(long_project, head, before))
    coder, recorder, _ = make_coder(long_project, server)
    result = coder.edit(
        ["experiment.py"],
        "Add a schedule.",
        commit_message="schedule",
        policy=EditPolicy(create=("helpers/*.py",)),
    )
    said = [m.text for m in recorder.of(AgentMessage)]
    assert "Create new file? helpers/schedule.py -> yes (answered by labtui)" in said
    assert not (long_project.root / "helpers").exists()
    assert {r.subject for r in recorder.of(Refused)} == {"experiment.py"}
    # The removed file also left aider's chat: the retry did not go looking for it.
    assert not any(
        "schedule.py" in text for text in said if "not found" in text or "Dropping" in text
    )
    assert result.changed and result.files == ["experiment.py"] and result.error == ""


def test_elided_code_is_refused(long_project: Project, server) -> None:
    elided = LONG_EDITED.replace("WEIGHT_10 = 1.0\n", "# ... rest of the weights unchanged\n")
    server.script(MODEL, whole("experiment.py", elided), whole("experiment.py", LONG_EDITED))
    coder, recorder, _ = make_coder(long_project, server)
    result = coder.edit(["experiment.py"], "Double the third weight.", commit_message="w")
    [refused] = recorder.of(Refused)
    assert "would leave code out of experiment.py" in refused.reason
    assert "# ... rest of the weights unchanged" in refused.reason
    assert (
        result.changed
        and "rest of the weights" not in (long_project.root / "experiment.py").read_text()
    )


def test_several_diff_blocks_on_one_file_build_on_each_other(project: Project, server) -> None:
    # aider reads the file again for each block: it must see the staged text, not the disk's.
    blocks = (
        "experiment.py\n```python\n<<<<<<< SEARCH\nLEARNING_RATE = 0.1\n=======\n"
        "LEARNING_RATE = 0.05  # smaller steps\n>>>>>>> REPLACE\n```\n\n"
        "experiment.py\n```python\n<<<<<<< SEARCH\n"
        "    print(parser.parse_args().out_dir, LEARNING_RATE)\n=======\n"
        '    print("lr", LEARNING_RATE)\n>>>>>>> REPLACE\n```\n'
    )
    server.script(MODEL, blocks)
    coder, _, _ = make_coder(project, server, edit_format="diff")
    result = coder.edit(["experiment.py"], "Halve lr, print it.", commit_message="lr")
    assert result.changed and result.error == "", result.error
    text = (project.root / "experiment.py").read_text()
    assert "LEARNING_RATE = 0.05  # smaller steps" in text and 'print("lr", LEARNING_RATE)' in text


# -- infrastructure failures -------------------------------------------------------------------


def test_rejected_key_raises_llm_error(project: Project, server) -> None:
    server.script(MODEL, Fault(status=401))
    coder, _, _ = make_coder(project, server)
    with pytest.raises(LLMError) as caught:
        coder.edit(["experiment.py"], "Halve it.", commit_message="lr")
    assert "rejected the API key" in caught.value.message
    assert "LABTUI_API_KEY" in caught.value.hint
    assert len(server.requests) == 1  # aider does not retry an authentication error


def test_unknown_model_raises_llm_error(project: Project, server) -> None:
    server.script(MODEL, Fault(status=404))
    coder, _, _ = make_coder(project, server)
    with pytest.raises(LLMError, match=r"was not found \(HTTP 404\)"):
        coder.edit(["experiment.py"], "Halve it.", commit_message="lr")


def test_server_errors_stop_after_the_configured_retries(project: Project, server) -> None:
    project.config.llm.retries = 1
    server.script(MODEL, Fault(status=500), Fault(status=500), "never sent")
    coder, recorder, _ = make_coder(project, server)
    with pytest.raises(LLMError, match="failed"):
        coder.edit(["experiment.py"], "Halve it.", commit_message="lr")
    assert len(server.requests) == 2  # the first call and one retry, as [llm] retries says
    assert not any("Traceback" in m.text for m in recorder.of(AgentMessage))


def test_spent_budget_stops_before_any_call(project: Project, server) -> None:
    coder, _, ledger = make_coder(project, server)
    ledger.record("ideas", "x", 1, 1, 20.0)
    with pytest.raises(Exception, match="budget spent"):
        coder.edit(["experiment.py"], "Halve it.", commit_message="lr")
    assert server.requests == []


# -- policy and setup ---------------------------------------------------------------------------


def answer(*question) -> bool:
    """labtui's yes or no to one of aider's questions (the verdict without its problem)."""
    return file_question_verdict(*question)[0]


def test_file_questions_are_answered_by_the_policy(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    ro = frozenset({root / "notes.txt"})

    def allowed(path: Path) -> bool:
        return may_write(path, root, ro)

    allow_edit = "Allow edits to file that has not been added to the chat?"
    # By default a step edits its own files only: no new files, no other files.
    assert not answer("Create new file?", "src/new.py", root, allowed)
    assert not answer(allow_edit, "plot.py", root, allowed)
    policy = EditPolicy(create=("src/*.py",), also_edit=("plot.py", "notes.txt"))
    assert answer("Create new file?", "src/new.py", root, allowed, policy)
    assert answer(allow_edit, "plot.py", root, allowed, policy)
    assert not answer("Create new file?", "other/new.py", root, allowed, policy)
    # Placeholders and aider's example names are never created, whatever the policy.
    anything = EditPolicy(create=("*",))
    assert not answer("Create new file?", "path/to/filename.js", root, allowed, anything)
    assert not answer("Create new file?", "show_greeting.py", root, allowed, anything)
    assert answer("Edit the files?", None, root, allowed)  # architect -> editor
    assert not answer("Create new file?", "../x.py", root, allowed)
    assert not answer("Create new file?", "/etc/passwd", root, allowed)
    assert not answer("Create new file?", ".git/hooks/pre-commit", root, allowed)
    assert not answer("Create new file?", ".labtui/journal.jsonl", root, allowed)
    assert not answer(allow_edit, "notes.txt", root, allowed, policy)  # read-only
    # Prose above a fenced block is not a file name (aider's `whole` format would take it).
    assert not answer("Create new file?", "Then run:", root, allowed)
    assert not answer("Create new file?", "bash", root, allowed)
    assert not answer("Run shell command?", "rm -rf /", root, allowed)
    assert not answer("Add URL to the chat?", "https://example.com", root, allowed)
    assert not answer("Add file to the chat?", "plot.py", root, allowed)
    assert not answer("Add command output to the chat?", None, root, allowed)
    assert not answer("Attempt to fix lint errors?", None, root, allowed)


def test_event_io_never_reads_the_terminal(project: Project) -> None:
    recorder = Recorder()
    event_io = EventIO(
        emit=recorder,
        stage="experiments",
        root=project.root,
        state_dir=project.state_dir / "aider",
        allowed=lambda path: may_write(path, project.root),
    )
    assert not event_io.confirm_ask("Run shell command?", subject="ls", explicit_yes_required=True)
    assert not event_io.confirm_ask("Create new file?", subject="new_module.py")  # no policy
    event_io.use_policy(EditPolicy(create=("*.py",)), ["experiment.py"])
    assert event_io.confirm_ask("Create new file?", subject="new_module.py")
    assert not event_io.confirm_ask("Create new file?", subject="path/to/filename.js")
    assert [p.kind for p in event_io.problems] == ["new-file", "placeholder"]
    assert event_io.prompt_ask("Which one?", default="first") == "first"
    with pytest.raises(EOFError):
        event_io.get_input(str(project.root), [], [], None)
    event_io.tool_error("something broke")
    event_io.tool_output("Applied edit to x.py")
    assert event_io.errors == ["something broke"]
    texts = [m.text for m in recorder.of(AgentMessage)]
    assert "error: something broke" in texts and "Applied edit to x.py" in texts
    assert all(m.role == "aider-tool" for m in recorder.of(AgentMessage))


def test_edit_format_choice() -> None:
    assert choose_edit_format("", None) == "whole"
    assert choose_edit_format("", "whole") == "whole"
    assert choose_edit_format("", "diff") == "diff"  # aider's choice for a model it knows
    assert choose_edit_format("diff-fenced", "whole") == "diff-fenced"
    with pytest.raises(ConfigError, match="unknown aider edit format"):
        choose_edit_format("sideways", "diff")


def test_importing_the_bridge_does_not_import_aider() -> None:
    code = (
        "import sys, labtui.core.coding.coder\n"
        "heavy = [m for m in ('aider', 'litellm', 'textual') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


CAPTURED_STDOUT_SCRIPT = r"""
import sys
from pathlib import Path

class PrintCapture:  # what Textual puts in sys.stdout while an app runs: no .encoding
    def write(self, text): return len(text)
    def flush(self): pass

real = sys.stdout
sys.stdout = sys.stderr = PrintCapture()
sys.path.insert(0, sys.argv[2])
from support.scripted_llm import ScriptedLLMServer
from labtui.core.coding.coder import Coder
from labtui.core.settings.config import ModelSpec
from labtui.core.llm.budget import Ledger
from labtui.core.workspace.project import Project

project = Project.create(Path(sys.argv[1]) / "p", "moons")
with ScriptedLLMServer() as server:
    code = (project.root / "experiment.py").read_text().replace("HIDDEN_UNITS = 32", "HIDDEN_UNITS = 8")
    server.default("scripted-coder", "Smaller.\n\nexperiment.py\n```\n" + code + "```\n")
    spec = ModelSpec(name="openai/scripted-coder", api_base=server.url)
    coder = Coder(project, spec, emit=lambda e: None, stage="experiments", ledger=Ledger(1.0, lambda e: None))
    result = coder.edit(["experiment.py"], "Make it smaller.", commit_message="smaller")
real.write(f"changed={result.changed}\n")
"""


def test_aider_works_when_a_front_end_captures_stdout(tmp_path: Path) -> None:
    """Inside the TUI, sys.stdout has no .encoding; aider reads it at import time."""
    import subprocess
    import sys

    env = {**os.environ, "LABTUI_API_KEY": "sk-test-not-a-key-0000", "HOME": str(tmp_path)}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            CAPTURED_STDOUT_SCRIPT,
            str(tmp_path),
            str(Path(__file__).parents[1]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.stdout.strip() == "changed=True", out.stderr[-2000:]


def test_the_explanation_leaves_out_edit_blocks() -> None:
    from labtui.core.coding.edit_feedback import explanation_of

    whole_reply = "Double the width.\n\nexperiment.py\n```python\nHIDDEN_UNITS = 64\n```\n"
    diff_reply = (
        "Use weight decay.\n\nexperiment.py\n````\n<<<<<<< SEARCH\nWD = 0\n=======\nWD = 1e-4\n"
        ">>>>>>> REPLACE\n````\nIt regularises the hidden layer."
    )
    assert explanation_of(whole_reply) == "Double the width."
    assert explanation_of(diff_reply) == "Use weight decay.\n\nIt regularises the hidden layer."
    assert explanation_of("") == ""


# -- streaming under the inactivity limits (core/llm/streaming.py) ---------------------------------


@pytest.fixture
def quick_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    from labtui.core.llm import server_idle

    monkeypatch.setattr(server_idle, "IDLE_POLL_S", 0.02)
    monkeypatch.setattr(server_idle, "_abandoned", {})


def warm_up_litellm(server: ScriptedLLMServer) -> None:
    """litellm's first call in a process imports for seconds: do it before limits are small."""
    from labtui.core.llm.client import LLM
    from labtui.core.settings.sections import LLMSection

    server.script("warm-up", "ready")
    spec = ModelSpec(name="openai/warm-up", api_base=server.url)
    LLM(spec, LLMSection(), Ledger(10.0, Recorder()), Recorder(), "ideas").chat(
        [{"role": "user", "content": "hi"}]
    )


def test_aider_streams_its_reply_into_the_dialogue(project: Project, server, quick_waits) -> None:
    from support.scripted_llm import Slow

    from labtui.core.events import AgentChunk

    reply = whole("experiment.py", EDITED)
    server.script(MODEL, Slow(reply, first_token_s=0.05, gap_s=0.05, chunks=6))
    coder, recorder, _ = make_coder(project, server)
    result = coder.edit(["experiment.py"], "Halve the learning rate.", commit_message="lr")
    assert result.changed and (project.root / "experiment.py").read_text() == EDITED
    pieces = [c for c in recorder.of(AgentChunk) if c.role == "aider"]
    assert len(pieces) == 6 and "".join(p.text for p in pieces) == reply
    # The chunks come first, then aider's whole message: its own path stays the unstreamed one.
    whole_message = next(m for m in recorder.of(AgentMessage) if m.role == "aider")
    assert recorder.events.index(pieces[-1]) < recorder.events.index(whole_message)
    [request] = server.requests
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    [cost] = recorder.of(CostUpdate)  # billing still reads the usage aider saw
    assert cost.tokens_in == server.usage[MODEL]["prompt_tokens"] > 0
    assert cost.tokens_out == server.usage[MODEL]["completion_tokens"] > 0
    assert 0 < cost.first_token_s <= cost.seconds


def test_a_quiet_aider_call_is_retried_once_the_server_is_idle(
    project: Project, server, quick_waits
) -> None:
    from support.scripted_llm import Slow

    warm_up_litellm(server)
    project.config.llm.first_token_s = 0.3
    project.config.llm.idle_s = 3.0
    late = Slow(whole("experiment.py", EXPERIMENT), first_token_s=1.2, gap_s=0.1)
    server.script(MODEL, late, whole("experiment.py", EDITED))
    coder, recorder, _ = make_coder(project, server)
    result = coder.edit(["experiment.py"], "Halve the learning rate.", commit_message="lr")
    assert result.changed and (project.root / "experiment.py").read_text() == EDITED
    notices = [n.text for n in recorder.of(Notice)]
    assert any("no first token within 0.3 s" in n and "first_token_s" in n for n in notices)
    assert any("waiting for the server" in n for n in notices)
    assert server.abandoned == [MODEL] and server.overlaps == []
    assert len(server.requests_for(MODEL)) == 2


def test_an_aider_call_that_stays_quiet_is_a_clear_error(
    project: Project, server, quick_waits
) -> None:
    from support.scripted_llm import Slow

    warm_up_litellm(server)
    project.config.llm.retries = 0
    project.config.llm.first_token_s = 0.3
    server.script(MODEL, Slow(whole("experiment.py", EDITED), first_token_s=1.2))
    coder, _, _ = make_coder(project, server)
    with pytest.raises(LLMError) as caught:
        coder.edit(["experiment.py"], "Halve it.", commit_message="lr")
    assert "no first token within 0.3 s" in caught.value.message
    assert "[llm] first_token_s" in caught.value.hint
    assert (project.root / "experiment.py").read_text() == EXPERIMENT


def test_a_real_small_models_example_file_is_dropped_and_its_good_edit_kept(
    project: Project, server
) -> None:
    # Recorded: Qwen2.5-Coder-1.5B asked by the plots stage to add run_1 to plot.py's labels
    # (qwen15_moons_plots.jsonl, lines 1 and 2): a good plot.py beside aider's example
    # show_greeting.py word for word (once refused whole for it; the re-ask's answer was plot.py
    # unchanged under aider's example path, path/to/plot.py).
    greeting, example_path = replies("qwen15_moons_plots", "plots")[:2]
    assert "show_greeting.py\n```" in greeting and example_path.startswith("path/to/plot.py")
    _plot, result, recorder = _moons_run_1_edit(project, server, greeting, "plot.py")

    assert recorder.of(Refused) == [] and result.changed, "the good plot.py, first time"
    assert "run_1" in (project.root / "plot.py").read_text()
    assert len(server.requests_for(MODEL)) == 1
    assert not (project.root / "show_greeting.py").exists()


def test_a_real_small_models_half_file_is_written_with_its_head_put_back(
    project: Project, server
) -> None:
    # Recorded: Qwen2.5-Coder-1.5B's whole experiment.py for run_1 on moons
    # (qwen15_moons_experiments.jsonl, line 1) without its docstring, imports and constants;
    # applied as it came, the run died of "NameError: name 'np' is not defined".
    (reply,) = replies("qwen15_moons_experiments", "experiments")[:1]
    _moons, result, recorder = _moons_run_1_edit(project, server, reply)

    assert result.changed and not result.refusals
    written = (project.root / "experiment.py").read_text()
    assert written.startswith('"""Two-moons classification') and "import numpy as np" in written
    notice = next(n.text for n in recorder.of(Notice) if "put them back" in n.text)
    assert "part(s) out of experiment.py" in notice and "import argparse" in notice
