"""TEST-ONLY scripted research for the moons template: what the scripted LLM server answers, stage
by stage, in an end-to-end run. Never used by the product.

Each answer is a function of the request and of the project on disk, the way a real model's answer
depends on what it is shown: the coder's replies are real aider edits (the `whole` edit format) to
the files as they are now, and the write-up quotes the numbers the run actually produced.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

IDEA = {
    "Name": "wider_hidden_layer",
    "Title": "Does a Wider Hidden Layer Help on Noisy Two Moons?",
    "Hypothesis": "More hidden units fit the noisy boundary better without hurting test accuracy.",
    "Experiment": "Double HIDDEN_UNITS in experiment.py and compare test accuracy with the baseline.",
    "Interestingness": 4,
    "Feasibility": 9,
    "Novelty": 3,
}

# Written by hand. Every point names something each test paper has (two moons, the MLP, its
# width): the reviewer refuses points about nothing in the paper (core/review/grounding.py).
REVIEW = {
    "Summary": "The paper studies the width of a one-hidden-layer MLP on two moons.",
    "Strengths": ["A clear, reproducible setup on two moons", "Numbers traced to the moons runs"],
    "Weaknesses": ["A single toy data set: two moons", "Only one change of width on two moons"],
    "Originality": 1,
    "Quality": 2,
    "Clarity": 3,
    "Significance": 1,
    "Questions": ["How does the effect scale with noise?"],
    "Limitations": ["Toy scale"],
    "Ethical Concerns": False,
    "Soundness": 2,
    "Presentation": 3,
    "Contribution": 1,
    "Overall": 3,
    "Confidence": 4,
    "Decision": "Reject",
}

# What an improvement round changes in the conclusion (and what the reviewers then read).
ANSWERED = (
    "noise robustness is future work.",
    "noise robustness is future work. Limitations: a single toy data set and one change of width.",
)

MODELS = ("ideas", "novelty", "experiments", "plots", "writeup", "review")


def model_name(stage: str) -> str:
    """The litellm model string a test project uses for a stage."""
    return f"openai/scripted-{stage}"


def last_user_text(request: dict[str, Any]) -> str:
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content)
    return ""


def first_user_text(request: dict[str, Any]) -> str:
    """The request's first user message: for a re-asked answer, the original ask."""
    first = next((m for m in request.get("messages", []) if m.get("role") == "user"), {})
    return last_user_text({"messages": [first]})


def scripted_reviewer(request: dict[str, Any]) -> str:
    """TEST-ONLY reviewer (and Area Chair): REVIEW, content with it on reflection; a paper that
    states its limitations (ANSWERED) scores one point higher."""
    if last_user_text(request).startswith("Reflection round"):
        return json.dumps({"done": True})
    if ANSWERED[1] in json.dumps(request.get("messages", [])):
        return fenced_json({**REVIEW, "Overall": REVIEW["Overall"] + 1}, "My review:")
    return fenced_json(REVIEW, "My review:")


def whole_file_edit(path: str, content: str, why: str) -> str:
    """A reply in aider's `whole` edit format."""
    return f"{why}\n\n{path}\n```\n{content}```\n"


def fenced_json(data: Any, prose: str = "Here is my answer.") -> str:
    return f"{prose}\n\n```json\n{json.dumps(data, indent=1)}\n```\n"


def scripted_plan(prompt: str, *changes: str, measure: str = "test accuracy against run_0") -> str:
    """TEST-ONLY plan: one run per change, each judged by the first metric the plan prompt
    names (the baseline's), expected higher; no values, as a plan must."""
    named = re.search(r"baseline's metrics \(([^)]*)\)", prompt)
    metric = named.group(1).split(", ")[0] if named else "accuracy"
    runs = [
        {"change": change, "metrics": [{"metric": metric, "expect": "higher"}], "measure": measure}
        for change in changes
    ]
    return fenced_json({"runs": runs}, f"{len(runs)} run(s):")


