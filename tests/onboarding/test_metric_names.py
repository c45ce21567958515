"""The metric names `labtui init` reads from a repository's code and configs
(core/onboarding/metric_names.py, core/onboarding/metric_choice.py), and the [results] proposed
from them: small repositories of each shape, written in tmp_path, read without running them."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest

from labtui.core.machine.metric_lines import parse_metrics
from labtui.core.onboarding.metric_choice import metrics_in_configs
from labtui.core.onboarding.metric_names import CodeMetrics, metrics_in_code
from labtui.core.onboarding.printed_metrics import SAMPLE_STEP, SAMPLE_VALUE
from labtui.core.onboarding.repo_facts import RepoSurvey
from labtui.core.onboarding.repo_scan import propose_setup, survey
from labtui.core.settings.experiment_sections import ResultsSection

TENSORBOARD = """\
import argparse
from torch.utils.tensorboard import SummaryWriter


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="runs")
    parser.add_argument("--max_steps", type=int, default=-1)
    args = parser.parse_args()
    writer = SummaryWriter(args.out_dir)
    step = 0
    while step != args.max_steps:
        writer.add_scalar("Loss/train", 2.0, step)
        if step % 500 == 0 and step > 0:
            writer.add_scalar("Loss/test", 1.0, global_step=step)
        step += 1


if __name__ == "__main__":
    main()
"""

ADD_SCALARS = """\
from torch.utils.tensorboard import SummaryWriter

if __name__ == "__main__":
    writer = SummaryWriter("logs")
    for epoch in range(3):
        writer.add_scalars("Loss", {"train": 2.0, "test": 1.0}, epoch)
"""

WANDB = """\
import wandb
from model import evaluate

if __name__ == "__main__":
    run = wandb.init(project="grokking")
    for step in range(100):
        metrics = {"train/loss": 1.0}
        metrics["validation/accuracy"] = evaluate()
        wandb.log(metrics, step=step)
        run.log({"val": {"acc": 1.0}, "lr": 0.1, "step": step})
        for split in ("train", "test"):
            wandb.log({f"{split}/ppl": 2.0})
"""

LIGHTNING = """\
import lightning as L
from lightning.pytorch.loggers import CSVLogger


class Net(L.LightningModule):
    def training_step(self, batch, batch_idx):
        self.log("train_loss", 1.0, on_epoch=True)
        return 1.0

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", 1.0)
        self.log_dict({"val_acc": 0.9})


if __name__ == "__main__":
    trainer = L.Trainer(logger=CSVLogger("logs", name="mnist"), max_epochs=3)
    trainer.fit(Net())
"""

MLFLOW = """\
import mlflow

if __name__ == "__main__":
    for epoch in range(3):
        mlflow.log_metric("rmse", 0.3, step=epoch)
        mlflow.log_metrics({"mae": 0.2})
"""

PRINTED = """\
import logging

logger = logging.getLogger(__name__)


def main(steps=1000):
    for step in range(steps):
        tl, vl, acc = 2.3, 2.2, 0.9
        if step % 100 == 0:
            print(f"step {step} train loss: {tl:.2f} test loss: {vl:.2f}")
        logging.info("Validation accuracy: %.2f", acc)
        logger.info("saved %d checkpoints", 3)


if __name__ == "__main__":
    main()
"""

HYDRA = """\
import hydra
import lightning as L


class Net(L.LightningModule):
    def validation_step(self, batch, batch_idx):
        self.log("val/acc", 0.9)
        self.log("val/loss", 0.3)


@hydra.main(config_path="configs", config_name="train", version_base=None)
def main(cfg):
    L.Trainer().fit(Net())


if __name__ == "__main__":
    main()
