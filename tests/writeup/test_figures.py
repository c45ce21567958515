"""Figure descriptions: one per figure that exists, none invented, written from plot.py."""

from __future__ import annotations

import re

import pytest

from labtui.core.stages.plots import parse_descriptions


def test_every_existing_figure_gets_exactly_one_description():
    figures = ["train_loss.png", "test_accuracy.png"]
    loss, accuracy = "Training loss per epoch, one curve per run.", "Test accuracy of each run."
    good = {"figures": {"test_accuracy.png": f" {accuracy} ", "train_loss.png": loss}}
    assert parse_descriptions(good, figures) == {
        "train_loss.png": loss,
        "test_accuracy.png": accuracy,
    }
    for bad, says in [
        ([], '{"figures"'),
        ({"figures": {"train_loss.png": "x"}}, "missing: test_accuracy.png"),
        ({"figures": {**good["figures"], "ghost.png": "y"}}, "not figures: ghost.png"),
        ({"figures": {"train_loss.png": "", "test_accuracy.png": "a"}}, "missing: train_loss"),
    ]:
        with pytest.raises(ValueError, match=says.replace("{", r"\{")):
            parse_descriptions(bad, figures)
    for bad, says in [
        ({"train_loss.png": "...", "test_accuracy.png": accuracy}, "is a placeholder ('...')"),
        ({"train_loss.png": "loss", "test_accuracy.png": accuracy}, "has 1 word ('loss')"),
    ]:
        with pytest.raises(ValueError, match=re.escape(f"figures: field 'train_loss.png' {says}")):
            parse_descriptions({"figures": bad}, figures)
