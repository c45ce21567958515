"""The bundled templates, each as labtui uses it: valid and shipped clean, a fast (smoke) run that
writes the contract, plots, a clear error from plot.py without runs, and a LaTeX skeleton that
compiles; the run budget ($LABTUI_RUN_BUDGET_S) and seed offset ($LABTUI_SEED) a search gives a
run. One parametrized module; what a template's own run must show is its case's check."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.template_checks import (
    PYTHON,
    TEMPLATES,
    assert_plot_fails_without_runs,
    assert_pngs,
    assert_shipped_clean,
    compile_latex,
    leftovers,
    run,
    run_copy,
)

from labtui.core.settings.templates import check_final_info, copy_template, validate_template

SMOKE = {"LABTUI_SMOKE": "1"}
BUDGET = "LABTUI_RUN_BUDGET_S"
SEED = "LABTUI_SEED"
# Far below what any template needs to start (0.85 ms of training time after the process
# started): every training stops after its first epoch or step, whatever the machine's load.
TINY_BUDGET = "0.001"


def _moons(copy: dict) -> None:
    assert "epoch" in copy["experiment"].stdout and "test_accuracy" in copy["experiment"].stdout
    final_info = _final_info(copy)
    moons = final_info["moons"]
    assert set(moons["means"]) == {"test_accuracy_mean", "train_loss_mean", "train_time_s_mean"}
    assert set(moons["stderrs"]) == {
        "test_accuracy_stderr",
        "train_loss_stderr",
        "train_time_s_stderr",
    }
    assert all(len(values) == 3 for values in moons["final_info_dict"].values())
    assert 0.8 < moons["means"]["test_accuracy_mean"] <= 1.0
    curves = _curves(copy)["moons"]
    epochs = len(curves["epochs"])
    assert len(curves["train_loss"]) == len(curves["test_accuracy"]) == 3
    assert all(len(c) == epochs for c in curves["train_loss"] + curves["test_accuracy"])


CHAR_LM_METRICS = (
    "final_train_loss",
    "final_val_loss",
    "best_val_loss",
    "val_bpc",
    "train_time_s",
    "tokens_per_s",
)


def _char_lm(copy: dict) -> None:
    stdout = copy["experiment"].stdout
    assert "smoke 1" in stdout
    lines = stdout.splitlines()
    progress = [line for line in lines if " iter " in line and "val_loss" in line]
    assert progress and progress[-1].startswith("seed 0 iter 100/100 train_loss ")
    assert lines[-1].startswith("final ") and "best_val_loss_mean" in lines[-1]
    entry = _final_info(copy)["kjv_genesis"]
    assert set(entry["means"]) == {f"{m}_mean" for m in CHAR_LM_METRICS}
    assert set(entry["stderrs"]) == {f"{m}_stderr" for m in CHAR_LM_METRICS}
    assert all(len(values) == 1 for values in entry["final_info_dict"].values())
    means = entry["means"]
    # Uniform guessing over the 70 characters costs ln 70 = 4.25 nats; the smoke run must learn.
    assert means["best_val_loss_mean"] < math.log(70) - 0.5
    assert means["val_bpc_mean"] == pytest.approx(means["best_val_loss_mean"] / math.log(2))
    assert means["tokens_per_s_mean"] > 0
    curves = _curves(copy)["kjv_genesis"]
    assert curves["iters"][0] == 0 and curves["iters"][-1] == 100
    assert len(curves["train_loss"]) == len(curves["val_loss"]) == 1
    assert all(len(c) == len(curves["iters"]) for c in curves["train_loss"] + curves["val_loss"])
    assert curves["val_loss"][0][-1] < curves["val_loss"][0][0]
    sample = (copy["root"] / "run_0" / "samples.txt").read_text(encoding="utf-8")
    assert sample.startswith("=== seed 0") and len(sample) > 200


DIFFUSION_METRICS = (
    "train_loss",
    "eval_loss",
    "energy_distance",
    "kl_divergence",
    "train_time_s",
    "inference_time_s",
)


def _diffusion_2d(copy: dict) -> None:
    stdout = copy["experiment"].stdout
    assert "smoke 1" in stdout and "step 200/200 train_loss" in stdout and "final moons" in stdout
    final_info = _final_info(copy)
    assert set(final_info) == {"moons", "circles"}
    for entry in final_info.values():
        assert set(entry["means"]) == {f"{m}_mean" for m in DIFFUSION_METRICS}
        assert set(entry["stderrs"]) == {f"{m}_stderr" for m in DIFFUSION_METRICS}
        assert all(len(v) == 1 for v in entry["final_info_dict"].values())
        assert all(math.isfinite(v) for v in entry["means"].values())
        assert 0 < entry["means"]["eval_loss_mean"] < 1.5  # noise MSE starts near 1
        assert entry["means"]["energy_distance_mean"] >= 0
    curves = _curves(copy)
    assert set(curves) == {"moons", "circles"}
    for entry in curves.values():
        assert len(entry["train_loss"][0]) == len(entry["steps"])
        assert len(entry["generated"]) == len(entry["real"]) > 0


GROKKING_METRICS = (
    "final_train_acc",
    "final_val_acc",
    "final_train_loss",
    "final_val_loss",
    "step_val_acc_99",
    "grokked",
    "train_time_s",
)
GROKKING_OPERATIONS = ("x_plus_y", "x_div_y")


def _grokking(copy: dict) -> None:
    stdout = copy["experiment"].stdout
    assert "smoke 1" in stdout and "step 100/100 train_loss" in stdout and "val_acc" in stdout
    final_info = _final_info(copy)
    assert tuple(final_info) == GROKKING_OPERATIONS
    for entry in final_info.values():
        means = entry["means"]
        assert set(means) == {f"{m}_mean" for m in GROKKING_METRICS}
        assert set(entry["stderrs"]) == {f"{m}_stderr" for m in GROKKING_METRICS}
        assert all(math.isfinite(v) for v in means.values())
        assert 0 <= means["final_train_acc_mean"] <= 1 and 0 <= means["final_val_acc_mean"] <= 1
        assert 0 < means["step_val_acc_99_mean"] <= 100
        assert means["grokked_mean"] in (0.0, 1.0)
        # the training set is being fitted: far better than chance (1/23) after 100 steps
        assert means["final_train_acc_mean"] > 0.2
    curves = _curves(copy)
    for operation in GROKKING_OPERATIONS:
        entry = curves[operation]
        for key in ("train_acc", "train_loss", "val_acc", "val_loss"):
            assert len(entry[key]) == 1 and len(entry[key][0]) == len(entry["steps"])


@dataclass(frozen=True)
class Case:
    name: str
    check_run: Callable[[dict], None]  # what this template's run must show
    figures: tuple[str, ...]
    latex_figure: str
    citations: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)  # the smoke setting, where there is one
    seed_metric: str = ""  # a per-seed metric that other seeds change (final_info_dict)
    needs_torch: bool = True
    shipped_also: str = ""  # a run output the template lists in its .gitignore
    deterministic: tuple[str, ...] = ()  # metrics a second run must reproduce exactly

    @property
    def folder(self) -> Path:
        return TEMPLATES / self.name


CASES = (
    Case(
        "moons",
        _moons,
        ("train_loss.png", "test_accuracy.png"),
        "train_loss.png",
        ("kingma2015adam", "rumelhart1986learning"),
        seed_metric="test_accuracy",
        needs_torch=False,
        deterministic=("test_accuracy", "train_loss"),
    ),
    Case(
        "char_lm",
        _char_lm,
        ("train_loss.png", "val_loss.png"),
        "val_loss.png",
        ("vaswani2017attention", "radford2019language", "karpathy2022nanogpt", "kingma2015adam"),
        env=SMOKE,
        seed_metric="best_val_loss",
        shipped_also="samples.txt",
        deterministic=("best_val_loss",),
    ),
    Case(
        "diffusion_2d",
        _diffusion_2d,
        ("train_loss.png", "generated_samples.png"),
        "generated_samples.png",
        ("ho2020denoising", "sohl2015deep", "nichol2021improved", "szekely2013energy"),
        env=SMOKE,
        seed_metric="eval_loss",
        deterministic=("train_loss", "eval_loss", "energy_distance", "kl_divergence"),
    ),
    Case(
        "grokking",
        _grokking,
        tuple(
            f"{figure}_{op}.png" for op in GROKKING_OPERATIONS for figure in ("accuracy", "loss")
        ),
        "accuracy_x_plus_y.png",
        ("power2022grokking", "vaswani2017attention", "loshchilov2019decoupled"),
        env=SMOKE,
        seed_metric="final_train_acc",
    ),
)
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def _param(case: Case):  # -> pytest ParameterSet
    marks = [] if HAVE_TORCH or not case.needs_torch else [pytest.mark.skip(reason="no torch")]
    return pytest.param(case, id=case.name, marks=marks)


@pytest.fixture(scope="module", params=[_param(case) for case in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    return request.param


@pytest.fixture(scope="module")
def copy(case: Case, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A copy of the template after `experiment.py --out_dir=run_0` (its smoke setting) and
    `plot.py` ran in it."""
    return run_copy(case.folder, tmp_path_factory, env=case.env or None, timeout=180)


