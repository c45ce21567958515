"""``labtui review``: one command, four uses, none needing a project.

- ``labtui review PAPER.pdf`` reviews the paper and prints the review with a line on how far this
  reviewer is to be trusted (its calibration, or that it has none);
- ``--outline`` prints what the reviewer reads of the paper's structure, asking no model;
- ``--calibrate DIR`` measures the reviewer on a benchmark of human-reviewed papers
  (``calibrate.py``);
- ``--probe`` reviews the paper beside a copy with impossible results (``probe.py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_OK, Subparsers, count_of

NAME = "review"
BUDGETS_USD = {"review": 1.0, "probe": 2.0, "calibrate": 10.0}
SAMPLE_PAPERS, SAMPLE_SEED = 100, 1  # --n and --seed when not given
CALIBRATE_ONLY = ("n", "seed", "skip_missing", "name", "out")


def add_parser(subparsers: Subparsers) -> None:
    review = subparsers.add_parser(
        NAME,
        help="review any PDF on the NeurIPS form (no project needed); --outline shows what the "
        "reviewer reads, --calibrate DIR measures the reviewer, --probe tests it",
    )
    review.add_argument("pdf", nargs="?", default=None, help="the paper")
    review.add_argument(
        "--outline", action="store_true",
        help="print the outline the reviewer reads (title, headings with level and page); "
        "no model is asked",
    )  # fmt: skip
    review.add_argument(
        "--calibrate", type=Path, default=None, metavar="DIR",
        help="review a sample of a benchmark of human-reviewed papers (The AI Scientist's "
        "ratings TSV, or labtui's benchmark.csv) and measure this reviewer against the human "
        "decisions",
    )  # fmt: skip
    review.add_argument(
        "--n", type=_papers, default=None, metavar="N",
        help="with --calibrate: papers in the seeded sample (default 100)",
    )  # fmt: skip
    review.add_argument(
        "--seed", type=int, default=None, help="with --calibrate: the sample's seed (default 1)"
    )
    review.add_argument(
        "--skip-missing", action="store_true",
        help="with --calibrate: leave out rows whose paper is missing (counted, not an error)",
    )  # fmt: skip
    review.add_argument(
        "--name", default=None,
        help="with --calibrate: the benchmark's name (default: the venue its rows name, else "
        "DIR's name)",
    )  # fmt: skip
    review.add_argument(
        "--out", type=Path, default=None, metavar="FILE",
        help="with --calibrate: where calibration.json goes (default: DIR/calibration.json)",
    )  # fmt: skip
    review.add_argument(
        "--probe", action="store_true",
        help="review the paper and a copy with its results table altered to impossible "
        "values, and say whether the reviewer noticed",
    )  # fmt: skip
    review.add_argument("--model", default="", help="reviewer model (default: $LABTUI_MODEL)")
    review.add_argument(
        "--json", action="store_true",
        help="print the result as JSON (the review, the outline, the calibration or the probe)",
    )  # fmt: skip
    review.add_argument(
        "--ensemble",
        type=_reviewers,
        default=None,
        metavar="E",
        help="E reviewers at a sampling temperature, then an Area Chair's meta-review "
        "(default 3, as [review] ensemble)",
    )
    review.add_argument(
        "--reflections",
        type=_rounds,
        default=None,
        metavar="R",
        help="rounds in which each reviewer reconsiders its review (default 2)",
    )
    review.add_argument(
        "--few-shot",
        type=_rounds,
        default=None,
        metavar="N",
        help="example papers with their reviews shown to each reviewer (default 1; 0: none)",
    )
    review.add_argument(
        "--threshold",
        type=_overall,
        default=None,
        metavar="T",
        help="Accept when the reviewers' mean Overall reaches T (default 6; 0: the Area Chair's)",
    )
    review.add_argument(
        "--budget", type=float, default=None,
        help="US dollars it may spend (default 1 for a review, 2 for a probe, 10 for a "
        "calibration, which continues from its cache when run again)",
    )  # fmt: skip


_reviewers = count_of("reviewers", "E")
_rounds = count_of("rounds or examples", "the value", least=0)
_papers = count_of("papers", "N")


def _overall(text: str) -> float:
    """An argparse type: a score on the 1-10 Overall scale, or 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 10:
        raise argparse.ArgumentTypeError(
            f"T is an Overall score from 1 to 10 (or 0: the Area Chair decides), not {text!r}"
        )
    return value


