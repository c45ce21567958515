"""The lab notebook (core/workspace/notebook.py): what a paper's sections are shown of it."""

from __future__ import annotations

from labtui.core.workspace.artifacts import NOTES
from labtui.core.workspace.notebook import (
    append_analysis,
    append_run,
    computed_facts,
    start_notebook,
)

BASELINE = {"moons": {"test_accuracy_mean": 0.9367}}


def test_a_section_is_shown_the_plan_and_the_computed_changes_not_a_models_words(tmp_path):
    start_notebook(tmp_path, "Width on two moons", "Halve the hidden layer.", BASELINE)
    append_run(
        tmp_path,
        "run_1",
        what_changed="I added dropout with p = 0.5.",  # the coder's claim: it did not
        computed="settings: HIDDEN_UNITS 32 → 8 (against run_0's code)",
        results="| metric | this run |\n|---|---|\n| test_accuracy_mean | 0.895 |",
        commit="53e66be8ce04aa",
        wall_s=0.6,
    )
    append_analysis(tmp_path, "run_1", "Dropout at 75% was worst.", "continue")
    facts = computed_facts((tmp_path / NOTES).read_text())
    assert "Width on two moons" in facts and "Halve the hidden layer." in facts
    assert "## run_1" in facts and "HIDDEN_UNITS 32 → 8" in facts
    for words in ("dropout", "Dropout", "0.895", "|"):
        assert words not in facts, words