def _final_info(copy: dict) -> dict:
    return json.loads((copy["root"] / "run_0" / "final_info.json").read_text())


def _curves(copy: dict) -> dict:
    return json.loads((copy["root"] / "run_0" / "all_results.json").read_text())


def test_template_is_valid_and_shipped_clean(case: Case) -> None:
    if case.name == "moons":
        validate_template(case.folder)
        found = leftovers(case.folder)
        assert found == [], f"build or run outputs inside the shipped template: {found}"
    else:
        assert_shipped_clean(case.folder, *([case.shipped_also] if case.shipped_also else []))


def test_run_writes_the_contract(case: Case, copy: dict) -> None:
    assert copy["experiment"].returncode == 0, copy["experiment"].stderr
    assert check_final_info(_final_info(copy), "final_info.json") == []
    case.check_run(copy)


@pytest.mark.parametrize(
    "case", [_param(case) for case in CASES if case.deterministic], indirect=True
)
def test_a_second_run_reproduces_the_first(case: Case, copy: dict, tmp_path: Path) -> None:
    """The second run is given the neutral values of the search's variables (seed offset 0, a
    budget hours long): a template must then produce exactly what a plain run does."""
    assert copy["experiment"].returncode == 0, copy["experiment"].stderr
    out_dir = f"--out_dir={tmp_path / 'run_1'}"
    env = {**case.env, SEED: "0", BUDGET: "36000"}
    again = run([PYTHON, "experiment.py", out_dir], copy["root"], timeout=180, env=env)
    assert again.returncode == 0, again.stderr
    first = _final_info(copy)
    second = json.loads((tmp_path / "run_1" / "final_info.json").read_text())
    for dataset, entry in first.items():
        for metric in case.deterministic:
            assert entry["final_info_dict"][metric] == second[dataset]["final_info_dict"][metric]


