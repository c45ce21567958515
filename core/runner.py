"""Experiment runs: ``python experiment.py --out_dir=run_i`` under the sandbox, on leased GPUs,
judged by its ``final_info.json``, and recorded in ``run_i/labtui_run.json`` (command,
interpreter, package versions, commit, timing, sandbox) so that any result can be traced and
redone. A run a limit stopped is a failed result whose problem names the limit, never an
exception: the pipeline goes on.

The interpreter is always passed in (``[experiment] python`` in labtui.toml): the researcher's
environment is theirs, and labtui's own pins must not decide which numpy an experiment sees.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import sandbox_policy
from .errors import LabtuiError
from .events import Event, RunFinished, RunStarted
from .gpu import GpuPool, gpu_sampling, lease_gpus, shared_gpu_pool
from .interpreter import probe_interpreter
from .processes import ProcessResult, last_line, run_process
from .sandbox import SandboxSpec
from .templates import check_final_info

if TYPE_CHECKING:
    from .config_sections import SandboxSection

Emit = Callable[[Event], None]

RUN_RECORD_NAME = "labtui_run.json"
FINAL_INFO_NAME = "final_info.json"


@dataclass(frozen=True)
class RunResult:
    run_id: str
    returncode: int
    timed_out: bool
    wall_s: float
    stderr_tail: str
    stdout_tail: str
    final_info: dict[str, Any] | None
    means: dict[str, Any] = field(default_factory=dict)  # dataset -> its "means" dict
    problem: str = ""  # '' when the run succeeded and final_info.json is valid

    @property
    def ok(self) -> bool:
        return not self.problem


def _check_run_id(run_id: str) -> None:
    # The run folder is deleted before a rerun: a run id must never reach outside the project.
    if not run_id or run_id in (".", "..") or "/" in run_id or "\\" in run_id:
        raise ValueError(f"run_id must be a plain folder name like 'run_1', not {run_id!r}")


def _describe_failure(
    run_id: str, proc: ProcessResult, timeout_s: float, sandbox: SandboxSpec | None = None
) -> str:
    last = last_line(proc.stderr_tail)
    if proc.stopped:
        return f"{run_id} was stopped early: the experiments stage ended before it finished"
    if proc.limit_hit:
        told = f"; its last words: {last}" if last else ""
        return f"{run_id} was stopped by the sandbox: {proc.limit_hit}{told}"
    if proc.timed_out:
        return f"{run_id} timed out after {timeout_s:g} s and was stopped"
    code = proc.returncode
    if code < 0:
        try:
            how = f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"failed with exit code {code}"
    why = sandbox.explain(proc.stderr_tail, code) if sandbox is not None else ""
    if why:
        how = f"{how} (sandbox: {why})"
    return f"{run_id} {how}: {last}" if last else f"{run_id} {how} (nothing on stderr)"


def read_final_info(run_dir: Path) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
    """(final_info, means per dataset, problem) for a finished run folder; problem '' if valid."""
    path = run_dir / FINAL_INFO_NAME
    where = f"{run_dir.name}/{FINAL_INFO_NAME}"
    if not path.is_file():
        return None, {}, f"the run exited normally but wrote no {where}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return (
            None,
            {},
            f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
        )
    except UnicodeDecodeError:
        return None, {}, f"{where} is not UTF-8 text"
    problems = check_final_info(data, where)
    if not isinstance(data, dict):
        return None, {}, "; ".join(problems)
    means = {
        name: entry["means"]
        for name, entry in data.items()
        if isinstance(entry, dict) and isinstance(entry.get("means"), dict)
    }
    return data, means, "; ".join(problems)


def _write_run_record(run_dir: Path, record: dict[str, Any]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=2, ensure_ascii=False, default=str)
    (run_dir / RUN_RECORD_NAME).write_text(text + "\n", encoding="utf-8")


def run_experiment(
    root: Path,
    run_id: str,
    *,
    python: str,
    timeout_s: float,
    emit: Emit,
    stage: str,
    commit: str = "",
    index: int = 0,
    total: int = 0,
    sandbox: SandboxSection | SandboxSpec | None = None,
    gpus: GpuPool | None = None,
    stop: threading.Event | None = None,
) -> RunResult:
    """Run ``python experiment.py --out_dir=<run_id>`` in ``root`` and judge its final_info.json.

    The run folder always ends up holding ``labtui_run.json`` (command, interpreter, package
    versions, commit, timing, sandbox), failed runs included, so any result can be traced and
    redone. ``sandbox`` is the project's ``[sandbox]`` section (None: its defaults) or a ready
    policy; a run a limit stopped is a failed RunResult that names the limit. ``stop`` ends the
    run early (see ``run_process``).
    """
    _check_run_id(run_id)
    root = Path(root).resolve()
    if not root.is_dir():
        raise LabtuiError(f"cannot run {run_id}: project folder {root} does not exist")
    run_dir = root / run_id
    if run_dir.exists():
        # Left by a failed attempt: its partial files must not pass for this run's results.
        shutil.rmtree(run_dir)
    spec = sandbox_policy.resolve(sandbox, root, emit, stage).for_run_dir(run_dir)
    argv = [python, "experiment.py", f"--out_dir={run_id}"]
    environment = probe_interpreter(python, root, sandbox=spec)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    emit(RunStarted(stage=stage, run_id=run_id, index=index, total=total, command=shlex.join(argv)))
    # Pinned to free GPUs (waiting while none is free): other jobs on a shared server, or
    # labtui's own parallel runs, keep theirs.
    with (
        lease_gpus(gpus or shared_gpu_pool(), emit, stage, run_id) as lease,
        gpu_sampling(emit, stage),
    ):
        proc = run_process(
            argv,
            cwd=root,
            timeout_s=timeout_s,
            run_id=run_id,
            emit=emit,
            stage=stage,
            sandbox=spec,
            env=lease.env,
            stop=stop,
        )

    if proc.timed_out or proc.stopped or proc.returncode != 0 or proc.limit_hit:
        means: dict[str, Any] = {}
        final_info, problem = None, _describe_failure(run_id, proc, timeout_s, spec)
    else:
        final_info, means, problem = read_final_info(run_dir)

    _write_run_record(
        run_dir,
        {
            "run_id": run_id,
            "argv": argv,
            "cwd": str(root),
            "interpreter": python,
            "interpreter_path": shutil.which(python) or python,
            "environment": environment,
            "commit": commit,
            "started_at": started_at,
            "wall_s": round(proc.wall_s, 3),
            "returncode": proc.returncode,
            "timed_out": proc.timed_out,
            "stopped": proc.stopped,
            "timeout_s": timeout_s,
            "CUDA_VISIBLE_DEVICES": lease.env.get(
                "CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES")
            ),
            "sandbox": spec.record(),
            "limit_hit": proc.limit_hit,
            "problem": problem,
        },
    )
    error_tail = "" if not problem else f"{problem}\n{proc.stderr_tail}".strip()
    emit(
        RunFinished(
            stage=stage,
            run_id=run_id,
            returncode=proc.returncode,
            wall_s=proc.wall_s,
            means=means,
            error_tail=error_tail,
            timed_out=proc.timed_out,
        )
    )
    return RunResult(
        run_id=run_id,
        returncode=proc.returncode,
        timed_out=proc.timed_out,
        wall_s=proc.wall_s,
        stderr_tail=proc.stderr_tail,
        stdout_tail=proc.stdout_tail,
        final_info=final_info,
        means=means,
        problem=problem,
    )
