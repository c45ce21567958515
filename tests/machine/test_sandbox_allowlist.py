"""The run's trust boundary is an allowlist (issue 31): its environment is built from named
variables plus ``[sandbox] pass_env``, and under bubblewrap its home folder is an empty tmpfs with
read-only binds of exactly what it needs (its interpreter, ``[sandbox] read``). A hostile run that
looks for a token in its environment and in the usual files finds none."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from labtui.core.errors import ConfigError
from labtui.core.machine import bubblewrap, sandbox_policy
from labtui.core.machine.processes import run_process
from labtui.core.machine.run_env import SANDBOX_LOCATIONS, EnvPolicy, allowed
from labtui.core.machine.sandbox import SandboxSpec
from labtui.core.runs.run_setup import with_prepare
from labtui.core.settings.sections import SandboxSection

needs_bwrap = pytest.mark.skipif(
    not bubblewrap.available(),
    reason=f"bubblewrap does not work here: {bubblewrap.bwrap_problem()}",
)

SECRET = "hf_do_not_leak_0123456789"
TOKEN_FILES = (".cache/huggingface/token", ".kaggle/kaggle.json", ".npmrc", ".bashrc")

# What a curious (or hostile) run does: print its environment, read the token files, list the
# home folder and the other homes, and read the data it was promised.
SNOOP = r"""
import json, os, sys
home = os.environ.get("HOME", "")
def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as exc:
        return f"errno {exc.errno}"
def listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return f"errno {exc.errno}"
files = json.loads(sys.argv[1])
print(json.dumps({
    "env": dict(os.environ),
    "files": {name: read(os.path.join(home, name)) for name in files},
    "home": listing(home),
    "data": read(os.path.join(home, "data", "set.txt")),
    "prefix": sys.prefix,
}))
"""


@pytest.fixture(autouse=True)
def _quiet_policy() -> Iterator[None]:
    sandbox_policy.forget_warning()
    yield
    sandbox_policy.forget_warning()


@pytest.fixture
def hostile_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary home folder full of credentials, with HF_TOKEN and friends in the
    environment. Outside /tmp: the sandbox's private /tmp must not be what hides it."""
    try:
        home = Path(tempfile.mkdtemp(prefix="labtui-home-", dir="/var/tmp"))
    except OSError:
        pytest.skip("/var/tmp is not writable here")
    for name in TOKEN_FILES:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(SECRET)
    (home / "data").mkdir()
    (home / "data" / "set.txt").write_text("the data set")
    monkeypatch.setenv("HOME", str(home))
    for name in ("HF_TOKEN", "WANDB_API_KEY", "OPENAI_API_KEY", "LABTUI_API_KEY", "AWS_SECRET"):
        monkeypatch.setenv(name, SECRET)
    monkeypatch.setenv("LABTUI_MODEL", "ollama/secret-model")
    monkeypatch.setenv("MY_DATA_ROOT", "/data/named")  # passed by name in pass_env
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "labtui.toml").write_text("")
    return root


def snoop(
    project: Path, settings: SandboxSection, python: str = sys.executable, prepare: str = ""
) -> dict:
    spec = sandbox_policy.policy(settings, project)
    argv = [python, "-c", SNOOP, json.dumps(TOKEN_FILES)]
    result = run_process(
        with_prepare(argv, [prepare] if prepare else []),
        cwd=project,
        timeout_s=60,
        run_id="run_1",
        emit=lambda event: None,
        stage="experiments",
        env={"LABTUI_RUN_ID": "run_1"},
        sandbox=spec,
    )
    assert result.returncode == 0, result.stderr_tail
    return json.loads(result.stdout_tail.strip().splitlines()[-1])


def _bwrap(**fields) -> SandboxSection:
    return SandboxSection(mode="bwrap", pass_env=["MY_DATA_ROOT"], read=["~/data"], **fields)


@needs_bwrap
def test_a_run_in_bubblewrap_sees_no_token_and_an_empty_home(
    project: Path, hostile_home: Path
) -> None:
    seen = snoop(project, _bwrap())
    env = seen["env"]
    assert SECRET not in json.dumps(seen), "a token reached the run"
    for name in ("HF_TOKEN", "WANDB_API_KEY", "OPENAI_API_KEY", "LABTUI_API_KEY", "LABTUI_MODEL"):
        assert name not in env
    for name in TOKEN_FILES:
        assert seen["files"][name] == "errno 2", (name, seen["files"][name])
    assert seen["home"] == ["data"], "the home holds only what was bound back"
    # What the researcher named passes; labtui's run variables and the allowlist too.
    assert seen["data"] == "the data set"
    assert env["MY_DATA_ROOT"] == "/data/named"
    assert env["LABTUI_RUN_ID"] == "run_1" and env["OMP_NUM_THREADS"] == "3"
    assert env["HOME"] == str(hostile_home) and env["TERM"] == "dumb"
    assert env["HF_HOME"] == SANDBOX_LOCATIONS["HF_HOME"]
    print("a run in bwrap sees:", sorted(env), "home:", seen["home"])


@needs_bwrap
def test_the_record_says_the_home_is_empty_and_what_was_bound_and_passed(
    project: Path, hostile_home: Path
) -> None:
    record = sandbox_policy.policy(_bwrap(), project).record([sys.executable])
    assert "empty" in record["home"] and str(hostile_home) in record["hidden"]
    assert str(hostile_home / "data") in record["read_only"]
    assert "MY_DATA_ROOT" in record["env"] and "HF_TOKEN" not in record["env"]


