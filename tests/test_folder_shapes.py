"""Folders whose own stat is unchanged are not listed again, and that never hides a change.

Each test changes the workspace in a way that does or does not touch a folder's
mtime, and checks the next snapshot against a cold one taken in a fresh store
(no stat cache, every folder listed): the tree ids must be equal.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from pathlib import Path

from conftest import write
from dulwich.object_store import iter_tree_contents
from dulwich.repo import Repo

from snapshotter import SnapshotInfo, Snapshotter
from snapshotter.engine import fsutil
from snapshotter.engine.worktree import statcache
from snapshotter.engine.worktree.statcache import StatCache
from snapshotter.frontends.shared import config


def _files(snap: Snapshotter, info: SnapshotInfo) -> list[str]:
    with Repo(snap.store_path) as repo:
        entries = iter_tree_contents(repo.object_store, info.tree_id.encode())  # hex: dulwich before 1.2.7 wants it
        return sorted(entry.path.decode() for entry in entries if entry.path is not None)


def _settle() -> None:
    """Let time pass, so folders changed so far are old enough to be trusted
    by the next walk (see ``fsutil.RECENT_NS``)."""
    time.sleep(fsutil.RECENT_NS / 1e9 + 0.03)


def _cold_tree(ws: Path, home: Path, **options: object) -> str:
    with Snapshotter(ws, home=home, **options) as cold:  # type: ignore[arg-type]
        return cold.snapshot().tree_id


def _tree(n_dirs: int = 6) -> dict[str, str]:
    files = {f"d{i}/sub/f{j}.txt": f"{i} {j}\n" for i in range(n_dirs) for j in range(3)}
    files.update({f"d{i}/top.txt": f"top {i}\n" for i in range(n_dirs)})
    files["root.txt"] = "root\n"
    return files


def _first_snapshot(ws: Path, make: Callable[..., Snapshotter]) -> Snapshotter:
    """The standard tree, old enough for its folders to be trusted, snapshotted once."""
    write(ws, _tree())
    _settle()
    snap = make()
    snap.snapshot()
    return snap


def test_unchanged_folders_are_not_listed_again(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, _tree())
    _settle()
    snap = make()
    first = snap.snapshot()
    assert snap.last_scan.dirs_listed == snap.last_scan.dirs_seen == 13
    second = snap.snapshot()
    assert second.tree_id == first.tree_id
    assert snap.last_scan.dirs_listed == 0
    assert snap.last_scan.files_seen == 25


def test_the_option_turns_it_off(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write(ws, _tree())
    _settle()
    snap = make(trust_folder_mtimes=False)
    snap.snapshot()
    snap.snapshot()
    assert snap.last_scan.dirs_listed == snap.last_scan.dirs_seen == 13


def test_the_setting_reaches_the_library(ws: Path, home: Path) -> None:
    write(ws, _tree())
    _settle()
    settings = config.resolve(str(ws), {"home": str(home)}, {"SNAPSHOTTER_TRUST_FOLDER_MTIMES": "off"})
    options = config.snapshotter_options(settings)
    assert options["trust_folder_mtimes"] is False
    with Snapshotter(ws, **options) as snap:
        snap.snapshot()
        snap.snapshot()
        assert snap.last_scan.dirs_listed == 13


def test_added_removed_and_renamed_entries_are_seen(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    snap = _first_snapshot(ws, make)
    _settle()
    write(ws, {"d1/sub/new.txt": "new\n", "d5/newdir/x.txt": "x\n"})
    os.unlink(ws / "d2/sub/f0.txt")
    os.rename(ws / "d3/top.txt", ws / "d3/moved.txt")
    info = snap.snapshot()
    # d1/sub, d5, d5/newdir (new), d2/sub, d3: listed; the other 9 folders were not.
    assert snap.last_scan.dirs_listed == 5
    assert info.tree_id == _cold_tree(ws, tmp_path / "cold")


def test_a_file_rewritten_in_place_is_seen_in_a_folder_not_listed(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    snap = _first_snapshot(ws, make)
    before = os.stat(ws / "d4/sub").st_mtime_ns
    (ws / "d4/sub/f1.txt").write_text("rewritten in place\n")
    assert os.stat(ws / "d4/sub").st_mtime_ns == before  # the folder itself did not change
    info = snap.snapshot()
    assert snap.last_scan.dirs_listed == 0
    assert snap.last_scan.files_hashed == 1
    assert info.tree_id == _cold_tree(ws, tmp_path / "cold")


def test_a_folder_whose_mtime_was_put_back_is_listed(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    snap = _first_snapshot(ws, make)
    st = os.stat(ws / "d0")
    (ws / "d0/sneaky.txt").write_text("added, then the mtime set back\n")
    os.utime(ws / "d0", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(ws / "d0").st_mtime_ns == st.st_mtime_ns
    info = snap.snapshot()  # the ctime cannot be set back
    assert "d0/sneaky.txt" in [c.path for c in snap.diff(snap.list()[1].id, info.id)]
    assert info.tree_id == _cold_tree(ws, tmp_path / "cold")


def test_a_gitignore_rewritten_in_place_is_read_again(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"d/.gitignore": "*.log\n", "d/a.log": "log\n", "d/a.txt": "a\n", "d/e/b.log": "b\n", "top.log": "t\n"})
    _settle()
    snap = make()
    first = snap.snapshot()
    assert "d/a.log" not in _files(snap, first)
    before = os.stat(ws / "d").st_mtime_ns
    (ws / "d/.gitignore").write_text("*.txt\n")  # same inode: d's own stat is unchanged
    assert os.stat(ws / "d").st_mtime_ns == before
    second = snap.snapshot()
    files = _files(snap, second)
    assert "d/a.log" in files and "d/e/b.log" in files and "d/a.txt" not in files
    assert second.tree_id == _cold_tree(ws, tmp_path / "cold")


def test_a_parent_rule_change_reaches_folders_not_listed(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write(ws, {".gitignore": "*.tmp\n", "a/b/c/x.bak": "x\n", "a/b/c/y.tmp": "y\n", "a/z.txt": "z\n"})
    _settle()
    snap = make()
    snap.snapshot()
    (ws / ".gitignore").write_text("*.bak\n")
    info = snap.snapshot()
    assert _files(snap, info) == [".gitignore", "a/b/c/y.tmp", "a/z.txt"]
    assert info.tree_id == _cold_tree(ws, tmp_path / "cold")
    with Snapshotter(ws, home=tmp_path / "home", exclude=["*.txt"]) as other:  # new rules from the caller
        assert _files(other, other.snapshot()) == [".gitignore", "a/b/c/y.tmp"]


def test_a_parent_rule_that_ignores_nothing_below_lists_nothing_again(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A root .gitignore that changes (a restore writes an older one back) gives
    every folder other rules; a folder whose names the new rules ignore none of
    is judged from its shape, not listed again, and one they do is listed."""
    write(ws, {**_tree(), ".gitignore": "*.log\n", "d0/sub/keep.bak": "k\n", "d1/skip.log": "s\n"})
    _settle()
    snap = make()
    snap.snapshot()
    (ws / ".gitignore").write_text("*.tmp\n")  # ignores nothing there is
    _settle()
    changed = snap.snapshot()
    assert snap.last_scan.dirs_listed == 1  # d1 only: it held an ignored name (the root is judged again)
    assert changed.tree_id == _cold_tree(ws, tmp_path / "cold1")
    assert "d1/skip.log" in _files(snap, changed)
    (ws / ".gitignore").write_text("*.bak\n")  # ignores d0/sub/keep.bak: that folder is listed and judged
    _settle()
    again = snap.snapshot()
    assert "d0/sub/keep.bak" not in _files(snap, again)
    assert again.tree_id == _cold_tree(ws, tmp_path / "cold2")
    (ws / ".gitignore").write_text("sub/\n")  # a folder pattern: the folders holding sub/ see it
    _settle()
    assert snap.snapshot().tree_id == _cold_tree(ws, tmp_path / "cold3")
    assert snap.status() == []


