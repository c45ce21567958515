"""The checks an edit must pass before it touches the tree: pure functions over names and texts."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.recorded_replies import exchanges, replies

from labtui.core.coding.edit_guard import (
    Contract,
    EditPolicy,
    check_edit,
    contract_for,
    contract_problems,
    elided_lines,
    elision_problem,
    new_file_problem,
    placeholder_name,
    shrink_problem,
)
from labtui.core.coding.edit_repair import restored_definitions, restored_entry, restored_parts

# A 60-line experiment in the shape of the templates: argparse --out_dir, final_info.json.
EXPERIMENT = (
    '"""Train a tiny model. Writes <out_dir>/final_info.json."""\n'
    "import argparse\nimport json\nimport os\n\n"
    + "".join(f"PARAM_{i} = {i}\n" for i in range(40))
    + "\n\ndef train(seed):\n    return {'accuracy': 0.5 + seed / 100}\n\n\n"
    "def main():\n"
    "    parser = argparse.ArgumentParser()\n"
    '    parser.add_argument("--out_dir", type=str, default="run_0")\n'
    "    args = parser.parse_args()\n"
    "    os.makedirs(args.out_dir, exist_ok=True)\n"
    "    result = train(0)\n"
    '    with open(os.path.join(args.out_dir, "final_info.json"), "w") as f:\n'
    '        json.dump({"data": {"means": result}}, f)\n\n\n'
    'if __name__ == "__main__":\n    main()\n'
)

ONE_FUNCTION = (
    "def train(seed):\n"
    "    # Use a smaller learning rate.\n"
    "    lr = 0.01\n"
    "    accuracy = 0.5 + seed / 100\n"
    "    return {'accuracy': accuracy, 'lr': lr}\n"
)

PAPER = r"""\documentclass{article}
\usepackage{graphicx}
\begin{document}
\title{TITLE HERE}
\section{Introduction}
INTRO HERE
\bibliographystyle{plainnat}
\bibliography{references}
\end{document}
"""


def lines(text: str) -> int:
    return len([line for line in text.splitlines() if line.strip()])


# -- shrink -----------------------------------------------------------------------------------


def test_a_whole_file_that_is_one_function_deletes_most_of_the_file() -> None:
    problem = shrink_problem("experiment.py", EXPERIMENT, ONE_FUNCTION)
    assert problem is not None and problem.kind == "shrink"
    # Of train(), only its `def` line survives; everything else of the 56 lines is gone.
    assert lines(EXPERIMENT) == 56 and lines(ONE_FUNCTION) == 5
    assert problem.reason == "would delete 55 of 56 lines of experiment.py, leaving 5 lines"


def test_small_edits_and_short_files_are_not_shrinks() -> None:
    edited = EXPERIMENT.replace("PARAM_3 = 3", "PARAM_3 = 6")
    assert shrink_problem("experiment.py", EXPERIMENT, edited) is None
    # Half the lines removed is not "most"; a short file may be rewritten whole.
    half = "\n".join(EXPERIMENT.splitlines()[: len(EXPERIMENT.splitlines()) // 2 + 4])
    assert shrink_problem("experiment.py", EXPERIMENT, half) is None
    short = "".join(f"x{i} = {i}\n" for i in range(20))
    assert shrink_problem("a.py", short, "x = 1\n") is None


# -- elision ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "...",
        "…",
        "# ...",
        "    # ... rest of the code ...",
        "// entire file content ...",
        "// ... goes in between",
        "% ...",
        "# rest of file unchanged",
        "# existing code",
        "# the training loop remains the same",
        "# (unchanged)",
        "x = 1  # rest of the code stays the same",
        "/* ... */",
    ],
)
def test_lines_that_stand_for_left_out_code(line: str) -> None:
    new = EXPERIMENT.replace("    result = train(0)\n", f"    result = train(0)\n{line}\n")
    problem = elision_problem("experiment.py", EXPERIMENT, new)
    assert problem is not None and problem.kind == "elision", line
    assert line.strip() in problem.reason


@pytest.mark.parametrize(
    "line",
    [
        "# Loading the data...",  # a comment that merely ends in dots
        "# Use the existing seeds",  # "existing" without "code"
        "print('...')",
        "x = data[..., 0]",
    ],
)
def test_ordinary_lines_are_not_elisions(line: str) -> None:
    new = EXPERIMENT.replace("    result = train(0)\n", f"    result = train(0)\n    {line}\n")
    assert elided_lines(EXPERIMENT, new) == []


def test_an_elision_the_old_file_already_had_is_not_the_models() -> None:
    old = EXPERIMENT + "# ...\n"
    assert elision_problem("experiment.py", old, old.replace("PARAM_1 = 1", "PARAM_1 = 2")) is None


# -- contracts --------------------------------------------------------------------------------


def test_the_experiment_contract_is_derived_from_the_old_file() -> None:
    contract = contract_for("experiment.py", EXPERIMENT)
    assert contract == Contract(
        python=True, entry=True, options=("--out_dir",), literals=("final_info.json",)
    )
    # A Python file without the contract only has to keep parsing.
    assert contract_for("plot.py", "print('plot')\n") == Contract(python=True)
    assert contract_for("broken.py", "def (:\n") == Contract()  # did not parse: may be fixed
    assert contract_for("new.py", None) == Contract(python=True)
    assert contract_for("notes.md", "# notes\n") == Contract()


def test_dropping_out_dir_is_caught_by_the_ast_not_by_text() -> None:
    contract = contract_for("experiment.py", EXPERIMENT)
    # The string is still in the docstring and a comment, but no longer parsed.
    dropped = EXPERIMENT.replace(
        '    parser.add_argument("--out_dir", type=str, default="run_0")\n',
        '    # --out_dir is no longer needed\n    parser.add_argument("--seed", type=int)\n',
    ).replace("args.out_dir", '"."')
    [problem] = contract_problems("experiment.py", dropped, contract)
    assert problem.kind == "contract"
    assert "--out_dir" in problem.reason and "add_argument" in problem.reason


def test_final_info_in_a_docstring_does_not_count() -> None:
    contract = contract_for("experiment.py", EXPERIMENT)
    dropped = EXPERIMENT.replace('"final_info.json"', '"results.json"')
    assert "final_info.json" in dropped  # still in the module docstring
    [problem] = contract_problems("experiment.py", dropped, contract)
    assert "final_info.json" in problem.reason and "<out_dir>/final_info.json" in problem.reason


def test_the_contract_holds_in_other_spellings() -> None:
    contract = contract_for("experiment.py", EXPERIMENT)
    respelled = EXPERIMENT.replace(
        'parser.add_argument("--out_dir", type=str, default="run_0")',
        'parser.add_argument("-o", "--out_dir", default="run_0")',
    ).replace('os.path.join(args.out_dir, "final_info.json")', 'f"{args.out_dir}/final_info.json"')
    assert contract_problems("experiment.py", respelled, contract) == []


def test_python_that_does_not_parse_is_refused() -> None:
    [problem] = contract_problems(
        "experiment.py", "def main(:\n    pass\n", Contract(python=True, options=("--out_dir",))
    )
    assert problem.kind == "syntax" and "invalid Python (line 1" in problem.reason


def test_the_latex_contract_keeps_what_the_paper_had() -> None:
    contract = contract_for("latex/template.tex", PAPER)
    assert set(contract.latex) == {
        r"\documentclass",
        r"\begin{document}",
        r"\end{document}",
        r"\bibliography",
        r"\bibliographystyle",
    }
    section_only = "\\section{Introduction}\nWe study moons.\n"
    reasons = [p.reason for p in contract_problems("latex/template.tex", section_only, contract)]
    assert len(reasons) == 5 and r"would drop \begin{document} from latex/template.tex" in reasons
    # Commented out is gone; \bibliographystyle alone is not \bibliography.
    no_bib = PAPER.replace(r"\bibliography{references}", r"% \bibliography{references}")
    [problem] = contract_problems("latex/template.tex", no_bib, contract)
    assert problem.reason == r"would drop \bibliography from latex/template.tex"
    assert (
        contract_problems("latex/template.tex", PAPER.replace("INTRO HERE", "Hi."), contract) == []
    )
    # A paper without a bibliography need not grow one.
    assert r"\bibliography" not in contract_for("a.tex", r"\documentclass{article}").latex


def test_a_contract_names_only_known_latex_markers() -> None:
    with pytest.raises(ValueError, match="unknown markers"):
        Contract(latex=(r"\maketitle",))


# -- names and the policy -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "path/to/filename.js",
        "src/path/to/thing.py",
        "filename.py",
        "file.ext",
        "example.py",
        "your_file.py",
        "your_script.py",
        "exp…py",
        "experiment...py",
        "<file>.py",
        "show_greeting.py",  # aider's own `whole` example
        "mathweb/flask/app.py",  # aider's own `diff` example
    ],
)
def test_placeholder_names(name: str) -> None:
    assert placeholder_name(name)


@pytest.mark.parametrize("name", ["experiment.py", "helpers/schedule.py", "latex/figure.tex"])
def test_real_names(name: str) -> None:
    assert not placeholder_name(name)


def test_the_policy_says_which_new_files_a_step_may_create() -> None:
    strict = EditPolicy()
    problem = new_file_problem("helpers/schedule.py", strict, ["experiment.py"])
    assert problem is not None and problem.kind == "new-file"
    assert problem.reason == (
        "would create helpers/schedule.py, but this step edits experiment.py and may create "
        "no new files"
    )
    helpers = EditPolicy(create=("helpers/*.py",))
    assert new_file_problem("helpers/schedule.py", helpers, ["experiment.py"]) is None
    other = new_file_problem("other/x.py", helpers, ["experiment.py"])
    assert other is not None and "may create only helpers/*.py" in other.reason
    # A placeholder is never created, whatever the policy.
    anything = EditPolicy(create=("*",))
    copied = new_file_problem("path/to/filename.js", anything, ["experiment.py"])
    assert copied is not None and copied.kind == "placeholder"
    assert "placeholder name copied from the format example" in copied.reason
    assert EditPolicy(also_edit=("plot.py",)).may_also_edit("plot.py")
    assert not EditPolicy().may_also_edit("plot.py")


def test_a_step_may_give_its_own_contract() -> None:
    policy = EditPolicy(contracts={"run.py": Contract(python=True, literals=("results.csv",))})
    assert policy.contract("run.py", "print(1)\n").literals == ("results.csv",)
    assert policy.contract("experiment.py", EXPERIMENT).options == ("--out_dir",)


def test_check_edit_collects_every_problem() -> None:
    contract = contract_for("experiment.py", EXPERIMENT)
    problems = check_edit("experiment.py", EXPERIMENT, ONE_FUNCTION + "# ...\n", contract)
    assert [p.kind for p in problems] == ["shrink", "elision", "contract", "contract", "contract"]
    assert (
        check_edit("experiment.py", EXPERIMENT, EXPERIMENT.replace("= 3\n", "= 4\n"), contract)
        == []
    )
    # A new file: no shrink, but it must parse and not elide.
    [problem] = check_edit("helpers/x.py", None, "def f(:\n", contract_for("helpers/x.py", None))
    assert problem.kind == "syntax"


# -- a half file's head, put back ----------------------------------------------------------------

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
MOONS = TEMPLATES / "moons" / "experiment.py"


def test_a_real_small_models_half_file_gets_its_head_back():
    # Recorded: Qwen2.5-Coder-1.5B's whole-file experiment.py for run_1 on moons
    # (qwen15_moons_experiments.jsonl) began at the model's functions: the docstring, the
    # imports and 20 constants were gone, and the run died of "NameError: name 'np' is not
    # defined".
    reply = exchanges("qwen15_moons_experiments")[0]["reply"]
    code = reply.split("```python\n", 1)[1].split("\n```", 1)[0] + "\n"
    old = MOONS.read_text()
    assert "import numpy as np" not in code and "np.zeros" in code
    restored = restored_definitions(old, code)
    assert restored.statements[0].startswith('"""Two-moons classification')
    assert {"import numpy as np", "HIDDEN_UNITS = 32", "import argparse"} <= set(
        restored.statements
    )
    assert restored.text.rstrip().endswith(code.rstrip()), "the model's own code kept whole"
    namespace = compile(restored.text, "experiment.py", "exec")  # parses
    assert namespace is not None
    redefined = [line for line in restored.statements if line.startswith("def ")]
    assert all(f"\n{line}" not in code for line in redefined), "nothing it kept is doubled"


