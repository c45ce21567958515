"""The headless front end: every event prints without error, and checkpoints read from a TTY."""

from __future__ import annotations

import dataclasses
import io
import types
from typing import Any, get_args, get_origin, get_type_hints

from rich.console import Console

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.events import EVENT_TYPES, Event, SearchEnded, SearchStarted, SearchStep
from labtui.tui.headless import HeadlessPrinter, TerminalCheckpointPort

NASTY = "[bold]not markup[/] and [link] sk-like [/x]"


def _one_of_each() -> list[Event]:
    """One instance of every event type, every text field full of rich markup."""
    samples = {str: NASTY, int: 1, float: 1.5, bool: False, list: [], dict: {}}

    def sample(hint: Any) -> Any:
        if get_origin(hint) is types.UnionType:  # `float | None`: its value, not None
            hint = next(arg for arg in get_args(hint) if arg is not type(None))
        return samples[get_origin(hint) or hint]

    events = []
    for cls in EVENT_TYPES.values():
        hints = get_type_hints(cls)
        fields = {
            f.name: sample(hints[f.name])
            for f in dataclasses.fields(cls)
            if f.name not in ("stage", "ts")
        }
        events.append(cls(stage="ideas", **fields))
    return events


def test_every_event_type_prints_and_markup_in_text_is_shown_literally():
    out = io.StringIO()
    printer = HeadlessPrinter(Console(file=out, width=100, color_system=None))
    for event in _one_of_each():
        printer(event)
    text = out.getvalue()
    assert "[bold]not markup[/]" in text
    assert len(_one_of_each()) >= 15


def _port(answers: str) -> tuple[TerminalCheckpointPort, io.StringIO]:
    out = io.StringIO()
    return TerminalCheckpointPort(Console(file=out, color_system=None), io.StringIO(answers)), out


REQUEST = CheckpointRequest("ideas-1", "ideas", "ideas: 2 ideas", "body")


def test_revise_asks_for_a_note():
    port, _ = _port("r\nfocus on label noise\n")
    assert port.ask(REQUEST) == Decision("revise", "focus on label noise")


def test_unknown_keys_are_refused_and_enter_approves():
    port, out = _port("x\n\n")
    assert port.ask(REQUEST) == Decision("approve")
    assert "press one of" in out.getvalue()


def test_end_of_input_aborts_safely():
    port, _ = _port("")
    assert port.ask(REQUEST) == Decision("abort")


def test_only_offered_options_are_accepted():
    port, out = _port("s\na\n")
    request = CheckpointRequest("x-1", "review", "t", "b", options=("approve", "abort"))
    assert port.ask(request) == Decision("approve")
    assert "press one of: a, q" in out.getvalue()


def test_e_opens_the_product_in_the_editor_and_answers_edit(tmp_path):
    (tmp_path / "ideas.json").write_text("[]")
    opened = []

    def editor(path):
        opened.append(path)
        return ""

    request = CheckpointRequest("ideas-1", "ideas", "t", "b", product="ideas.json")
    port = TerminalCheckpointPort(
        Console(file=io.StringIO(), color_system=None),
        io.StringIO("e\n"),
        root=tmp_path,
        edit_file=editor,
    )
    assert port.ask(request) == Decision("edit", "ideas.json")
    assert opened == [tmp_path / "ideas.json"]


def test_a_failing_editor_asks_again(tmp_path):
    (tmp_path / "plot.py").write_text("")
    out = io.StringIO()
    port = TerminalCheckpointPort(
        Console(file=out, color_system=None),
        io.StringIO("e\na\n"),
        root=tmp_path,
        edit_file=lambda path: "vim exited with status 1; nothing was kept",
    )
    request = CheckpointRequest("plots-1", "plots", "t", "b", product="plot.py")
    assert port.ask(request) == Decision("approve")
    assert "nothing was kept" in out.getvalue()


def test_the_editor_helper_reports_a_missing_editor(tmp_path, monkeypatch):
    from labtui.tui.editor import open_in_editor

    monkeypatch.setenv("VISUAL", "no-such-editor-anywhere")
    problem = open_in_editor(tmp_path / "x.txt")
    assert "no-such-editor-anywhere" in problem and "set $EDITOR" in problem
    monkeypatch.setenv("VISUAL", "false")
    assert "exited with status 1" in open_in_editor(tmp_path / "x.txt")
    monkeypatch.setenv("VISUAL", "true")
    assert open_in_editor(tmp_path / "x.txt") == ""


