"""TEST-ONLY fault-injection harness: a lean scripted moons project run headless as a subprocess,
killed at a chosen journal position, resumed, and compared with an uninterrupted run.

The engine runs as ``labtui run --headless --auto`` in its own session (process group), so a
SIGKILL to that group is a crash of the engine as a whole; the children it started in sessions of
their own (experiments, latexmk) are left as a crash leaves them.

The scripted research must answer the same whatever happened before a call: a call cut by the
kill is asked again on resume, maybe against files a half-finished stage already changed. So the
lean research here writes *absolute* edits (the hidden layer set to twice the template's width,
not twice what the file says now); everything else in ``MoonsResearch`` already answers from the
request and the files, not from the order of calls.
"""

from __future__ import annotations

import difflib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import TEST_API_KEY, labtui_bin, processes_in, run_labtui, wire_project

from labtui.core.pdf.document import pdf_text
from labtui.core.settings.config import load_config, save_config
from support import scripted_llm
from support.research_script import MoonsResearch, last_user_text, whole_file_edit
from support.session_files import locked
from support.waiting import wait_until

JOURNAL = Path(".labtui") / "journal.jsonl"
SEED = 16  # the number: which events the suite kills at
DEADLINE_S = 600.0  # generous: every wait is on a condition, this only stops a hung run

# What legitimately differs between two runs of the same project, and how it is compared instead
# (every other byte of every tracked file must be the same):
#   commit ids (in notes.md, provenance.json, run records): they hash commit times and parents,
#       so each is replaced by "<commit>" wherever a prefix of one of the repository's commits
#       appears;
#   the project's own folder (a run record's cwd): each case works in a folder of its own;
#   the loopback servers' ports (labtui.toml's api_base and arxiv_url): each test starts its own;
#   measured times and sizes: a run's wall time, start time and peak memory (run_*/labtui_run.json's
#       wall_s, started_at, peak_memory_mb),
#       the experiment's own train_time_s metrics (final_info.json, all_results.json, and the
#       notebook's rows and "wall time" of them, the paper's rows of them in its table of runs,
#       its "Run time." paragraph, provenance.json's traced numbers of them);
#   paper.pdf: compared by its text (PyMuPDF), as its bytes hold a creation date and a random id,
#       its measured times masked and its lines flowed again.
# ... and what differs with the machine's state: the variable names that reached a run (a Slurm
# test in the same worker may have set SLURM_CONF), the bytes a run printed (its timings).
MEASURED_KEY = re.compile(
    r"^(wall_s|started_at|peak_memory_mb|env|output_bytes|.*(^|_)time_s(_mean|_stderr)?)$"
)
MEASURED_LINE = re.compile(
    r"^\| \S*time_s\S* \|.*$|wall time [0-9.]+ s|^.*time(?:\\?_| )s(?:\\?_| )(?:mean|stderr).*$"
    r"|^.*Wall time of each run.*$",
    re.MULTILINE,
)
MEASURED_TIME = re.compile(r"\b[0-9]+\.[0-9] (?:s|min|h)\b")  # the paper's wall times
TEST_HOME = re.compile(r"/tmp/pytest-of-[^/]+/pytest-\d+/(?:[^/\"]+/)+?home")
LOOPBACK_URL = re.compile(r"http://127\.0\.0\.1:\d+")
HEX_TOKEN = re.compile(r"\b[0-9a-f]{7,40}\b")
COMPARED_BY_TEXT = {"paper.pdf"}
TEST_GIT = ("git", "-c", "user.name=labtui tests", "-c", "user.email=tests@labtui.invalid")


class LeanResearch(MoonsResearch):
    """The moons research with an edit that is the same whenever it is asked (see module doc)."""

    def __init__(self, root: Path, base_width: int) -> None:
        super().__init__(root)
        self.base_width = base_width

    def novelty(self, request: dict[str, Any]) -> str:
        """As the moons research, and novel when arXiv found nothing (it answered garbage)."""
        text = last_user_text(request)
        if "arXiv:" not in text and ("search is unavailable" in text or "decide now" in text):
            return json.dumps(
                {
                    "decision": "novel",
                    "reason": "no paper was found on this question",
                    "closest": [],
                }
            )
        return super().novelty(request)

    def experiments(self, request: dict[str, Any]) -> str:
        asks = [m.get("content") for m in request.get("messages", []) if m.get("role") == "user"]
        if any("has finished. What it changed" in str(t) for t in asks) or any(
            str(t).startswith("Plan the experiment runs") for t in asks
        ):
            return super().experiments(request)
        code = (self.root / "experiment.py").read_text(encoding="utf-8")
        wider = self.base_width * 2
        code = re.sub(r"^HIDDEN_UNITS = \d+", f"HIDDEN_UNITS = {wider}", code, count=1, flags=re.M)
        return whole_file_edit("experiment.py", code, f"Double the hidden layer to {wider} units.")


