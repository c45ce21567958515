"""A search's ledger as the paper's last appendix: a long table that labtui writes from the ledger
(core/search/ledger.py), never a model. Every number in it is a run's own, which
core/provenance/record.py traces to the ledger's runs; each description is wrapped in ``\\labtuistep``,
which provenance reads as a name, not a result. Written again, the appendix replaces itself.
"""

from __future__ import annotations

from ..search.ledger import SearchLedger

APPENDIX_BEGIN = "% labtui: the search ledger (written from the ledger; do not edit)"


APPENDIX_END = "% labtui: end of the search ledger"


DESCRIPTION_COMMAND = "labtuistep"  # a step's description: a name, not a result (provenance)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": "(",
    "}": ")",
    "~": r"\textasciitilde{}",
    "^": r"\^{}",
    # characters pdflatex's utf8 input does not know: what code writes must compile
    "−": "-",
    "→": r"$\rightarrow$",
    "±": r"$\pm$",
    "×": r"$\times$",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
}


def latex_escaped(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in " ".join(text.split()))


def appendix_latex(ledger: SearchLedger, baseline: float) -> str:
    """The ledger as a LaTeX appendix: a long table of every run the search made, its status,
    its metric and what it changed. Its numbers are the runs' own (core/provenance/record.py traces
    them to the ledger); each description is wrapped in \\labtuistep, a name, not a result."""
    noise = ledger.noise()
    steps = ledger.steps()
    final = ledger.final()
    tree = ledger.strategy == "tree"
    metric = latex_escaped(ledger.metric)
    what = "node of the tree search" if tree else "attempt of the hill-climb"
    blank = "--" if tree else None
    rows = []
    for seed, value in enumerate(noise.values if noise else [baseline]):
        label = r"run\_0" + (f", seed {seed}" if seed else "")
        rows.append(_tex_row(label, "baseline", value, "the code the search started from", blank))
    for step in steps:
        action = f"{step.action} node {step.parent}" if step.parent else step.action
        rows.append(
            _tex_row(
                rf"run\_{step.step}",
                step.status,
                step.value,
                step.description,
                action if tree else None,
            )
        )
    for name, values in final.seeds.items() if final is not None else ():
        for seed, value in enumerate(values, 1):
            label = rf"run\_{name}, seed {seed}"
            rows.append(_tex_row(label, "seed", value, "its code with another seed", blank))
    columns = "@{}lllrp{\\labtuisteps}@{}" if tree else "@{}llrp{\\labtuisteps}@{}"
    header = ("Run & Action & Status & " if tree else "Run & Status & ") + "Value & Change \\\\"
    return "\n".join(
        [
            APPENDIX_BEGIN,
            f"\\providecommand{{\\{DESCRIPTION_COMMAND}}}[1]{{#1}}",
            # the width of the descriptions' column, outside the table (whose numbers are read)
            f"\\providecommand{{\\labtuisteps}}{{{0.36 if tree else 0.52}\\linewidth}}",
            "\\section{The search ledger}",
            f"Every {what} on {metric}, in order: the baseline's runs with other seeds first, "
            "then each step, then the best code's runs with fresh seeds; Value is the metric. "
            f"labtui wrote this table from {latex_escaped(ledger.relative)}/results.tsv.",
            "\\begingroup\\small\\setlength{\\tabcolsep}{4pt}",
            f"\\begin{{longtable}}{{{columns}}}",
            "\\hline",
            header,
            "\\hline",
            "\\endhead",
            *rows,
            "\\hline",
            "\\end{longtable}",
            "\\endgroup",
            APPENDIX_END,
        ]
    )


def _tex_row(
    label: str, status: str, value: float | None, description: str, action: str | None
) -> str:
    shown = "--" if value is None else f"{value:.4f}"
    cells = [label, *([latex_escaped(action)] if action else []), status, shown]
    return " & ".join(cells) + f" & \\{DESCRIPTION_COMMAND}{{{latex_escaped(description)}}} \\\\"


def with_appendix(tex: str, appendix: str) -> str:
    """``tex`` with the ledger's appendix before ``\\end{document}`` (replacing one written
    before) and the longtable package loaded."""
    if APPENDIX_BEGIN in tex and APPENDIX_END in tex:
        before, _, rest = tex.partition(APPENDIX_BEGIN)
        tex = before.rstrip("\n") + "\n" + rest.partition(APPENDIX_END)[2].lstrip("\n")
    if "{longtable}" not in tex.partition("\\begin{document}")[0]:
        tex = tex.replace("\\begin{document}", "\\usepackage{longtable}\n\\begin{document}", 1)
    body, end, after = tex.rpartition("\\end{document}")
    if not end:
        return tex
    if "\\appendix" not in body:  # inside the block: written again, it is not doubled
        appendix = appendix.replace(APPENDIX_BEGIN, f"{APPENDIX_BEGIN}\n\\appendix", 1)
    return f"{body.rstrip()}\n\n{appendix}\n\n{end}{after}"