def _seeds_run(entry: dict) -> int:
    return len(entry["final_info_dict"][next(iter(entry["final_info_dict"]))])


def test_a_plain_run_records_its_seeds_and_no_budget(case: Case, copy: dict) -> None:
    assert copy["experiment"].returncode == 0, copy["experiment"].stderr
    for entry in _final_info(copy).values():
        n = _seeds_run(entry)
        assert entry["seeds"] == list(range(n))
        assert entry["budget"]["budget_s"] is None
        assert entry["budget"]["stopped_early"] is False
        assert entry["budget"]["trained"] == [entry["budget"]["cap"]] * n
    stdout = copy["experiment"].stdout
    assert f"seeds {list(range(n))} (offset 0 from {SEED})" in stdout
    assert f"budget none ({BUDGET} unset)" in stdout and "budget: stopped early" not in stdout


def test_a_seed_offset_trains_other_seeds(case: Case, copy: dict, tmp_path: Path) -> None:
    """LABTUI_SEED=1: the next N_SEEDS seeds, recorded and printed, and other results."""
    out_dir = tmp_path / "run_1"
    env = {**case.env, SEED: "1"}
    other = run([PYTHON, "experiment.py", f"--out_dir={out_dir}"], copy["root"], 180, env)
    assert other.returncode == 0, other.stderr
    first, second = _final_info(copy), json.loads((out_dir / "final_info.json").read_text())
    assert check_final_info(second, "final_info.json") == []
    assert set(second) == set(first)
    for dataset, entry in second.items():
        n = _seeds_run(entry)
        assert entry["seeds"] == list(range(n, 2 * n))
        assert entry["budget"]["stopped_early"] is False
        before = first[dataset]["final_info_dict"][case.seed_metric]
        assert entry["final_info_dict"][case.seed_metric] != before, dataset
    assert f"seeds {list(range(n, 2 * n))} (offset 1 from {SEED})" in other.stdout


