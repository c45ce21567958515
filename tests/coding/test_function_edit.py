"""An edit sized to the change: one definition of the real moons template replaced by name,
the rest of the file byte for byte; what does not fit is refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtui.core.coding.function_edit import FunctionEditError, definitions, replace_definition

MOONS = (Path(__file__).parents[2] / "templates" / "moons" / "experiment.py").read_text()
OLD_ACTIVATE = """def activate(z: np.ndarray) -> np.ndarray:
    return np.tanh(z) if ACTIVATION == "tanh" else np.maximum(z, 0.0)
"""
NEW_ACTIVATE = """def activate(z: np.ndarray) -> np.ndarray:
    if ACTIVATION == "gelu":
        return 0.5 * z * (1.0 + np.tanh(0.7978845608 * (z + 0.044715 * z**3)))
    return np.tanh(z) if ACTIVATION == "tanh" else np.maximum(z, 0.0)
"""


def test_the_definitions_are_the_top_level_functions_classes_and_methods():
    names = [d.name for d in definitions(MOONS)]
    assert names[:2] == ["padded", "make_moons"]
    assert {"Adam", "Adam.step", "SGD.__init__", "train", "main"} <= set(names)
    assert definitions("def broken(:\n") == []


def test_one_function_is_replaced_and_everything_else_is_byte_identical():
    assert OLD_ACTIVATE in MOONS
    new = replace_definition(MOONS, "activate", NEW_ACTIVATE)
    assert new == MOONS.replace(OLD_ACTIVATE, NEW_ACTIVATE)


def test_a_method_is_replaced_at_its_indentation_from_code_given_flush_left():
    given = "```python\ndef step(self, params, grads):\n    self.t += 2\n```"
    new = replace_definition(MOONS, "Adam.step", given)
    assert (
        "class Adam:" in new and "    def step(self, params, grads):\n        self.t += 2\n" in new
    )
    assert new.count("def step(") == 2, "SGD's step is untouched"


@pytest.mark.parametrize(
    ("name", "code", "says"),
    [
        ("activation", NEW_ACTIVATE, "has no function or class 'activation'; it has: padded"),
        ("activate", "def activate(z):\n    return (z\n", "the new code does not parse"),
        ("activate", "def other(z):\n    return z\n", "defines 'other'; it must be"),
        ("activate", "x = 1\n", "defines nothing"),
    ],
)
def test_what_does_not_fit_is_refused_with_the_reason(name, code, says):
    with pytest.raises(FunctionEditError, match=says.replace("(", r"\(")):
        replace_definition(MOONS, name, code)


def test_helpers_may_follow_the_definition_and_crlf_files_keep_their_endings():
    code = "import os\r\n\r\ndef f():\r\n    return 1\r\n\r\nX = 2\r\n"
    new = replace_definition(code, "f", "def f():\n    return g()\n\ndef g():\n    return 3\n")
    assert (
        new
        == "import os\r\n\r\ndef f():\r\n    return g()\r\n\r\ndef g():\r\n    return 3\r\n\r\nX = 2\r\n"
    )


def test_a_real_small_models_edit_that_calls_an_undefined_helper_or_drops_a_break_is_refused():
    # Qwen2.5-Coder-1.5B, asked to add input noise in moons' train (tests/bench/edit_formats.py):
    # it called add_noise_to_input, which it never wrote, and dropped the deadline's `break`.
    start = MOONS.index("def train(")
    end = MOONS.index("\ndef summarize(")
    train = MOONS[start:end]
    calls_helper = train.replace(
        "        # Full-batch data loss",
        "        add_noise_to_input(cache['x'], 0.05)\n        # Full-batch data loss",
    )
    with pytest.raises(FunctionEditError, match="uses add_noise_to_input, which the code does not"):
        replace_definition(MOONS, "train", calls_helper)
    no_break = train.replace("            break\n", "")
    assert no_break != train
    with pytest.raises(FunctionEditError, match="drops a break statement"):
        replace_definition(MOONS, "train", no_break)
    noisy = train.replace(
        "        # Full-batch data loss",
        "        x_train = x_train + rng.normal(0.0, 0.05, x_train.shape)\n        # Full-batch data loss",
    )
    assert "rng.normal(0.0, 0.05" in replace_definition(MOONS, "train", noisy)


def test_a_break_left_outside_its_loop_by_re_indentation_is_refused():
    # The 1.5B model's second moons edit (issue 42's bench): its train's loop body came back
    # indented unevenly, which parses, but leaves the budget's `break` outside the loop.
    code = "def train():\n    for epoch in range(3):\n        if epoch:\n            break\n    return 1\n"
    broken = "def train():\n    for epoch in range(3):\n        pass\n    if epoch:\n        break\n    return 1\n"
    with pytest.raises(FunctionEditError, match="does not compile .*'break' outside loop"):
        replace_definition(code, "train", broken)