def test_where_approval_is_blocked_w_waives_with_a_reason():
    from labtui.core.checkpoints import BLOCKED_ACTIONS

    port, out = _port("a\nw\n\nw\nquoted from prior work\n")
    request = CheckpointRequest("writeup-1", "writeup", "t", "b", options=BLOCKED_ACTIONS)
    assert port.ask(request) == Decision("waive", "quoted from prior work")
    text = out.getvalue()
    assert "press one of: r, e, w, q" in text and "a note is needed" in text


def test_i_asks_for_an_improvement_round_where_one_is_offered():
    from labtui.core.checkpoints import ACTIONS, IMPROVE

    port, out = _port("i\n")
    request = CheckpointRequest("review-1", "review", "t", "b", options=(*ACTIONS, IMPROVE))
    assert port.ask(request) == Decision("improve")
    assert "i improve" in out.getvalue()


def test_i_is_refused_where_no_improvement_is_offered():
    port, out = _port("i\na\n")
    assert port.ask(REQUEST) == Decision("approve")
    text = out.getvalue()
    assert "press one of: a, r, e, s, q" in text and "improve" not in text


def test_without_the_log_lines_each_reads_metrics_are_printed_compactly():
    from labtui.core.events import LogLine
    from labtui.core.machine.metric_lines import metrics_reported

    out = io.StringIO()
    printer = HeadlessPrinter(Console(file=out, width=100, color_system=None), show_logs=False)
    log = LogLine(stage="experiments", run_id="run_1", stream="stdout", text="epoch 3/10 loss 0.25")
    printer(log)
    printer(metrics_reported(log))
    assert out.getvalue().strip() == "run_1│ epoch 3/10 · loss 0.25"


# -- a search, one line per event ---------------------------------------------------------------


def _printed(*events: Event) -> list[str]:
    out = io.StringIO()
    printer = HeadlessPrinter(Console(file=out, width=300, color_system=None))
    for event in events:
        printer(event)
    return out.getvalue().splitlines()


CLIMB_STARTED = SearchStarted(
    stage="experiments",
    strategy="climb",
    idea="toy",
    metric="toy.score",
    direction="higher",
    baseline=0.5,
    noise=0.02,
    run_budget_s=60.0,
    limit=100,
    ledger=".labtui/search/climb-toy/results.tsv",
    branch="labtui/climb/toy",
)


def test_a_climb_prints_its_start_each_attempt_and_its_end():
    lines = _printed(
        CLIMB_STARTED,
        SearchStep(
            stage="experiments",
            strategy="climb",
            step=3,
            status="keep",
            description="set SCORE to 0.7",
            value=0.7,
            best=0.7,
            new_best=True,
            wall_s=0.41,
            tokens=1712,
        ),
        SearchStep(
            stage="experiments",
            strategy="climb",
            step=5,
            status="discard",
            description="set SCORE to 0.65",
            value=0.65,
            best=0.7,
            problem="-0.05 on the best 0.7: no better (0.02)",
            wall_s=0.4,
            tokens=1700,
        ),
        SearchStep(
            stage="experiments",
            strategy="climb",
            step=6,
            status="crash",
            description="divide by zero",
            best=0.7,
            problem="ZeroDivisionError",
            wall_s=95.0,
        ),
        SearchEnded(
            stage="experiments",
            strategy="climb",
            reason="100 attempts made",
            steps=100,
            best_step=3,
            best=0.7,
            seed_mean=0.69,
            seed_std=0.012,
            seed_runs=3,
            counts={"keep": 1, "discard": 98, "crash": 1},
        ),
    )
    assert lines == [
        "climb of toy begins: toy.score, higher is better, from 0.5 · noise 0.02 · at most 100 "
        "attempts of 60 s each · ledger .labtui/search/climb-toy/results.tsv",
        "climb attempt 3: keep toy.score 0.7 (best 0.7) ★ new best — set SCORE to 0.7 · 0.4 s · "
        "1.7k tokens",
        "climb attempt 5: discard toy.score 0.65 (best 0.7) — set SCORE to 0.65 · 0.4 s · "
        "1.7k tokens",
        "climb attempt 6: crash no result (best 0.7) — divide by zero: ZeroDivisionError · 95 s",
        "climb ended (100 attempts made): 100 step(s), 1 keep · 98 discard · 1 crash; best "
        "toy.score 0.7 at attempt 3; 3 seed run(s): 0.69 ± 0.012",
    ]


