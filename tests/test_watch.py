"""Watch mode: snapshots that walk only what changed must equal full walks.

The randomized test edits a real folder in every way the walker cares about
(content, exec bit, symlinks, renames of files and folders, file<->folder
swaps, .gitignore edits at any depth, ignored and nested-.git content) and, after
each batch, compares a watch-mode snapshot with a full walk of the same folder
by a second Snapshotter, which never watches. They must agree on the tree id
and on the skipped paths, and most of the watch-mode snapshots must really have
been incremental, or the test would prove nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import stat
import sys
from pathlib import Path

import pytest
from conftest import kernel_limit

from snapshotter import RestoreConflict, Snapshotter, watch_available
from snapshotter.engine.worktree.trust import lasting_shapes

pytestmark = [
    pytest.mark.skipif(not watch_available(), reason="watch mode needs watchdog 7.1 (Python 3.11+)"),
    pytest.mark.skipif(sys.platform == "darwin", reason="FSEvents delivers events late; covered on Linux"),
]

NAMES = ["a", "b", "c", "src", "lib", "x y", "ü", "keep.log", "run.log", "build", "Makefile"]


def _one_file_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    return ws


def _rel_paths(root: Path) -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            out.append(Path(folder, name))
    return out


def _random_path(rng: random.Random, root: Path) -> Path:
    depth = rng.randint(0, 3)
    parts = [rng.choice(NAMES) for _ in range(depth)]
    return root.joinpath(*parts, rng.choice(NAMES) + rng.choice(["", ".py", ".txt"]))


def _mutate(rng: random.Random, root: Path) -> None:
    """One random edit; failures (a file where a folder is needed...) are simply skipped."""
    existing = _rel_paths(root)
    op = rng.choice(
        ["write", "write", "write", "append", "delete", "rename", "mkdir", "chmod", "symlink", "swap", "ignore", "git"]
    )
    try:
        if op == "write" or not existing:
            path = _random_path(rng, root)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{rng.random()}\n" * rng.randint(0, 5))
            return
        target = rng.choice(existing)
        if op == "append" and target.is_file() and not target.is_symlink():
            with open(target, "a") as handle:
                handle.write("more\n")
        elif op == "delete":
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
        elif op == "rename":
            dest = _random_path(rng, root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if not dest.exists() and not str(dest).startswith(str(target) + os.sep):
                os.rename(target, dest)
        elif op == "mkdir":
            (target.parent / (rng.choice(NAMES) + "_d")).mkdir(exist_ok=True)
        elif op == "chmod" and target.is_file() and not target.is_symlink():
            target.chmod(target.stat().st_mode ^ stat.S_IXUSR)
        elif op == "symlink":
            link = target.parent / (rng.choice(NAMES) + ".lnk")
            if not os.path.lexists(link):
                os.symlink(rng.choice(["a", "../b", "missing/x"]), link)
        elif op == "swap":  # a file becomes a folder or the other way round
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
                target.write_text("was a folder\n")
            else:
                target.unlink()
                target.mkdir()
                (target / "inside.txt").write_text("was a file\n")
        elif op == "ignore":
            folder = target if target.is_dir() and not target.is_symlink() else target.parent
            rules = rng.choice(["*.log\n", "build/\n!keep.log\n", "b\n", "*.txt\n!a.txt\n", ""])
            (folder / ".gitignore").write_text(rules)
        elif op == "git":  # a nested repository's metadata is never recorded
            folder = target if target.is_dir() and not target.is_symlink() else target.parent
            (folder / ".git").mkdir(exist_ok=True)
            (folder / ".git" / "HEAD").write_text(f"ref: {rng.random()}\n")
    except OSError:
        pass


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_watch_mode_snapshots_equal_full_walks(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    ws = tmp_path / "ws"
    ws.mkdir()
    for _ in range(40):
        _mutate(rng, ws)
    incremental = 0
    with (
        Snapshotter(ws, home=tmp_path / "watch", watch=True) as watched,
        Snapshotter(ws, home=tmp_path / "full") as full,
    ):
        assert watched.watching
        for round_ in range(25):
            for _ in range(rng.randint(0, 6)):
                _mutate(rng, ws)
            seen = watched.snapshot(f"round {round_}")
            incremental += watched.last_scan.incremental
            truth = full.snapshot(f"round {round_}")
            assert seen.tree_id == truth.tree_id, f"seed {seed}, round {round_}"
            assert seen.skipped == truth.skipped
            _assert_bookkeeping_whole(watched)
            if rng.random() < 0.2:  # a restore is a burst of changes the watcher must see too
                older = rng.choice(watched.list(limit=None))
                with contextlib.suppress(RestoreConflict):  # refused: untracked files in the way
                    watched.restore(older.id)
                assert watched.snapshot("after restore").tree_id == full.snapshot("after restore").tree_id
    assert incremental >= 20, "watch mode fell back to full walks: the comparison proved nothing"


def _assert_bookkeeping_whole(watched: Snapshotter) -> None:
    """What an incremental scan keeps up to date from the folders it walked (the
    count the workspace caps check, the shapes for the next stat cache) equals
    what counting over every folder gives."""
    scan = watched._engine._last  # type: ignore[union-attr]
    assert scan is not None
    assert scan.entry_count() == scan.tracked_count() + len(scan.nodes)
    assert scan.shapes == lasting_shapes(scan.nodes)


def test_no_change_snapshot_walks_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("a\n")
    with Snapshotter(ws, home=tmp_path / "h", watch=True) as snap:
        first = snap.snapshot()
        assert not snap.last_scan.incremental  # nothing is known before the first walk
        again = snap.snapshot()
        assert snap.last_scan.incremental and snap.last_scan.dirs_seen == 0
        assert again.tree_id == first.tree_id
        (ws / "src" / "a.py").write_text("changed\n")  # no sleep: the cookie orders it before the snapshot
        changed = snap.snapshot()
        assert snap.last_scan.incremental and snap.last_scan.files_hashed == 1
        assert changed.tree_id != first.tree_id


def test_a_folder_moved_into_a_new_folder_stays_watched(tmp_path: Path) -> None:
    """``mkdir -p new/deep && mv old new/deep/x``: the moved folder keeps its watch,
    and watch mode goes on. watchdog 7.1.1 drops that watch (pyproject.toml leaves
    that release out); the journal then notices and turns watch mode off."""
    ws = tmp_path / "ws"
    (ws / "old").mkdir(parents=True)
    (ws / "old" / "a.py").write_text("a\n")
    with Snapshotter(ws, home=tmp_path / "h", watch=True) as snap:
        snap.snapshot()
        (ws / "new" / "deep").mkdir(parents=True)
        os.rename(ws / "old", ws / "new" / "deep" / "x")
        moved = snap.snapshot()
        assert snap.watching and snap.last_scan.incremental
        (ws / "new" / "deep" / "x" / "a.py").write_text("changed\n")
        changed = snap.snapshot()
        assert snap.watching and snap.last_scan.incremental and snap.last_scan.files_hashed == 1
        assert changed.tree_id != moved.tree_id


def test_lost_events_mean_a_full_walk(tmp_path: Path) -> None:
    """watchdog only logs an inotify queue overflow; that record must distrust the journal."""
    ws = _one_file_workspace(tmp_path)
    with Snapshotter(ws, home=tmp_path / "h", watch=True) as snap:
        snap.snapshot()
        snap.snapshot()
        assert snap.last_scan.incremental
        lost = "Inotify queue overflowed; filesystem events were lost"  # watchdog's own words
        logging.getLogger("watchdog.observers.inotify_c").warning(lost)
        snap.snapshot()
        assert not snap.last_scan.incremental
        snap.snapshot()
        assert snap.last_scan.incremental  # trusted again after the full walk


def test_real_inotify_overflow_is_noticed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    limit = Path("/proc/sys/fs/inotify/max_queued_events")
    if not sys.platform.startswith("linux") or not os.access(limit, os.W_OK):
        pytest.skip("needs a writable /proc/sys/fs/inotify/max_queued_events (root on Linux)")
    ws = tmp_path / "ws"
    ws.mkdir()
    with Snapshotter(ws, home=tmp_path / "h", watch=True) as snap, Snapshotter(ws, home=tmp_path / "f") as full:
        snap.snapshot()
        # The limit applies to inotify instances created from now on.
        with kernel_limit(limit, 8), Snapshotter(ws, home=tmp_path / "small", watch=True) as small:
            small.snapshot()
            with caplog.at_level(logging.WARNING, logger="watchdog"):
                for i in range(3000):
                    (ws / f"f{i}.txt").write_text("x")
                seen = small.snapshot()
            if not any("overflow" in r.getMessage().lower() for r in caplog.records):
                pytest.skip("the kernel queue did not overflow on this run")
            assert not small.last_scan.incremental
        assert seen.tree_id == full.snapshot().tree_id == snap.snapshot().tree_id


def test_a_dead_watcher_means_full_walks(tmp_path: Path) -> None:
    ws = _one_file_workspace(tmp_path)
    with Snapshotter(ws, home=tmp_path / "h", watch=True) as snap:
        snap.snapshot()
        journal = snap._engine.journal  # type: ignore[union-attr]
        assert journal is not None
        journal._observer.stop()
        journal._observer.join()
        assert not snap.watching
        (ws / "b.txt").write_text("b\n")
        info = snap.snapshot()
        assert not snap.last_scan.incremental
        assert info.files_changed == 1


def test_changes_while_closed_are_found(tmp_path: Path) -> None:
    ws = _one_file_workspace(tmp_path)
    with Snapshotter(ws, home=tmp_path / "h", watch=True) as snap:
        snap.snapshot()
    (ws / "a.txt").write_text("changed while nobody watched\n")
    with Snapshotter(ws, home=tmp_path / "h", watch=True) as snap:
        info = snap.snapshot()
        assert not snap.last_scan.incremental
        assert info.files_changed == 1


def test_gitignore_edit_is_applied_below_unchanged_folders(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "pkg" / "deep").mkdir(parents=True)
    (ws / "pkg" / "deep" / "x.log").write_text("log\n")
    (ws / "pkg" / "deep" / "y.py").write_text("y\n")
    with (
        Snapshotter(ws, home=tmp_path / "h", watch=True) as snap,
        Snapshotter(ws, home=tmp_path / "f") as full,
    ):
        snap.snapshot()
        (ws / ".gitignore").write_text("*.log\n")
        assert snap.snapshot().tree_id == full.snapshot().tree_id
        assert snap.last_scan.incremental
        (ws / ".gitignore").unlink()
        assert snap.snapshot().tree_id == full.snapshot().tree_id


def test_without_watchdog_it_walks_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_watchdog(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("watchdog"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_watchdog)
    ws = _one_file_workspace(tmp_path)
    with Snapshotter(ws, home=tmp_path / "h", watch=True) as snap:
        assert not snap.watching
        snap.snapshot()
        snap.snapshot()
        assert not snap.last_scan.incremental


def _user_watch_count() -> int:
    """inotify watches held by every process of this user (the limit is per user)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != os.getuid():
                continue
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                        with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                            total += sum(1 for line in info if line.startswith("inotify wd:"))
                except OSError:
                    continue
        except OSError:
            continue
    return total


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify watches are a Linux matter")
def test_an_unwatched_folder_turns_watch_mode_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """watchdog silently skips a folder it cannot watch; the kernel's list of watches tells."""
    from snapshotter.engine.worktree import watch

    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "x.txt").write_text("x\n")
    real = watch._inotify_watches
    hidden: set[Path] = set()

    def without_hidden() -> set[tuple[int, int]] | None:
        found = real()
        assert found is not None
        for path in hidden:
            st = os.stat(path)
            found.discard((watch._kernel_dev(st.st_dev), st.st_ino))
        return found

    monkeypatch.setattr(watch, "_inotify_watches", without_hidden)
    hidden.add(ws / "a" / "b")  # at start: one folder lacks its watch
    with Snapshotter(ws, home=tmp_path / "h1", watch=True) as snap:
        assert not snap.watching
    hidden.clear()
    with (
        Snapshotter(ws, home=tmp_path / "h2", watch=True) as snap,
        Snapshotter(ws, home=tmp_path / "full") as full,
    ):
        assert snap.watching
        snap.snapshot()
        (ws / "new" / "deep").mkdir(parents=True)
        hidden.add(ws / "new" / "deep")  # a new folder whose watch was never added
        (ws / "new" / "deep" / "y.txt").write_text("y\n")
        assert snap.snapshot().tree_id == full.snapshot().tree_id
        assert not snap.watching and not snap.last_scan.incremental
        (ws / "new" / "deep" / "y.txt").write_text("changed, unseen by the watcher\n")
        assert snap.snapshot().tree_id == full.snapshot().tree_id


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify watches are a Linux matter")
def test_a_watcher_that_lost_a_watch_is_replaced_after_a_while(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A watch lost once (as watchdog 7.1.1 lost them) turns watch mode off; a scan
    ``WATCH_AGAIN_AFTER`` seconds later watches afresh: one full walk, then
    incremental scans again. A watch that cannot be had stays off (the test above)."""
    from snapshotter.engine.session import engine
    from snapshotter.engine.worktree import watch

    monkeypatch.setattr(engine, "WATCH_AGAIN_AFTER", 0.0)
    real = watch._inotify_watches
    lost: list[Path] = []  # watches lost once, found again by a fresh watcher

    def losing_once() -> set[tuple[int, int]] | None:
        found = real()
        assert found is not None
        while lost:
            st = os.stat(lost.pop())
            found.discard((watch._kernel_dev(st.st_dev), st.st_ino))
        return found

    monkeypatch.setattr(watch, "_inotify_watches", losing_once)
    ws = _one_file_workspace(tmp_path)
    with (
        Snapshotter(ws, home=tmp_path / "h", watch=True) as snap,
        Snapshotter(ws, home=tmp_path / "full") as full,
    ):
        snap.snapshot()
        (ws / "new" / "deep").mkdir(parents=True)
        lost.append(ws / "new" / "deep")
        assert snap.snapshot().tree_id == full.snapshot().tree_id
        assert not snap.watching and not snap.last_scan.incremental
        (ws / "new" / "deep" / "y.txt").write_text("y\n")
        assert snap.snapshot().tree_id == full.snapshot().tree_id
        assert snap.watching and not snap.last_scan.incremental  # watching afresh: one full walk first
        (ws / "new" / "deep" / "y.txt").write_text("changed\n")
        assert snap.snapshot().tree_id == full.snapshot().tree_id
        assert snap.watching and snap.last_scan.incremental and snap.last_scan.files_hashed == 1


def test_the_real_watch_limit_is_noticed(tmp_path: Path) -> None:
    limit = Path("/proc/sys/fs/inotify/max_user_watches")
    if not sys.platform.startswith("linux") or not os.access(limit, os.W_OK):
        pytest.skip("needs a writable /proc/sys/fs/inotify/max_user_watches (root on Linux)")
    ws = tmp_path / "ws"
    for name in ("a", "b", "c", "d"):
        (ws / name).mkdir(parents=True)
        (ws / name / "f.txt").write_text(name)
    # The root and one folder; watchdog skips the rest.
    with kernel_limit(limit, _user_watch_count() + 2), Snapshotter(ws, home=tmp_path / "h", watch=True) as snap:
        assert not snap.watching
        assert snap.snapshot().files_changed == 4


def test_a_big_restore_pauses_watching_then_watches_afresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from snapshotter.engine.session import engine

    monkeypatch.setattr(engine, "PAUSE_WATCH_AT", 5)
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(10):
        (ws / f"f{i}.txt").write_text(f"{i}\n")
    with (
        Snapshotter(ws, home=tmp_path / "h", watch=True) as snap,
        Snapshotter(ws, home=tmp_path / "full") as full,
    ):
        before = snap.snapshot()
        for i in range(10):
            (ws / f"f{i}.txt").write_text(f"changed {i}\n")
        snap.snapshot()
        assert snap.last_scan.incremental
        assert snap.restore(before.id).written == 10
        assert snap.watching  # watching again, afresh
        (ws / "f3.txt").write_text("after the restore\n")
        assert snap.snapshot().tree_id == full.snapshot().tree_id
        assert not snap.last_scan.incremental  # the pause may have hidden changes: one full walk
        (ws / "f4.txt").write_text("and later\n")
        assert snap.snapshot().tree_id == full.snapshot().tree_id
        assert snap.last_scan.incremental
        small = snap.list(limit=2)[1]
        (ws / "f5.txt").write_text("x\n")
        snap.restore(small.id, files=["f5.txt"])  # a small restore keeps watching throughout
        assert snap.snapshot().tree_id == full.snapshot().tree_id and snap.last_scan.incremental
