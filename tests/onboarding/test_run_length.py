"""How long a researcher's script trains (core/onboarding/run_length.py) and the lengths `labtui
init` proposes for its baseline and smoke run (core/onboarding/run_budget.py): small scripts of
each shape met on real repositories, read by the survey as `labtui init` reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtui.core.onboarding.command_draft import fit_to_smoke
from labtui.core.onboarding.repo_facts import Constant, EntryPoint, Option
from labtui.core.onboarding.repo_scan import propose_setup, survey
from labtui.core.onboarding.run_budget import (
    PACE_AFTER,
    LengthProposal,
    baseline_cap,
    bounded_commands,
    fit_to_pace,
    set_count,
)
from labtui.core.onboarding.run_length import (
    first_write,
    first_write_step,
    interval_options,
    run_length_option,
    run_length_options,
)
from labtui.core.settings.sections import LimitsSection

LIMITS = LimitsSection()  # run_timeout_s = 1800 s
COMMAND = ("{python}", "train.py", "--out_dir", "{out_dir}")

UNBOUNDED_TB = '''\
"""A character model: TensorBoard scalars every --eval_interval steps, and no end by default."""
import argparse

from torch.utils.tensorboard import SummaryWriter


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="runs")
    parser.add_argument("--max_steps", type=int, default=-1, help="-1: train until stopped")
    parser.add_argument("--eval_interval", type=int, default=500)
    parser.add_argument("--eval_iters", type=int, default=200, help="batches per evaluation")
    parser.add_argument("--save_every", type=int, default=1000)
    args = parser.parse_args()
    writer = SummaryWriter(args.out_dir)
    step = 0
    while args.max_steps < 0 or step < args.max_steps:
        if step % args.eval_interval == 0 and step > 0:
            writer.add_scalar("Loss/test", 0.5, step)
        step += 1


if __name__ == "__main__":
    main()
'''
# as core/onboarding/metric_names.py records the write's enclosing loops and tests
UNBOUNDED_TB_WRITE = (
    "while args.max_steps < 0 or step < args.max_steps",
    "step % args.eval_interval == 0 and step > 0",
)

LONG_STEPS = """\
import argparse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    parser.add_argument("--steps", type=int, default=100000)
    args = parser.parse_args()
    for step in range(args.steps):
        if (step + 1) % 200 == 0:
            print(f"step {step} loss {0.1:.3f}")


if __name__ == "__main__":
    main()
"""

CLICK_EPOCHS = """\
import click


@click.command()
@click.option("--out-dir", default="out")
@click.option("--epochs", default=1000, type=int)
@click.option("--log-every", default=50, type=int)
def main(out_dir, epochs, log_every):
    for epoch in range(epochs):
        if epoch % log_every == 0:
            print(f"epoch {epoch} val_acc {0.9}")


if __name__ == "__main__":
    main()
"""

HYDRA_TRAIN = """\
import hydra


@hydra.main(config_path="conf", config_name="config", version_base=None)
def main(cfg):
    for it in range(cfg.max_iters):
        if it % cfg.eval_interval == 0:
            print(f"iter {it} val_loss {0.3}")


if __name__ == "__main__":
    main()
"""
HYDRA_CONFIG = """\
defaults:
  - _self_
trainer:
  max_epochs: 100
  log_every_n_steps: 50
max_iters: 100000
eval_interval: 500
"""

MODULE_CONSTANTS = """\
max_iters = 5000
eval_interval = 250
learning_rate = 3e-4


def main():
    for it in range(max_iters):
        if it % eval_interval == 0 or it == max_iters - 1:
            print(f"step {it}: val loss {0.2:.4f}")


if __name__ == "__main__":
    main()
"""

BOUNDED = """\
import argparse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    for epoch in range(args.epochs):
        print(f"epoch {epoch} accuracy {0.5}")


if __name__ == "__main__":
    main()
"""

HUGGING_FACE_STYLE = """\
import argparse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output_dir", default="out")
    parser.add_argument("--num_train_epochs", type=int, default=3)
    parser.add_argument("--max_steps", type=int, default=-1, help="overrides the epochs")
    parser.add_argument("--logging_steps", type=int, default=500)
    parser.parse_args()