"""


def _repo(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return root


def _read(root: Path) -> tuple[RepoSurvey, CodeMetrics]:
    facts = survey(root)
    entry = next((e for e in facts.entry_points if not e.error), None)
    return facts, metrics_in_code(facts, entry)


def _results(root: Path) -> tuple[dict, dict[str, str], list[str]]:
    draft = propose_setup(survey(root))
    reasons = {k: v for k, v in draft.reasons.items() if k.startswith("results.")}
    return draft.values["results"], reasons, draft.open_questions


# -- what each source yields ---------------------------------------------------------------------


def test_tensorboard_tags_with_the_condition_of_a_late_first_write(tmp_path: Path) -> None:
    _facts, code = _read(_repo(tmp_path, {"train.py": TENSORBOARD}))
    found = {m.name: m for m in code.found}
    assert set(found) == {"Loss/train", "Loss/test"}
    late = found["Loss/test"]
    assert (late.kind, late.direction, late.where) == ("tensorboard", "lower", "train.py:15")
    assert late.conditions == ("while step != args.max_steps", "step % 500 == 0 and step > 0")
    assert late.step_expr == "step"
    assert (
        late.reason == 'train.py:15 writer.add_scalar("Loss/test", …); by its name, lower is better'
    )
    assert found["Loss/train"].conditions == ("while step != args.max_steps",)
    assert [(w.call, w.folder) for w in code.loggers] == [("SummaryWriter", "args.out_dir")]


def test_add_scalars_writes_the_main_tag_into_a_folder_per_key(tmp_path: Path) -> None:
    _facts, code = _read(_repo(tmp_path, {"train.py": ADD_SCALARS}))
    (found,) = code.found
    assert (found.name, found.folders, found.step_expr) == (
        "Loss",
        ("Loss_train", "Loss_test"),
        "epoch",
    )
    assert found.conditions == ("for epoch in range(3)",)


def test_tensorboard_names_add_scalars_series_as_the_reader_reads_them(tmp_path: Path) -> None:
    """What torch's SummaryWriter really writes: each key's series as the tag main_tag, in a
    folder main_tag_key; the proposed path reads the held-out one alone."""
    tensorboard = pytest.importorskip("torch.utils.tensorboard")
    from labtui.core.runs.result_formats import event_scalars

    root = _repo(tmp_path, {"train.py": ADD_SCALARS})
    results, _reasons, _questions = _results(root)  # before any run wrote event files
    assert results == {
        "source": "tensorboard",
        "path": "logs/**/Loss_test/events.out.tfevents.*",
        "metrics": {"Loss": "lower"},
    }
    writer = tensorboard.SummaryWriter(str(root / "logs"))
    writer.add_scalars("Loss", {"train": 2.0, "test": 1.0}, 0)
    writer.close()
    files = [Path(p) for p in glob.glob(str(root / results["path"]), recursive=True)]
    assert {tag: [p[2] for p in points] for tag, points in event_scalars(files).items()} == {
        "Loss": [1.0]
    }


def test_wandb_keys_of_dict_variables_nested_dicts_and_literal_loops(tmp_path: Path) -> None:
    files = {"train.py": WANDB, "model.py": "def evaluate():\n    return 0.5\n"}
    _facts, code = _read(_repo(tmp_path, files))
    names = [m.name for m in code.found]
    # W&B keys a nested dict's leaves "val.acc" (its offline history holds the key path)
    assert names == [
        "train/loss",
        "validation/accuracy",
        "val.acc",
        "lr",
        "step",
        "train/ppl",
        "test/ppl",
    ]
    assert {m.kind for m in code.found} == {"wandb"}
    logged = next(m for m in code.found if m.name == "validation/accuracy")
    assert logged.step_expr == "step"
    assert 'wandb.log(metrics) with "validation/accuracy"' in logged.reason
    loop = next(m for m in code.found if m.name == "test/ppl")
    assert loop.conditions == ("for step in range(100)", "for split in ('train', 'test')")


def test_lightning_self_log_and_its_csv_logger(tmp_path: Path) -> None:
    _facts, code = _read(_repo(tmp_path, {"train.py": LIGHTNING}))
    # on_step (training_step's default) and on_epoch: Lightning logs train_loss_epoch
    assert [(m.name, m.kind) for m in code.found] == [
        ("train_loss_epoch", "lightning"),
        ("val_loss", "lightning"),
        ("val_acc", "lightning"),
    ]
    (logger,) = code.loggers
    assert (logger.call, logger.folder_literal, logger.name) == ("CSVLogger", "logs", "mnist")


def test_mlflow_names(tmp_path: Path) -> None:
    _facts, code = _read(_repo(tmp_path, {"train.py": MLFLOW}))
    assert [(m.name, m.kind, m.direction, m.step_expr) for m in code.found] == [
        ("rmse", "mlflow", "lower", "epoch"),
        ("mae", "mlflow", "lower", ""),
    ]


def test_printed_names_are_what_the_stdout_parser_reads_back(tmp_path: Path) -> None:
    _facts, code = _read(_repo(tmp_path, {"train.py": PRINTED}))
    printed = [m for m in code.found if m.where == "train.py:10"]
    expected = parse_metrics(
        f"step {SAMPLE_STEP} train loss: {SAMPLE_VALUE} test loss: {SAMPLE_VALUE}"
    )
    assert expected is not None
    assert {m.name for m in printed} == set(expected.values)
    assert {m.step_expr for m in printed} == {"step"}
    assert printed[0].conditions == ("for step in range(steps)", "step % 100 == 0")
    logged = [m for m in code.found if m.where == "train.py:11"]
    accuracy = parse_metrics(f"Validation accuracy: {SAMPLE_VALUE}")
    assert accuracy is not None
    assert [m.name for m in logged] == list(accuracy.values)
    assert {m.direction for m in logged} == {"higher"}
    # "saved 3 checkpoints": no name before the number
    assert not [m for m in code.found if m.where == "train.py:12"]


def test_format_and_percent_strings_render_their_placeholders(tmp_path: Path) -> None:
    script = (
        "if __name__ == '__main__':\n"
        "    for epoch in range(3):\n"
        "        print('epoch {} accuracy {:.3f}'.format(epoch, 0.9))\n"
        "        print('perplexity %.2f' % 3.0)\n"
        "        print('reward', reward)\n"
        "        print('Saved to 4 files', 5)\n"
    )
    _facts, code = _read(_repo(tmp_path, {"run.py": script}))
    assert [(m.name, m.step_expr) for m in code.found] == [
        ("accuracy", "epoch"),
        ("perplexity", ""),
        ("reward", ""),
    ]


def test_a_sweep_states_the_metric_and_its_goal(tmp_path: Path) -> None:
    sweep = "method: bayes\nmetric:\n  name: validation/loss\n  goal: minimize\nparameters: {}\n"
    facts = survey(_repo(tmp_path, {"sweep.yaml": sweep, "train.py": WANDB}))
    (stated,) = metrics_in_configs(facts, None)
    assert (stated.name, stated.kind, stated.direction) == ("validation/loss", "wandb", "lower")
    assert stated.reason == "sweep.yaml: metric validation/loss, goal minimize"
    assert stated.where == "sweep.yaml:3"


def test_hydra_configs_state_the_optimized_metric_and_a_monitor(tmp_path: Path) -> None:
    files = {
        "train.py": HYDRA,
        "configs/train.yaml": "defaults:\n  - callbacks: default\nseed: 1\n",
        "configs/callbacks/default.yaml": "model_checkpoint:\n  monitor: val/loss\n  mode: min\n",
        "configs/hparams_search/optuna.yaml": (
            'optimized_metric: "val/acc"\nhydra:\n  sweeper:\n    direction: maximize\n'
        ),
        "configs/model/knn.yaml": "metric: euclidean\n",  # a distance, no goal: no measure
    }
    facts = survey(_repo(tmp_path, files))
    stated = {m.name: m for m in metrics_in_configs(facts, facts.entry_points[0])}
    assert set(stated) == {"val/acc", "val/loss"}
    assert stated["val/acc"].reason == (
        "configs/hparams_search/optuna.yaml: optimized_metric val/acc, direction maximize"
    )
    assert stated["val/loss"].direction == "lower"


def test_a_repository_that_writes_no_metric(tmp_path: Path) -> None:
    script = "import os\n\nif __name__ == '__main__':\n    print('done', os.getcwd())\n"
    facts, code = _read(_repo(tmp_path, {"main.py": script, "notes.yaml": "a: 1\n"}))
    assert code.found == ()
    assert metrics_in_configs(facts, None) == []
    results, _reasons, questions = _results(tmp_path)
    assert results == {"source": "stdout"}
    assert any("Which metric names does a run print" in q for q in questions)


def test_the_code_is_read_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = (
        f"open({str(marker)!r}, 'w')\nprint('loss', loss)\nif __name__ == '__main__':\n    pass\n"
    )
    _facts, code = _read(_repo(tmp_path, {"train.py": script}))
    assert [m.name for m in code.found] == ["loss"]
    assert not marker.exists()


# -- the proposal --------------------------------------------------------------------------------


def _valid(results: dict) -> None:
    """`labtui init --yes` takes it: [results] as proposed passes the settings' checks."""
    ResultsSection.model_validate(results)