def test_moons_seed_offset_continues_the_seeds_on_the_same_data(tmp_path: Path) -> None:
    """LABTUI_SEED=1 trains seeds 3, 4, 5 exactly as a run of six seeds trains its last three:
    the data set did not change, and a seed means the same training in every run."""
    root = tmp_path / "moons"
    copy_template(TEMPLATES / "moons", root)
    offset = run([PYTHON, "experiment.py", "--out_dir=run_1"], root, 120, {SEED: "1"})
    assert offset.returncode == 0, offset.stderr
    code = (root / "experiment.py").read_text()
    assert "\nN_SEEDS = 3 " in code
    (root / "experiment.py").write_text(code.replace("\nN_SEEDS = 3 ", "\nN_SEEDS = 6 ", 1))
    six = run([PYTHON, "experiment.py", "--out_dir=run_6"], root, 120)
    assert six.returncode == 0, six.stderr
    with_offset = json.loads((root / "run_1" / "final_info.json").read_text())["moons"]
    all_six = json.loads((root / "run_6" / "final_info.json").read_text())["moons"]
    assert with_offset["seeds"] == [3, 4, 5] and all_six["seeds"] == [0, 1, 2, 3, 4, 5]
    for metric in ("test_accuracy", "train_loss"):
        assert with_offset["final_info_dict"][metric] == all_six["final_info_dict"][metric][3:]


