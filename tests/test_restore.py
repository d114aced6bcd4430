"""Restore guarantees: exact for what the snapshot tracked, hands off everything else."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import deny_reading, forge_snapshot, read_tree, write

from snapshotter import PathNotFound, RestoreConflict, UnsafeTree
from snapshotter.engine import fsutil
from snapshotter.engine.gitstore import objects
from snapshotter.engine.gitstore.objects import MODE_FILE, serialize_tree


def test_modified_and_missing_files_come_back_with_exec_bit_and_symlinks(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n", "bin/run": "#!/bin/sh\n", "deep/er/x.txt": "x\n"})
    (ws / "bin/run").chmod(0o755)
    os.symlink("../a.txt", ws / "deep/link")
    os.symlink("nowhere", ws / "dangling")
    snap = make()
    first = snap.snapshot()
    expected = read_tree(ws)
    (ws / "a.txt").write_text("changed\n")
    (ws / "bin/run").unlink()
    (ws / "deep/link").unlink()
    os.symlink("elsewhere", ws / "deep/link")
    (ws / "dangling").unlink()
    (ws / "deep/er/x.txt").chmod(0o755)
    result = snap.restore(first.id)
    assert read_tree(ws) == expected
    assert set(result.written_paths) == {"a.txt", "bin/run", "deep/link", "dangling", "deep/er/x.txt"}
    assert result.deleted == 0
    assert os.readlink(ws / "deep/link") == "../a.txt"
    assert os.stat(ws / "bin/run").st_mode & 0o111


def test_new_tracked_files_are_removed_with_folders_they_leave_empty(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"keep.txt": "k\n"})
    (ws / "was-empty").mkdir()
    snap = make()
    first = snap.snapshot()
    write(ws, {"new.txt": "n\n", "newdir/sub/f.txt": "f\n", "mixed/untracked.log": "x", "mixed/t.txt": "t"})
    (ws / ".gitignore").write_text("*.log\n")
    result = snap.restore(first.id)
    assert not (ws / "new.txt").exists()
    assert not (ws / "newdir").exists()
    assert (ws / "mixed/untracked.log").exists()  # ignored: never touched, folder stays
    assert not (ws / "mixed/t.txt").exists()
    assert (ws / "was-empty").is_dir()  # not emptied by the restore: left alone
    assert set(result.deleted_paths) == {"new.txt", "newdir/sub/f.txt", "mixed/t.txt", ".gitignore"}


def test_file_deleted_before_the_snapshot_stays_deleted(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a", "b.txt": "b"})
    snap = make()
    snap.snapshot()
    (ws / "b.txt").unlink()
    second = snap.snapshot()
    write(ws, {"c.txt": "c"})
    snap.restore(second.id)
    assert sorted(os.listdir(ws)) == ["a.txt"]


def test_ignored_large_and_unreadable_files_are_never_touched(
    ws: Path,
    make,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    write(ws, {"a.txt": "a"})
    snap = make(max_new_file_size=1000)
    first = snap.snapshot()
    write(
        ws,
        {
            ".env": "SECRET=1\n",
            "node_modules/x/index.js": "js",
            "big.bin": b"\1" * 5000,
            "locked.txt": "private",
            "build/out.o": "obj",
        },
    )
    deny_reading(monkeypatch, "locked.txt")
    info = snap.snapshot()
    skipped = {(s.path, s.reason.value) for s in info.skipped}
    assert {("locked.txt", "unreadable"), ("big.bin", "too-large")} <= skipped
    result = snap.restore(first.id)
    for kept in (".env", "node_modules/x/index.js", "big.bin", "locked.txt"):
        assert (ws / kept).exists(), kept
    assert (ws / "big.bin").read_bytes() == b"\1" * 5000
    assert (ws / ".env").read_text() == "SECRET=1\n"
    assert (ws / "locked.txt").read_text() == "private"
    assert result.deleted_paths == ("build/out.o",)  # tracked, and not in the snapshot


def test_files_already_tracked_are_kept_when_they_grow_past_the_limit(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"data.bin": b"\1" * 10})
    snap = make(max_new_file_size=100)
    snap.snapshot()
    (ws / "data.bin").write_bytes(b"\2" * 1000)
    info = snap.snapshot()
    assert not info.skipped
    (ws / "data.bin").write_bytes(b"\3")
    snap.restore(info.id)
    assert (ws / "data.bin").read_bytes() == b"\2" * 1000


def test_selective_restore_touches_only_listed_paths(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a1", "b.txt": "b1", "dir/c.txt": "c1", "dir/d.txt": "d1"})
    snap = make()
    first = snap.snapshot()
    write(
        ws, {"a.txt": "a2", "b.txt": "b2", "dir/c.txt": "c2", "dir/d.txt": "d2", "dir/new.txt": "n", "other.txt": "o"}
    )
    result = snap.restore(first.id, files=["a.txt", "dir", "other.txt"])
    assert (ws / "a.txt").read_text() == "a1"
    assert (ws / "b.txt").read_text() == "b2"
    assert (ws / "dir/c.txt").read_text() == "c1" and (ws / "dir/d.txt").read_text() == "d1"
    assert not (ws / "dir/new.txt").exists()
    assert not (ws / "other.txt").exists()  # listed and absent from the snapshot: deleted
    assert sorted(result.written_paths) == ["a.txt", "dir/c.txt", "dir/d.txt"]
    assert sorted(result.deleted_paths) == ["dir/new.txt", "other.txt"]


def test_identical_files_are_not_rewritten(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"same.txt": "s", "changed.txt": "c"})
    past = time.time() - 1000
    os.utime(ws / "same.txt", (past, past))
    snap = make()
    first = snap.snapshot()
    (ws / "changed.txt").write_text("C")
    before = os.stat(ws / "same.txt")
    result = snap.restore(first.id)
    after = os.stat(ws / "same.txt")
    assert (before.st_mtime_ns, before.st_ino) == (after.st_mtime_ns, after.st_ino)
    assert result.written_paths == ("changed.txt",)
    assert result.unchanged == 1


def test_full_restore_takes_a_pre_restore_snapshot_that_undoes_it(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "v1"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"a.txt": "v2 unsaved", "b.txt": "new"})
    result = snap.restore(first.id)
    assert result.safety_snapshot_id is not None
    safety = snap.get(result.safety_snapshot_id)
    assert safety.label == "pre-restore"
    assert snap.get("pre-restore").id == safety.id
    snap.restore(safety.id)
    assert (ws / "a.txt").read_text() == "v2 unsaved" and (ws / "b.txt").read_text() == "new"


def test_restore_reports_honestly_when_nothing_changes(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a"})
    snap = make()
    first = snap.snapshot()
    count = len(snap.list())
    result = snap.restore(first.id)
    assert (result.written, result.deleted, result.unchanged) == (0, 0, 1)
    assert result.safety_snapshot_id == first.id  # the state was already saved: no new snapshot
    assert len(snap.list()) == count


def test_dry_run_changes_nothing_and_reports_the_plan(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"a.txt": "b", "n.txt": "n"})
    before = read_tree(ws)
    count = len(snap.list())
    result = snap.restore(first.id, dry_run=True)
    assert result.dry_run and result.written_paths == ("a.txt",) and result.deleted_paths == ("n.txt",)
    assert read_tree(ws) == before
    assert len(snap.list()) == count


def test_type_swaps_between_file_folder_and_symlink(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"x": "file", "d/inner.txt": "i"})
    os.symlink("x", ws / "l")
    snap = make()
    first = snap.snapshot()
    expected = read_tree(ws)
    (ws / "x").unlink()
    write(ws, {"x/now-a-dir.txt": "d"})
    (ws / "d/inner.txt").unlink()
    (ws / "d").rmdir()
    (ws / "d").write_text("now a file")
    (ws / "l").unlink()
    (ws / "l").write_text("now a file")
    snap.restore(first.id)
    assert read_tree(ws) == expected
    assert os.path.islink(ws / "l")


def test_folder_with_untracked_files_blocking_a_file_is_a_conflict(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"x": "file"})
    snap = make()
    first = snap.snapshot()
    (ws / "x").unlink()
    write(ws, {"x/tracked.txt": "t", "x/.env": "secret"})
    with pytest.raises(RestoreConflict):
        snap.restore(first.id)
    assert (ws / "x/.env").read_text() == "secret"
    assert (ws / "x/tracked.txt").read_text() == "t"  # nothing was written or deleted


def test_restore_never_writes_through_a_symlinked_folder(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "outside"
    outside.mkdir()
    write(ws, {"sub/f.txt": "inside"})
    snap = make()
    first = snap.snapshot()
    (ws / "sub/f.txt").unlink()
    (ws / "sub").rmdir()
    os.symlink(outside, ws / "sub")  # an untracked? no: the symlink itself is now tracked
    caller = make(exclude=["sub"])  # make the symlink untracked by the caller's rule, so restore must not remove it
    with pytest.raises(RestoreConflict):
        caller.restore(first.id)
    assert list(outside.iterdir()) == []
    (ws / ".gitignore").write_text("sub\n")  # a rule the agent can write: the link is saved, then replaced
    snap.restore(first.id)
    assert list(outside.iterdir()) == [] and not (ws / "sub").is_symlink()
    assert (ws / "sub/f.txt").read_text() == "inside"
    assert snap.undo().ok and os.readlink(ws / "sub") == str(outside) and list(outside.iterdir()) == []


@pytest.mark.parametrize("name", [b"..", b".git", b".GIT", b"a/b", b"", b".", b"/etc/passwd"])
def test_hostile_tree_names_are_refused_before_anything_is_written(
    ws: Path,
    make,
    name: bytes,  # type: ignore[no-untyped-def]
) -> None:
    write(ws, {"a.txt": "a"})
    snap = make()
    snap.snapshot()
    forged = forge_snapshot(snap, [(b"ok.txt", MODE_FILE, b""), (name, MODE_FILE, b"")])
    with pytest.raises(UnsafeTree):
        snap.restore(forged)
    assert not (ws / "ok.txt").exists()
    assert (ws / "a.txt").read_text() == "a"


@pytest.mark.parametrize("name", [b"a\\b", b"C:\\x"])
def test_names_with_backslashes_are_ordinary_files_on_posix(ws: Path, make, name: bytes) -> None:  # type: ignore[no-untyped-def]
    """Refused as hostile before; POSIX holds them (and git records them), so they restore."""
    write(ws, {"a.txt": "a"})
    snap = make()
    snap.snapshot()
    forged = forge_snapshot(snap, [(b"ok.txt", MODE_FILE, b""), (name, MODE_FILE, b"")])
    result = snap.restore(forged)
    assert result.skipped == ()
    assert (ws / name.decode()).read_text() == "pwned\n" and (ws / "ok.txt").exists()


def test_hostile_nested_dotgit_folder_is_refused(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    store = snap._engine_ok().store
    blob = store.writer.write(b"blob", b"[core]\n\thooksPath = /tmp/evil\n")
    inner = store.writer.write(b"tree", serialize_tree([(b"config", MODE_FILE, blob)]))
    sub = store.writer.write(b"tree", serialize_tree([(b".git", 0o040000, inner)]))
    forged = forge_snapshot(snap, [(b"repo", 0o040000, sub)])
    with pytest.raises(UnsafeTree):
        snap.restore(forged)
    assert not (ws / "repo").exists()


def test_workspace_git_folder_is_never_touched(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {".git/HEAD": "ref: refs/heads/main\n", ".git/index": "idx", "a.txt": "a"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"b.txt": "b", ".git/index": "changed by the user"})
    snap.restore(first.id)
    assert (ws / ".git/index").read_text() == "changed by the user"
    assert (ws / ".git/HEAD").exists()
    assert not (ws / "b.txt").exists()


def test_tree_listing_a_name_twice_is_refused(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    forged = forge_snapshot(snap, [(b"twice", MODE_FILE, b""), (b"twice", 0o120000, b"")])
    with pytest.raises(UnsafeTree):
        snap.restore(forged)
    assert not (ws / "twice").exists()


def test_big_files_stream_through_snapshot_status_and_restore(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    big = os.urandom(objects.STREAM_THRESHOLD + 12345)
    write(ws, {"big.bin": big, "small.txt": "s"})
    snap = make(max_new_file_size=len(big) + 1)
    first = snap.snapshot()
    assert snap.last_scan.bytes_hashed == len(big) + 1
    (ws / "big.bin").write_bytes(big[:-1] + bytes([big[-1] ^ 1]))  # not b"!": random bytes end in one 1 in 256
    assert [(c.path, c.status.value) for c in snap.status()] == [("big.bin", "modified")]
    diffs = snap.diff(first.id)
    assert diffs[0].binary
    snap.restore(first.id)
    assert (ws / "big.bin").read_bytes() == big


def test_big_text_file_lines_are_counted_while_streaming(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    line = b"a line of text that repeats\n"
    count = objects.STREAM_THRESHOLD // len(line) + 1000
    write(ws, {"log.txt": line * count + b"no newline at the end"})
    snap = make(max_new_file_size=1 << 30)
    info = snap.snapshot()
    assert info.additions == count + 1
    (ws / "log.txt").write_bytes(line * 3)
    (diff,) = snap.diff(info.id)
    assert diff.binary and (diff.additions, diff.deletions) == (0, 0)  # too large to diff line by line


def test_an_empty_folder_where_the_snapshot_has_a_file_is_replaced(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Found by the model test: a folder holding only empty folders blocked the file (git removes it)."""
    write(ws, {"n": "file n", "keep.txt": "k"})
    snap = make()
    first = snap.snapshot()
    (ws / "n").unlink()
    (ws / "n/sub/deeper").mkdir(parents=True)
    snap.restore(first.id)
    assert (ws / "n").read_text() == "file n"


