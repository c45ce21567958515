"""The paper says whether a search's best change held under fresh seeds, from the numbers of
the search's journaled summary only."""

from labtui.core.workspace.stage_results import SearchSummary
from labtui.core.writeup.search_outcome import gain_held


def _summary(mean, *, value=0.95, direction="higher", step=4):
    return SearchSummary(
        strategy="climb",
        metric="moons.test_accuracy_mean",
        direction=direction,
        best={"step": step, "value": value, "seeds": [0.94, 0.95, 0.93], "mean": mean, "std": 0.01},
        noise={"values": [0.93, 0.931], "threshold": 0.0065},
    )


def test_a_gain_beyond_the_threshold_held_and_one_within_it_did_not():
    held = gain_held(_summary(0.94))
    assert "step 4) ran again with 3 fresh seed(s)" in held
    assert "mean moons.test\\_accuracy\\_mean is 0.94 $\\pm$ 0.01, against 0.93" in held
    assert "a gain of +0.01 (its single run during the search: +0.02)" in held
    assert held.endswith("The gain held: it is beyond the search's noise threshold (0.0065).")
    lucky = gain_held(_summary(0.933))
    assert "The gain did not hold: it is within the search's noise threshold (0.0065)" in lucky


def test_lower_is_better_and_no_kept_step_says_nothing():
    loss = gain_held(_summary(0.90, value=0.89, direction="lower"))
    assert "a gain of +0.03" in loss and "The gain held" in loss
    assert gain_held(_summary(0.94, step=0)) == ""
    assert gain_held(_summary(None)) == ""