def test_a_whole_file_needs_nothing_back_and_a_dropped_helper_stays_dropped():
    old = "import numpy as np\n\nSCALE = 2\n\n\ndef helper(x):\n    return x\n\n\nprint(np.ones(SCALE))\n"
    assert restored_definitions(old, old).statements == ()
    without_helper = "import numpy as np\n\nSCALE = 3\n\n\nprint(np.ones(SCALE))\n"
    assert restored_definitions(old, without_helper).text == without_helper
    headless = "print(np.ones(SCALE))\n"
    restored = restored_definitions(old, headless)
    assert restored.statements == ("import numpy as np", "SCALE = 2")
    assert restored.text.endswith(headless) and "def helper" not in restored.text
    assert restored_definitions(old, "print(np.ones(SCALE)\n").statements == (), (
        "no parse: no guess"
    )


def test_a_real_small_models_whole_file_without_its_entry_point_is_refused() -> None:
    # Recorded (qwen15_diffusion_2d_no_entry_experiments.jsonl): the 1.5B model returned
    # diffusion_2d's experiment.py without its last three lines, the `if __name__ ...` block; the
    # run defined everything, called nothing and "wrote no run_1/final_info.json".
    (reply,) = replies("qwen15_diffusion_2d_no_entry_experiments")
    new = reply.split("```python\n", 1)[1].split("\n```", 1)[0]
    old = (TEMPLATES / "diffusion_2d" / "experiment.py").read_text(encoding="utf-8")
    contract = contract_for("experiment.py", old)
    assert contract.entry
    [problem] = contract_problems("experiment.py", new, contract)
    assert problem.kind == "contract" and '`if __name__ == "__main__":`' in problem.reason
    assert contract_problems("experiment.py", old, contract) == []
    assert not contract_for("plot.py", "print('plot')\n").entry