def run(args: argparse.Namespace) -> int:
    """The use the arguments ask for, with its default budget unless --budget is given."""
    mode = _mode(args)
    budget = args.budget if args.budget is not None else BUDGETS_USD.get(mode, 0.0)
    overrides = {
        "ensemble": args.ensemble,
        "reflections": args.reflections,
        "few_shot": args.few_shot,
        "threshold": args.threshold,
    }
    if mode == "calibrate":
        from .calibrate import cmd_calibrate

        return cmd_calibrate(
            args.calibrate,
            model=args.model,
            budget=budget,
            n=SAMPLE_PAPERS if args.n is None else args.n,
            seed=SAMPLE_SEED if args.seed is None else args.seed,
            skip_missing=args.skip_missing,
            name=args.name or "",
            out=args.out,
            as_json=args.json,
            overrides=overrides,
            project=_project(Path(args.directory)),
        )
    paper = Path(args.pdf)
    if mode == "outline":
        return cmd_outline(paper, as_json=args.json)
    if mode == "probe":
        from .probe import cmd_probe

        return cmd_probe(
            paper, model=args.model, budget=budget, overrides=overrides, as_json=args.json
        )
    return cmd_review(
        paper, model=args.model, as_json=args.json, budget=budget, overrides=overrides
    )


def _mode(args: argparse.Namespace) -> str:
    """Which use the arguments ask for; LabtuiError for a combination that means nothing."""
    from labtui.core.errors import LabtuiError

    asked = [flag for flag in ("outline", "probe") if getattr(args, flag)]
    if args.calibrate is not None:
        asked.append("calibrate")
    if len(asked) > 1:
        flags = " and ".join(f"--{flag}" for flag in asked)
        raise LabtuiError(f"{flags} cannot be combined", "run labtui review once for each")
    mode = asked[0] if asked else "review"
    if mode == "calibrate" and args.pdf is not None:
        raise LabtuiError(
            f"--calibrate reviews the benchmark's papers, not {args.pdf}",
            f"run labtui review --calibrate {args.calibrate} alone",
        )
    if mode != "calibrate" and args.pdf is None:
        raise LabtuiError(
            "no paper given", "labtui review PAPER.pdf, or labtui review --calibrate DIR"
        )
    # the calibration's options have no default of their own: given means not None (or set)
    given = [
        f"--{name.replace('_', '-')}"
        for name in CALIBRATE_ONLY
        if getattr(args, name) not in (None, False)
    ]
    if mode != "calibrate" and given:
        verb = "applies" if len(given) == 1 else "apply"
        raise LabtuiError(f"{', '.join(given)} {verb} only to --calibrate", "leave it out")
    return mode


def _project(directory: Path) -> Path | None:
    """The project whose reviewer a calibration measures: -C DIR (or .) when it is one."""
    return directory if (directory / "labtui.toml").is_file() else None


def cmd_review(
    pdf: Path, *, model: str, as_json: bool, budget: float, overrides: dict | None = None
) -> int:
    """Review one PDF and print the review (rich, or JSON) with this reviewer's calibration;
    nothing is written anywhere. ``overrides``: [review] settings given on the command line
    (None: the default)."""
    import json  # ~1.5 ms that `labtui --help` would pay

    from labtui.core.pdf.document import page_count
    from labtui.core.review.calibration_store import find_calibration, trust_in
    from labtui.core.review.facts import capped_panel, text_facts
    from labtui.core.review.record import ReviewRecord
    from labtui.core.review.reviewer import read_paper, review_panel, reviewer_facts
    from labtui.core.settings.prompts import load_prompt

    from ..review_session import progress, review_settings, reviewer_llm, who_reviews

    settings = review_settings(overrides)
    paper = read_paper(pdf)  # before any model call: a bad PDF costs nothing
    sheet = text_facts(paper, page_count(pdf))  # what code sees without the paper's runs
    llm = reviewer_llm(model, budget)
    progress(
        f"reviewing {pdf.name} ({len(paper):,} characters): "
        f"{who_reviews(settings)}, {llm.spec.name}"
    )
    reviewed = capped_panel(
        review_panel(llm, load_prompt, paper, settings, notes=sheet.text(), progress=progress),
        sheet,
    )
    facts = reviewer_facts(llm.spec.name, settings)
    calibration = find_calibration(facts)
    if as_json:
        record = ReviewRecord.of(reviewed, reviewer=facts).to_json()
        print(json.dumps({**record, "calibration": calibration}, indent=2))
        return EXIT_OK
    from ..review_view import print_review

    print_review(reviewed.panel, title=pdf.name, trust=trust_in(calibration))
    for change in reviewed.capped:
        print(change.said)
    return EXIT_OK


def cmd_outline(pdf: Path, *, as_json: bool) -> int:
    """The outline the reviewer reads: title, headings with their level and page."""
    import json

    from labtui.core.pdf.outline import outline_of, outline_text

    outline = outline_of(pdf)
    if as_json:
        print(json.dumps(outline.to_json(), indent=2))
    else:
        print(outline_text(outline), end="")
    return EXIT_OK