def test_tensorboard_tags_are_proposed_held_out_first(tmp_path: Path) -> None:
    results, reasons, questions = _results(_repo(tmp_path, {"train.py": TENSORBOARD}))
    # SummaryWriter(args.out_dir): the usual place, event files under {out_dir}
    assert results == {
        "source": "tensorboard",
        "metrics": {"Loss/test": "lower", "Loss/train": "lower"},
    }
    assert reasons["results.metrics"].startswith('train.py:15 writer.add_scalar("Loss/test", …)')
    assert not any("TensorBoard tags" in q for q in questions)
    _valid(results)


def test_wandb_keys_are_proposed_with_the_sweep_metric_first(tmp_path: Path) -> None:
    files = {
        "train.py": WANDB.replace('"validation/accuracy"', '"validation/loss"'),
        "model.py": "def evaluate():\n    return 0.5\n",
        "sweep.yaml": "metric:\n  name: validation/loss\n  goal: minimize\n",
    }
    results, reasons, questions = _results(_repo(tmp_path, files))
    assert results == {
        "source": "wandb",
        "metrics": {
            "validation/loss": "lower",
            "val.acc": "higher",
            "test/ppl": "lower",
            "train/loss": "lower",
        },
    }
    assert reasons["results.metrics"].startswith(
        "sweep.yaml: metric validation/loss, goal minimize, written at train.py:9 "
        'wandb.log(metrics) with "validation/loss". train.py:10 run.log({…}) with "val.acc"; '
        "by its name, higher is better."
    )
    assert not any("W&B" in q for q in questions)
    _valid(results)


