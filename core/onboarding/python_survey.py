"""What a repository's Python code says, read by ``ast``: which files are scripts (argparse,
click, typer, Hydra, a plain ``__main__``, or a loop at the top level that trains: see
core/onboarding/training_loops.py) and their options, which repository files each one
imports, which result files its code names, the options that name an output folder or shorten a
run, and which code logs to TensorBoard or W&B.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Collection
from pathlib import Path, PurePosixPath

from ..source.files import normal_path
from ..source.python import PythonModule, decorators_of, is_main_guard, name_of, parse_module
from ..source.script_settings import module_constants
from .repo_facts import EntryPoint, NamedOption, Option, Tracker
from .result_files import RESULT_WORDS
from .script_options import OPTION_READERS, hydra_config, hydra_options
from .training_loops import trains_at_top_level

HYDRA_DIR = "hydra.run.dir"  # the Hydra override that places a run's outputs
MAX_CONSTANTS = 60  # a prompt's survey stays short; a script's settings come first


# -- scripts --------------------------------------------------------------------------------


def _packages(nodes: list[ast.AST]) -> set[str]:
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def _kind(module: PythonModule) -> str | None:
    """The script's kind, or None when the file is no script."""
    calls = {name_of(n) for n in module.nodes if isinstance(n, ast.Call)}
    decorators = {name_of(d) for n in module.nodes for d in decorators_of(n)}
    packages = _packages(module.nodes)
    if "hydra" in packages and decorators & {"hydra.main", "main"}:
        return "hydra"
    if "click" in packages and {d.split(".")[-1] for d in decorators} & {"command", "group"}:
        return "click"
    if calls & {"typer.Typer", "typer.run", "Typer"}:
        return "typer"
    if calls & {"argparse.ArgumentParser", "ArgumentParser"}:
        return "argparse"
    body = module.tree.body if module.tree else []
    plain = any(is_main_guard(n) for n in body) or trains_at_top_level(module)
    return "plain" if plain else None


def find_repo_imports(module: PythonModule, python: set[str]) -> list[str]:
    """The repository files a module imports: absolute imports from the repository's root, src/
    or the script's own folder (Python puts it on sys.path), relative ones from its package."""
    here = PurePosixPath(module.path).parent
    bases = [PurePosixPath("."), PurePosixPath("src"), here]
    found = []
    for node in module.nodes:
        targets: list[tuple[PurePosixPath, str]] = []
        if isinstance(node, ast.Import):
            targets = [(b, a.name) for a in node.names for b in bases]
        elif isinstance(node, ast.ImportFrom):
            up = node.level - 1  # from . import x: this package; from .. import x: its parent
            if up > len(here.parents):
                continue  # above the repository
            anchors = bases if not node.level else [here.parents[up - 1]] if up else [here]
            mod = node.module or ""
            for anchor in anchors:
                targets += [(anchor, mod)] if mod else []  # from . import x: x, not __init__
                targets += [(anchor, f"{mod}.{a.name}".lstrip(".")) for a in node.names]
        for anchor, dotted in targets:
            stem = anchor.joinpath(*dotted.split(".")) if dotted else anchor
            for candidate in (f"{stem}.py", f"{stem}/__init__.py"):
                rel = normal_path(candidate)
                if rel in python and rel != module.path and rel not in found:
                    found.append(rel)
    return found


# nanoGPT's `exec(open('configurator.py').read())`: the script's constants are set by
# --name=value on its command line
_CONFIGURATOR = re.compile(r"exec\(\s*open\([^)]*configurator[\w.]*['\"]")


def find_entry_points(
    root: Path,
    modules: dict[str, PythonModule],
    graph: dict[str, tuple[str, ...]],
    run: Collection[str] = (),
) -> list[EntryPoint]:
    """The modules that are scripts, each with its kind, options, repository imports (``graph``)
    and the result files it names. ``run``: files a command line runs, scripts even with no
    main guard (nanoGPT's train.py is top-level code from its first line)."""
    entries = []
    for path, module in modules.items():
        if module.tree is None:
            # a script that does not parse is still a script: say so, with its error
            if re.search(r"__main__|ArgumentParser|hydra\.main|click\.|typer\.", module.text):
                entries.append(EntryPoint(path, "plain", error=module.error))
            continue
        kind = _kind(module) or ("plain" if path in run else None)
        if kind is None:
            continue
        hydra = hydra_config(root, module) if kind == "hydra" else None
        if hydra is not None:
            options = hydra_options(root, hydra)
        else:
            options = OPTION_READERS[kind](module.nodes) if kind in OPTION_READERS else []
        names = _result_names(module.nodes)
        constants = tuple(module_constants(module.tree)[:MAX_CONSTANTS])
        imports = graph.get(path, ())
        configurable = bool(_CONFIGURATOR.search(module.text))
        entries.append(
            EntryPoint(
                path,
                kind,
                tuple(options),
                hydra,
                imports,
                names,
                constants=constants,
                configurable=configurable,
            )
        )
    return entries


