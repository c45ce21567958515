r"""Papers in the typography of real ML-conference styles, as LaTeX sources the tests compile.

The conference style files are not in TeX Live, so each preamble here (but The AI Scientist's,
which brings its own) redefines what matters to a
reader of the PDF: how headings are set (size, weight, case, small caps, numbering), running heads
and footers, line numbers of review copies, one or two columns, captions, tables and equations.
The point is the typography, not the name:

- ICLR-like: Times, uppercase bold section headings at body size, bold body-size subsections,
  the running head "Under review as a conference paper at ICLR 2026", line numbers in the left
  margin, a small-caps title and abstract heading, lettered appendix sections.
- NeurIPS-like: Times, \large bold numbered sections, \normalsize bold subsections and
  subsubsections, \paragraph run-ins, page numbers in the footer, line numbers, a displayed
  equation, a TikZ figure with bold box labels, a heading that wraps onto a second line, an
  appendix, and the paper checklist (numbered bold items, more of them than sections); about
  ten pages.
- two-column ICML/ACL-like: \twocolumn, sections in small caps at body size ("1. INTRODUCTION":
  Times fakes small caps with smaller capitals), bold subsections, line numbers in both margins,
  a running head, a one-column table and one as wide as the page.
- many tables: Computer Modern, six tables with numeric cells and bold group rows ("Ours",
  "Baselines"), captions above and below, tables right before and after headings, \section*
  headings, and "Appendix A:" headings.
- The AI Scientist's: the real ICLR 2024 style and its template's watermark
  (tests/support/ai_scientist_paper.py says what it asks of a reader).

The prose is generated from a seed: sentences unique enough that a test can check that each
paragraph comes back whole and in order (two columns, page breaks, line numbers).
"""

from __future__ import annotations

import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from labtui.core.latex.compile import compile_latex
from support.ai_scientist_paper import BODY as AI_SCIENTIST_BODY
from support.ai_scientist_paper import PREAMBLE as AI_SCIENTIST_PREAMBLE
from support.ai_scientist_paper import STYLE_FILES as ICLR2024_FILES
from support.compiled_latex import CompiledPdfs

SUBJECTS = (
    "the network",
    "our method",
    "the baseline",
    "weight decay",
    "the optimiser",
    "each model",
    "the regulariser",
    "this effect",
    "the learning rate",
    "the validation loss",
    "a wider layer",
    "the penalty",
)
VERBS = (
    "reduces",
    "increases",
    "stabilises",
    "controls",
    "shifts",
    "preserves",
    "explains",
    "predicts",
    "dampens",
    "amplifies",
)
OBJECTS = (
    "the generalisation gap",
    "the training loss",
    "the effective step size",
    "the norm of the weights",
    "the variance between seeds",
    "the final accuracy",
    "the sharpness of the minimum",
    "the margin of the classifier",
    "the curvature of the loss",
    "the speed of convergence",
)
TAILS = (
    "across five seeds",
    "on both datasets",
    "when the width grows",
    "without extra tuning",
    "in the first epochs",
    "after the warmup phase",
    "for small batches",
    "at every depth we tried",
    "under label noise",
    "once training has converged",
)
OPENERS = (
    "In practice",
    "As expected",
    "Surprisingly",
    "In contrast",
    "Taken together",
    "On closer inspection",
    "At a larger width",
    "For every seed",
)
PROSE = re.compile(r"<<(\d+)>>")


@dataclass(frozen=True)
class StyledPaper:
    """A LaTeX source and the plain-text paragraphs of prose it contains, in reading order;
    the style files it needs beside it, when TeX Live has none."""

    name: str
    tex: str
    paragraphs: tuple[str, ...]
    style_files: tuple[Path, ...] = ()

    def compile(self, folder: Path, pdfs: CompiledPdfs | None = None) -> Path:
        """The PDF, compiled with labtui's own LaTeX compile (latexmk and BibTeX); from
        ``pdfs``, the session's compiled fixtures, when given."""
        latex = folder / self.name
        latex.mkdir(parents=True, exist_ok=True)
        (latex / "paper.tex").write_text(self.tex)
        for style_file in self.style_files:
            shutil.copyfile(style_file, latex / style_file.name)
        pdf = folder / f"{self.name}.pdf"
        compile_pdf = compile_latex if pdfs is None else pdfs.compile
        outcome = compile_pdf(latex / "paper.tex", pdf, timeout_s=300)
        if not outcome.ok:
            raise RuntimeError(f"{self.name} did not compile:\n{outcome.log_tail}")
        return pdf


