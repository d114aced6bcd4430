"""fork() and merge(): a checkpoint made into a folder of its own for a parallel
agent, and its changes brought back three ways.

git is the oracle for the store (``git fsck --strict`` on the fork after the
parent pruned, collected and removed itself) and for each merged file
(``git merge-file``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GIT, contents, forge_snapshot, needs_git, write

from snapshotter import ConflictReason, InvalidInput, Retention, Snapshotter, UnsafeTree, WorkspaceError
from snapshotter.engine.gitstore.objects import MODE_FILE, MODE_TREE, serialize_tree

LINES = [f"line {i}\n" for i in range(60)]


def edited(start: int, end: int, tag: str, lines: list[str] = LINES) -> str:
    return "".join(f"{tag} {i}\n" if start <= i < end else line for i, line in enumerate(lines))


@pytest.fixture
def parent(ws: Path, make) -> Snapshotter:  # type: ignore[no-untyped-def]
    write(ws, {"app.py": "".join(LINES), "README": "readme\n", "pkg/mod.py": "mod\n"})
    return make(retention=Retention.unlimited())


def test_a_fork_holds_the_snapshot_and_a_store_of_its_own(ws: Path, tmp_path: Path, parent: Snapshotter) -> None:
    point = parent.snapshot("fork point")
    write(ws, {"app.py": "changed after the fork point\n"})
    dest = tmp_path / "fork-a"
    with parent.fork(point.id, dest) as forked:
        assert contents(dest) == {"app.py": "".join(LINES).encode(), "README": b"readme\n", "pkg/mod.py": b"mod\n"}
        assert forked.store_path != parent.store_path
        assert forked.list(limit=None)[-1].id == point.id  # its first snapshot is the fork point
        assert forked.status() == []
    listed = parent.forks()
    assert [(f.path, f.fork_point_id, f.exists) for f in listed] == [(str(dest.resolve()), point.id, True)]


def test_the_store_is_shared_by_links_not_copied(ws: Path, tmp_path: Path, parent: Snapshotter) -> None:
    point = parent.snapshot()
    parent.gc()  # everything in one pack
    with parent.fork(point.id, tmp_path / "fork") as forked:
        packs = Path(forked.store_path) / "objects" / "pack"
        shared = [p for p in packs.iterdir() if p.suffix == ".pack"]
        assert shared and all(p.stat().st_nlink >= 2 for p in shared)


@needs_git
def test_the_fork_outlives_whatever_the_parent_does(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "1\n"})
    parent = make(retention=Retention(max_snapshots=2, max_undo=0))
    point = parent.snapshot("to fork")
    dest = tmp_path / "fork"
    forked = parent.fork(point.id, dest)
    for i in range(5):  # the fork point is pruned from the parent, its objects collected
        write(ws, {"a.txt": f"{i + 2}\n", f"n{i}.txt": "x\n"})
        parent.snapshot(f"later {i}")
    parent.prune()
    parent.gc()
    assert point.id not in {i.id for i in parent.list(limit=None)}
    parent.cleanup()
    write(dest, {"b.txt": "the fork works on\n"})
    after = forked.snapshot("after the parent went")
    forked.restore(point.id)
    assert contents(dest) == {"a.txt": b"1\n"}
    forked.restore(after.id)
    assert GIT is not None
    fsck = subprocess.run([GIT, "--git-dir", forked.store_path, "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    forked.close()


@needs_git
def test_merging_a_fork_equals_git_merge_file_per_file(ws: Path, tmp_path: Path, parent: Snapshotter) -> None:
    point = parent.snapshot()
    dest = tmp_path / "fork"
    with parent.fork(point.id, dest) as forked:
        write(dest, {"app.py": edited(0, 5, "fork"), "new_in_fork.py": "made by the forked agent\n"})
        (dest / "README").unlink()
        forked.snapshot("fork's work")
    write(ws, {"app.py": edited(40, 45, "parent"), "pkg/mod.py": "parent's edit\n"})
    ours = (ws / "app.py").read_bytes()
    oracle = tmp_path / "oracle"
    oracle.mkdir()
    for name, content in (("ours", ours), ("base", "".join(LINES).encode()), ("theirs", edited(0, 5, "fork").encode())):
        (oracle / name).write_bytes(content)
    assert GIT is not None
    expected = subprocess.run([GIT, "merge-file", "-p", "ours", "base", "theirs"], cwd=oracle, capture_output=True)
    assert expected.returncode == 0
    result = parent.merge(dest)
    assert result and result.merged == ("app.py",) and set(result.reverted) == {"README", "new_in_fork.py"}
    assert (ws / "app.py").read_bytes() == expected.stdout
    assert (ws / "pkg/mod.py").read_text() == "parent's edit\n"  # changed here only: kept
    assert not (ws / "README").exists() and (ws / "new_in_fork.py").read_text() == "made by the forked agent\n"
    assert result.safety_snapshot_id is not None


def test_a_merge_that_clashes_writes_nothing_unless_asked(ws: Path, tmp_path: Path, parent: Snapshotter) -> None:
    point = parent.snapshot()
    dest = tmp_path / "fork"
    parent.fork(point.id, dest).close()
    write(dest, {"app.py": edited(0, 5, "fork")})
    write(ws, {"app.py": edited(2, 8, "parent")})
    state = contents(ws)
    refused = parent.merge(dest)
    assert not refused and [(c.path, c.reason) for c in refused.conflicts] == [("app.py", ConflictReason.CONTENT)]
    assert contents(ws) == state
    marked = parent.merge(dest, conflicts="markers")
    assert marked.marked == ("app.py",) and b"<<<<<<< workspace" in (ws / "app.py").read_bytes()


def test_merge_of_a_ref_needs_a_base(ws: Path, parent: Snapshotter) -> None:
    start = parent.snapshot()
    write(ws, {"app.py": edited(0, 3, "later")})
    end = parent.snapshot()
    write(ws, {"app.py": "".join(LINES)})  # put back by hand
    with pytest.raises(InvalidInput):
        parent.merge(end.id)
    result = parent.merge(end.id, base=start.id)
    assert result.reverted == ("app.py",) and (ws / "app.py").read_text() == edited(0, 3, "later")


def test_fork_refuses_unsafe_destinations(ws: Path, tmp_path: Path, parent: Snapshotter) -> None:
    point = parent.snapshot()
    for bad in (ws / "inside", ws, tmp_path):  # inside the workspace, the workspace, around it
        with pytest.raises(WorkspaceError):
            parent.fork(point.id, bad)
    busy = tmp_path / "busy"
    write(busy, {"x": "someone's file\n"})
    with pytest.raises(WorkspaceError):
        parent.fork(point.id, busy)
    assert (busy / "x").read_text() == "someone's file\n"
    with pytest.raises(InvalidInput):
        parent.merge(tmp_path / "busy")  # a folder that is no fork


def _listing(root: Path) -> list[str]:
    """Every path below ``root``, folders included: what a refused fork must not add to."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(
    "where",
    [
        "other-repo/.git/forkhere",
        "other-repo/.git/deeper/still",
        "other-repo/.GIT/forkhere",
        "other-repo/git~1/forkhere",
        "other-repo/.git",
        "link-to-git/forkhere",
        "home",
        "home/snapshots/x",
        "store",
    ],
)
def test_a_refused_fork_destination_leaves_nothing_behind(
    where: str, ws: Path, tmp_path: Path, home: Path, parent: Snapshotter
) -> None:
    """A destination in a git folder (any spelling, at any depth, through a symlink
    too), in the snapshot home or in the store is refused before anything is made."""
    point = parent.snapshot()
    repo = tmp_path / "other-repo"
    write(repo, {".git/HEAD": "ref: refs/heads/main\n", "README": "theirs\n"})
    (tmp_path / "link-to-git").symlink_to(repo / ".git")
    if where == "store":
        dest = Path(parent.store_path) / "forkhere"
    else:
        dest = tmp_path / where
    before = _listing(tmp_path)
    with pytest.raises(WorkspaceError):
        parent.fork(point.id, dest)
    assert _listing(tmp_path) == before


