"""List the parameters of public functions in core/ and tui/ that are annotated with `Any`.

Issue 29 counts these "Any at the boundaries": a parameter typed `Any` hides the record or
service it really takes, so mypy cannot check the calls. Raw JSON being parsed (`data: Any`)
is the legitimate case; the rest should name their type. Run from the repository root:

    .venv/bin/python tests/bench/any_params.py [--all]

It prints one line per named parameter typed `Any` (`--all`: also `Any` inside another
annotation, `list[Any]`, `dict[str, Any]`, and `*args`/`**kwargs`, which pass values through)
and counts them, in all and at a package boundary: functions that a module of another package
imports by name.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOTS = ("core", "tui")


@dataclass(frozen=True)
class AnyParam:
    """One parameter of a public function whose annotation mentions `Any`."""

    path: Path
    line: int
    function: str
    parameter: str
    annotation: str
    variadic: bool  # *args or **kwargs: passed through, Any by nature

    @property
    def bare(self) -> bool:
        return self.annotation in ("Any", "typing.Any")

    def at_boundary(self, imported: set[tuple[str, str]]) -> bool:
        owner = self.function.split(".")[0]
        return not self.variadic and (_module_of(self.path), owner) in imported


def _package(path: Path) -> str:
    """core/search/shared.py -> core.search, core/events.py -> core.events (each top-level module
    of core/ is a line of the layers contract); tui/panes/logs.py -> tui.panes, tui/app.py -> tui."""
    parts = path.with_suffix("").parts
    return ".".join(parts[:2]) if parts[0] == "core" or len(parts) > 2 else parts[0]


def _module_of(path: Path) -> str:
    return "labtui." + ".".join(path.with_suffix("").parts).removesuffix(".__init__")


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    """The module an import names, with a relative one (`from ..steps import x`) resolved."""
    if not node.level:
        return node.module or ""
    here = _module_of(path).split(".")
    base = here[: len(here) - node.level + (path.name == "__init__.py")]
    return ".".join([*base, node.module] if node.module else base)


def _imported_elsewhere(root: Path) -> set[tuple[str, str]]:
    """(module, name) pairs imported by name from a module of another package."""
    pairs = set()
    for folder in ROOTS:
        for path in (root / folder).rglob("*.py"):
            relative = path.relative_to(root)
            own = "labtui." + _package(relative)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom):
                    module = _absolute(node, relative)
                    if module.startswith("labtui.") and not module.startswith(own):
                        pairs.update((module, alias.name) for alias in node.names)
    return pairs


def _is_public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _mentions_any(annotation: ast.expr) -> bool:
    return any(
        (isinstance(node, ast.Name) and node.id == "Any")
        or (isinstance(node, ast.Attribute) and node.attr == "Any")
        for node in ast.walk(annotation)
    )


def _public_functions(
    tree: ast.Module,
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Module-level functions and methods of module-level classes, both public."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_public(node.name):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and _is_public(node.name):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _is_public(
                    item.name
                ):
                    yield f"{node.name}.{item.name}", item


def any_params(root: Path) -> Iterator[AnyParam]:
    for folder in ROOTS:
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for name, function in _public_functions(tree):
                arguments = function.args
                named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                variadic = [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
                for argument in [*named, *variadic]:
                    if argument.annotation is not None and _mentions_any(argument.annotation):
                        yield AnyParam(
                            path.relative_to(root),
                            argument.lineno,
                            name,
                            argument.arg,
                            ast.unparse(argument.annotation),
                            argument in variadic,
                        )


def main(argv: list[str]) -> int:
    root = Path.cwd()
    found = list(any_params(root))
    imported = _imported_elsewhere(root)
    bare = [p for p in found if p.bare and not p.variadic]
    for param in found if "--all" in argv else bare:
        where = " [boundary]" if param.at_boundary(imported) else ""
        print(
            f"{param.path}:{param.line}: {param.function}({param.parameter}: {param.annotation}){where}"
        )
    at_boundary = [p for p in bare if p.at_boundary(imported)]
    passed = [p for p in found if p.variadic]
    inside = [p for p in found if not p.bare and not p.variadic]
    inside_at_boundary = [p for p in inside if p.at_boundary(imported)]
    print(f"parameters typed Any: {len(bare)} ({len(at_boundary)} at a package boundary)")
    print(
        f"Any inside a parameter's annotation: {len(inside)} ({len(inside_at_boundary)} at a boundary)"
    )
    print(f"*args/**kwargs typed Any (passed through): {len(passed)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