def sentence(rng: random.Random) -> str:
    words = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)}"
    if rng.random() < 0.3:
        words = f"{rng.choice(OPENERS)}, {words}"
    return words[0].upper() + words[1:] + "."


def with_prose(
    name: str, template: str, seed: int, style_files: tuple[Path, ...] = ()
) -> StyledPaper:
    """``template`` with each ``<<n>>`` replaced by a paragraph of n generated sentences."""
    rng = random.Random(seed)
    paragraphs: list[str] = []

    def paragraph(match: re.Match[str]) -> str:
        paragraphs.append(" ".join(sentence(rng) for _ in range(int(match.group(1)))))
        return paragraphs[-1]

    return StyledPaper(name, PROSE.sub(paragraph, template), tuple(paragraphs), style_files)


BIB = r"""
@inproceedings{kingma2015adam,
  title     = {Adam: A Method for Stochastic Optimization},
  author    = {Kingma, Diederik P. and Ba, Jimmy},
  booktitle = {International Conference on Learning Representations},
  year      = {2015}
}
@article{srivastava2014dropout,
  title   = {Dropout: A Simple Way to Prevent Neural Networks from Overfitting},
  author  = {Srivastava, Nitish and Hinton, Geoffrey and Krizhevsky, Alex and Sutskever, Ilya and Salakhutdinov, Ruslan},
  journal = {Journal of Machine Learning Research},
  volume  = {15},
  pages   = {1929--1958},
  year    = {2014}
}
@inproceedings{he2016deep,
  title     = {Deep Residual Learning for Image Recognition},
  author    = {He, Kaiming and Zhang, Xiangyu and Ren, Shaoqing and Sun, Jian},
  booktitle = {Conference on Computer Vision and Pattern Recognition},
  pages     = {770--778},
  year      = {2016}
}
@inproceedings{ioffe2015batch,
  title     = {Batch Normalization: Accelerating Deep Network Training by Reducing Internal Covariate Shift},
  author    = {Ioffe, Sergey and Szegedy, Christian},
  booktitle = {International Conference on Machine Learning},
  pages     = {448--456},
  year      = {2015}
}
@inproceedings{vaswani2017attention,
  title     = {Attention Is All You Need},
  author    = {Vaswani, Ashish and Shazeer, Noam and Parmar, Niki and Uszkoreit, Jakob and Jones, Llion and Gomez, Aidan N. and Kaiser, Lukasz and Polosukhin, Illia},
  booktitle = {Advances in Neural Information Processing Systems},
  year      = {2017}
}
@inproceedings{zhang2017understanding,
  title     = {Understanding Deep Learning Requires Rethinking Generalization},
  author    = {Zhang, Chiyuan and Bengio, Samy and Hardt, Moritz and Recht, Benjamin and Vinyals, Oriol},
  booktitle = {International Conference on Learning Representations},
  year      = {2017}
}
@inproceedings{loshchilov2019decoupled,
  title     = {Decoupled Weight Decay Regularization},
  author    = {Loshchilov, Ilya and Hutter, Frank},
  booktitle = {International Conference on Learning Representations},
  year      = {2019}
}
"""

CITATIONS = (
    r"We compare with Adam \citep{kingma2015adam}, dropout \citep{srivastava2014dropout}, "
    r"residual networks \citep{he2016deep}, batch normalisation \citep{ioffe2015batch}, "
    r"attention \citep{vaswani2017attention} and decoupled weight decay "
    r"\citep{loshchilov2019decoupled}, following \citet{zhang2017understanding}."
)


def _source(preamble: str, body: str) -> str:
    return "\\begin{filecontents}{references.bib}" + BIB + "\\end{filecontents}\n" + preamble + body


SECTION_MACROS = r"""
\makeatletter
\renewcommand\section{\@startsection{section}{1}{\z@}{-2.0ex plus -0.5ex minus -.2ex}%
  {1.5ex plus 0.3ex minus .2ex}{%SECTION%}}
\renewcommand\subsection{\@startsection{subsection}{2}{\z@}{-1.8ex plus -0.5ex minus -.2ex}%
  {0.8ex plus .2ex}{%SUBSECTION%}}
\renewcommand\subsubsection{\@startsection{subsubsection}{3}{\z@}{-1.5ex plus -0.5ex minus -.2ex}%
  {0.5ex plus .2ex}{\normalsize\bfseries\raggedright}}
\makeatother
"""