def test_a_tree_node_names_its_action_and_parent():
    started = dataclasses.replace(CLIMB_STARTED, strategy="tree", limit=20)
    node = SearchStep(
        stage="experiments",
        strategy="tree",
        step=3,
        status="ok",
        description="guard the division",
        value=0.61,
        best=0.72,
        parent=2,
        action="debug",
        wall_s=2.0,
    )
    root = dataclasses.replace(node, step=1, parent=0, action="draft", status="buggy", value=None)
    ended = SearchEnded(
        stage="experiments",
        strategy="tree",
        reason="20 nodes grown",
        steps=20,
        best_step=0,
        best=0.5,
    )
    lines = _printed(started, node, root, ended)
    assert "at most 20 nodes" in lines[0]
    assert lines[1] == (
        "tree node 3 (debug of 2): ok toy.score 0.61 (best 0.72) — guard the division · 2.0 s"
    )
    assert lines[2].startswith("tree node 1 (draft): buggy no result (best 0.72)")
    assert lines[3] == (
        "tree ended (20 nodes grown): 20 step(s); nothing beat the baseline (toy.score 0.5) "
        "beyond the noise"
    )


def test_a_runs_long_lines_are_printed_whole_unwrapped_and_never_read_as_markup():
    from labtui.core.events import LogLine

    out = io.StringIO()
    printer = HeadlessPrinter(Console(file=out, width=40, color_system=None))
    long = "loss 0.5 " + "x" * 200
    printer(LogLine(stage="s", run_id="run_1", stream="stdout", text=f"{long}\n[bold]kept[/]"))
    assert out.getvalue().splitlines() == [f"run_1│ {long}", "run_1│ [bold]kept[/]"]


def test_a_flood_is_shown_in_samples_at_a_readable_rate_and_the_gap_is_said():
    from labtui.core.events import LogLine, RunFinished
    from labtui.tui.headless import LineRate

    now = [0.0]
    out = io.StringIO()
    printer = HeadlessPrinter(Console(file=out, color_system=None), clock=lambda: now[0])
    burst = LineRate().burst
    lines = [f"line {i}" for i in range(int(burst) + 500)]
    printer(LogLine(stage="s", run_id="run_1", stream="stdout", text="\n".join(lines)))
    shown = out.getvalue().splitlines()
    assert len(shown) == burst + 1  # the newest of the read, after the count of the rest
    assert shown[0] == "run_1│ … 500 lines not shown (stdout.log in the run folder has all)"
    assert shown[-1] == f"run_1│ line {len(lines) - 1}"
    printer(LogLine(stage="s", run_id="run_1", stream="stdout", text="while empty"))
    now[0] = 1.0  # a second later the rate allows lines again
    printer(LogLine(stage="s", run_id="run_1", stream="stdout", text="after a second"))
    assert out.getvalue().splitlines()[-2:] == [
        "run_1│ … 1 lines not shown (stdout.log in the run folder has all)",
        "run_1│ after a second",
    ]
    printer(LogLine(stage="s", run_id="run_1", stream="stdout", text="\n".join(lines)))
    printer(LogLine(stage="s", run_id="run_1", stream="stdout", text="unshown\nas well"))
    printer(RunFinished(stage="s", run_id="run_1", returncode=0, wall_s=1.0))
    said, finished = out.getvalue().splitlines()[-2:]
    assert said == "run_1│ … 2 lines not shown (stdout.log in the run folder has all)"
    assert finished.startswith("run_1 ok in 1.0 s")


def test_a_runs_escape_sequences_never_reach_the_terminal():
    from labtui.core.events import LogLine

    out = io.StringIO()
    printer = HeadlessPrinter(Console(file=out, color_system=None))
    hostile = "\x1b]52;c;ZXZpbA==\x07clip \x1b[2J\x1b[31mred\x1b[0m\x07 bell\ttab\x00"
    printer(LogLine(stage="s", run_id="run_1", stream="stdout", text=hostile))
    assert out.getvalue() == "run_1│ clip red bell\ttab\n"
