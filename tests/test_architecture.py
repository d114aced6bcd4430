"""The package's shape: every import points down, from the front ends to the leaves.

Read with plain ``ast`` (no import is executed), so the test also sees imports
inside functions and under ``TYPE_CHECKING``: a lazy import may not hide a cycle
or an arrow pointing up. ``docs/architecture.md`` explains the wings.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "snapshotter"

# Top first. A module may import its own wing and any wing below it, unless ONLY narrows that.
WINGS = ["frontends", "facade", "history", "remote", "session", "compare", "upkeep", "worktree", "gitstore", "leaves"]
# Side wings: what each may see besides itself (it is not simply "everything below").
BELOW_THE_FACADE = {"session", "compare", "worktree", "gitstore", "leaves"}
ONLY = {"history": BELOW_THE_FACADE, "remote": BELOW_THE_FACADE, "upkeep": {"gitstore", "leaves"}}
ENGINE = {"session", "compare", "upkeep", "worktree", "gitstore"}
ENGINE_LEAVES = {"fsutil", "collector"}  # in engine/, imported by every wing from gitstore up
LEAVES = {"errors", "model", "options"}
MAX_LINES = 450


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def wing_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) == 1 or "_pyinstaller" in parts:
        return None  # the package itself re-exports the public API; _pyinstaller is a build hook
    top = parts[1]
    if top in ("frontends", "compat", "__main__"):
        return "frontends"
    if top in ("facade", "history", "remote"):
        return top
    if top in LEAVES:
        return "leaves"
    # TRANSITION (removed when the moves are done)
    if top in {"api", "calls", "inputs", "guard", "background", "maintenance", "workflows", "warnmode", "replicas"}:
        return "facade"
    if top in {"remotes", "replicator", "outgoing"}:
        return "remote"
    if top in ENGINE:
        return top
    if top in ENGINE_LEAVES:
        return "leaves"
    if top == "engine":
        inner = parts[2] if len(parts) > 2 else None
        if inner in ENGINE:
            return inner
        if inner is None or inner in ENGINE_LEAVES:
            return "leaves"
    return None


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """Our modules that ``module`` imports, wherever the import statement sits."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = {f"{target}.{alias.name}" for alias in node.names} & known
            found.update(submodules)
            if target in known and len(submodules) < len(node.names):
                found.add(target)  # a name defined in the module (or package) itself
    found.discard(module)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {module: imports_of(module, path, set(known)) for module, path in known.items()}


def test_every_module_belongs_to_a_wing() -> None:
    strays = [m for m in modules() if m != "snapshotter" and wing_of(m) is None and "_pyinstaller" not in m]
    assert strays == []


def test_imports_point_down() -> None:
    wrong = []
    for module, targets in graph().items():
        mine = wing_of(module)
        if mine is None:
            continue
        for target in targets:
            theirs = wing_of(target)
            if theirs is None and target == "snapshotter" and mine == "frontends":
                continue  # front ends are users: they may use the public API
            if theirs is None:
                wrong.append(f"{module} -> {target} (the package root is for users and front ends)")
            elif mine in ONLY and theirs != mine and theirs not in ONLY[mine]:
                wrong.append(f"{module} -> {target} ({mine} sees only {sorted(ONLY[mine])})")
            elif WINGS.index(theirs) < WINGS.index(mine):
                wrong.append(f"{module} -> {target} ({mine} may not import {theirs})")
    assert wrong == []


def test_no_import_cycles() -> None:
    edges = graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_modules_stay_small() -> None:
    big = {}
    for module, path in modules().items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            big[module] = lines
    assert big == {}


def test_the_checker_sees_a_wrong_arrow(tmp_path: Path) -> None:
    """The checks above can fail: an upward import in a synthetic module is found."""
    fake = tmp_path / "snapshotter" / "gitstore" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("from ..session import engine\nfrom snapshotter.facade.api import Snapshotter\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path / "snapshotter"
    try:
        found = imports_of("snapshotter.gitstore.bad", fake, {"snapshotter.session.engine", "snapshotter.facade.api"})
    finally:
        PACKAGE = saved
    assert found == {"snapshotter.session.engine", "snapshotter.facade.api"}
    assert WINGS.index(wing_of("snapshotter.session.engine") or "") < WINGS.index("gitstore")
