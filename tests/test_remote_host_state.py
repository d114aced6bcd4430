"""What a push keeps of this store's stacks on the remote (``hosts/<host id>/``):
the base, the pins, and the newest entries of its own undo, redo and turns
stacks and of its most recently active sessions' stacks only, so the refs a
push lists stay bounded however long the history (issue #50: one ref a stack
entry was ~1 ref per 9 snapshots of hook-driven work, all listed by every
push). Every snapshot stays on the remote, its own ``snapshots/`` ref naming
it. A bare repository in a folder as the remote; git the oracle.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from conftest import GIT, needs_git, write
from remote_servers import bare_repository

from snapshotter.remote import hoststate, remotes

pytestmark = needs_git
NAME = "state"
SESSIONS = 20
OTHER_HOST = "0123456789abcdef"


def git(bare: Path, *args: str) -> str:
    assert GIT is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run([GIT, "--git-dir", str(bare), *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout


def _refs(bare: Path, below: str) -> dict[str, str]:
    listed = git(bare, "for-each-ref", "--format=%(refname) %(objectname)", below).split("\n")
    return {name[len(below) :]: sha for name, _, sha in (line.partition(" ") for line in listed if line)}


def _session(k: int) -> str:
    """The name of the session active ``k``-th (0: longest ago): not in the order of its name."""
    return f"s{(k * 7) % SESSIONS:02d}"


def _store_with_many_stacks(snap: Any, ws: Path) -> tuple[list[str], list[int]]:
    """``2 * SESSIONS`` snapshots; session ``k`` (active ``k``-th) keeps an undo
    stack of 2 and a turns stack of 1 topped by snapshot ``SESSIONS + k``; the
    newest session a redo stack of 120; the store's own undo stack 130 entries.
    Returns the snapshot ids, oldest first, and the own undo stack's numbers."""
    ids = []
    for i in range(2 * SESSIONS):
        write(ws, {"a.txt": f"{i}\n"})
        ids.append(snap.snapshot(f"{i}").id)
    store = snap._engine_ok().store
    for stack in hoststate.STACKS:
        store.clear(stack)
    assert store.sessions() == []
    raw = [bytes.fromhex(sha) for sha in ids]
    for k in range(SESSIONS):
        stacks = f"sessions/{_session(k)}/"
        store.push(stacks + "undo", raw[k])
        store.push(stacks + "undo", raw[SESSIONS + k])
        store.push(stacks + "turns", raw[SESSIONS + k])
    for n in range(120):
        store.push(f"sessions/{_session(SESSIONS - 1)}/redo", raw[n % SESSIONS])
    numbers = [store.push("undo", raw[n % len(raw)]) for n in range(130)]
    return ids, numbers


def test_a_push_keeps_only_the_newest_entries_of_its_newest_sessions_stacks(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    bare = bare_repository(tmp_path / "r.git")
    snap = make()
    ids, numbers = _store_with_many_stacks(snap, ws)
    store = snap._engine_ok().store
    snap.push(str(bare), name=NAME)
    mine = f"refs/snapshotter/{NAME}/hosts/{remotes.host_id(store)}/"
    held = _refs(bare, mine)
    kept = hoststate.KEPT_ENTRIES
    undo = {name for name in held if name.startswith("undo/")}
    assert undo == {f"undo/{n:04d}" for n in numbers[-kept:]}, "the newest entries, by the store's numbers"
    assert all(held[f"undo/{n:04d}"] == store.stack("undo")[n - 1].hex() for n in numbers[-kept:])
    newest = {_session(k) for k in range(SESSIONS - hoststate.KEPT_SESSIONS, SESSIONS)}
    assert {name.split("/")[1] for name in held if name.startswith("sessions/")} == newest
    redo = [name for name in held if name.startswith(f"sessions/{_session(SESSIONS - 1)}/redo/")]
    assert len(redo) == kept
    others = {name for name in held if not name.startswith(("undo/", "sessions/", "base", "pins/"))}
    assert not others, others
    assert len(held) <= 1 + 3 * kept * (1 + hoststate.KEPT_SESSIONS)
    assert set(ids) <= set(git(bare, "rev-list", "--all").split()), "every snapshot is still on the remote"


def test_a_push_deletes_its_old_sessions_refs_and_never_another_stores_or_its_archive(  # type: ignore[no-untyped-def]
    tmp_path: Path, ws: Path, make
) -> None:
    """The refs an older push left for sessions no longer among the newest go
    (this store's state only); another store's refs and this store's ``archive`` stay."""
    bare = bare_repository(tmp_path / "r.git")
    snap = make()
    ids, _ = _store_with_many_stacks(snap, ws)
    store = snap._engine_ok().store
    snap.push(str(bare), name=NAME)
    namespace = f"refs/snapshotter/{NAME}/"
    mine = f"{namespace}hosts/{remotes.host_id(store)}/"
    theirs = f"{namespace}hosts/{OTHER_HOST}/"
    left = {
        f"{mine}sessions/{_session(0)}/undo/0001": ids[0],  # as an older push left it
        f"{mine}turns/0001": ids[1],
        f"{mine}archive": ids[2],
        f"{theirs}sessions/{_session(0)}/undo/0001": ids[3],
        f"{theirs}archive": ids[4],
    }
    for ref, sha in left.items():
        git(bare, "update-ref", ref, sha)
    before = _refs(bare, mine)
    snap.push(str(bare), name=NAME)
    after = _refs(bare, mine)
    assert set(before) - set(after) == {f"sessions/{_session(0)}/undo/0001", "turns/0001"}
    assert after["archive"] == ids[2]
    assert _refs(bare, theirs) == {f"sessions/{_session(0)}/undo/0001": ids[3], "archive": ids[4]}
    assert set(ids) <= set(git(bare, "rev-list", "--all").split())


def test_a_stack_keeps_as_many_entries_on_the_remote_as_retention_protects_undo_points() -> None:
    from snapshotter import Retention

    assert Retention().max_undo == hoststate.KEPT_ENTRIES