def test_where_files_cannot_be_linked_they_are_copied(
    ws: Path, tmp_path: Path, parent: Snapshotter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another device (EXDEV), or a filesystem without hard links: the fork's store
    gets copies, and is just as complete."""
    import errno

    from snapshotter.engine.gitstore import sharing

    point = parent.snapshot()

    def no_links(source: str, target: str) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(sharing.os, "link", no_links)
    shared = sharing.share_objects(parent.store_path, str(tmp_path / "elsewhere"))
    assert shared.copied > 0 and shared.linked == 0
    with parent.fork(point.id, tmp_path / "fork") as forked:
        assert contents(tmp_path / "fork") == contents(ws)
        packs = [p for p in (Path(forked.store_path) / "objects").rglob("*") if p.is_file()]
        assert packs and all(p.stat().st_nlink == 1 for p in packs)
        assert forked.verify(full=True).ok


@pytest.mark.parametrize("name", [b"..", b".git", b".GIT", b"a/b"])
@pytest.mark.parametrize("how", ["revert", "merge", "merge-dry-run"])
def test_a_change_toward_a_hostile_tree_is_refused_and_writes_nothing(
    ws: Path, tmp_path: Path, parent: Snapshotter, name: bytes, how: str
) -> None:
    """A tree forged straight into the store (as a hostile agent could) with a name
    a restore refuses: reverting to it or merging it is refused the same way,
    before anything is written into the workspace or the store's listing."""
    base = parent.snapshot()
    writer = parent._engine_ok().store.writer
    inner = writer.write(b"tree", serialize_tree([(b"config", MODE_FILE, writer.write(b"blob", b"pwned\n"))]))
    hostile = (name, MODE_FILE, b"") if b"/" in name else (name, MODE_TREE, inner)
    forged = forge_snapshot(parent, [(b"README", MODE_FILE, b""), hostile])
    state, listed = contents(ws), len(parent.list(limit=None))
    with pytest.raises(UnsafeTree):
        if how == "revert":
            parent.revert(forged, base.id)  # the change forged -> base, reverted: toward forged
        else:
            parent.merge(forged, base=base.id, dry_run=how == "merge-dry-run")
    assert contents(ws) == state and len(parent.list(limit=None)) == listed
    assert not (ws / "config").exists() and not (tmp_path / "config").exists()


def test_a_sessions_abandoned_redo_side_can_be_merged_back(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A named session undoes a call, a person edits, a new checkpoint abandons the
    redo side as ``abandoned:1``: merging it since the first checkpoint brings the
    call back and keeps the person's edit."""
    write(ws, {"f": "0\n", "g": "0\n"})
    a = make(session="A")
    start = a.checkpoint("start")
    a.tool_snapshot("c1")
    write(ws, {"f": "1 by A\n"})
    a.tool_done("c1")
    assert a.undo().ok and (ws / "f").read_text() == "0\n"
    write(ws, {"g": "a person's edit\n"})
    a.checkpoint("next")
    assert not a.can_redo() and [i.session for i in a.list(label="abandoned:1")] == ["A"]
    result = a.merge("abandoned:1", base=start.id)
    assert result.reverted == ("f",) and not result.conflicts
    assert contents(ws) == {"f": b"1 by A\n", "g": b"a person's edit\n"}


_DYING_FORK = """
import os, signal, sys
from snapshotter import Snapshotter
from snapshotter.history import forks
from snapshotter.engine.worktree import fsops

ws, home, point, dest, where, after = sys.argv[1:7]
owner, name = where.split(".")
owner_object = fsops.Workspace if owner == "Workspace" else forks
original = getattr(owner_object, name)
calls = []

def dying(*args, **kwargs):
    calls.append(1)
    if len(calls) > int(after):
        os.kill(os.getpid(), signal.SIGKILL)  # a real kill: nothing after it runs, no cleanup
    return original(*args, **kwargs)

setattr(owner_object, name, dying)
Snapshotter(ws, home=home, second_core=False).fork(point, dest)
print("the fork was finished", flush=True)
"""

_MANY = {f"src/m{i // 50}/f{i}.py": f"file {i}\n" for i in range(400)}


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
@pytest.mark.parametrize(
    ("where", "after"),
    [
        ("forks.share_objects", 0),  # the fork's store made, no object or file yet
        ("Workspace.write_file", 0),  # the objects shared, no file written
        ("Workspace.write_file", 150),  # killed while its files are written
        ("forks._add_to_parent", 0),  # every file written, not yet listed nor marked complete
    ],
)
def test_a_fork_killed_while_it_is_made_is_no_fork_until_fork_finishes_it(
    where: str,
    after: int,
    ws: Path,
    tmp_path: Path,
    home: Path,
    make: Callable[..., Snapshotter],
) -> None:
    """A real fork process killed at each stage of making the fork: merging the
    half-made folder is refused with one line (it would bring "fork point -> the
    half-written folder" in, deleting what was not written yet), nothing changes
    here; running the same fork again finishes it, and then it merges as any fork."""
    write(ws, _MANY)
    parent = make(retention=Retention.unlimited())
    point = parent.snapshot("fork point")
    dest = tmp_path / "fork"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, "-c", _DYING_FORK, str(ws), str(home), point.id, str(dest), where, str(after)]
    killed = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    written = {"forks.share_objects": 0, "Workspace.write_file": after, "forks._add_to_parent": len(_MANY)}[where]
    assert len(contents(dest)) == written
    state, listed = contents(ws), [s.id for s in parent.list(limit=None)]
    with pytest.raises(WorkspaceError) as refused:
        parent.merge(dest)
    message = str(refused.value)
    assert "\n" not in message and "not finished" in message and point.id[:12] in message
    assert contents(ws) == state and [s.id for s in parent.list(limit=None)] == listed

    with parent.fork(point.id, dest) as forked:  # the same fork again: finishes it
        assert contents(dest) == state and forked.status() == []
        write(dest, {"src/m0/f0.py": "edited in the fork\n"})
    result = parent.merge(dest)
    assert result.reverted == ("src/m0/f0.py",)
    assert contents(ws) == {**state, "src/m0/f0.py": b"edited in the fork\n"}
    assert [(f.path, f.fork_point_id) for f in parent.forks()] == [(str(dest.resolve()), point.id)]


def test_a_half_made_fork_is_finished_only_from_its_own_fork_point(
    ws: Path, tmp_path: Path, home: Path, parent: Snapshotter
) -> None:
    """Another ref into a half-made fork's folder is refused with one line, before
    anything is written there: the folder is the unfinished fork of its own point."""
    point = parent.snapshot("fork point")
    write(ws, {"README": "later\n"})
    later = parent.snapshot("later")
    dest = tmp_path / "fork"
    argv = [sys.executable, "-c", _DYING_FORK, str(ws), str(home), point.id, str(dest)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run([*argv, "Workspace.write_file", "1"], capture_output=True, text=True, env=env, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    before = contents(dest)
    with pytest.raises(WorkspaceError) as refused:
        parent.fork(later.id, dest)
    assert "\n" not in str(refused.value) and point.id[:12] in str(refused.value)
    assert contents(dest) == before


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_a_fork_killed_as_its_store_is_made_leaves_a_folder_the_same_fork_takes_over(
    ws: Path, tmp_path: Path, home: Path, parent: Snapshotter
) -> None:
    """Killed after its store was made, before it said anything of itself: the store
    holds no snapshot, merge finds no fork there, and the same fork takes it over."""
    point = parent.snapshot("fork point")
    dest = tmp_path / "fork"
    argv = [sys.executable, "-c", _DYING_FORK, str(ws), str(home), point.id, str(dest), "forks._write_json", "0"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    state = contents(ws)
    with pytest.raises(InvalidInput):
        parent.merge(dest)
    assert contents(ws) == state
    with parent.fork(point.id, dest):
        assert contents(dest) == state


def _store_files(store: Path) -> dict[str, bytes]:
    """Every ref, packed-refs and object file of a store, byte for byte."""
    held = {}
    for path in sorted(store.rglob("*")):
        rel = path.relative_to(store).as_posix()
        if path.is_file() and (rel.startswith(("refs/", "objects/")) or rel in ("packed-refs", "HEAD")):
            held[rel] = path.read_bytes()
    return held


def test_a_dry_run_merge_writes_nothing_in_either_store(ws: Path, tmp_path: Path, parent: Snapshotter) -> None:
    point = parent.snapshot()
    dest = tmp_path / "fork"
    with parent.fork(point.id, dest) as forked:
        write(dest, {"app.py": edited(0, 5, "fork")})
        forked.snapshot("fork's work")
        fork_store = Path(forked.store_path)
    write(dest, {"app.py": edited(0, 6, "fork"), "late.py": "not snapshotted in the fork\n"})
    write(ws, {"app.py": edited(40, 45, "parent")})
    fork_before, ours_before = _store_files(fork_store), _store_files(Path(parent.store_path))
    planned = parent.merge(dest, dry_run=True)
    assert planned.dry_run and planned.merged == ("app.py",) and planned.reverted == ("late.py",)
    assert _store_files(fork_store) == fork_before  # no `merged` snapshot, no object in the fork
    assert _store_files(Path(parent.store_path)) == ours_before  # nor linked into this store
    assert not (ws / "late.py").exists()
    done = parent.merge(dest)  # the real merge then does what the dry run said
    assert done.merged == planned.merged and done.reverted == planned.reverted
    assert (ws / "late.py").read_text() == "not snapshotted in the fork\n"