def template_width(root: Path) -> int:
    code = (root / "experiment.py").read_text(encoding="utf-8")
    return int(re.search(r"^HIDDEN_UNITS = (\d+)", code, re.MULTILINE).group(1))


def wire(root: Path, llm_server, arxiv_server) -> None:
    """Point ``root`` at these servers with the smallest config that still runs every stage:
    one idea, one run, one reviewer, one novelty check, one citation round."""
    wire_project(root, llm_server.url, arxiv_server.url)
    config = load_config(root)
    config.literature.papers = 1
    config.literature.review_steps = 3
    config.ideas.novelty_checks = 1
    config.limits.citation_rounds = 1
    config.limits.latex_fix_rounds = 1
    save_config(config, root)
    subprocess.run(
        [*TEST_GIT, "commit", "-q", "-m", "test: wire to loopback", "--", "labtui.toml"],
        cwd=root,
        check=True,
    )
    LeanResearch(root, template_width(root)).install(llm_server)


def engine_env() -> dict[str, str]:
    return {**os.environ, "LABTUI_API_KEY": TEST_API_KEY}


# -- running and killing ------------------------------------------------------------------------


def start_engine(root: Path, log: Path) -> subprocess.Popen[bytes]:
    """``labtui run --headless --auto`` in a session of its own, output to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [labtui_bin(), "run", "--headless", "--auto"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=engine_env(),
            start_new_session=True,
        )


def run_to_end(root: Path, log: Path) -> int:
    process = start_engine(root, log)
    return process.wait(timeout=DEADLINE_S)


def journal_lines(root: Path) -> int:
    """Complete lines in the journal now (a line being written is not counted)."""
    try:
        return (root / JOURNAL).read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    """The shared condition wait, with this harness's deadline (a whole pipeline may be ahead)."""
    wait_until(predicate, what, timeout)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=60)


def kill_at(root: Path, log: Path, position: int) -> int:
    """Run from where the project stands; SIGKILL the engine's group once the journal holds
    ``position`` lines. Returns the journal lines seen at the kill (the engine may write a few
    more between the check and the signal, which is part of what is tested)."""
    process = start_engine(root, log)
    try:
        wait_for(
            lambda: journal_lines(root) >= position or process.poll() is not None,
            f"journal line {position}",
        )
        assert process.poll() is None, f"the run ended before journal line {position}"
        kill_group(process)
    finally:
        if process.poll() is None:
            kill_group(process)
    return journal_lines(root)


@dataclass
class KillOutcome:
    """What one kill and resume did."""

    position: int  # where the engine was to be killed (journal lines)
    killed_at: int  # journal lines when it was dead
    leftovers: list[str]  # processes still working in the project right after the kill
    history: list[str]  # commits at the kill
    resume_code: int
    resume_log: str

    def summary(self) -> str:
        left = f", {len(self.leftovers)} process(es) left running" if self.leftovers else ""
        return f"killed at line {self.killed_at} (asked {self.position}){left}"


def kill_and_resume(
    root: Path, point: KillPoint, profile: list[list[str]], start: int
) -> KillOutcome:
    """From the fresh project at ``root``: run, SIGKILL the engine at ``point`` (located in the
    run whose journal profile is ``profile``), then resume to the end."""
    position = point.in_run(profile, start)
    killed_at = kill_at(root, root.parent / f"{root.name}.kill.log", position)
    leftovers = leftover_processes(root)
    history = commits(root)
    log = root.parent / f"{root.name}.resume.log"
    code = run_to_end(root, log)
    return KillOutcome(
        position, killed_at, leftovers, history, code, log.read_text(errors="replace")
    )


def leftover_processes(root: Path) -> list[str]:
    """Command lines of processes still working in the project (what the crash left)."""
    found = []
    for pid in processes_in(root):
        try:
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


# -- choosing kill points -----------------------------------------------------------------------


# How many of the 20 kill points each stage gets: every stage at least one, the long ones (the
# experiment run, the write-up's many edits) more.
KILLS_PER_STAGE = {
    "literature": 2,
    "ideas": 2,
    "novelty": 2,
    "plan": 1,
    "experiments": 3,
    "plots": 2,
    "writeup": 4,
    "compile": 2,
    "review": 2,
}