def test_a_skipped_file_is_looked_at_again(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"d/big.bin": "x" * 100, "d/small.txt": "s\n"})
    _settle()
    snap = make(max_new_file_size=50)
    first = snap.snapshot()
    assert _files(snap, first) == ["d/small.txt"]
    with open(ws / "d/big.bin", "r+b") as handle:  # shrunk in place: d's own stat is unchanged
        handle.truncate(10)
    second = snap.snapshot()
    assert _files(snap, second) == ["d/big.bin", "d/small.txt"]
    assert second.tree_id == _cold_tree(ws, tmp_path / "cold", max_new_file_size=50)


def test_a_restore_leaves_every_folder_right_for_the_next_walk(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write(ws, _tree())
    _settle()
    snap = make()
    first = snap.snapshot()
    write(ws, {"d1/extra/e.txt": "e\n", "d2/sub/f1.txt": "changed\n"})
    os.unlink(ws / "d3/top.txt")
    snap.snapshot()
    _settle()
    snap.restore(first.id)
    _settle()
    write(ws, {"d1/later.txt": "later\n"})
    info = snap.snapshot()
    assert info.tree_id == _cold_tree(ws, tmp_path / "cold")
    assert _files(snap, info) == sorted([*_tree(), "d1/later.txt"])


def test_random_edits_match_a_cold_walk(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Random creates, deletes, renames, in-place rewrites, folder moves and
    .gitignore edits, each snapshot compared with a cold walk of the same files."""
    rng = random.Random(1234)
    write(ws, _tree(4))
    _settle()
    snap = make()
    snap.snapshot()
    for step in range(40):
        files = sorted(str(p.relative_to(ws)) for p in ws.rglob("*") if p.is_file())
        dirs = sorted(str(p.relative_to(ws)) for p in ws.rglob("*") if p.is_dir())
        action = rng.choice(["create", "delete", "rename", "rewrite", "move_dir", "ignore", "mkdir"])
        if action == "create" or not files:
            folder = rng.choice(["", *dirs])
            write(ws, {os.path.join(folder, f"n{step}.txt"): f"{step}\n"})
        elif action == "delete":
            os.unlink(ws / rng.choice(files))
        elif action == "rename":
            source = rng.choice(files)
            os.rename(ws / source, ws / rng.choice(["", *dirs]) / f"r{step}.txt")
        elif action == "rewrite":
            (ws / rng.choice(files)).write_text(f"rewritten {step}\n")
        elif action == "move_dir" and dirs:
            source = rng.choice(dirs)
            if not os.path.exists(ws / f"m{step}"):
                os.rename(ws / source, ws / f"m{step}")
        elif action == "ignore":
            folder = rng.choice(["", *dirs])
            (ws / folder / ".gitignore").write_text(rng.choice(["*.txt\n", "n*\n", "sub/\n", ""]))
        else:
            (ws / f"empty{step}").mkdir()
        if rng.random() < 0.5:
            _settle()  # half the steps leave every folder old enough to be trusted
        info = snap.snapshot()
        assert info.tree_id == _cold_tree(ws, tmp_path / f"cold{step}"), (step, action)


def test_shapes_round_trip_and_follow_their_tables(tmp_path: Path) -> None:
    shape = (5, 6, 7, b"\1" * 20, True, ("sub", "ü"))
    cache = StatCache.from_paths({"d/a": (0o100644, 1, 2, 3, 4, b"\2" * 20), "e/b": (0o100644, 1, 2, 3, 4, b"\3" * 20)})
    cache.shapes.update(
        {"d": shape, "e": (1, 2, 3, b"\4" * 20, False, ()), "": (0, 0, 1, b"\5" * 20, False, ("d", "e"))}
    )
    path = str(tmp_path / "cache")
    statcache.save(path, cache)
    loaded = statcache.load(path)
    assert loaded.shapes == cache.shapes
    loaded.apply({"d/new": (0o100644, 1, 2, 3, 4, b"\6" * 20)})  # the table no longer is d's listing
    assert set(loaded.shapes) == {"", "e"}


def test_a_folder_changed_in_the_tick_its_cache_was_written_is_listed(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A change in the same clock tick as the listing leaves the folder's stat as
    recorded; such a shape (ctime not older than the cache) is never trusted."""
    snap = _first_snapshot(ws, make)
    snap.close()
    (ws / "d0/late.txt").write_text("created in the listing's tick\n")
    st = os.stat(ws / "d0")
    path = os.path.join(snap.store_path, "snapshotter", "statcache")
    cache = statcache.load(path)
    _, _, _, rules, gitignore, subdirs = cache.shapes["d0"]
    cache.shapes["d0"] = (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, rules, gitignore, subdirs)  # "listed" now
    statcache.save(path, cache)
    os.utime(path, ns=(st.st_ctime_ns, st.st_ctime_ns))  # and the cache written in that same tick
    fresh = make()
    info = fresh.snapshot()
    assert "d0/late.txt" in _files(fresh, info)
    assert fresh.last_scan.dirs_listed == 1


def test_a_folder_changed_just_before_the_walk_is_listed_again(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A change right after the listing, in the clock tick of the change before it,
    would leave the folder's stat as recorded: a folder that changed that
    recently gets no shape, and the next walk lists it again."""
    snap = _first_snapshot(ws, make)
    write(ws, {"d2/fresh.txt": "just now\n"})
    snap.snapshot()
    path = os.path.join(snap.store_path, "snapshotter", "statcache")
    assert "d2" not in statcache.load(path).shapes and "d1" in statcache.load(path).shapes
    snap.snapshot()
    assert snap.last_scan.dirs_listed == 1
    _settle()
    snap.snapshot()
    assert "d2" in statcache.load(path).shapes
    snap.snapshot()
    assert snap.last_scan.dirs_listed == 0


def test_a_new_stores_first_scan_reuses_the_size_checks_listing_and_sees_later_changes(  # type: ignore[no-untyped-def]
    ws: Path, make, tmp_path: Path, monkeypatch
) -> None:
    """A new store's size check lists every folder; the first scan takes the
    folders unchanged since instead of listing them again, and lists those
    changed in between. What it snapshots equals a cold snapshot of the end state."""
    from snapshotter import SkipReason
    from snapshotter.engine.worktree import readdir

    write(ws, _tree())
    os.symlink("root.txt", ws / "d1" / "link")
    _settle()
    listed: list[str] = []
    real_list = readdir.list_folder
    monkeypatch.setattr(readdir, "list_folder", lambda path, fd: listed.append(path) or real_list(path, fd))
    snap = make(max_new_file_size=1000)
    (ws / "d0" / "new.txt").write_text("created after the size check\n")  # d0 changes
    (ws / "d2" / "sub" / "f1.txt").unlink()  # d2/sub changes
    (ws / "d3" / "top.txt").write_text("rewritten in place, d3 unchanged\n")
    (ws / "d4" / "top.txt").write_text("x" * 5000)  # grown past the cap in place: d4 unchanged
    (ws / "d1" / "link").unlink()
    os.symlink("d0/top.txt", ws / "d1" / "link")  # replaced: d1 changes
    first = snap.snapshot()
    assert sorted(os.path.relpath(p, ws) for p in listed) == ["d0", "d1", "d2/sub"]
    assert [(s.path, s.reason) for s in first.skipped] == [("d4/top.txt", SkipReason.TOO_LARGE)]
    monkeypatch.setattr(readdir, "list_folder", real_list)
    assert first.tree_id == _cold_tree(ws, tmp_path / "cold", max_new_file_size=1000)
    assert snap.snapshot().tree_id == first.tree_id
    assert snap.last_scan.dirs_listed == 4  # no shape yet: the three changed ones, and d4 (a skipped file)


def test_the_first_scan_lists_again_folders_too_recent_or_untrusted(  # type: ignore[no-untyped-def]
    ws: Path, make, tmp_path: Path, monkeypatch
) -> None:
    """A folder changed just before the size check may change again within
    the same clock tick unseen: its listing is not reused. Nor is any without
    trust_folder_mtimes."""
    from snapshotter.engine.worktree import readdir

    listed: list[str] = []
    real_list = readdir.list_folder
    monkeypatch.setattr(readdir, "list_folder", lambda path, fd: listed.append(path) or real_list(path, fd))
    write(ws, _tree())
    make(home=tmp_path / "recent").snapshot()  # no settling: every folder is too recent
    assert len(listed) == 13
    _settle()
    listed.clear()
    make(home=tmp_path / "untrusted", trust_folder_mtimes=False).snapshot()
    assert len(listed) == 13
    listed.clear()
    make(home=tmp_path / "trusted").snapshot()
    assert listed == []