def section_macros(section: str, subsection: str) -> str:
    return SECTION_MACROS.replace("%SECTION%", section).replace("%SUBSECTION%", subsection)


# --------------------------------------------------------------------------------------------
# ICLR-like
# --------------------------------------------------------------------------------------------

ICLR_PREAMBLE = (
    r"""
\documentclass{article}
\usepackage{times}
\usepackage[letterpaper,textwidth=5.5in,textheight=9in,top=1in,headsep=0.25in]{geometry}
\usepackage{fancyhdr}
\usepackage{lineno}
\usepackage{natbib}
\usepackage{amsmath}
\usepackage{booktabs}
"""
    # section headings: bold, at body size, set in capitals by the style (\MakeUppercase takes
    # the number and the name as its argument)
    + section_macros(r"\normalsize\bfseries\raggedright\MakeUppercase", r"\normalsize\bfseries")
    + r"""
\makeatletter
\renewcommand\@maketitle{\vbox{\hsize\textwidth\raggedright
  {\LARGE\scshape \@title\par}\vskip 0.3in
  {\bfseries Anonymous authors}\par Paper under double-blind review\par}\vskip 0.3in}
\renewenvironment{abstract}{\vskip .075in\centerline{\large\scshape Abstract}\vspace{0.5ex}%
  \begin{quote}}{\par\end{quote}\vskip 1ex}
\makeatother
\pagestyle{fancy}
\fancyhf{}
\fancyhead[L]{Under review as a conference paper at ICLR 2026}
\fancyfoot[C]{\thepage}
\renewcommand{\headrulewidth}{0pt}
\title{Counterintuitive Regularisation of Overparameterised Networks}
"""
)

ICLR_BODY = (
    r"""
\begin{document}
\maketitle
\thispagestyle{fancy}
\linenumbers
\begin{abstract}
<<5>>
\end{abstract}

\section{Introduction}
<<7>>

<<6>>

<<5>>

\section{Related Work}
<<6>>
"""
    + CITATIONS
    + r"""

<<6>>

\section{Method}
<<4>>

\subsection{Setup}
<<6>>

<<5>>

\subsection{Objective}
<<3>>
\begin{equation}
  \mathcal{L}(\theta) = \frac{1}{n} \sum_{i=1}^{n} \ell\big(f_\theta(x_i), y_i\big)
    + \lambda \lVert \theta \rVert_2^2
\end{equation}
<<4>>

\section{Experiments}
<<3>>

\subsection{Datasets}
<<6>>

\subsection{Results}
<<5>>
\begin{table}[t]
\centering
\caption{Test accuracy after training, mean over five seeds.}
\begin{tabular}{lcc}
\toprule
Method & Accuracy & Loss \\
\midrule
Baseline & 0.85 & 0.40 \\
Weight decay & 0.88 & 0.33 \\
Ours & 0.93 & 0.21 \\
\bottomrule
\end{tabular}
\end{table}
<<6>>

<<5>>

\section{Conclusion}
<<5>>

\bibliographystyle{plainnat}
\bibliography{references}

\appendix
\section{Proofs}
<<5>>

\subsection{Proof of the First Lemma}
<<6>>

\section{Additional Results}
<<6>>
\end{document}
"""
)


def iclr_like() -> StyledPaper:
    return with_prose("iclr", _source(ICLR_PREAMBLE, ICLR_BODY), seed=1)


# --------------------------------------------------------------------------------------------
# NeurIPS-like
# --------------------------------------------------------------------------------------------

NEURIPS_PREAMBLE = (
    r"""
\documentclass{article}
\usepackage{times}
\usepackage[letterpaper,textwidth=5.5in,textheight=9in,top=1in]{geometry}
\usepackage{fancyhdr}
\usepackage{lineno}
\usepackage{natbib}
\usepackage{amsmath}
\usepackage{amssymb}
\usepackage{booktabs}
\usepackage{tikz}
"""
    + section_macros(r"\large\bfseries\raggedright", r"\normalsize\bfseries\raggedright")
    + r"""
\makeatletter
\renewcommand\paragraph{\@startsection{paragraph}{4}{\z@}{1.5ex plus 0.5ex minus .2ex}%
  {-1em}{\normalsize\bfseries}}
\renewcommand\@maketitle{\vbox{\hsize\textwidth\centering
  \hrule height 4pt\vskip 0.25in{\LARGE\bfseries \@title\par}\vskip 0.25in\hrule height 1pt
  \vskip 0.3in{\bfseries Anonymous Author(s)}\par Affiliation\par Address\par
  \texttt{email}\par}\vskip 0.3in}
\makeatother
\pagestyle{fancy}
\fancyhf{}
\fancyfoot[C]{\thepage}
\renewcommand{\headrulewidth}{0pt}
\title{Sharpness-Aware Warmup for Small Transformers}
"""
)