@dataclass(frozen=True)
class KillPoint:
    """Kill when the journal holds ``position`` lines: the ``offset``-th event (0-based) of
    ``stage``'s ``length`` events in the reference run, an event of type ``event``."""

    position: int
    stage: str
    event: str
    offset: int
    length: int

    @property
    def id(self) -> str:
        return f"{self.position:04d}-{self.stage}-{self.event}"

    def in_run(self, profile: list[list[str]], start: int) -> int:
        """The same point in another run whose journal (after ``start`` lines) is ``profile``:
        the same relative place inside the same stage (a run's log lines may coalesce
        differently, so absolute positions can drift by a few)."""
        lines = [i for i, (stage, _) in enumerate(profile) if stage == self.stage]
        assert lines, f"stage {self.stage} has no events in this run"
        index = min(len(lines) - 1, self.offset * len(lines) // max(1, self.length))
        return start + lines[index] + 1


def choose_kill_points(profile: list[list[str]], start: int, seed: int) -> list[KillPoint]:
    """The kill points of a run whose journal, after the ``start`` lines the project began with,
    holds ``profile`` ([stage, event type] per line): ``KILLS_PER_STAGE`` of them per stage,
    drawn with ``seed``, one from each equal slice of that stage's events (the very last line
    kills nothing)."""
    rng = random.Random(seed)
    points = []
    for stage, count in KILLS_PER_STAGE.items():
        lines = [i for i, (s, _) in enumerate(profile) if s == stage and i < len(profile) - 1]
        for part in range(min(count, len(lines))):  # one in each of ``count`` equal slices
            offset = rng.randrange(part * len(lines) // count, (part + 1) * len(lines) // count)
            index = lines[offset]
            points.append(
                KillPoint(start + index + 1, stage, profile[index][1], offset, len(lines))
            )
    return sorted(points, key=lambda p: p.position)


def journal_profile(root: Path, start: int) -> list[list[str]]:
    """[stage, event type] of every journal line after the first ``start``."""
    return [[e.get("stage") or "", e["type"]] for e in read_journal(root)[start:]]


def read_journal(root: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for line in (root / JOURNAL).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


# -- the end state ------------------------------------------------------------------------------


@dataclass
class EndState:
    files: dict[str, bytes]  # tracked path -> its comparable content
    results: dict[str, Any]  # run_i -> final_info.json, measured times left out
    pdf: str  # the paper's text


def tracked(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.decode()
    return sorted(p for p in out.split("\0") if p)


def end_state(root: Path) -> EndState:
    known = all_commits(root)
    files = {}
    for path in tracked(root):
        if path in COMPARED_BY_TEXT or not (root / path).is_file():
            data = b"<compared by text>" if (root / path).is_file() else b"<missing>"
        else:
            data = comparable(root, path, (root / path).read_bytes(), known)
        files[path] = data
    results = {
        p.parent.name: without_measured(json.loads(p.read_text(encoding="utf-8")))
        for p in sorted(root.glob("run_*/final_info.json"))
    }
    # its lines flowed again: a wall time of another width breaks the paragraph elsewhere
    text = " ".join(pdf_text(root / "paper.pdf").split())
    return EndState(files, results, MEASURED_TIME.sub("<measured>", text))


def comparable(root: Path, path: str, data: bytes, known: list[str]) -> bytes:
    """The content of a tracked file with what legitimately differs masked (see above)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # images and other binaries: byte for byte
    if path.endswith(".json"):
        try:
            text = json.dumps(without_measured(json.loads(text)), indent=1, sort_keys=True)
        except json.JSONDecodeError:
            pass
    text = MEASURED_LINE.sub("<measured>", text)
    text = LOOPBACK_URL.sub("<loopback>", text)
    text = text.replace(str(root), "<project>")
    # The sandbox record names the home folder it emptied: the test that ran it had its own.
    text = TEST_HOME.sub("<home>", text)
    return HEX_TOKEN.sub(lambda m: _commit_mask(m.group(0), known), text).encode("utf-8")


def _commit_mask(token: str, known: list[str]) -> str:
    return "<commit>" if any(sha.startswith(token) for sha in known) else token


def without_measured(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_measured(v) for k, v in value.items() if not MEASURED_KEY.match(str(k))}
    if isinstance(value, list):  # provenance.json's traced numbers of a time are measured too
        return [without_measured(v) for v in value if not _of_a_time(v)]
    return value


def _of_a_time(entry: Any) -> bool:
    return isinstance(entry, dict) and "time_s" in str(entry.get("what", ""))


def differences(reference: EndState, other: EndState) -> list[str]:
    """What differs, readable in an assertion message."""
    found = []
    for path in sorted(set(reference.files) | set(other.files)):
        if path not in other.files:
            found.append(f"{path}: missing")
        elif path not in reference.files:
            found.append(f"{path}: tracked, but not in the uninterrupted run")
        elif reference.files[path] != other.files[path]:
            found.append(f"{path}: other content{_diff(reference.files[path], other.files[path])}")
    if reference.results != other.results:
        found.append(f"run results: {other.results} instead of {reference.results}")
    if reference.pdf != other.pdf:
        found.append("paper.pdf: other text")
    return found


def _diff(expected: bytes, got: bytes, lines: int = 12) -> str:
    try:
        a, b = expected.decode().splitlines(), got.decode().splitlines()
    except UnicodeDecodeError:
        return " (binary)"
    changed = [line for line in difflib.unified_diff(a, b, lineterm="", n=0)][2 : 2 + lines]
    return "\n    " + "\n    ".join(changed)


def all_commits(root: Path) -> list[str]:
    """Every commit the repository knows, the abandoned ones its reflog holds included."""
    out = subprocess.run(
        ["git", "log", "--all", "--reflog", "--format=%H"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


def commits(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "rev-list", "--all"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    return out.split()


def lost_commits(root: Path, before: list[str]) -> list[str]:
    """Commits of ``before`` that are neither reachable now nor have their tree's content kept
    (every file of that commit present, same content, in some commit of today's history)."""
    reachable = set(commits(root))
    lost = []
    for sha in before:
        if sha not in reachable and not _content_kept(root, sha):
            lost.append(sha)
    return lost


def _content_kept(root: Path, sha: str) -> bool:
    blobs = _blobs(root, sha)
    kept = set()
    for other in commits(root):
        kept |= set(_blobs(root, other).items())
    return all(item in kept for item in blobs.items())


def _blobs(root: Path, sha: str) -> dict[str, str]:
    out = subprocess.run(
        ["git", "ls-tree", "-r", sha], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    return {line.split("\t", 1)[1]: line.split()[2] for line in out.splitlines()}


# -- one fresh project for every case ---------------------------------------------------------


def fresh_project(shared: Path) -> Path:
    """A just-created moons project (baseline run done, nothing else), made once in ``shared``
    (a folder every pytest-xdist worker sees) and copied for each run."""
    fresh = shared / "fresh"
    with locked(shared / "fresh.lock"):
        if not (fresh / "labtui.toml").exists():
            shutil.rmtree(fresh, ignore_errors=True)
            result = run_labtui("new", str(fresh), "--template", "moons", env=engine_env())
            assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return fresh


def prepare(fresh: Path, target: Path, llm_server, arxiv_server) -> Path:
    """A copy of the fresh project at ``target``, wired to these servers."""
    shutil.copytree(fresh, target, symlinks=True)
    wire(target, llm_server, arxiv_server)
    return target


# -- an LLM server that dies mid-stream ---------------------------------------------------------


@dataclass
class Cut:
    """A scripted reply that breaks off: half of the streamed answer (the model's default
    reply), then the connection closes; with ``die`` the whole server stops listening too."""

    die: bool = False


class _CuttingHandler(scripted_llm._Handler):
    def _answer(self, body: dict[str, Any], reply: Any) -> None:
        if not isinstance(reply, Cut):
            super()._answer(body, reply)
            return
        model = str(body.get("model", ""))
        text = self.scripted._defaults[model](body)
        events = scripted_llm._stream_events(body, model, scripted_llm._split(text, 8), 0, 0)
        self._start_chunked()
        for event in events[: len(events) // 2]:
            self._write(scripted_llm._chunked(f"data: {json.dumps(event)}\n\n".encode()))
        self.close_connection = True
        self._gone = True
        self.connection.shutdown(socket.SHUT_RDWR)
        if reply.die:
            threading.Thread(target=self.scripted.stop, daemon=True).start()


class CuttingLLMServer(scripted_llm.ScriptedLLMServer):
    """The scripted server, with ``Cut`` replies, on ``port`` (0: a free one) so that a server
    that died can come back where the project looks for it."""

    def __init__(self, port: int = 0) -> None:
        super().__init__()
        self.port = port

    def start(self) -> CuttingLLMServer:
        handler = type("Handler", (_CuttingHandler,), {"scripted": self})
        httpd = scripted_llm._Server(("127.0.0.1", self.port), handler)
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self
