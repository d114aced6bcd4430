"""The preload on a thread (``worktree.preloadthread``): where the C loop is
built, a thread checks unchanged folders from the far end of the walk's order
with the GIL released (``_statmatch.check_folders``) instead of a forked copy.
Whatever it says, the snapshot must be what a walk alone (and git) makes of the
folder; its verdicts must be the forked copy's (``preload._check_from_the_end``,
run here in this process) for every folder it checks; it must run in a process
with other threads, where a fork may not; and it must never outlive its walk.

As in test_preload.py, ``MIN_FILES`` is lowered and the walk waits for the
thread (``WAIT_FOR_COPY``), so every folder it vouches for is taken on its word.
A test imported from there runs again here, on the thread.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from conftest import git_shadow_tree, needs_git, write
from test_preload import (
    FOLDERS,
    _again,
    _first,
    _saved_cache,
    _settle,
    _verdicts_run_here,
    again_beside_another_thread,
    failing_walk,  # noqa: F401 - a fixture
    first_with_a_folder_set_back,
    no_preload_thread,
    test_a_change_in_every_folder_is_found,  # noqa: F401 - run again here, on the thread
    test_no_copy_or_thread_outlives_a_failed_walk,  # noqa: F401 - the same
)

from snapshotter import Snapshotter
from snapshotter.engine.worktree import preload, preloadthread
from snapshotter.engine.worktree.statcache import StatCache

pytestmark = pytest.mark.skipif(
    not preloadthread.available(), reason="the preload's thread needs the compiled loop (setup.py) and two cores"
)


@pytest.fixture(autouse=True)
def _eager(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preload, "MIN_FILES", 0)
    monkeypatch.setattr(preload, "WAIT_FOR_COPY", True)


def _thread_verdicts(ws: Path, cache: StatCache, cutoff: int | None = None) -> dict[str, tuple[int, int, int, int]]:
    """folder -> the thread's verdict (total bytes or -1, and the stat it saw), for each folder it checked."""
    running = preloadthread.ThreadPreload(str(ws), cache, cache.racy_cutoff() if cutoff is None else cutoff)
    running.may_hold(0)  # waits for the thread (WAIT_FOR_COPY)
    found: dict[str, tuple[int, int, int, int]] = {}
    for rel in preload.walk_order(cache):
        view = cache.packed_view(rel)
        if view is None:
            continue
        at = running._jobs.get((id(view[0]), view[3]))
        if at is not None:
            found[rel] = preloadthread._VERDICT.unpack_from(running._verdicts, at * preloadthread._VERDICT.size)
    running.stop()
    return found


def _both_loops(ws: Path, home: Path) -> tuple[dict[str, tuple[int, int, int, int]], dict[str, tuple[int, ...]]]:
    cache = _saved_cache(ws, home)
    return _thread_verdicts(ws, cache), _verdicts_run_here(ws, home, cache)


def test_an_unchanged_workspace_is_vouched_for_by_the_thread(ws: Path, home: Path) -> None:
    first = _first(ws, home)
    tree, snap = _again(ws, home)
    assert tree == first
    assert snap.last_scan.dirs_preloaded == FOLDERS + 1, "every folder with files (the root too) is the thread's call"
    assert snap.last_scan.files_hashed == 0
    assert no_preload_thread()


@needs_git
def test_the_tree_is_gits(ws: Path, home: Path, tmp_path: Path) -> None:
    _first(ws, home)
    write(ws, {"d2/f7/file1.txt": "edited\n", "d3/new.txt": "new\n", "d0/f5/file0.txt": "FOLDER 5 FILE 0\n"})
    (ws / "d4/f9/file2.txt").unlink()
    os.utime(ws / "d1/f1/file1.txt", ns=(1, 1))  # same content, older stamp: hashed again, same blob
    tree, snap = _again(ws, home)
    assert snap.last_scan.files_hashed == 4  # the three written and the one stamped older
    assert snap.last_scan.dirs_preloaded == FOLDERS + 1 - 4  # f9, f7, f5 and f1; d3 has no files of its own
    assert tree == git_shadow_tree(ws, tmp_path / "shadow")