def test_lightning_metrics_are_read_from_its_csv_logger(tmp_path: Path) -> None:
    results, reasons, _questions = _results(_repo(tmp_path, {"train.py": LIGHTNING}))
    assert results == {
        "source": "csv",
        "path": "logs/mnist/version_*/metrics.csv",
        "metrics": {"val_loss": "lower", "val_acc": "higher", "train_loss_epoch": "lower"},
    }
    assert "CSVLogger" in reasons["results.source"]
    _valid(results)


def test_hydra_lightning_metrics_go_through_the_default_logger(tmp_path: Path) -> None:
    files = {
        "train.py": HYDRA,
        "configs/train.yaml": 'optimized_metric: "val/acc"\nmode: max\n',
    }
    results, reasons, _questions = _results(_repo(tmp_path, files))
    # tensorboard is installed beside labtui: the Trainer's default logger is TensorBoard's
    assert results == {
        "source": "tensorboard",
        "path": "**/lightning_logs/version_*/events.out.tfevents.*",
        "metrics": {"val/acc": "higher", "val/loss": "lower"},
    }
    assert reasons["results.metrics"].startswith(
        "configs/train.yaml: optimized_metric val/acc, mode max"
    )
    _valid(results)


def test_without_tensorboard_in_the_runs_python_lightnings_default_logger_is_csv(tmp_path):
    # the repository bench's Lightning example: tensorboard beside labtui, not in the research
    # venv, so Lightning wrote metrics.csv while labtui looked for event files
    from labtui.core.onboarding.metric_choice import csv_where_no_tensorboard

    files = {"train.py": HYDRA, "configs/train.yaml": 'optimized_metric: "val/acc"\nmode: max\n'}
    results, reasons, _questions = _results(_repo(tmp_path, files))
    values = {"results": dict(results)}
    csv_where_no_tensorboard(values, reasons, "/venv/bin/python", has_tensorboard=True)
    assert values["results"]["source"] == "tensorboard", "where it imports, as surveyed"
    csv_where_no_tensorboard(values, reasons, "/venv/bin/python", has_tensorboard=False)
    assert values["results"]["source"] == "csv"
    assert values["results"]["path"] == "**/lightning_logs/version_*/metrics.csv"
    assert "tensorboard is not importable in /venv/bin/python" in reasons["results.source"]
    _valid(values["results"])