def test_a_budget_far_too_small_stops_training_early(
    case: Case, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Under a budget no run can meet, every training stops early after at least one epoch or
    step, and the run still writes its results, which plot.py draws."""
    ran = run_copy(
        case.folder, tmp_path_factory, env={**case.env, BUDGET: TINY_BUDGET}, timeout=180
    )
    assert ran["experiment"].returncode == 0, ran["experiment"].stderr
    final_info = json.loads((ran["root"] / "run_0" / "final_info.json").read_text())
    assert check_final_info(final_info, "final_info.json") == []
    for entry in final_info.values():
        budget = entry["budget"]
        assert budget["budget_s"] == float(TINY_BUDGET) and budget["stopped_early"] is True
        assert len(budget["trained"]) == _seeds_run(entry)
        assert all(1 <= trained < budget["cap"] for trained in budget["trained"]), budget
        assert all(math.isfinite(v) for v in entry["means"].values())
    stdout = ran["experiment"].stdout
    assert f"budget {TINY_BUDGET} s from {BUDGET}" in stdout
    assert "budget: stopped early after " in stdout
    assert ran["plot"].returncode == 0, ran["plot"].stderr
    assert_pngs(ran["root"], list(case.figures))


def _cut_short(results: dict) -> tuple[dict, set[str]]:
    """all_results.json as a run under a budget writes it when the seeds stopped at different
    points: a second seed whose curves end halfway, null after; and the curves' keys."""
    cut, keys = json.loads(json.dumps(results)), set()
    for entry in cut.values():
        axis = next(entry[key] for key in ("epochs", "iters", "steps") if key in entry)
        half = len(axis) // 2
        for key, value in entry.items():
            if isinstance(value, list) and value and isinstance(value[0], list):
                if len(value[0]) == len(axis) and key not in ("real", "generated"):
                    entry[key] = [value[0], value[0][:half] + [None] * (len(axis) - half)]
                    keys.add(key)
        entry["seeds"] = [0, 1]
    return cut, keys


# Every point of a curve has a mean and a standard error: the seeds that have a value there.
FINITE_MEANS = """
import json, sys
import numpy as np
import plot
for entry in json.load(open("run_0/all_results.json")).values():
    for key in sys.argv[1:]:
        mean, stderr = plot.mean_and_stderr(entry[key])
        assert np.isfinite(mean).all() and np.isfinite(stderr).all(), key
"""


def test_plot_draws_curves_the_budget_cut_short(case: Case, copy: dict, tmp_path: Path) -> None:
    results = json.loads((copy["root"] / "run_0" / "all_results.json").read_text())
    cut, keys = _cut_short(results)
    assert keys, "no curves found in all_results.json"
    (tmp_path / "run_0").mkdir()
    (tmp_path / "run_0" / "all_results.json").write_text(json.dumps(cut))
    shutil.copy(case.folder / "plot.py", tmp_path)
    # numpy warns (RuntimeWarning) when a mean has nothing to average: an error here
    plot = run([PYTHON, "-W", "error::RuntimeWarning", "plot.py"], tmp_path, 120)
    assert plot.returncode == 0, plot.stderr
    assert_pngs(tmp_path, list(case.figures))
    means = run([PYTHON, "-c", FINITE_MEANS, *sorted(keys)], tmp_path, 120)
    assert means.returncode == 0, means.stderr


BAD_VALUES = ((BUDGET, "abc"), (BUDGET, "-5"), (SEED, "-1"), (SEED, "1.5"))


@pytest.mark.parametrize(
    ("case", "variable", "value"),
    [
        pytest.param(c, variable, value, id=f"{c.name}-{variable}={value}", marks=_param(c).marks)
        for c in CASES
        # the torch templates import PyTorch before they read the environment: one value each
        for variable, value in (BAD_VALUES if not c.needs_torch else BAD_VALUES[::3])
    ],
    indirect=["case"],
)
def test_a_bad_value_in_the_environment_exits_2(
    case: Case, variable: str, value: str, tmp_path: Path
) -> None:
    root = tmp_path / case.name
    copy_template(case.folder, root)
    out_dir = root / "run_0"
    env = {**case.env, variable: value}
    bad = run([PYTHON, "experiment.py", f"--out_dir={out_dir}"], root, 180, env)
    assert bad.returncode == 2, bad.stderr
    assert f"{variable}={value!r} is not " in bad.stderr and "Traceback" not in bad.stderr
    assert not out_dir.exists()


def test_plot_writes_the_figures(case: Case, copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    assert_pngs(copy["root"], list(case.figures))


def test_plot_fails_clearly_without_runs(case: Case, tmp_path: Path) -> None:
    assert_plot_fails_without_runs(case.folder, tmp_path)


@pytest.mark.skipif(shutil.which("latexmk") is None, reason="latexmk is not installed")
def test_latex_skeleton_compiles(case: Case, copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    compile_latex(copy["root"], case.latex_figure, list(case.citations))


def test_the_char_lm_corpus_is_shipped_and_sized() -> None:
    text = (TEMPLATES / "char_lm" / "genesis_kjv.txt").read_text(encoding="utf-8")
    assert 50_000 <= len(text.encode("utf-8")) <= 150_000
    assert text.startswith("The First Book of Moses, called Genesis")
    assert "1:1 In the beginning God created the heaven and the earth." in text