if __name__ == "__main__":
    main()
"""


def _entry(tmp_path: Path, files: dict[str, str], script: str = "train.py") -> EntryPoint:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return next(e for e in survey(tmp_path).entry_points if e.path == script)


def _propose(entry: EntryPoint, command=COMMAND, writes=(), smoke=None) -> LengthProposal:
    lengths = run_length_options(entry)
    found = [w for w in (first_write(c, entry) for c in writes) if w is not None]
    return bounded_commands(
        command,
        smoke,
        lengths[0] if lengths else None,
        interval_options(entry),
        found,
        LIMITS,
        others=lengths[1:],
    )


# -- the shapes, each surveyed as `labtui init` surveys it ---------------------------------------


def test_an_unbounded_step_count_with_a_late_first_scalar(tmp_path: Path) -> None:
    entry = _entry(tmp_path, {"train.py": UNBOUNDED_TB})
    length = run_length_option(entry)
    assert length is not None
    assert (length.flag, length.unit, length.default, length.unbounded) == (
        "--max_steps",
        "step",
        -1,
        True,
    )
    assert "no limit" in length.why
    intervals = {i.dest: i for i in interval_options(entry)}
    assert set(intervals) == {"eval_interval", "save_every"}  # eval_iters is no interval
    assert intervals["eval_interval"].metric and not intervals["save_every"].metric

    write = first_write(UNBOUNDED_TB_WRITE, entry)
    assert write is not None
    assert (write.at, write.smoke_at, write.unit) == (500, 5, "step")
    assert [i.flag for i in write.intervals] == ["--eval_interval"]
    assert first_write_step(UNBOUNDED_TB_WRITE, entry) == 500

    proposal = _propose(entry, writes=[UNBOUNDED_TB_WRITE])
    assert proposal.command == (*COMMAND, "--max_steps", "2000")  # a multiple of 500
    assert "--max_steps is -1 by default (no limit): 2000 here" in (proposal.command_reason)
    assert "run_timeout_s = 1800 s" in proposal.command_reason
    assert proposal.smoke == (*COMMAND, "--max_steps", "10", "--eval_interval", "5")
    assert proposal.smoke_reason == (
        "--max_steps 10, --eval_interval 5: a short run that writes every metric once "
        "(`step % args.eval_interval == 0 and step > 0` first holds at step 5; at 500 as the "
        "script stands)"
    )
    # the counter is advanced where the test cannot see, before it or after: 501 steps reach
    # step 500 either way
    assert (proposal.count, proposal.smoke_count, proposal.every, proposal.at_least) == (
        2000,
        10,
        500,
        501,
    )


def test_a_count_too_long_to_run_and_a_literal_interval(tmp_path: Path) -> None:
    entry = _entry(tmp_path, {"train.py": LONG_STEPS})
    length = run_length_option(entry)
    assert length is not None and (length.flag, length.default) == ("--steps", 100000)
    assert length.unbounded  # more than 10^4 steps
    write = first_write(("for step in range(args.steps)", "(step + 1) % 200 == 0"), entry)
    assert write is not None and (write.at, write.smoke_at, write.intervals) == (199, 199, ())

    proposal = _propose(entry, writes=[("for step in range(args.steps)", "(step + 1) % 200 == 0")])
    assert proposal.command == (*COMMAND, "--steps", "2000")
    assert "--steps is 100000 by default" in proposal.command_reason
    # no option turns the 200 down: the smoke runs until it is first printed
    assert proposal.smoke == (*COMMAND, "--steps", "200")
    assert proposal.smoke_reason.endswith(
        "(`(step + 1) % 200 == 0` first holds at step 199, and no option turns it down)"
    )


def test_click_epochs_and_an_interval_counted_in_epochs(tmp_path: Path) -> None:
    entry = _entry(tmp_path, {"train.py": CLICK_EPOCHS})
    length = run_length_option(entry)
    assert length is not None
    assert (length.flag, length.unit, length.default) == ("--epochs", "epoch", 1000)
    assert not length.unbounded  # 10^3 epochs: long, but a count
    write = first_write(("for epoch in range(epochs)", "epoch % log_every == 0"), entry)
    assert write is not None and (write.at, write.unit) == (0, "epoch")
    assert [(i.flag, i.unit) for i in write.intervals] == [("--log-every", "epoch")]

    command = ("{python}", "train.py", "--out-dir", "{out_dir}")
    proposal = _propose(entry, command, writes=[("epoch % log_every == 0",)])
    # its first log is at epoch 50, which 51 epochs reach whether the count starts at 0 or 1
    assert proposal.command == (*command, "--epochs", "51")
    assert "about 25.0 h at a guessed 90 s an epoch" in proposal.command_reason
    assert proposal.smoke == (*command, "--epochs", "1", "--log-every", "1")


def test_hydra_keys_bounded_by_override(tmp_path: Path) -> None:
    entry = _entry(tmp_path, {"train.py": HYDRA_TRAIN, "conf/config.yaml": HYDRA_CONFIG})
    lengths = run_length_options(entry)
    assert [(o.flag, o.unit, o.unbounded) for o in lengths] == [
        ("trainer.max_epochs", "epoch", False),
        ("max_iters", "step", True),
    ]
    assert {i.flag for i in interval_options(entry)} == {
        "trainer.log_every_n_steps",
        "eval_interval",
    }
    writes = [("for it in range(cfg.max_iters)", "it % cfg.eval_interval == 0")]
    assert first_write_step(writes[0], entry) == 0

    command = ("{python}", "train.py", "hydra.run.dir={out_dir}")
    proposal = _propose(entry, command, writes=writes)
    # 100 epochs come down to 10; 100000 iterations are a count, brought down too
    assert proposal.command == (*command, "trainer.max_epochs=10", "max_iters=2000")
    assert proposal.smoke == (
        *command,
        "trainer.max_epochs=1",
        "max_iters=10",
        "trainer.log_every_n_steps=5",
        "eval_interval=5",
    )


def test_a_module_constant_is_reported_and_left(tmp_path: Path) -> None:
    entry = _entry(tmp_path, {"train.py": MODULE_CONSTANTS})
    assert entry.kind == "plain"
    assert Constant("max_iters", 5000, 1) in entry.constants
    length = run_length_option(entry)
    assert length is not None
    assert (length.flag, length.dest, length.default, length.settable) == (
        "",
        "max_iters",
        5000,
        False,
    )
    assert "train.py:1" in length.why and "no command-line option changes" in length.why
    assert [(i.dest, i.settable) for i in interval_options(entry)] == [("eval_interval", False)]
    assert first_write_step(("it % eval_interval == 0 or it == max_iters - 1",), entry) == 250
    assert first_write_step(("i == max_iters - 1",), entry) == 4999

    command = ("{python}", "train.py")
    proposal = _propose(entry, command, writes=[("i == max_iters - 1",)])
    assert proposal.command == command and proposal.count is None
    assert proposal.command_reason.endswith(
        "(about 38 min at a guessed 0.45 s a step), and a baseline runs it whole"
    )
    assert proposal.smoke == ()  # nothing on a command line shortens it
    assert "max_iters is a module constant" in proposal.smoke_reason


def test_a_bounded_script_is_left_alone(tmp_path: Path) -> None:
    entry = _entry(tmp_path, {"train.py": BOUNDED})
    length = run_length_option(entry)
    assert length is not None and not length.unbounded
    proposal = _propose(entry)
    assert proposal.command == COMMAND and proposal.count == 3
    assert proposal.command_reason.startswith("--epochs 3 by default already fits")
    assert proposal.smoke == (*COMMAND, "--epochs", "1")


def test_no_limit_beside_a_bounded_count_is_left(tmp_path: Path) -> None:
    """Hugging Face's max_steps=-1 means "as many as num_train_epochs take": left as it is."""
    entry = _entry(tmp_path, {"train.py": HUGGING_FACE_STYLE})
    assert [o.flag for o in run_length_options(entry)] == ["--num_train_epochs", "--max_steps"]
    command = ("{python}", "train.py", "--output_dir", "{out_dir}")
    proposal = _propose(entry, command)
    assert proposal.command == command
    assert proposal.smoke == (*command, "--num_train_epochs", "1", "--logging_steps", "5")