def test_printed_metrics_are_proposed_from_stdout(tmp_path: Path) -> None:
    results, reasons, questions = _results(_repo(tmp_path, {"train.py": PRINTED}))
    assert results["source"] == "stdout"
    assert "accuracy" in " ".join(results["metrics"]).lower()
    assert all(d in ("higher", "lower") for d in results["metrics"].values())
    assert "train.py:10 print(" in reasons["results.metrics"]
    assert not any("print" in q for q in questions)
    _valid(results)


def test_mlflow_names_are_proposed_only_where_they_are_printed_too(tmp_path: Path) -> None:
    results, _reasons, questions = _results(_repo(tmp_path, {"train.py": MLFLOW}))
    assert results == {"source": "stdout"}
    assert any("MLflow" in q and "rmse" in q for q in questions)
    printed = MLFLOW.replace(
        '        mlflow.log_metrics({"mae": 0.2})\n', '        print(f"rmse: {0.3:.3f}")\n'
    )
    results, _reasons, questions = _results(_repo(tmp_path / "printed", {"train.py": printed}))
    assert results == {"source": "stdout", "metrics": {"rmse": "lower"}}
    assert not any("MLflow" in q for q in questions)


def test_a_result_file_on_disk_still_decides(tmp_path: Path) -> None:
    files = {"train.py": TENSORBOARD, "results.csv": "epoch,val_acc\n1,0.5\n"}
    results, _reasons, _questions = _results(_repo(tmp_path, files))
    assert results["source"] == "csv"
    assert "val_acc" in results["metrics"]  # from the file, not the code's TensorBoard tags


BUILT_FIRST = """\
import argparse
import logging

logger = logging.getLogger(__name__)


def evaluate(epoch, loss, correct, total):
    msg = "Epoch {} Test Loss {:.6f} Accuracy {}/{}".format(epoch, loss, correct, total)
    logger.info(msg)
    line = f"epoch {epoch}"
    line += f" val_ppl {2 ** loss:.2f}"
    print(line)
    note = "lr %.4f" % 0.1
    note = describe(note)  # no longer the line built: nothing read from it
    print(note)


def elsewhere():
    print(msg)  # another function's variable: not the line built in evaluate


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    for epoch in range(args.epochs):
        evaluate(epoch, 0.5, 9, 10)
"""


def test_a_line_built_before_it_is_logged_is_read(tmp_path: Path) -> None:
    """Issue 43: ``msg = '… Test Loss {:.6f} …'.format(…)`` then ``logger.info(msg)``; the
    run-time parser reads the line, so init proposes its metric too."""
    _facts, code = _read(_repo(tmp_path, {"train.py": BUILT_FIRST}))
    built = parse_metrics(f"Epoch {SAMPLE_STEP} Test Loss {SAMPLE_VALUE} Accuracy 9/10")
    assert built is not None and "test_loss" in built.values
    assert [(m.name, m.where, m.step_expr) for m in code.found] == [
        ("test_loss", "train.py:9", "epoch"),  # where it is logged, not where it is built
        ("val_ppl", "train.py:12", "epoch"),  # built over two lines with +=
    ]
    results, reasons, _questions = _results(tmp_path)
    assert results["source"] == "stdout"
    assert results["metrics"]["test_loss"] == "lower"
    assert "train.py:9 logger.info('Epoch {} Test Loss" in reasons["results.metrics"]