def _result_names(nodes: list[ast.AST]) -> tuple[str, ...]:
    """ "metrics.json" of open(os.path.join(out, "metrics.json")): where a fresh clone, with no
    run yet, will write its results."""
    strings = {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    names = {PurePosixPath(v).name for v in strings if re.fullmatch(r"[\w./{}-]+\.(json|csv)", v)}
    return tuple(sorted(n for n in names if RESULT_WORDS.search(n)))


# -- output and smoke options ------------------------------------------------------------------

_OUTPUT_NAME = re.compile(
    r"(out|outputs?|save|results?|exp|experiment|work|runs?|log|logging|logs|checkpoints?|ckpt)"
    r"_?(dir|directory|folder|path|root)|out|output|outdir|save_to"
)
_OUTPUT_ORDER = ("hydra", "out", "result", "run", "exp", "work", "save", "log", "c")
SMOKE_FLAG = re.compile(
    r"smoke(_test)?|debug|dry_?run|fast_dev_run|quick(_test)?|test_run|sanity(_check)?|tiny"
)
# The names of how long a run trains, one table for the two readers of it: the smoke run is
# shortened by such an option (find_smoke_options) and the baseline bounded by it
# (core/onboarding/run_length.py). Once they differed, and --niters shortened the smoke run while
# the baseline ran unbounded, "no option sets how long a run trains".
_PREFIX = r"(max|num|n|nb|total)"  # max_steps, num_iters, n_epochs, nepochs, nb_epochs, …
_TRAIN = r"(train|training)_?"  # train_steps, max_train_steps, num_training_steps
RUN_LENGTH = re.compile(
    rf"({_PREFIX}_?)?({_TRAIN})?(steps|iters|iterations|epochs|updates)"
    rf"|{_PREFIX}_({_TRAIN})?(step|iter|iteration|epoch|update)"
    r"|(max|n)(iter|epoch)|epoch"  # maxiter (scipy's), niter (pix2pix's), nepoch; not nstep
)
# A smoke run is shortened by the run's length, or by how much data it reads.
_SMOKE_COUNT = re.compile(
    rf"{RUN_LENGTH.pattern}|({_PREFIX}_?|{_TRAIN})?({_TRAIN})?(samples|batches)"
    r"|limit_train_batches|subset(_size)?|train_subset"
)


def _output_rank(option: NamedOption) -> tuple[int, bool]:
    """out_dir before log_dir before checkpoint_dir; a folder before a *_path."""
    name = option.dest.lower()
    rank = next((i for i, word in enumerate(_OUTPUT_ORDER) if name.startswith(word)), 99)
    return rank, name.endswith("path")


def find_output_options(entries: list[EntryPoint]) -> list[NamedOption]:
    """Options of the command itself: a subcommand's would need the subcommand named too."""
    found = []
    for entry in entries:
        if entry.kind == "hydra":
            found.append(NamedOption(entry.path, HYDRA_DIR, HYDRA_DIR))
            continue
        mine = [
            NamedOption(entry.path, option_flag(o), o.dest, o.default)
            for o in entry.options
            if _OUTPUT_NAME.fullmatch(o.dest.lower().replace("-", "_"))
            and o.type != "bool"
            and not o.subcommand
        ]
        found += sorted(mine, key=_output_rank)
    return found


def find_smoke_options(entries: list[EntryPoint]) -> list[NamedOption]:
    """Options that shorten a run: a smoke or debug switch, or a count of steps, epochs, …"""
    found = []
    for entry in entries:
        for o in (o for o in entry.options if not o.subcommand):
            name = o.dest.lower().replace("-", "_").split(".")[-1]
            switch = o.type == "bool" or o.action == "store_true" or isinstance(o.default, bool)
            if SMOKE_FLAG.fullmatch(name) or (_SMOKE_COUNT.fullmatch(name) and not switch):
                kind = "flag" if switch else "count"
                found.append(NamedOption(entry.path, option_flag(o), o.dest, o.default, kind))
    return found


def option_flag(option: Option) -> str:
    """The flag to write on a command line: a long one, not its --no- form."""
    longs = [f for f in option.flags if f.startswith("--") and not f.startswith("--no-")]
    return (longs or list(option.flags))[0]


# -- trackers -------------------------------------------------------------------------------


def find_trackers(modules: dict[str, PythonModule]) -> list[Tracker]:
    """Which modules import TensorBoard (torch's SummaryWriter, tensorboardX, Lightning's
    logger) or W&B."""
    users: dict[str, list[str]] = {"tensorboard": [], "wandb": []}
    for path, module in modules.items():
        imported = " ".join(
            f"{node.module}.{a.name}" if isinstance(node, ast.ImportFrom) else a.name
            for node in module.nodes
            if isinstance(node, ast.Import | ast.ImportFrom)
            for a in node.names
        )
        if re.search(r"tensorboard|SummaryWriter|TensorBoardLogger", imported, re.I):
            users["tensorboard"].append(path)
        if re.search(r"(^|[ .])wandb\b|WandbLogger", imported):
            users["wandb"].append(path)
    return [Tracker(name, tuple(paths)) for name, paths in users.items() if paths]


# -- what the experiment needs installed ------------------------------------------------------


def _module_name(path: PurePosixPath, folder: PurePosixPath) -> str:
    """The top-level name ``path`` is imported by from ``folder`` ('' when outside it)."""
    if not path.is_relative_to(folder) or path == folder:
        return ""
    return path.relative_to(folder).parts[0].removesuffix(".py")


def packages_of(root: Path, paths: list[str], repository: set[str]) -> list[str]:
    """The top-level packages ``paths`` import that are neither the standard library nor the
    repository's own (``repository``: its Python files): what the experiment's interpreter
    must have installed (as import names: sklearn, not scikit-learn)."""
    own = {PurePosixPath(p).parts[0].removesuffix(".py") for p in repository}
    # a script's own folder is first on its sys.path: its sibling modules are the repository's
    folders = {PurePosixPath(p).parent for p in paths}
    own |= {_module_name(PurePosixPath(p), folder) for p in repository for folder in folders}
    found: list[str] = []
    for path in paths:
        module = parse_module(root, path)
        if module is None:
            continue
        for name in sorted(_packages(module.nodes)):
            if name not in sys.stdlib_module_names and name not in own and name not in found:
                found.append(name)
    return found