def test_a_real_small_models_whole_file_gets_its_entry_point_back() -> None:
    # The same recorded reply: everything but the `if __name__ == "__main__":` block, whose
    # main() the reply still defines, so the block is put back from the file as it was.
    (reply,) = replies("qwen15_diffusion_2d_no_entry_experiments")
    new = reply.split("```python\n", 1)[1].split("\n```", 1)[0]
    old = (TEMPLATES / "diffusion_2d" / "experiment.py").read_text(encoding="utf-8")
    restored = restored_parts(old, new)
    assert restored.statements == ('if __name__ == "__main__":',)
    assert restored.text.endswith('\n\n\nif __name__ == "__main__":\n    main()\n')
    assert (
        contract_problems("experiment.py", restored.text, contract_for("experiment.py", old)) == []
    )
    # a block whose function the reply no longer defines is not put back: the contract refuses
    without_main = new.replace("def main() -> None:", "def run() -> None:")
    assert restored_entry(old, without_main).statements == ()
    assert restored_parts(old, old).text == old, "nothing left out, nothing added"


def test_a_real_small_models_whole_file_that_uses_an_undefined_name_is_refused():
    # Qwen2.5-Coder-1.5B's whole moons experiment.py for "add dropout" (issue 42's bench) used
    # `rng` inside a function that had none: the run stopped with a NameError after minutes.
    old = "import numpy as np\n\ndef train(seed):\n    r = np.random.default_rng(seed)\n    return r\n"
    new = old.replace("    return r\n", "    mask = rng.random(3) > 0.1\n    return r\n")
    (problem,) = check_edit("experiment.py", old, new, contract_for("experiment.py", old))
    assert problem.kind == "names"
    assert "would use rng in experiment.py, which nothing there defines" in problem.reason
    assert (
        check_edit(
            "experiment.py",
            old,
            old.replace("default_rng(seed)", "default_rng(seed + 1)"),
            contract_for("experiment.py", old),
        )
        == []
    )