NEURIPS_BODY = (
    r"""
\begin{document}
\maketitle
\thispagestyle{fancy}
\linenumbers
\begin{abstract}
<<6>>
\end{abstract}

\section{Introduction}
<<8>>

<<7>>

<<8>>

<<6>>

\section{Background}
<<5>>

\subsection{Warmup Schedules}
<<8>>

<<7>>

\subsection{Sharpness}
<<7>>
"""
    + CITATIONS
    + r"""

<<8>>

\section{Method}
<<6>>

\subsection{The Warmup Objective}
<<5>>
\begin{equation}
  \mathrm{Accuracy} = \frac{\mathrm{correct\ predictions}}{\mathrm{all\ predictions}}
  \qquad \mathcal{L}(\theta) = \mathbb{E}_{(x, y)} \big[\ell(f_\theta(x), y)\big]
\end{equation}
<<7>>

<<8>>

\subsection{Scaling the Step}
<<6>>

\subsubsection{Ablation of the Penalty}
<<8>>

<<7>>

\section{Experiments}
<<5>>

\subsection{Setup}
\begin{figure}[t]
\centering
\begin{tikzpicture}[box/.style={draw, minimum width=2.4cm, minimum height=0.9cm}]
  \node[box] (enc) at (0, 0) {\textbf{Encoder}};
  \node[box] (dec) at (4, 0) {\textbf{Decoder}};
  \node[box] (loss) at (8, 0) {\textbf{Loss}};
  \draw[->] (enc) -- (dec);
  \draw[->] (dec) -- (loss);
  \node at (4, -1.2) {Warmup};
\end{tikzpicture}
\caption{Overview of the method: the encoder and decoder are trained with a sharpness-aware
warmup.}
\end{figure}
\paragraph{Datasets.} <<6>>

\paragraph{Implementation details} <<7>>

<<8>>

\subsection{Results}
<<6>>
\begin{table}[h]
\centering
\caption{Validation perplexity of small transformers (lower is better).}
\begin{tabular}{lccc}
\toprule
Method & 2 layers & 4 layers & 8 layers \\
\midrule
Linear warmup & 31.2 & 27.5 & 25.1 \\
No warmup & 35.8 & 33.0 & 40.2 \\
Ours & 29.4 & 25.9 & 23.7 \\
\bottomrule
\end{tabular}
\end{table}
<<8>>

<<7>>

<<8>>

\section{Analysis}
<<6>>

\subsection{Sensitivity to the Batch Size}
<<8>>

<<8>>

<<7>>

\subsection{Sensitivity to the Depth}
<<8>>

<<8>>

<<7>>

% a subsection name long enough to wrap onto a second line
\subsection{Where the Warmup Helps Most: Small Batches, Deep Stacks, Noisy Labels and Other Hard Regimes of Training}
<<8>>

<<7>>

<<8>>

<<8>>

\section{Discussion}
<<8>>

<<7>>

<<8>>

\section{Limitations and Future Work}
<<8>>

<<8>>

<<7>>

\section{Conclusion}
<<7>>

<<6>>

\small
\bibliographystyle{plainnat}
\bibliography{references}
\normalsize

\appendix
\section{Proofs}
<<8>>

<<7>>

\subsection{Proof of the Main Theorem}
<<8>>

<<8>>

<<7>>

<<8>>

\subsection{Proof of the Corollary}
<<8>>

<<7>>

\section{Experimental Details}
<<8>>

\subsection{Hyperparameters}
<<8>>

<<8>>

\newpage
% the checklist NeurIPS asks for: numbered bold items, more of them than sections
\section*{NeurIPS Paper Checklist}
\begin{enumerate}
\item {\bf Claims}
\item[] Question: <<2>>
\item[] Answer: [Yes]
\item[] Justification: <<2>>
\item {\bf Limitations}
\item[] Question: <<2>>
\item[] Answer: [Yes]
\item[] Justification: <<2>>
\item {\bf Theory assumptions and proofs}
\item[] Question: <<2>>
\item[] Answer: [Yes]
\item[] Justification: <<2>>
\item {\bf Experimental result reproducibility}
\item[] Question: <<2>>
\item[] Answer: [Yes]
\item[] Justification: <<2>>
\item {\bf Open access to data and code}
\item[] Question: <<2>>
\item[] Answer: [Yes]
\item[] Justification: <<2>>
\item {\bf Experimental setting/details}
\item[] Question: <<2>>
\item[] Answer: [Yes]
\item[] Justification: <<2>>
\item {\bf Experiment statistical significance}
\item[] Question: <<2>>
\item[] Answer: [Yes]
\item[] Justification: <<2>>
\item {\bf Compute resources}
\item[] Question: <<2>>
\item[] Answer: [Yes]
\item[] Justification: <<2>>
\item {\bf Code of ethics}
\item[] Question: <<2>>
\item[] Answer: [Yes]
\item[] Justification: <<2>>
\end{enumerate}
\end{document}
"""
)