def test_a_value_the_command_gives_is_the_one_judged_and_replaced(tmp_path: Path) -> None:
    entry = _entry(tmp_path, {"train.py": UNBOUNDED_TB})
    readme = (*COMMAND, "--max_steps=50000", "--lr", "0.1")
    proposal = _propose(entry, readme)
    assert proposal.command == (*COMMAND, "--max_steps=2000", "--lr", "0.1")
    assert "--max_steps is 50000 in the command" in proposal.command_reason
    small = (*COMMAND, "--max_steps", "300")
    assert _propose(entry, small).command == small


def test_the_smoke_command_drafted_is_kept_and_given_the_counts(tmp_path: Path) -> None:
    entry = _entry(tmp_path, {"train.py": UNBOUNDED_TB})
    drafted = (*COMMAND, "--max_steps", "10")  # as setup_draft's _propose_smoke writes it
    proposal = _propose(entry, writes=[UNBOUNDED_TB_WRITE], smoke=drafted)
    assert proposal.smoke == (*drafted, "--eval_interval", "5")


def test_no_length_option_leaves_the_command_and_says_so(tmp_path: Path) -> None:
    entry = EntryPoint("train.py", "plain")
    proposal = _propose(entry, ("{python}", "train.py"))
    assert proposal.command == ("{python}", "train.py") and proposal.smoke == ()
    assert "until [limits] run_timeout_s = 1800 s stops it" in proposal.command_reason


