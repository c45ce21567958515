"""The limits wrapper: a few lines of Python that run in labtui's own interpreter inside the
sandbox, take the steps they are given (a cgroup to enter, rlimits, OOM score, CPU and IO
priority) and then become the experiment. ``core.machine.sandbox`` puts it in front of a run's
command line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

# Runs in labtui's own interpreter *inside* the sandbox (so RLIMIT_NPROC is counted in the
# sandbox's user namespace where the kernel does that), takes the steps it is given (argv[1], a
# JSON object), then becomes the experiment. No preexec_fn: that is unsafe in a process with
# threads (the TUI has several). Steps: "cgroup" (create the run's cgroup v2 and move in; run
# outside bubblewrap, which sees /sys read-only), "rlimits", "oom_score_adj", "nice" and
# "ioprio" ([ioprio_set's syscall number, value]: the os module has no ioprio, and a syscall
# needs neither util-linux's ionice in the sandbox nor one more exec). A step that fails says so
# on stderr and the run goes on under the others.
_LIMITS_WRAPPER = r"""
import json, os, resource, sys
steps = json.loads(sys.argv[1])
def failed(what, exc):
    print(f"labtui sandbox: could not {what}: {exc}", file=sys.stderr)
cgroup = steps.get("cgroup")
if cgroup:
    parent, prefix = cgroup["parent"], cgroup["prefix"]
    here = os.path.join(parent, prefix + str(os.getpid()))
    try:
        for name in os.listdir(parent):
            # Empty cgroups of finished runs; one whose process lives may be moving in now.
            pid = name[len(prefix):]
            if name.startswith(prefix) and pid.isdigit() and not os.path.exists("/proc/" + pid):
                try:
                    os.rmdir(os.path.join(parent, name))
                except OSError:
                    pass
        os.mkdir(here)
        for name, value in cgroup["files"].items():
            if name == "memory.swap.max" and not os.path.exists(os.path.join(here, name)):
                continue  # no swap accounting on this kernel
            with open(os.path.join(here, name), "w") as f:
                f.write(value)
        with open(os.path.join(here, "cgroup.procs"), "w") as f:
            f.write("0")
    except OSError as exc:
        failed(f"enter the cgroup {here} (rlimits and watchers still apply)", exc)
for name, value in steps.get("rlimits", {}).items():
    which = getattr(resource, name, None)
    if which is None:
        continue
    soft, hard = value if isinstance(value, list) else (value, value)
    _, old_hard = resource.getrlimit(which)
    if old_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, old_hard), min(hard, old_hard)
    try:
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError) as exc:
        failed(f"set {name}", exc)
if steps.get("oom_score_adj"):
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write(str(steps["oom_score_adj"]))
    except OSError as exc:
        failed("raise oom_score_adj", exc)
if steps.get("nice"):
    os.nice(steps["nice"])
if steps.get("ioprio"):
    import ctypes
    number, value = steps["ioprio"]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, 1, 0, value) != 0:
        failed("lower the IO priority", os.strerror(ctypes.get_errno()))
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    print(f"labtui sandbox: cannot run {sys.argv[2]!r}: {exc}", file=sys.stderr)
    sys.exit(127)
"""


def wrapper_command(steps: dict[str, Any]) -> list[str]:
    """The command prefix that takes ``steps`` and then execs the rest of the command line."""
    return [sys.executable, "-I", "-S", "-c", _LIMITS_WRAPPER, json.dumps(steps)]