def test_limits_mode_drops_the_environment_to_the_same_allowlist(
    project: Path, hostile_home: Path
) -> None:
    seen = snoop(project, SandboxSection(mode="limits", pass_env=["MY_DATA_ROOT"]))
    env = seen["env"]
    for name in ("HF_TOKEN", "WANDB_API_KEY", "OPENAI_API_KEY", "LABTUI_API_KEY", "LABTUI_MODEL"):
        assert name not in env
    assert env["MY_DATA_ROOT"] == "/data/named" and env["LABTUI_RUN_ID"] == "run_1"
    # Said plainly, not hidden: without bubblewrap the home folder is the user's.
    assert seen["files"][".npmrc"] == SECRET
    assert (
        "visible" in sandbox_policy.policy(SandboxSection(mode="limits"), project).record()["home"]
    )


def test_the_not_isolated_warning_says_the_home_folder_is_visible() -> None:
    text = sandbox_policy._NOT_ISOLATED.format(problem="bwrap is missing")
    assert "home folder" in text and "visible" in text and "environment is filtered" in text


@needs_bwrap
@pytest.mark.parametrize("symlinks", [True, False], ids=["symlinked", "copied"])
def test_a_venv_under_the_home_folder_still_runs_in_the_sandbox(
    project: Path, hostile_home: Path, symlinks: bool
) -> None:
    env_dir = hostile_home / "venvs" / "exp"
    venv.create(env_dir, with_pip=False, symlinks=symlinks)
    seen = snoop(project, _bwrap(), python=str(env_dir / "bin" / "python"))
    assert seen["prefix"] == str(env_dir)
    assert SECRET not in json.dumps(seen)
    assert sorted(seen["home"]) == ["data", "venvs"]


@needs_bwrap
def test_a_venv_under_the_home_folder_runs_behind_prepare_steps_too(
    project: Path, hostile_home: Path
) -> None:
    """With [experiment] prepare the command starts with `sh -c`: the interpreter after it is
    still the one whose folders the sandbox binds back."""
    env_dir = hostile_home / "venvs" / "exp"
    venv.create(env_dir, with_pip=False, symlinks=True)
    seen = snoop(project, _bwrap(), python=str(env_dir / "bin" / "python"), prepare="true")
    assert seen["prefix"] == str(env_dir)


def test_a_missing_read_path_names_labtui_toml_the_field_and_the_fix(project: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        sandbox_policy.policy(SandboxSection(mode="off", read=["~/no-such-data"]), project)
    assert "labtui.toml" in str(caught.value) and "[sandbox] read" in str(caught.value)
    assert "no-such-data" in str(caught.value) and "[sandbox] read" in caught.value.hint


def test_bwrap_empties_the_homes_before_binding_back(project: Path, hostile_home: Path) -> None:
    spec = SandboxSpec(mode="bwrap", root=project.resolve(), read=(hostile_home / "data",))
    args = spec.bwrap_args(project, programs=[sys.executable])
    home_tmpfs = args.index(str(hostile_home)) - 1
    assert args[home_tmpfs] == "--tmpfs"
    data_bind = args.index(str(hostile_home / "data"))
    project_bind = args.index(str(project.resolve()))
    assert home_tmpfs < data_bind < project_bind, "binds lie on top of the empty home"


# -- the allowlist itself ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["LANG", "LC_ALL", "PATH", "HOME", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
     "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCH_NUM_THREADS", "NCCL_SOCKET_IFNAME",
     "VIRTUAL_ENV", "CONDA_PREFIX", "SLURM_JOB_ID", "LD_LIBRARY_PATH", "HF_HOME"],
)  # fmt: skip
def test_the_allowlist_passes_what_a_run_needs(name: str) -> None:
    assert allowed(name)


@pytest.mark.parametrize(
    "name",
    ["HF_TOKEN", "OPENAI_API_KEY", "WANDB_API_KEY", "LABTUI_API_KEY", "LABTUI_MODEL",
     "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "PYTHONPATH", "PYTHONHOME", "SSH_AUTH_SOCK",
     "HTTPS_PROXY", "TORCH_HUB_TOKEN", "CUDA_SECRET", "SLURM_PASSWORD", "DISPLAY"],
)  # fmt: skip
def test_the_allowlist_drops_the_rest(name: str) -> None:
    assert not allowed(name)


def test_explicit_env_wins_over_pass_env_over_sandbox_locations() -> None:
    source = {"HF_HOME": "/data/hf", "HF_TOKEN": "t", "PATH": "/bin", "TERM": "xterm"}
    inside = EnvPolicy(locations=SANDBOX_LOCATIONS).environment(None, source)
    assert inside["HF_HOME"] == SANDBOX_LOCATIONS["HF_HOME"] and "HF_TOKEN" not in inside
    assert inside["TERM"] == "dumb" and inside["PYTHONUNBUFFERED"] == "1"
    passed = EnvPolicy(("HF_HOME", "HF_TOKEN"), SANDBOX_LOCATIONS).environment(None, source)
    assert passed["HF_HOME"] == "/data/hf" and passed["HF_TOKEN"] == "t"
    explicit = EnvPolicy(("HF_HOME",), SANDBOX_LOCATIONS).environment(
        {"HF_HOME": "/x", "PYTHONUNBUFFERED": "0"}, source
    )
    assert explicit["HF_HOME"] == "/x" and explicit["PYTHONUNBUFFERED"] == "1"


def test_missing_pass_env_names_are_listed() -> None:
    policy = EnvPolicy(("HF_TOKEN", "WANDB_API_KEY"))
    assert policy.missing({"HF_TOKEN": "t"}) == ["WANDB_API_KEY"]
    assert "HF_TOKEN" in policy.passed_names({"HF_TOKEN": "t"})