def neurips_like() -> StyledPaper:
    return with_prose("neurips", _source(NEURIPS_PREAMBLE, NEURIPS_BODY), seed=2)


# --------------------------------------------------------------------------------------------
# Two-column ICML/ACL-like
# --------------------------------------------------------------------------------------------

TWO_COLUMN_PREAMBLE = (
    r"""
\documentclass[10pt,twocolumn]{article}
\usepackage{times}
\usepackage[letterpaper,margin=0.75in,columnsep=0.25in]{geometry}
\usepackage{fancyhdr}
% switch: the right column's numbers in the right margin, as ACL's and ICML's rulers
\usepackage[switch]{lineno}
\usepackage{natbib}
\usepackage{amsmath}
\usepackage{booktabs}
"""
    + section_macros(r"\normalsize\scshape\raggedright", r"\normalsize\bfseries\raggedright")
    + r"""
\makeatletter
% ICML numbers headings "1.", "2.1."
\renewcommand\@seccntformat[1]{\csname the#1\endcsname.\quad}
\renewenvironment{abstract}{\centerline{\large\bfseries Abstract}\vspace{0.5ex}%
  \begin{quote}}{\par\end{quote}}
\makeatother
\pagestyle{fancy}
\fancyhf{}
\fancyhead[C]{\small Sparse Attention Without Tears}
\fancyfoot[C]{\thepage}
"""
)

TWO_COLUMN_BODY = (
    r"""
\begin{document}
\twocolumn[
\begin{center}
{\Large\bfseries Sparse Attention Without Tears\par}
\vskip 0.2in
{\bfseries Anonymous Authors}\par
Anonymous Institution\par
\vskip 0.25in
\end{center}
]
\thispagestyle{empty}
\linenumbers
\begin{abstract}
<<5>>
\end{abstract}

\section{Introduction}
<<8>>

<<7>>

<<8>>

\section{Related Work}
<<7>>
"""
    + CITATIONS
    + r"""

<<8>>

\section{Method}
<<5>>

\subsection{Sparse Patterns}
<<8>>

<<7>>

\subsection{Training}
<<7>>
\begin{table}[h]
\centering
\caption{Speed and accuracy of attention patterns.}
\begin{tabular}{lcc}
\toprule
Pattern & Speed & Acc \\
\midrule
Dense & 1.0 & 81.2 \\
Local & 2.3 & 79.8 \\
Ours & 2.1 & 81.0 \\
\bottomrule
\end{tabular}
\end{table}
<<8>>

\section{Experiments}
<<8>>
\begin{table*}[t]
\centering
\caption{Accuracy on six benchmarks: a table as wide as the page.}
\begin{tabular}{lcccccc}
\toprule
Method & CIFAR & SVHN & MNIST & STL & Tiny & Cars \\
\midrule
Dense & 71.2 & 88.1 & 98.9 & 60.1 & 40.2 & 80.0 \\
Local & 70.4 & 87.5 & 98.8 & 59.0 & 39.9 & 79.1 \\
Ours & 74.9 & 90.2 & 99.1 & 63.3 & 44.0 & 83.1 \\
\bottomrule
\end{tabular}
\end{table*}

<<7>>

\subsection{Results}
<<8>>

<<8>>

<<7>>

\section{Conclusion}
<<7>>

<<6>>

\bibliographystyle{plainnat}
\bibliography{references}
\end{document}
"""
)


def two_column_like() -> StyledPaper:
    return with_prose("twocolumn", _source(TWO_COLUMN_PREAMBLE, TWO_COLUMN_BODY), seed=3)


