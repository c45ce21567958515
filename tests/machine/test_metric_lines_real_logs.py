"""Metric parsing on log lines as real programs print them: coloured by colorlog or tqdm, in
Hydra's log format, with Rich markup printed raw, and with qualified names ("train loss")."""

from __future__ import annotations

import pytest

from labtui.core.machine.metric_lines import MAX_PARSED_CHARS, MetricPoint, parse_metrics

HYDRA = "[2024-05-01 12:00:01,123][__main__][INFO] - "

# -- colour codes and markup -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "values"),
    [
        # colorlog around Hydra's default format
        (
            "\x1b[32m[2024-05-01 12:00:01,123][__main__][INFO]\x1b[0m - Validation accuracy: 0.95",
            {"validation_accuracy": 0.95},
        ),
        (HYDRA + "Validation accuracy: 0.95", {"validation_accuracy": 0.95}),
        # colour inside the pair itself: name, separator and value split by codes
        ("\x1b[1mloss\x1b[0m:\x1b[1;31m0.25\x1b[0m", {"loss": 0.25}),
        ("\x1b[38;5;208mval/acc\x1b[39m=0.7", {"val/acc": 0.7}),
        # an OSC hyperlink (rich, modern terminals) and a cursor move (tqdm)
        ("\x1b]8;;https://wandb.ai/run\x07view run\x1b]8;;\x07 loss=1.5", {"loss": 1.5}),
        ("\x1b[A\x1b[2K step 4 loss 0.5", {"loss": 0.5}),
        # Rich markup printed raw
        ("[bold green]Val acc:[/] 0.9", {"val_acc": 0.9}),
        ("[bold]loss[/bold]: [red on white]0.31[/red on white]", {"loss": 0.31}),
        ("[not bold]acc[/not bold]=[#ff8800]0.5[/]", {"acc": 0.5}),
        ("[link=https://example.org]report[/link] f1=0.8", {"f1": 0.8}),
    ],
)
def test_colour_codes_and_markup_are_not_part_of_the_metric(
    line: str, values: dict[str, float]
) -> None:
    point = parse_metrics(line)
    assert point is not None
    assert point.values == values


def test_brackets_that_are_not_markup_stay() -> None:
    # "[train]" and "[1/200]" are text: had they gone, "train" would qualify "loss"
    point = parse_metrics("[train] [1/200] loss: 0.5")
    assert point is not None and point.values == {"loss": 0.5}
    assert parse_metrics("[epoch 3] [i] x") is None  # "[i]" is Rich's italic: no number left


def test_a_tqdm_bar_with_colour_and_postfix() -> None:
    line = (
        "\rEpoch 3:  45%|\x1b[32m████▌     \x1b[0m| 45/100 [00:02<00:03, 18.2it/s, "
        "loss=0.512, v_num=0]"
    )
    point = parse_metrics(line)
    assert point is not None
    assert point.values == {"loss": 0.512, "v_num": 0.0}
    assert (point.step, point.step_name) == (3.0, "epoch")


# -- qualified names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "values", "step"),
    [
        ("step 500 train loss: 2.32 test loss: 2.30", {"train_loss": 2.32, "test_loss": 2.3}, 500),
        (
            HYDRA + "step 500 train loss: 2.32 test loss: 2.30",
            {"train_loss": 2.32, "test_loss": 2.3},
            500,
        ),
        ("Epoch 3 Train Loss: 0.5 Val Acc: 0.9", {"train_loss": 0.5, "val_acc": 0.9}, 3),
        # the PyTorch MNIST example
        (
            "Test set: Average loss: 0.0338, Accuracy: 9890/10000 (99%)",
            {"average_loss": 0.0338, "Accuracy": 9890.0},
            None,
        ),
        ("Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.302", {"Loss": 2.302}, 1),  # epoch stays a step
        # names that are one token keep their spelling, and take no qualifier
        ("loss: 0.34 - accuracy: 0.91", {"loss": 0.34, "accuracy": 0.91}, None),
        ("| epoch 3 | loss 0.5 |", {"loss": 0.5}, 3),
        ("seed 0 epoch 25/200 train_loss 0.41", {"train_loss": 0.41}, 25),
        ("final test_accuracy_mean 0.93", {"test_accuracy_mean": 0.93}, None),
        ("eval Loss/test 0.2 val/acc: 0.8", {"Loss/test": 0.2, "val/acc": 0.8}, None),
        ("{'eval loss': 0.3}", {"eval_loss": 0.3}, None),
        # what does not qualify: log levels, stopwords, step and group keys, non-words
        ("INFO loss: 3", {"loss": 3.0}, None),
        ("the loss 0.3 global step 5", {"loss": 0.3}, 5),
        ("random seed 3 val/acc loss: 1", {"loss": 1.0}, None),
        ("ERROR rate: 0.1 error rate: 0.2", {"rate": 0.1, "error_rate": 0.2}, None),
    ],
)
def test_a_name_keeps_the_word_that_qualifies_it(
    line: str, values: dict[str, float], step: float | None
) -> None:
    point = parse_metrics(line)
    assert point is not None
    assert point.values == values
    assert point.step == step


def test_qualified_names_are_valid_metric_keys() -> None:
    point = parse_metrics("Mean Reward: 12.5 Policy entropy=0.3")
    assert point is not None
    assert list(point.values) == ["mean_reward", "policy_entropy"]
    assert all(" " not in name for name in point.values)


# -- lines that report nothing ---------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Downloading 100 files",
        "Downloading shard 3",  # two words, but neither sounds like a metric
        "INFO 2024-05-01 loss",
        HYDRA + "Loaded dataset with 60000 examples",
        "\x1b[33mWARNING\x1b[0m: 3 workers died",
        "[bold red]Error[/bold red] in line 12",
        "worker 3 worker 4",  # a name twice in a line once raised KeyError
        "\x1b[0m\x1b[1;31m",
    ],
)
def test_real_lines_without_metrics(line: str) -> None:
    assert parse_metrics(line) is None


def test_long_coloured_lines_are_still_bounded() -> None:
    coloured = "\x1b[32m" + "[bold]x[/bold] 1 " * 1_000_000 + "\x1b[0m loss=1"
    assert parse_metrics(coloured) is None  # "loss=1" lies far past MAX_PARSED_CHARS
    head = "\x1b[1mstep 3 loss 0.5\x1b[0m "
    assert parse_metrics(head + "[red]x[/red] " * 1_000_000) == MetricPoint(
        {"loss": 0.5}, step=3.0, step_name="step"
    )
    assert parse_metrics("x" * MAX_PARSED_CHARS + "\x1b[0m loss=1") is None
