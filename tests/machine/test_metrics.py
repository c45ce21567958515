"""Metric parsing from log lines, and the bounded series behind the live plot."""

from __future__ import annotations

import itertools

import pytest

from labtui.core.machine.metric_lines import (
    MAX_PARSED_CHARS,
    MetricPoint,
    is_time_like,
    lower_is_better,
    parse_metrics,
)
from labtui.core.machine.metric_series import MetricSeries

# -- parsing ---------------------------------------------------------------------------------


def test_the_moons_template_line() -> None:
    point = parse_metrics("seed 0 epoch   25/200 train_loss 0.4123 test_accuracy 0.9100")
    assert point == MetricPoint(
        {"train_loss": 0.4123, "test_accuracy": 0.91},
        step=25.0,
        step_name="epoch",
        total=200.0,
        group="seed 0",
    )
    assert point.progress == "epoch 25/200"


def test_the_moons_final_line_has_no_step() -> None:
    point = parse_metrics("final test_accuracy_mean 0.9300 train_loss_mean 0.1234")
    assert point is not None
    assert point.values == {"test_accuracy_mean": 0.93, "train_loss_mean": 0.1234}
    assert point.step is None and point.progress == ""


@pytest.mark.parametrize(
    ("line", "values", "step"),
    [
        ("step=100 loss=2.03, lr=3e-4", {"loss": 2.03, "lr": 3e-4}, 100.0),
        ("iter 5: loss: 0.25 acc: 91.5%", {"loss": 0.25, "acc": 91.5}, 5.0),
        ("| epoch 3 | loss 0.5 | acc 0.9 |", {"loss": 0.5, "acc": 0.9}, 3.0),
        ("epoch=2,val/loss=1.5,val-acc=0.7", {"val/loss": 1.5, "val-acc": 0.7}, 2.0),
        (
            "1/10 [=====] - 2s 10ms/step - loss: 0.3456 - accuracy: 0.9012",
            {"loss": 0.3456, "accuracy": 0.9012},
            None,
        ),
        ("100%|████| 10/10 [00:01<00:00, 9.5it/s, loss=0.3]", {"loss": 0.3}, None),
        ("step 0 loss 4.1742", {"loss": 4.1742}, 0.0),
        ("Step 7 Loss -1.5e-3", {"Loss": -1.5e-3}, 7.0),
    ],
)
def test_common_text_forms(line: str, values: dict[str, float], step: float | None) -> None:
    point = parse_metrics(line)
    assert point is not None
    assert point.values == values
    assert point.step == step


def test_a_json_object_line_with_nested_metrics() -> None:
    point = parse_metrics('{"step": 10, "loss": 0.3, "val": {"acc": 0.8}, "ok": true, "tag": "a"}')
    assert point == MetricPoint({"loss": 0.3, "val.acc": 0.8}, step=10.0, step_name="step")


def test_a_python_dict_repr_as_the_hugging_face_trainer_prints() -> None:
    point = parse_metrics(
        "{'loss': 0.6931, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.5}"
    )
    assert point is not None
    assert point.values == {"loss": 0.6931, "grad_norm": 1.2, "learning_rate": 5e-05}
    assert point.step == 0.5 and point.step_name == "epoch"


def test_the_finest_step_wins() -> None:
    point = parse_metrics("epoch 2 step 4000 loss 0.1")
    assert point is not None and point.step == 4000.0 and point.step_name == "step"


@pytest.mark.parametrize(
    "line",
    [
        "",
        "warning: slow dataloader",
        "Downloading 100 files",
        "line 5",
        "took 3.2 s",
        "2024-01-02 12:00:01 INFO started",
        "Epoch 1/10",  # a step alone is nothing to plot
        "loss nan acc inf",
        "model size 3.5GB",
        "Traceback (most recent call last):",
        '  File "experiment.py", line 12, in <module>',
    ],
)
def test_lines_without_metrics(line: str) -> None:
    assert parse_metrics(line) is None


def test_a_bare_pair_needs_a_metric_like_name_or_company() -> None:
    assert parse_metrics("accuracy 0.91") == MetricPoint({"accuracy": 0.91})
    assert parse_metrics("Downloading 100") is None
    assert parse_metrics("alpha 1 beta 2") == MetricPoint({"alpha": 1.0, "beta": 2.0})
    assert parse_metrics("alpha: 1") == MetricPoint({"alpha": 1.0})  # written as a metric


def test_huge_lines_are_parsed_by_their_head_only() -> None:
    head = "step 3 loss 0.5 "
    assert parse_metrics(head + "x" * 10_000_000) == MetricPoint(
        {"loss": 0.5}, step=3.0, step_name="step"
    )
    assert parse_metrics("x" * MAX_PARSED_CHARS + " loss=1") is None
    huge_json = "{" + '"loss": 1, ' * 500_000 + '"acc": 2}'
    assert parse_metrics(huge_json) == MetricPoint({"loss": 1.0})  # its head, not json.loads
    assert parse_metrics("9" * 1_000_000) is None