def test_selective_restore_leaves_a_file_on_the_way_alone_when_nothing_is_written_below_it(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Found by the model test: selecting n/missing.txt deleted the file n although nothing was restored below it."""
    write(ws, {"n/a": "in folder n", "b.txt": "b1"})
    snap = make()
    first = snap.snapshot()
    (ws / "n/a").unlink()
    (ws / "n").rmdir()
    write(ws, {"n": "now a file", "b.txt": "b2"})
    with pytest.raises(PathNotFound, match="n/missing.txt is neither in snapshot"):  # checked before anything
        snap.restore(first.id, ["b.txt", "n/missing.txt"])
    assert (ws / "n").read_text() == "now a file"
    assert (ws / "b.txt").read_text() == "b2" and len(snap.list()) == 1  # not even a safety snapshot
    snap.restore(first.id, ["b.txt"])
    assert (ws / "n").read_text() == "now a file"
    assert (ws / "b.txt").read_text() == "b1"
    snap.restore(first.id, ["n/a"])  # something to write below n: the file n must make way
    assert (ws / "n/a").read_text() == "in folder n"


def _cold_tree(ws: Path, tmp_path: Path, **options: object) -> str:
    """The tree a brand-new store records for ``ws`` (no stat cache, nothing reused)."""
    from snapshotter import Snapshotter

    with Snapshotter(ws, home=tmp_path / f"cold-{time.monotonic_ns()}", **options) as fresh:  # type: ignore[arg-type]
        return fresh.snapshot().tree_id


def test_after_a_restore_the_next_snapshot_equals_a_cold_one(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A whole restore hands its target's folder tree ids to the stat cache; they must
    never stand for a folder that differs (files ignored now, untracked files kept)."""
    files = {f"d{i % 3}/e{i % 2}/f{i}.txt": f"{i}\n" for i in range(24)}
    write(ws, {**files, "d0/e0/notes.log": "log\n", "top.txt": "t\n"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"d0/e0/f0.txt": "changed\n", "d1/e1/new.txt": "new\n", "d2/e0/f2.txt": "again\n"})
    (ws / "d1/e1/f1.txt").unlink()
    snap.restore(first.id)
    time.sleep(0.01)
    assert snap.snapshot().tree_id == first.tree_id == _cold_tree(ws, tmp_path)
    write(ws, {"d0/e0/f0.txt": "edited once more\n"})
    second = snap.snapshot()
    snap.close()
    # Now *.log is excluded: the target's d0/e0 holds notes.log, which the workspace no longer tracks.
    excluding = make(exclude=("*.log",))
    excluding.restore(first.id)
    after = excluding.snapshot()
    assert after.tree_id == _cold_tree(ws, tmp_path, exclude=("*.log",)) != first.tree_id
    assert [d.path for d in excluding.diff(first.id, after.id)] == ["d0/e0/notes.log"]
    excluding.restore(second.id)
    assert excluding.snapshot().tree_id == _cold_tree(ws, tmp_path, exclude=("*.log",))


@pytest.mark.parametrize("mask", [0o022, 0o077], ids=["umask-022", "umask-077"])
def test_a_restore_records_every_file_it_writes_as_it_stands(ws: Path, make, mask: int) -> None:  # type: ignore[no-untyped-def]
    """The stat cache takes a restored file's record from fstat before close (as git
    does): it must equal what lstat sees after, or the next walk re-reads it. Under
    any umask: a record made from the git mode (0644) would not match a 0600 file."""
    before = os.umask(mask)
    try:
        _restore_and_check_records(ws, make)
    finally:
        os.umask(before)


def _restore_and_check_records(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    files = {f"d{i % 7}/s{i % 3}/f{i}.txt": f"{i}\n" * (i % 5 + 1) for i in range(120)}
    write(ws, files)
    os.symlink("d0/s0/f0.txt", ws / "link")
    snap = make()
    first = snap.snapshot()
    expected = read_tree(ws)
    for i in range(0, 120, 2):
        (ws / f"d{i % 7}/s{i % 3}/f{i}.txt").write_text("changed\n")
    for path in sorted((ws / "d1").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (ws / "d1").rmdir()
    (ws / "link").unlink()
    snap.restore(first.id)
    assert read_tree(ws) == expected
    cache = snap._engine._cache  # type: ignore[union-attr]
    assert cache is not None
    recorded = dict(cache.paths())
    for path in [*files, "link"]:
        assert recorded[path][:5] == fsutil.stat_key(os.lstat(ws / path)), path
    assert snap.snapshot().tree_id == first.tree_id


def test_restoring_the_newest_snapshot_plans_from_its_safety_comparison(
    ws: Path,
    make,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Restoring the newest snapshot compares it with the workspace once: the
    safety snapshot counts its changes from that comparison, and the plan is
    the same comparison reversed. The result must be exact."""
    from snapshotter.engine.session import checkout, recording, restoring

    write(ws, {"a.txt": "a\n", "gone/b.txt": "b\n", "bin/run": "#!/bin/sh\n", "f": "file\n", "d/x.txt": "x\n"})
    (ws / "bin/run").chmod(0o755)
    os.symlink("a.txt", ws / "link")
    snap = make()
    target = snap.snapshot()
    expected = read_tree(ws)
    (ws / "a.txt").write_text("changed\n")
    (ws / "gone/b.txt").unlink()
    (ws / "gone").rmdir()
    (ws / "bin/run").chmod(0o644)
    (ws / "link").unlink()
    os.symlink("elsewhere", ws / "link")
    (ws / "f").unlink()
    write(ws, {"f/inside.txt": "a folder where a file was\n", "new/n.txt": "n\n"})
    (ws / "d/x.txt").unlink()
    (ws / "d").rmdir()
    (ws / "d").write_text("a file where a folder was\n")
    compared: list[str] = []

    def counting(module: Any) -> Any:
        original = module.changes

        def counted(*args: Any, **kwargs: Any) -> Any:
            compared.append(module.__name__)
            return original(*args, **kwargs)

        return counted

    for module in (checkout, recording, restoring):
        monkeypatch.setattr(module, "changes", counting(module))
    result = snap.restore(target.id)
    assert compared == ["snapshotter.engine.session.restoring"]  # the safety snapshot and the plan took that one
    assert read_tree(ws) == expected
    assert result.safety_snapshot_id is not None
    assert snap.get(result.safety_snapshot_id).files_changed == 9
    assert set(result.written_paths) == {"a.txt", "bin/run", "d/x.txt", "f", "gone/b.txt", "link"}
    assert set(result.deleted_paths) == {"d", "f/inside.txt", "new/n.txt"}
    assert not snap.diff(target.id)  # the workspace holds the target exactly
    write(ws, {"a.txt": "again\n"})
    snap.restore(target.id, files=["a.txt"])  # a selective restore compares on its own
    assert compared.count("snapshotter.engine.session.restoring") == 2 and read_tree(ws) == expected


@pytest.mark.parametrize("bad", [b"a.txt", 42, "", "a\0b", "..", "../outside.txt", "sub/../../outside.txt", "."])
def test_a_selection_outside_the_workspace_or_not_a_path_is_refused(ws: Path, bad: Any) -> None:
    """``files=``: a typed one-line error for bytes, an empty or NUL-holding
    name, the workspace itself, or anything that leads out of it."""
    from snapshotter.engine.session.checkout import normalize_selection
    from snapshotter.errors import InvalidInput

    with pytest.raises(InvalidInput) as refused:
        normalize_selection(str(ws), [bad])
    assert repr(bad) in str(refused.value) and "\n" not in str(refused.value)  # it names what was refused
    assert normalize_selection(str(ws), ["sub/../a.txt", str(ws / "b" / "c.txt")]) == ["a.txt", "b/c.txt"]


def test_a_snapshot_holding_an_unsupported_mode_is_refused_naming_it(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a"})
    snap = make()
    writer = snap._engine_ok().store.writer
    blob = writer.write(b"blob", b"odd\n")
    odd = writer.write(b"tree", b"100600 odd.txt\0" + blob)  # a mode git never writes
    forged = forge_snapshot(snap, [(b"sub", objects.MODE_TREE, odd)])
    with pytest.raises(UnsafeTree, match="'sub/odd.txt' with unsupported mode 100600"):
        snap.restore(forged)
    assert read_tree(ws) == {"a.txt": ("file", b"a")}


def test_a_conflict_after_other_writes_is_found_before_anything_is_written(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Every path the restore would write is checked before the first is written:
    ``a.txt`` (tracked, changed) and ``d/e/f.txt`` sort before the blocked ``x``."""
    write(ws, {"a.txt": "v1", "x": "file", "d/e/f.txt": "deep"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"a.txt": "v2"})
    (ws / "x").unlink()
    (ws / "d/e/f.txt").unlink()
    write(ws, {"x/.env": "secret"})
    before = read_tree(ws)
    with pytest.raises(RestoreConflict):
        snap.restore(first.id)
    assert read_tree(ws) == before  # nothing written, nothing deleted


def test_a_symlink_and_a_file_holding_its_target_text_swap_kinds_both_ways(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A symlink to ``hello`` and a file holding ``hello`` are the same blob: a restore
    between them changes the kind of the path, never only its mode."""
    write(ws, {"plain": "hello", "link": "target.txt"})
    snap = make()
    files = snap.snapshot()
    (ws / "plain").unlink()
    os.symlink("hello", ws / "plain")
    (ws / "link").unlink()
    os.symlink("target.txt", ws / "link")
    links = snap.snapshot()
    snap.restore(files.id)
    assert read_tree(ws) == {"plain": ("file", b"hello"), "link": ("file", b"target.txt")}
    snap.restore(links.id)
    assert read_tree(ws) == {"plain": ("link", b"hello"), "link": ("link", b"target.txt")}


def test_a_nested_folder_of_tracked_files_where_the_snapshot_has_a_file_is_replaced(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """What stands at ``a/b`` holds only tracked files (the restore deletes them all),
    at any depth: it is no conflict, and the file takes the folder's place."""
    write(ws, {"a/b": "a file\n", "a/keep.txt": "k\n"})
    snap = make()
    first = snap.snapshot()
    expected = read_tree(ws)
    (ws / "a/b").unlink()
    write(ws, {"a/b/c.txt": "c\n", "a/b/d/e.txt": "e\n"})
    result = snap.restore(first.id)
    assert read_tree(ws) == expected
    assert set(result.deleted_paths) == {"a/b/c.txt", "a/b/d/e.txt"}


def test_a_folder_holding_an_ignored_symlink_to_a_folder_is_a_conflict(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Where the snapshot has a file, a folder holding an untracked symlink (to a
    folder elsewhere) blocks it like an untracked file would: refused, nothing written."""
    write(ws, {"x": "file\n"})
    snap = make()
    first = snap.snapshot()
    snap.close()
    outside = tmp_path / "elsewhere"
    write(outside, {"theirs.txt": "not ours\n"})
    (ws / "x").unlink()
    write(ws, {"x/t.txt": "tracked\n"})
    os.symlink(outside, ws / "x/link.secret")
    before, tracked = read_tree(ws), os.lstat(ws / "x/t.txt")
    excluding = make(exclude=["*.secret"])
    with pytest.raises(RestoreConflict, match="is a folder holding untracked files where the snapshot has a file"):
        excluding.restore(first.id)
    assert read_tree(ws) == before
    after = os.lstat(ws / "x/t.txt")  # never deleted and put back: refused before the first write
    assert (after.st_ino, after.st_mtime_ns) == (tracked.st_ino, tracked.st_mtime_ns)
    assert (outside / "theirs.txt").read_text() == "not ours\n"


def test_a_mode_only_restore_keeps_the_file_itself(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Only the exec bit differs: the file is changed in place (the same inode, its
    content untouched), not written anew; one with a second name (a hard link) is written anew instead, so
    the other name keeps its mode."""
    write(ws, {"run.sh": "#!/bin/sh\n", "tool.sh": "#!/bin/sh\n"})
    for name in ("run.sh", "tool.sh"):
        (ws / name).chmod(0o755)
    snap = make()
    first = snap.snapshot()
    for name in ("run.sh", "tool.sh"):
        (ws / name).chmod(0o644)
    os.link(ws / "tool.sh", ws.parent / "hard-link")
    before = os.lstat(ws / "run.sh")
    assert snap.restore(first.id).written_paths == ("run.sh", "tool.sh")
    after = os.lstat(ws / "run.sh")
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns) and after.st_mode & 0o111
    assert os.lstat(ws / "tool.sh").st_mode & 0o111 and not os.lstat(ws.parent / "hard-link").st_mode & 0o111


def test_every_folder_a_restore_empties_goes_however_deep(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"keep.txt": "k\n"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"n/a/b/c/d/e/f.txt": "new\n", "n/a/b/other.txt": "o\n", "m/x/y/z.txt": "z\n"})
    snap.snapshot()
    snap.restore(first.id)
    assert sorted(os.listdir(ws)) == ["keep.txt"]


def test_a_selected_folder_restores_what_lies_deep_below_it_and_counts_the_rest(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a/b/c/d.txt": "d\n", "a/b/x.txt": "x\n", "a/y.txt": "y\n"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"a/b/c/d.txt": "changed\n", "a/y.txt": "changed\n"})
    result = snap.restore(first.id, files=["a/b"])
    assert result.written_paths == ("a/b/c/d.txt",) and result.unchanged == 1  # a/b/x.txt
    assert (ws / "a/b/c/d.txt").read_text() == "d\n" and (ws / "a/y.txt").read_text() == "changed\n"


def test_a_submodule_in_the_target_is_left_to_git_and_the_rest_restored(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"keep.txt": "k\n"})
    snap = make()
    snap.snapshot()
    forged = forge_snapshot(
        snap, [(b"a-sub", 0o160000, b"\1" * 20), (b"b.txt", MODE_FILE, b""), (b"keep.txt", MODE_FILE, b"")]
    )
    result = snap.restore(forged)
    assert [(k.path, k.reason.value) for k in result.kept] == [("a-sub", "not-checked-out")]
    assert read_tree(ws) == {"b.txt": ("file", b"pwned\n"), "keep.txt": ("file", b"pwned\n")}


def test_a_restore_reports_its_writing_as_it_goes(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """``progress`` hears ("writing", done, total) once a written file, deletions not counted."""
    write(ws, {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"a.txt": "A\n", "b.txt": "B\n", "c.txt": "C\n", "new1.txt": "n\n", "new2.txt": "n\n"})
    heard: list[tuple[str, int, int]] = []
    snap.progress = lambda phase, done, total: heard.append((phase, done, total))
    snap.restore(first.id)
    assert [h for h in heard if h[0] == "writing"] == [("writing", 1, 3), ("writing", 2, 3), ("writing", 3, 3)]