NITERS = """\
import argparse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    parser.add_argument("--niters", type=int, default=200000, help="generator iterations")
    args = parser.parse_args()
    for it in range(args.niters):
        if it % 100 == 0:
            print(f"iter {it} loss_G {0.7:.4f}")


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("name", ["niters", "nepochs", "niter", "num_iters"])
def test_a_run_length_by_another_name_bounds_the_baseline_and_shortens_the_smoke(
    tmp_path: Path, name: str
) -> None:
    """Issue 43: --niters shortened the smoke run but was not read as the run's length, so the
    baseline ran unbounded while the proposal said no option set it. One table of names now
    serves both."""
    entry = _entry(tmp_path, {"train.py": NITERS.replace("niters", name)})
    length = run_length_option(entry)
    assert length is not None and (length.flag, length.unbounded) == (f"--{name}", True)
    draft = propose_setup(survey(tmp_path))
    command = draft.values["experiment"]["command"].split()
    smoke = draft.values["experiment"]["smoke_command"].split()
    cap = baseline_cap(length.unit, LIMITS.run_timeout_s)
    assert command[command.index(f"--{name}") + 1] == str(cap)  # not 200000, nor unbounded
    # the first line comes at the first step (epoch): the smoke run ends soon after
    smoke_count = 1 + PACE_AFTER[length.unit]
    assert smoke[smoke.index(f"--{name}") :][:2] == [f"--{name}", str(smoke_count)]
    reason = draft.reasons["experiment.command"]
    assert f"--{name} is 200000 by default" in reason
    assert "no option or constant sets how long a run trains" not in reason


# -- first writes from the conditions as code spells them -----------------------------------------

CONDITIONS = EntryPoint(
    "train.py",
    "argparse",
    (
        Option(("--max_steps",), "max_steps", 20000, "int"),
        Option(("--eval_interval",), "eval_interval", 500, "int"),
        Option(("--log_every",), "log_every", 10, "int"),
        Option(("--eval_every",), "eval_every", 100, "int"),
        Option(("--freq",), "freq", None, "int"),
    ),
    constants=(Constant("WARMUP", 1000, 3),),
)


@pytest.mark.parametrize(
    ("conditions", "at", "smoke_at"),
    [
        (("step % 500 == 0 and step > 0",), 500, 500),
        (("(it + 1) % args.eval_interval == 0",), 499, 4),
        (("global_step % self.eval_every == 0 and global_step",), 100, 5),
        # no loop in sight: the counter may be advanced before the test, so the later value;
        # an interval of 1 (the smoke run's) holds at the first step either way
        (("epoch % cfg.log_every == 0",), 10, 0),
        (("i == args.max_steps - 1",), 19999, 9),
        (("rank == 0", "args.use_tb", "step % args.eval_interval == 0"), 500, 5),
        (("not (step < WARMUP)", "step % 300 == 0"), 1200, 1200),
        (("step > 50000 and step % 7 == 0",), 50001, 50001),
        (("for i, batch in enumerate(loader)", "i % args.log_every == 0"), 0, 0),
        ((), 0, 0),
    ],
)
def test_first_write(conditions: tuple[str, ...], at: int, smoke_at: int) -> None:
    write = first_write(conditions, CONDITIONS)
    assert write is not None
    assert (write.at, write.smoke_at) == (at, smoke_at)


@pytest.mark.parametrize(
    "conditions",
    [
        ("step % len(loader) == 0",),  # a call
        ("step % args.freq == 0",),  # an option with no default
        ("step % unknown_every == 0",),  # neither option nor constant
        ("step % args.eval_interval == 0 and step >…",),  # cut short by the recorder
        ("epoch > 0", "step % 10 == 0"),  # two counters, two units
    ],
)
def test_first_write_unknown(conditions: tuple[str, ...]) -> None:
    assert first_write(conditions, CONDITIONS) is None
    assert first_write_step(conditions, CONDITIONS) is None


def test_a_loop_from_one_needs_the_step_itself_not_one_more() -> None:
    loop = ("for step in range(1, args.max_steps + 1)", "step % args.eval_every == 0")
    write = first_write(loop, CONDITIONS)
    assert write is not None
    assert (write.start, write.at, write.needed, write.smoke_at, write.smoke_needed) == (
        1,
        100,
        100,
        5,
        5,
    )
    batches = ("for i, batch in enumerate(loader, start=1)", "i % 50 == 0")
    assert first_write_step(batches, CONDITIONS) == 50


def test_a_literal_interval_from_epoch_one_lengthens_the_smoke() -> None:
    """tests/repo_shapes/tinynn_library: ``epoch % 10 == 0`` from epoch 1 needs 10 epochs."""
    entry = EntryPoint("fit.py", "argparse", (Option(("--epochs",), "epochs", 300, "int"),))
    write = ("for epoch in range(1, args.epochs + 1)", "epoch % 10 == 0")
    proposal = _propose(entry, ("{python}", "fit.py"), writes=[write])
    assert proposal.command == ("{python}", "fit.py", "--epochs", "10")
    assert proposal.smoke == ("{python}", "fit.py", "--epochs", "10")
    assert proposal.at_least == 10


def test_a_condition_on_the_runs_length_follows_it() -> None:
    write = first_write(("i == args.max_steps - 1",), CONDITIONS)
    assert write is not None and write.follows_length


# -- after the smoke run ---------------------------------------------------------------------------

STEPS = run_length_options(CONDITIONS)[0]


def test_fit_to_pace_rounds_to_the_metric_interval() -> None:
    endless = EntryPoint("t.py", "argparse", (Option(("--max_steps",), "max_steps", -1, "int"),))
    length = run_length_options(endless)[0]
    count, why = fit_to_pace(length, 10, 5.0, 1800, every=500)
    # 0.5 s a step: 900 s (half the budget) hold 1800 steps, 1500 a multiple of 500
    assert count == 1500
    assert "5.0 s for 10 steps (0.5 s a step" in why and "1800 fit half" in why
    assert "multiple of the metric interval 500" in why
    assert fit_to_pace(length, 10, 5.0, 1800)[0] == 1800


def test_fit_to_pace_keeps_a_bounded_default_that_fits() -> None:
    bounded = EntryPoint("t.py", "argparse", (Option(("--steps",), "steps", 1000, "int"),))
    count, why = fit_to_pace(run_length_options(bounded)[0], 10, 1.0, 1800)
    assert count == 1000 and "the script's own, fits" in why
    assert fit_to_pace(STEPS, 10, 10.0, 1800)[0] == 900  # 20000 by default: does not fit


def test_the_pace_after_the_first_metric_line_leaves_start_up_out() -> None:
    endless = EntryPoint("t.py", "argparse", (Option(("--max_steps",), "max_steps", -1, "int"),))
    length = run_length_options(endless)[0]
    # 10 steps in 2.0 s, of which the 5 after the first metric line took 0.05 s: 0.01 s a step
    # and 1.9 s of start-up, paid once: (150 - 1.9) / 0.01 = 14810 steps, to a multiple of 5
    count, why = fit_to_pace(length, 10, 2.0, 300, every=5, after_first=(5, 0.05))
    assert count == 14810
    assert "5 steps of the smoke run after its first metric line took 0.05 s" in why
    assert "1.9 s of start-up left out" in why
    # counted with its start-up (0.2 s a step), the same run would have given 750
    assert fit_to_pace(length, 10, 2.0, 300, every=5)[0] == 750


def test_fit_to_pace_never_goes_below_the_first_write() -> None:
    count, why = fit_to_pace(STEPS, 10, 20.0, 600, every=500, at_least=501)
    assert count == 501 and "may not fit" in why


SLOW_STEPS = """\
import argparse
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    parser.add_argument("--steps", type=int, default=15)
    args = parser.parse_args()
    for step in range(args.steps):
        time.sleep(37)  # a step of a large model on a CPU
        print(f"step {step} loss {1.0 / (step + 1):.4f}")


