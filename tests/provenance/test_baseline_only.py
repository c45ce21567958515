"""A paper whose project has no finished run but the baseline (a climb that kept nothing): any
claim of an effect is unsupported, and blocked like a contradicted one. The abstract is the 1.5B
model's, from the moons climb of issue 42 (every attempt discarded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtui.core.provenance.checks import paper_contradictions

ABSTRACT = r"""\documentclass{article}
\begin{document}
\begin{abstract}
This study examines the impact of a wide one-hidden-layer network on separating two
interleaving half circles in the plane, using noisy data. Increasing the number of hidden units
significantly improves the test accuracy, demonstrating that wider networks are better suited to
complex boundary fitting tasks with noisy data. Only the baseline run\_0 ran, with
test\_accuracy\_mean 0.9367; train\_loss\_mean 0.1930.
\end{abstract}
\section{Results}
The baseline reaches a test accuracy of 0.9367. Wider layers might raise the test accuracy.
\end{document}
"""
BASE = {"moons": {"means": {"test_accuracy_mean": 0.9367, "train_loss_mean": 0.1930}}}


@pytest.fixture
def baseline_only(tmp_path: Path) -> Path:
    (tmp_path / "run_0").mkdir()
    (tmp_path / "run_0" / "final_info.json").write_text(json.dumps(BASE))
    (tmp_path / "run_1").mkdir()  # a run that never finished: stdout only
    (tmp_path / "run_1" / "stdout.log").write_text("epoch 1\n")
    return tmp_path


def test_a_claimed_effect_with_only_the_baseline_run_is_flagged(baseline_only: Path):
    [claim] = paper_contradictions(baseline_only, ABSTRACT)
    assert claim.sentence.startswith("Increasing the number of hidden units significantly")
    assert claim.claims == "the change in test accuracy is significant and test accuracy improved"
    assert claim.problem.endswith(
        "but only the baseline (run_0) finished in this project: no run measured a change."
    )


def test_the_baselines_own_numbers_and_hedged_words_are_no_claims(baseline_only: Path):
    claim = ABSTRACT[ABSTRACT.index("Increasing") : ABSTRACT.index("Only the baseline")]
    tex = ABSTRACT.replace(claim, "We ask whether more hidden units change the test accuracy. ")
    assert paper_contradictions(baseline_only, tex) == []


def test_without_a_baseline_nothing_is_held(tmp_path: Path):
    assert paper_contradictions(tmp_path, ABSTRACT) == []
