"""TEST-ONLY: the hollow paper of issue 28, as a Qwen2.5-Coder-1.5B write-up left it on a template
labtui had never seen, and a whole one beside it. Each is a body per part of the moons template's
paper (its placeholders), so a test can fill the template with it or a scripted model can answer
it section by section.

The hollow one: the abstract, introduction and related work are one sentence copied from the
literature summary; background, method, setup and results open with a label and promise in the
future tense (a sweep "256, 512, and 1024" that never ran); method and setup are one paragraph;
the results hold no number and no figure; the conclusion keeps its placeholder.
"""

from __future__ import annotations

from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "moons" / "latex" / "template.tex"

COPIED = (
    "The team should consider reviewing existing work on logistic regression, random Fourier "
    "features, and kernel approximations before designing the experiments on two moons."
)
SWEEP = (
    "METHOD: We will perform a sweep over the number of random features, 256, 512, and 1024, and "
    "train a logistic regression on top of them with the Adam optimiser for a fixed budget."
)
HOLLOW = {
    "TITLE HERE": "Random Features for Two Moons",
    "ABSTRACT HERE": COPIED,
    "INTRO HERE": COPIED,
    "RELATED WORK HERE": COPIED,
    "BACKGROUND HERE": "BACKGROUND: We will describe random Fourier features, which approximate a "
    "shift-invariant kernel with a finite set of cosine features, and logistic regression.",
    "METHOD HERE": SWEEP,
    "EXPERIMENTAL SETUP HERE": SWEEP.replace("METHOD:", "EXPERIMENTAL SETUP:"),
    "RESULTS HERE": "RESULTS: We will report the test accuracy of each configuration and compare "
    "it with the baseline, and we will discuss which number of features works best.",
    "CONCLUSIONS HERE": "CONCLUSIONS HERE",
}

WHOLE = {
    "TITLE HERE": "A Wider Hidden Layer on Two Moons",
    "ABSTRACT HERE": "We ask whether doubling the hidden layer of a small MLP changes its test "
    "accuracy on the two-moons task. Over three seeds, the wider network reached a test accuracy "
    "of 0.9053 against 0.9367 for the baseline, a decline of 0.031 that exceeds the seeds' spread.",
    "INTRO HERE": "Small multilayer perceptrons are the usual first model for two-dimensional "
    "toy tasks, and their width is the first setting a practitioner changes. We measure what "
    "doubling it does to generalisation on two moons, with the data and seeds held fixed, and "
    "report that the wider network generalised worse in our runs.",
    "RELATED WORK HERE": "Back-propagation trains such networks \\citep{rumelhart1986learning}, "
    "and Adam \\citep{kingma2015adam} is the optimiser we use throughout. Dropout "
    "\\citep{srivastava2014dropout} and decoupled weight decay \\citep{loshchilov2019decoupled} "
    "regularise wide networks; we use neither, so that width is the only change between runs.",
    "BACKGROUND HERE": "A multilayer perceptron with one hidden layer maps a point of the plane "
    "through an affine map and a tanh nonlinearity to class probabilities. Its width sets how many "
    "such features it has, and so how flexible its decision boundary can be on a small sample.",
    "METHOD HERE": "The baseline network has one hidden layer of tanh units trained with Adam on "
    "the cross-entropy loss. Our change doubles the number of hidden units and keeps everything "
    "else, so that any difference in test accuracy is due to the width alone. A wider layer gives "
    "the network more features to combine, and so a more flexible decision boundary; on a small "
    "and noisy training sample that flexibility may fit the noise rather than the two moons.",
    "EXPERIMENTAL SETUP HERE": "Each run trains on the same noisy two-moons sample and is tested "
    "on a held-out sample drawn from the same distribution. Every configuration is trained with "
    "three seeds, and we report the mean test accuracy with its standard error over those seeds. "
    "The two runs differ only in the width of the hidden layer; the optimiser, the learning rate, "
    "the number of epochs and the data are those of the baseline.",
    "RESULTS HERE": "Table~\\ref{tab:runs} compares the two runs. The wider network reached a "
    "mean test accuracy of 0.9053 (standard error 0.0041) against 0.9367 for the baseline "
    "run\\_0, a difference of -0.031, larger than the spread of the seeds. "
    "Figure~\\ref{fig:test_accuracy} shows the accuracy of every run.\n\n"
    "\\begin{table}[t]\n  \\centering\n  \\begin{tabular}{lr}\n    Run & Test accuracy \\\\\n"
    "    run\\_0 & 0.9367 \\\\\n    run\\_1 & 0.9053 $\\pm$ 0.0041 \\\\\n  \\end{tabular}\n"
    "  \\caption{Mean test accuracy of each run over its seeds.}\n  \\label{tab:runs}\n"
    "\\end{table}\n\n"
    "\\begin{figure}[t]\n  \\centering\n  \\includegraphics[width=0.7\\textwidth]{test_accuracy.png}\n"
    "  \\caption{Test accuracy of each run.}\n  \\label{fig:test_accuracy}\n\\end{figure}",
    "CONCLUSIONS HERE": "Doubling the hidden layer lowered test accuracy on two moons in our runs, "
    "by more than the spread of the seeds. A sweep over widths and over sample sizes would show "
    "where the extra capacity starts to overfit; future work could add it.",
}


def paper(bodies: dict[str, str]) -> str:
    """The moons template's paper with each placeholder replaced by its body."""
    return filled(TEMPLATE.read_text(encoding="utf-8"), bodies)


def filled(tex: str, bodies: dict[str, str]) -> str:
    """``tex`` (the moons template's paper, as a project has it) with each placeholder replaced
    by its body, and the template's example figure taken out."""
    from labtui.core.writeup.section_text import without_example_figure

    text = without_example_figure(tex)
    for placeholder, body in bodies.items():
        if placeholder != body:
            text = text.replace(placeholder, body, 1)
    return text