def test_time_like_names_and_the_direction_of_better() -> None:
    assert all(map(is_time_like, ["train_time_s", "elapsed", "wall_s", "step_ms", "eta"]))
    assert not any(map(is_time_like, ["loss", "test_accuracy", "lr", "beta1", "metadata"]))
    assert lower_is_better("val_loss") and lower_is_better("test_error")
    assert lower_is_better("train_time_s_mean") is True
    assert not lower_is_better("test_accuracy_mean") and not lower_is_better("bleu")


# -- series ----------------------------------------------------------------------------------


def point(step: float | None, group: str = "", **values: float) -> MetricPoint:
    return MetricPoint(values, step=step, step_name="step" if step is not None else "", group=group)


def test_x_is_the_step_or_a_counter() -> None:
    series = MetricSeries()
    series.start("run_1")
    series.add(point(10, loss=1.0))
    series.add(point(20, loss=0.5))
    series.add(point(None, acc=0.1))
    series.add(point(None, acc=0.2))
    assert series.segments("loss")[0].points() == ([10.0, 20.0], [1.0, 0.5])
    assert series.segments("acc")[0].points() == ([1.0, 2.0], [0.1, 0.2])
    assert series.names() == ["loss", "acc"]
    assert series.progress == "step 20"


def test_a_new_run_starts_fresh_and_the_same_run_continues() -> None:
    series = MetricSeries()
    series.start("run_1")
    series.add(point(1, loss=1.0))
    series.start("run_1")
    series.add(point(2, loss=0.9))
    assert series.stored_points("loss") == 2
    series.start("run_2")
    assert series.names() == [] and series.progress == ""
    series.add(point(1, loss=2.0))
    series.start("run_2", fresh=True)  # the same id again, after a fix
    assert series.names() == []


def test_plottable_needs_two_points_and_the_default_is_not_a_time() -> None:
    series = MetricSeries()
    series.add(point(1, time_s=0.1, loss=1.0, final_acc=0.5))
    assert series.plottable() == [] and series.default_metric() is None
    series.add(point(2, time_s=0.2, loss=0.8))
    assert series.plottable() == ["time_s", "loss"]
    assert series.default_metric() == "loss"
    only_time = MetricSeries()
    only_time.add(point(1, time_s=0.1))
    only_time.add(point(2, time_s=0.2))
    assert only_time.default_metric() == "time_s"


def test_a_step_that_goes_back_starts_a_new_curve() -> None:
    series = MetricSeries()
    for seed in range(3):
        for epoch in (25, 50, 75):
            series.add(point(epoch, group=f"seed {seed}", loss=1 / epoch + seed))
    segments = series.segments("loss")
    assert [segment.label for segment in segments] == ["seed 0", "seed 1", "seed 2"]
    assert all(segment.points()[0] == [25.0, 50.0, 75.0] for segment in segments)
    unlabelled = MetricSeries()
    for _ in range(2):
        for step in (1, 2):
            unlabelled.add(point(step, loss=1.0))
    assert [segment.label for segment in unlabelled.segments("loss")] == ["", "#2"]


def test_series_stay_bounded_by_decimation_and_keep_the_newest_point() -> None:
    series = MetricSeries(max_points=100)
    for step in range(100_000):
        series.add(point(step, loss=1 / (step + 1)))
    assert series.stored_points("loss") <= 100
    (segment,) = series.segments("loss")
    xs, _ = segment.points()
    assert xs[0] == 0.0 and xs[-1] == 99_999.0
    assert xs == sorted(xs)
    assert len(xs) > 50  # halving keeps at least half of the bound
    gaps = {b - a for a, b in itertools.pairwise(xs[:-1])}
    assert len(gaps) == 1  # evenly spaced, apart from the newest point


def test_the_bound_is_shared_by_a_metrics_curves() -> None:
    series = MetricSeries(max_points=100, max_segments=4)
    for seed in range(10):
        for step in range(1000):
            series.add(point(step, group=f"seed {seed}", loss=float(step)))
    segments = series.segments("loss")
    assert [segment.label for segment in segments] == [f"seed {n}" for n in range(6, 10)]
    assert series.stored_points("loss") <= 100


def test_only_the_first_metrics_are_kept() -> None:
    series = MetricSeries(max_metrics=3)
    series.add(point(1, **{f"m{n}": float(n) for n in range(10)}))
    assert series.names() == ["m0", "m1", "m2"]


def test_version_moves_only_when_something_arrived() -> None:
    series = MetricSeries()
    before = series.version
    series.start("")
    assert series.version == before
    series.add(point(1, loss=1.0))
    assert series.version > before
    with pytest.raises(ValueError):
        MetricSeries(max_points=2)