if __name__ == "__main__":
    main()
"""


def test_a_default_count_left_off_the_command_is_refitted_after_the_smoke_run(
    tmp_path: Path,
) -> None:
    """Issue 43: --steps 15 fit the guessed 0.45 s a step, so the command left it to the
    default; the smoke run measured 37 s a step, and the baseline, never refitted, timed out.
    The smoke run is sized to the first metric line (not 10 of the 15 steps), and the refit
    writes the option into the command."""
    _entry(tmp_path, {"train.py": SLOW_STEPS})
    draft = propose_setup(survey(tmp_path), LIMITS)
    command = draft.values["experiment"]["command"]
    assert command == "{python} train.py --out_dir {out_dir}"  # 15 fits the guess: left off
    assert draft.values["experiment"]["smoke_command"].endswith("--steps 3")  # 1 + PACE_AFTER
    assert "and 2 steps after, to measure the pace" in draft.reasons["experiment.smoke_command"]
    assert draft.sizing is not None
    assert (draft.sizing.proposal.count, draft.sizing.proposal.smoke_count) == (15, 3)

    proposal = f'[experiment]\ncommand = "{command}"\n'
    # the smoke run: 3 steps in 112 s, 2 of them after its first metric line in 74 s
    text, why = fit_to_smoke(proposal, draft.sizing, 112.0, 1800.0, after_first=(2, 74.0))
    # (900 s - 1 s of start-up) / 37 s a step: 24 steps fit, more than the script's 15
    assert why == ""
    text, why = fit_to_smoke(proposal, draft.sizing, 112.0, 600.0, after_first=(2, 74.0))
    # (300 s - 1 s) / 37 s: 8 steps, written into the command the default left it out of
    assert 'command = "{python} train.py --out_dir {out_dir} --steps 8"' in text
    assert why.startswith("--steps 8: 2 steps of the smoke run after its first metric line")
    assert text.startswith(f"[experiment]\n# fitted after the smoke run: {why}\n")
    # a count the researcher wrote into the command stands
    edited = proposal.replace("{out_dir}", "{out_dir} --steps 12")
    assert fit_to_smoke(edited, draft.sizing, 112.0, 600.0, after_first=(2, 74.0))[1] == ""


def test_set_count_and_the_baseline_cap() -> None:
    assert set_count(["x.py", "--max_steps", "5"], STEPS, 40) == ["x.py", "--max_steps", "40"]
    assert set_count(["x.py"], STEPS, 40) == ["x.py", "--max_steps", "40"]
    assert baseline_cap("step", 1800) == 2000 and baseline_cap("epoch", 1800) == 10
    assert baseline_cap("step", 60) == 50  # LABTUI_LIMITS__RUN_TIMEOUT_S=60: a round 50