# --------------------------------------------------------------------------------------------
# Many tables
# --------------------------------------------------------------------------------------------

TABLES_PREAMBLE = r"""
\documentclass{article}
\usepackage[margin=1in]{geometry}
\usepackage{natbib}
\usepackage{booktabs}
\title{How Many Seeds Does a Benchmark Need?}
\author{Grace Hopper \and Alan Turing}
\date{}
"""


def results_table(
    caption: str, rows: list[str], *, placement: str = "h", above: bool = True
) -> str:
    """A booktabs table with a bold header, bold group rows and numeric cells."""
    cap = f"\\caption{{{caption}}}\n"
    return (
        f"\\begin{{table}}[{placement}]\n\\centering\n"
        + (cap if above else "")
        + "\\begin{tabular}{lccc}\n\\toprule\n"
        + r"\textbf{Method} & \textbf{CIFAR} & \textbf{SVHN} & \textbf{MNIST} \\"
        + "\n\\midrule\n"
        + "\n".join(rows)
        + "\n\\bottomrule\n\\end{tabular}\n"
        + ("" if above else cap)
        + "\\end{table}\n"
    )


GROUPED_ROWS = [
    r"\multicolumn{4}{l}{\textbf{Baselines}} \\",
    r"Baseline & 71.2 & 88.1 & 98.9 \\",
    r"Linear & 65.0 & 80.3 & 97.2 \\",
    r"\multicolumn{4}{l}{\textbf{Ours}} \\",
    r"Ours & 74.9 & 90.2 & 99.1 \\",
    r"Ours + tuning & 75.3 & 90.8 & 99.2 \\",
]
PLAIN_ROWS = [
    r"Baseline & 0.12 & 0.30 & 0.05 \\",
    r"Ours & 0.08 & 0.21 & 0.03 \\",
]
SEED_ROWS = [
    f"{seed} & {70 + seed * 0.7:.1f} & {85 + seed * 0.5:.1f} & 98.{seed} \\\\"
    for seed in range(1, 6)
]

TABLES_BODY = (
    r"""
\begin{document}
\maketitle
\begin{abstract}
<<5>>
\end{abstract}

\section{Introduction}
<<7>>

<<6>>

\section{Setup}
<<4>>

\subsection{Benchmarks}
<<6>>
"""
    + results_table("Benchmarks and their sizes.", PLAIN_ROWS)
    + r"""
<<5>>

\subsection{Protocol}
<<6>>

\section{Results}
"""
    + results_table("Accuracy (\\%) of each method, mean of five seeds.", GROUPED_ROWS)
    + r"""
<<6>>

\subsection{Main Results}
<<5>>
"""
    + results_table("Standard deviation over seeds.", PLAIN_ROWS, above=False)
    + r"""
<<6>>

\subsection{Ablations}
<<4>>

\subsubsection{Penalty Strength}
<<5>>
"""
    + results_table("Ablation of the penalty strength.", GROUPED_ROWS)
    + r"""
<<6>>
"""
    + results_table("Per-seed accuracy of our method.", SEED_ROWS, above=False)
    + r"""
\section{Analysis}
<<7>>

<<6>>

\section{Conclusion}
<<5>>

\section*{Limitations}
<<4>>

\section*{Acknowledgments}
<<3>>

"""
    + CITATIONS
    + r"""

\bibliographystyle{plainnat}
\bibliography{references}

\appendix
\makeatletter
\renewcommand\thesection{Appendix \Alph{section}:}
\renewcommand\thesubsection{\Alph{section}.\arabic{subsection}}
\makeatother
\section{Additional Tables}
<<5>>
"""
    + results_table("Accuracy with a larger budget.", GROUPED_ROWS)
    + r"""
\subsection{Per-Seed Results}
<<5>>
"""
    + results_table("Per-seed accuracy of the baseline.", SEED_ROWS)
    + r"""
\end{document}
"""
)


def many_tables() -> StyledPaper:
    return with_prose("tables", _source(TABLES_PREAMBLE, TABLES_BODY), seed=4)


def ai_scientist() -> StyledPaper:
    body = AI_SCIENTIST_BODY.replace("%CITATIONS%", CITATIONS)
    source = _source(AI_SCIENTIST_PREAMBLE, body)
    return with_prose("iclr2024", source, seed=5, style_files=ICLR2024_FILES)


def all_styles() -> list[StyledPaper]:
    return [iclr_like(), neurips_like(), two_column_like(), many_tables(), ai_scientist()]