def test_without_waiting_the_result_is_the_same(ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As it runs for real: each side checks what it reaches first."""
    monkeypatch.setattr(preload, "WAIT_FOR_COPY", False)
    first = _first(ws, home)
    for _ in range(5):
        assert _again(ws, home)[0] == first
    write(ws, {f"d{i % 5}/f{i}/file{i % 4}.txt": f"changed {i}\n" for i in range(0, FOLDERS, 3)})
    tree, snap = _again(ws, home)
    assert snap.last_scan.files_hashed == len(range(0, FOLDERS, 3))
    with Snapshotter(ws, home=home.parent / "cold") as cold:
        assert cold.snapshot().tree_id == tree
    assert no_preload_thread()


def test_it_runs_while_another_thread_does(ws: Path, home: Path) -> None:
    """A library's host has threads of its own: a fork may not be made there, a thread may."""
    _first(ws, home)
    assert again_beside_another_thread(ws, home).last_scan.dirs_preloaded == FOLDERS + 1


def test_its_verdicts_are_the_forked_copys_for_an_unchanged_workspace(ws: Path, home: Path) -> None:
    _first(ws, home)
    threaded, forked = _both_loops(ws, home)
    assert len(threaded) == FOLDERS + 1
    assert threaded == forked


def test_its_verdicts_are_the_forked_copys_for_every_kind_of_change(ws: Path, home: Path) -> None:
    """A file rewritten (same size), one added, one removed, a file become a
    folder, a folder's mtime set back, a file's mtime set back, a symlink
    replacing a file, a folder replaced by a symlink to its files, one emptied."""
    first_with_a_folder_set_back(ws, home)
    write(ws, {"d1/f1/file0.txt": "FOLDER 1 FILE 0\n", "d2/f2/new.txt": "new\n"})
    (ws / "d3/f3/file1.txt").unlink()
    (ws / "d4/f4/file2.txt").unlink()
    (ws / "d4/f4/file2.txt").mkdir()
    os.utime(ws / "d0/f10/file1.txt", ns=(1, 1))
    (ws / "d1/f11/file3.txt").unlink()
    (ws / "d1/f11/file3.txt").symlink_to("file2.txt")
    moved = ws.parent / "moved-away"
    (ws / "d2/f12").rename(moved)
    (ws / "d2/f12").symlink_to(moved, target_is_directory=True)
    for name in os.listdir(ws / "d3/f13"):
        (ws / "d3/f13" / name).unlink()
    _settle()
    threaded, forked = _both_loops(ws, home)
    assert "d2/f12" not in forked  # not opened through the link: no verdict
    assert threaded.pop("d2/f12") == (-1, 0, 0, 0)  # not opened through the link either: "check it yourself"
    assert threaded == forked
    mismatched = {rel for rel, verdict in threaded.items() if verdict[0] == -1}
    assert mismatched == {"d1/f1", "d2/f2", "d3/f3", "d4/f4", "d0/f10", "d1/f11", "d3/f13"}
    assert threaded["d2/f7"][0] > 0  # its shape's stat, set back, still matched


def test_it_checks_no_folder_the_walk_finds_racy(ws: Path, home: Path) -> None:
    _first(ws, home)
    cache = _saved_cache(ws, home)
    with_files = [rel for rel in preload.walk_order(cache) if cache.folder(rel)]
    ctimes = sorted(cache.shapes[rel][1] for rel in with_files)
    cutoff = ctimes[len(ctimes) // 2]
    threaded = _thread_verdicts(ws, cache, cutoff)
    assert set(threaded) == set(_verdicts_run_here(ws, home, cache, cutoff))
    assert not {rel for rel in with_files if cache.shapes[rel][1] >= cutoff} & set(threaded)


def test_the_loop_stops_where_the_walk_has_reached_and_when_told(ws: Path, home: Path) -> None:
    _first(ws, home)
    cache = _saved_cache(ws, home)
    order = preload.walk_order(cache)
    jobs = []
    bodies: list[bytes] = []
    for place in range(len(order) - 1, -1, -1):
        view = cache.packed_view(order[place])
        if view is None or not view[4]:
            continue
        if not bodies:
            bodies.append(view[0])
        assert view[0] is bodies[0]
        shape = cache.shapes[order[place]]
        jobs.append((os.fsencode(order[place]) or b".", place, *shape[:3], 0, *view[1:]))
    from snapshotter.engine.worktree import _statmatch

    def run(reached: int, stop: int) -> tuple[int, bytearray]:
        control = bytearray(32)
        _statmatch.tell(control, 0, reached)
        _statmatch.tell(control, 1, stop)
        out = bytearray(32 * len(jobs))
        root = os.open(ws, os.O_RDONLY)
        try:
            _statmatch.check_folders(root, jobs, bodies, cache.racy_cutoff(), control, out)
        finally:
            os.close(root)
        return _statmatch.done(control), out

    assert run(0, 0)[0] == len(jobs) == FOLDERS + 1
    half = len(order) // 2
    done, out = run(half, 0)
    assert done == sum(job[1] >= half for job in jobs) and 0 < done < len(jobs)
    assert all(total > 0 for total, *_ in preloadthread._VERDICT.iter_unpack(out[: 32 * done]))
    assert not any(out[32 * done :])
    assert run(0, 1)[0] == 0


def test_bad_input_to_the_loop_is_a_python_error_not_a_crash(ws: Path, home: Path) -> None:
    from snapshotter.engine.worktree import _statmatch

    root = os.open(ws, os.O_RDONLY)
    job = (b".", 0, 0, 0, 0, 0, 0, 4, 0, 1)
    try:
        with pytest.raises(ValueError, match="names no body"):
            _statmatch.check_folders(root, [job[:5] + (3,) + job[6:]], [b"x\0"], 0, bytearray(32), bytearray(32))
        with pytest.raises(ValueError, match="too small"):
            _statmatch.check_folders(root, [job], [b"x\0"], 0, bytearray(32), bytearray(8))
        with pytest.raises(ValueError, match="too small"):
            _statmatch.check_folders(root, [job], [b"x\0"], 0, bytearray(8), bytearray(32))
        with pytest.raises(TypeError):
            _statmatch.check_folders(root, [("not bytes",) + job[1:]], [b"x\0"], 0, bytearray(32), bytearray(32))
        with pytest.raises(TypeError):
            _statmatch.check_folders(root, [job], [b"x\0"], 0, b"read-only" * 4, bytearray(32))
        with pytest.raises(ValueError):
            _statmatch.tell(bytearray(32), 2, 1)  # only REACHED and STOP may be set
        # Records past the bytes, names past them: no verdict of a match, no crash.
        own = os.stat(ws)
        for names_end, records_at in ((4, 10**9), (10**9, 0), (0, 0)):
            damaged = (b".", 0, own.st_mtime_ns, own.st_ctime_ns, own.st_ino, 0, 0, names_end, records_at, 1)
            out, control = bytearray(32), bytearray(32)
            _statmatch.check_folders(root, [damaged], [b"x\0y\0"], 2**62, control, out)
            assert _statmatch.done(control) == 1
            assert preloadthread._VERDICT.unpack_from(out)[0] == -1
    finally:
        os.close(root)


def test_a_thread_that_fails_leaves_the_walk_to_check_every_folder(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _first(ws, home)

    def broken(self: StatCache, rel: str) -> None:
        raise RuntimeError("a bug in the thread")

    monkeypatch.setattr(StatCache, "packed_view", broken)
    tree, snap = _again(ws, home)
    assert tree == first
    assert snap.last_scan.dirs_preloaded == 0 and snap.last_scan.files_hashed == 0
    assert "Traceback" not in capsys.readouterr().err


def test_where_no_thread_can_start_the_walk_does_it_all(ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _first(ws, home)

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    monkeypatch.setattr(preloadthread, "available", lambda: True)
    tree, snap = _again(ws, home, second_core=True)
    assert tree == first and snap.last_scan.files_hashed == 0