class MoonsResearch:
    """The scripted answers for one project folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def install(self, server) -> None:
        for stage in MODELS:
            server.default(model_name(stage).removeprefix("openai/"), getattr(self, stage))

    # -- stages -----------------------------------------------------------------------------

    def ideas(self, request: dict[str, Any]) -> str:
        return self.answer_ideas(request, [IDEA])

    @staticmethod
    def answer_ideas(request: dict[str, Any], ideas: list[dict[str, Any]]) -> str:
        """Proposes ``ideas``; a reflection on one of them keeps it as it is and is done."""
        text = last_user_text(request)
        if text.startswith("Reflection round"):
            name = re.search(r'"Name": "([a-z0-9_]+)"', text).group(1)
            idea = next(i for i in ideas if i["Name"] == name)
            return fenced_json({"done": True, "idea": idea}, "Nothing to improve.")
        return fenced_json({"ideas": ideas}, "Focused ideas:")

    def novelty(self, request: dict[str, Any]) -> str:
        if "research librarian" in str(request["messages"][0].get("content")):
            return self.literature(request)
        text = last_user_text(request)
        if text.startswith("Results of the query"):
            seen = re.findall(r"arXiv:([0-9]{4}\.[0-9]{4,5}(?:v\d+)?)", text)
            closest = [
                {"arxiv_id": seen[0], "overlap": "regularises MLPs, but not width on two moons"}
            ]
            return json.dumps(
                {"decision": "novel", "reason": "no paper studies this", "closest": closest}
            )
        return json.dumps(
            {
                "decision": "search",
                "query": "hidden layer width MLP generalization",
                "reason": "look for width studies",
            }
        )

    @staticmethod
    def literature(request: dict[str, Any]) -> str:
        """The literature review (it uses the novelty model): search, then add each paper
        shown with a summary until the list is full, then sum up."""
        text = last_user_text(request)
        shown = text.split("Papers you have been shown:", 1)[1].split("\n", 1)[0]
        seen = re.findall(r"([0-9]{4}\.[0-9]{4,5}|S2:\w+) \(", shown)
        kept = re.findall(r"^- ([0-9]{4}\.[0-9]{4,5}|S2:\w+) ", text, re.MULTILINE)
        wanted = int(re.search(r"aim: (\d+) papers", text).group(1))
        fresh = [i for i in seen if i not in kept]
        if "This is your last step" in text or len(kept) >= wanted or (seen and not fresh):
            return json.dumps(
                {
                    "action": "done",
                    "summary": "Small MLPs on toy data are well studied; regularisation and "
                    "width effects on two moons are open.",
                }
            )
        if not fresh:
            return json.dumps({"action": "search", "query": "mlp classification two moons"})
        return json.dumps(
            {
                "action": "add",
                "arxiv_id": fresh[0],
                "summary": f"{fresh[0]} studies how small neural networks generalise; it "
                "matters here as a reference point for width and regularisation on toy data.",
            }
        )

    def experiments(self, request: dict[str, Any]) -> str:
        asks = [m.get("content") for m in request.get("messages", []) if m.get("role") == "user"]
        if any("has finished. What it changed" in str(text) for text in asks):
            return fenced_json(
                {
                    "analysis": "Doubling the hidden layer changes test accuracy only within "
                    "the seeds' standard errors.",
                    "next": "continue",
                    "why": "the planned runs test the trend further",
                }
            )
        plans = [str(text) for text in asks if str(text).startswith("Plan the experiment runs")]
        if plans:
            return scripted_plan(plans[0], "Double HIDDEN_UNITS")
        code = (self.root / "experiment.py").read_text(encoding="utf-8")
        width = int(re.search(r"^HIDDEN_UNITS = (\d+)", code, re.MULTILINE).group(1))
        code = re.sub(
            r"^HIDDEN_UNITS = \d+", f"HIDDEN_UNITS = {width * 2}", code, count=1, flags=re.MULTILINE
        )
        return whole_file_edit(
            "experiment.py", code, f"Double the hidden layer to {width * 2} units."
        )

    def plots(self, request: dict[str, Any]) -> str:
        if last_user_text(request).startswith("Describe each figure"):
            figures = sorted(p.name for p in self.root.glob("*.png"))
            return fenced_json(
                {
                    "figures": {
                        f: f"{f[:-4].replace('_', ' ')} per epoch, one curve per run"
                        for f in figures
                    }
                }
            )
        code = (self.root / "plot.py").read_text(encoding="utf-8")
        runs = sorted(p.parent.name for p in self.root.glob("run_*/final_info.json"))
        entries = "".join(
            f'    "{run}": "{"Baseline" if run == "run_0" else "Wider hidden layer (" + run + ")"}",\n'
            for run in runs
        )
        code = re.sub(
            r"labels = \{\n.*?\}", "labels = {\n" + entries + "}", code, count=1, flags=re.DOTALL
        )
        return whole_file_edit("plot.py", code, "Label every run.")

    def writeup(self, request: dict[str, Any]) -> str:
        text = last_user_text(request)
        if text.startswith("Citation round"):
            if not text.startswith("Citation round 1 "):
                return json.dumps({"done": True})
            where = "Introduction: Capacity and generalisation interact in small networks"
            query = "regularization generalization small networks"
            return json.dumps({"done": False, "where": where, "query": query})
        if text.startswith("The paper needs a citation here"):
            return json.dumps({"chosen": [0], "how": "at the end of the first sentence"})
        if "Add citations to latex/template.tex" in text:
            return self._cite(text)
        if text.startswith("Reviewers have reviewed this paper"):
            return self._answer_the_review()
        first = first_user_text(request)  # a re-ask's last message is the problem, not the ask
        if "Now write the " in first:
            return self.section_answer(first)
        return self._fill(request)

    def section_answer(self, text: str) -> str:
        """A section's JSON answer ([paper] writer = "sections"): the section the prompt names,
        from the runs. Written by hand (no model wrote these), like every reply in this file."""
        name = re.search(r"Now write the (.+?) of this paper:", text).group(1)
        texts = self.section_texts()
        if name == "title and abstract":
            return fenced_json({"title": IDEA["Title"], "abstract": texts["abstract"]})
        return fenced_json({"latex": texts[name]})

    def section_texts(self) -> dict[str, str]:
        """Each section's LaTeX body, with the numbers the runs produced (hand-written)."""
        acc, base = self._accuracy("run_1"), self._accuracy("run_0")
        return {
            "abstract": (
                "We ask whether doubling the hidden layer of a small multilayer perceptron helps "
                "on the noisy two-moons task, where capacity and generalisation pull against each "
                "other. We train the baseline and a wider network with three seeds each and "
                f"compare their test accuracy. The wider network reaches a mean test accuracy of "
                f"{acc:.3f} against {base:.3f} for the baseline."
            ),
            "introduction": (
                "Capacity and generalisation interact in small networks \\citep{kingma2015adam}. "
                "A wider hidden layer can fit a noisy decision boundary more closely, but it may "
                "also fit the noise. We study this trade-off on the two-moons task and report "
                "what a wider layer changes."
            ),
            "background": (
                "A multilayer perceptron with one hidden layer maps a point to class scores "
                "through a nonlinearity; it is trained by back-propagation of the cross-entropy "
                "loss. Test accuracy is the share of test points classified correctly."
            ),
            "method": (
                "We double the number of hidden units of the baseline network and keep "
                "everything else fixed: the data, the optimiser, the learning rate, the number of "
                "epochs and the seeds, so that any difference comes from the width alone. A "
                "wider layer gives the network more features to combine into its decision "
                "boundary."
            ),
            "experimental setup": (
                "Each configuration is trained with three seeds, Adam, 150 epochs and 200 "
                "training points drawn from the noisy two-moons distribution; the test set is "
                "drawn from the same distribution and is the same for every run."
            ),
            "results": (
                f"The wider network reaches a mean test accuracy of {acc:.3f} (baseline "
                f"{base:.3f}); Figure~\\ref{{fig:train_loss}} shows the training loss of both "
                "networks over the epochs, averaged over the seeds of each run."
            ),
            "conclusion": (
                "Doubling the hidden layer changed the test accuracy of a small network on noisy "
                "two moons only a little at this scale. Width matters little here; noise "
                "robustness is future work."
            ),
            "related work": (
                "Weight decay \\citep{loshchilov2019decoupled} and dropout "
                "\\citep{srivastava2014dropout} regularise such networks; both act on how "
                "closely a network of a given width fits its training data, which this paper "
                "varies through the width itself."
            ),
        }

    def _answer_the_review(self) -> str:
        """An improvement round: the review's weaknesses stated as limitations."""
        path = self.root / "latex" / "template.tex"
        tex = path.read_text(encoding="utf-8").replace(ANSWERED[0], ANSWERED[1], 1)
        return whole_file_edit("latex/template.tex", tex, "State the limitations.")

    def _cite(self, text: str) -> str:
        """aider's edit for a citation round: \\citep the new keys in the first sentence."""
        keys = re.search(r"which are now in the bibliography: ([^\n]+)", text).group(1).strip()
        path = self.root / "latex" / "template.tex"
        tex = path.read_text(encoding="utf-8")
        sentence = "Capacity and generalisation interact in small networks"
        tex = tex.replace(sentence, f"{sentence} \\citep{{{keys}}}", 1)
        return whole_file_edit("latex/template.tex", tex, f"Cite {keys}.")

    def _fill(self, request: dict[str, Any]) -> str:
        """A section (or the leftovers) the prompt names, filled from the runs; a reflection,
        a revision or the refinement pass leaves the paper as it is."""
        tex = (self.root / "latex" / "template.tex").read_text(encoding="utf-8")
        text = last_user_text(request)
        named = re.search(
            r"(?:Replace exactly these placeholders|still in latex/template.tex): ([A-Z ,]+)", text
        )
        if named is None:
            return whole_file_edit("latex/template.tex", tex, "Nothing to change.")
        wanted = {p.strip() for p in named.group(1).split(",") if p.strip()}
        texts = self.section_texts()
        fills = {
            "TITLE HERE": IDEA["Title"],
            "ABSTRACT HERE": texts["abstract"],
            "INTRO HERE": texts["introduction"],
            "RELATED WORK HERE": texts["related work"],
            "BACKGROUND HERE": texts["background"],
            "METHOD HERE": texts["method"],
            "EXPERIMENTAL SETUP HERE": texts["experimental setup"],
            # the template's example figure is the training loss; the accuracy's is added
            "RESULTS HERE": texts["results"] + " Figure~\\ref{fig:test_accuracy} shows the test "
            "accuracy.\n\\begin{figure}[t]\n\\centering\n\\includegraphics[width=0.7\\textwidth]"
            "{test_accuracy.png}\n\\caption{Test accuracy per epoch.}\n"
            "\\label{fig:test_accuracy}\n\\end{figure}",
            "PLEASE FILL IN CAPTION HERE": "Training loss of the baseline and the wider network.",
            "CONCLUSIONS HERE": texts["conclusion"],
        }
        for placeholder, filled in fills.items():
            if placeholder in wanted:
                tex = tex.replace(placeholder, filled)
        return whole_file_edit("latex/template.tex", tex, f"Filled {', '.join(sorted(wanted))}.")

    review = staticmethod(scripted_reviewer)

    def _accuracy(self, run_id: str) -> float:
        data = json.loads((self.root / run_id / "final_info.json").read_text(encoding="utf-8"))
        return float(data["moons"]["means"]["test_accuracy_mean"])
