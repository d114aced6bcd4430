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
# Inside frontends/, top first: the process entries (entry.py, hookclient.py) start any front end; the
# command line dispatches to the others; the page and the MCP server stand side by side; the watch
# server records hook events; shared/ (settings, grammar, printing, exit codes, the watcher's wire) is
# what they all use. A folder imports its own modules and the folders below it.
FRONT_END_LAYERS = [{"entry"}, {"cli"}, {"page", "mcp"}, {"watch"}, {"hooks"}, {"shared"}]


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


def wrong_arrows(edges: dict[str, set[str]]) -> list[str]:
    """Every import in ``edges`` that points up, or sideways where ``ONLY`` forbids it."""
    wrong = []
    for module, targets in sorted(edges.items()):
        mine = wing_of(module)
        if mine is None:
            continue
        for target in sorted(targets):
            theirs = wing_of(target)
            if theirs is None and target == "snapshotter" and mine == "frontends":
                continue  # front ends are users: they may use the public API
            if theirs is None:
                wrong.append(f"{module} -> {target} (the package root is for users and front ends)")
            elif mine in ONLY and theirs != mine and theirs not in ONLY[mine]:
                wrong.append(f"{module} -> {target} ({mine} sees only {sorted(ONLY[mine])})")
            elif WINGS.index(theirs) < WINGS.index(mine):
                wrong.append(f"{module} -> {target} ({mine} may not import {theirs})")
    return wrong


def front_end_of(module: str) -> str | None:
    """The folder of ``frontends/`` that ``module`` sits in ("entry" for the modules directly in it)."""
    parts = module.split(".")
    if parts[:2] != ["snapshotter", "frontends"] or "_pyinstaller" in parts:
        return None
    return parts[2] if len(parts) > 3 else "entry"


def layer_of(folder: str) -> int:
    return next(n for n, layer in enumerate(FRONT_END_LAYERS) if folder in layer)


def wrong_front_end_arrows(edges: dict[str, set[str]]) -> list[str]:
    """Every import between the front ends' folders that does not point down ``FRONT_END_LAYERS``."""
    wrong = []
    for module, targets in sorted(edges.items()):
        mine = front_end_of(module)
        if mine is None:
            continue
        for target in sorted(targets):
            theirs = front_end_of(target)
            if theirs is None or theirs == mine:
                continue
            if layer_of(theirs) <= layer_of(mine):
                wrong.append(f"{module} -> {target} (frontends/{mine} may not import frontends/{theirs})")
    return wrong


def cycles_in(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk of ``edges`` meets (lazy imports are edges too)."""
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
    return cycles


def test_every_module_belongs_to_a_wing() -> None:
    strays = [m for m in modules() if m != "snapshotter" and wing_of(m) is None and "_pyinstaller" not in m]
    assert strays == []


def test_imports_point_down() -> None:
    assert wrong_arrows(graph()) == []


def test_front_end_folders_import_down() -> None:
    assert [
        f for f in (front_end_of(m) for m in modules()) if f is not None and not any(f in x for x in FRONT_END_LAYERS)
    ] == []
    assert wrong_front_end_arrows(graph()) == []


def test_the_front_end_check_fails_on_an_arrow_up_or_sideways() -> None:
    edges = graph()
    planted = {
        "snapshotter.frontends.shared.rendering": "snapshotter.frontends.cli.cli",  # shared pieces know no front end
        "snapshotter.frontends.hooks.hookevents": "snapshotter.frontends.watch.watchserver",  # up
        "snapshotter.frontends.page.ui_server": "snapshotter.frontends.mcp.mcp_server",  # sideways
        "snapshotter.frontends.watch.relay": "snapshotter.frontends.cli.cli",  # up to the dispatcher
    }
    for module, target in planted.items():
        assert module in edges and target in edges, (module, target)
        wrong = wrong_front_end_arrows({**edges, module: edges[module] | {target}})
        assert [w for w in wrong if w.startswith(f"{module} -> {target} ")] != [], (module, target)


def test_no_import_cycles() -> None:
    assert cycles_in(graph()) == []


def test_modules_stay_small() -> None:
    big = {}
    for module, path in modules().items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            big[module] = lines
    assert big == {}


def test_the_package_top_holds_at_most_twelve_names() -> None:
    """A newcomer meets the wings, not a flat row of modules (caches are not names of the package)."""
    names = sorted(p.name for p in PACKAGE.iterdir() if p.name != "__pycache__")
    assert len(names) <= 12, names


def test_every_folder_says_what_it_owns_and_must_not_know() -> None:
    """Each package's ``__init__.py`` opens with a docstring: the wing's row of docs/architecture.md in brief."""
    silent = []
    for init in PACKAGE.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        if not doc:
            silent.append(str(init.relative_to(PACKAGE)))
    assert silent == []


def test_the_checker_reads_every_kind_of_import(tmp_path: Path) -> None:
    """Relative, absolute, lazy and TYPE_CHECKING imports all become edges."""
    fake = tmp_path / "snapshotter" / "engine" / "gitstore" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "from ..session import engine\n"
        "TYPE_CHECKING = False\n"
        "if TYPE_CHECKING:\n    from snapshotter.facade.api import Snapshotter\n"
        "def later():\n    import snapshotter.history.undo\n"
    )
    known = {"snapshotter.engine.session.engine", "snapshotter.facade.api", "snapshotter.history.undo"}
    found = imports_of("snapshotter.engine.gitstore.bad", fake, known)
    assert found == known


def test_the_checker_fails_on_an_arrow_up_or_sideways_or_a_cycle() -> None:
    """The checks above can fail: planted into today's graph, each wrong import is named."""
    edges = graph()
    planted = {
        "snapshotter.engine.gitstore.store": "snapshotter.engine.session.engine",  # up, inside the engine
        "snapshotter.history.undo": "snapshotter.remote.remotes",  # sideways between side wings
        "snapshotter.remote.remotes": "snapshotter.facade.calls",  # up to the facade
        "snapshotter.engine.upkeep.retention": "snapshotter.engine.worktree.walker",  # upkeep sees only gitstore
        "snapshotter.facade.api": "snapshotter.frontends.shared.rendering",  # up to the front ends
        "snapshotter.engine.fsutil": "snapshotter.engine.gitstore.store",  # a leaf importing a wing
        "snapshotter.errors": "snapshotter",  # the package root is for users
    }
    for module, target in planted.items():
        assert module in edges and (target == "snapshotter" or target in edges), (module, target)
        wrong = wrong_arrows({**edges, module: edges[module] | {target}})
        assert [w for w in wrong if w.startswith(f"{module} -> {target} ")] != [], (module, target)
    looped = {
        **edges,
        "snapshotter.engine.gitstore.location": edges["snapshotter.engine.gitstore.location"]
        | {"snapshotter.engine.gitstore.store"},
    }
    assert any("snapshotter.engine.gitstore.location" in cycle for cycle in cycles_in(looped))
