"""Faults and bad input: each gives a typed error or a reported skip, and nothing is lost.

Where this machine can make the fault for real (a full tmpfs, a read-only
mount: needs root and mount), the test does; otherwise the same fault is
injected at the OS boundary the package calls.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import loosen, read_tree, tree_modes, write

from snapshotter import Snapshotter, StoreError, WorkspaceError
from snapshotter.engine.gitstore import objects, objectwriter

# -- helpers ---------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A small real filesystem at ``where`` (skips the test where mounting is not allowed)."""
    where.mkdir(parents=True, exist_ok=True)
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and the mount command")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _random_files(root: Path, count: int, size: int) -> None:
    for i in range(count):
        write(root, {f"big/{i}.bin": os.urandom(size)})


# -- the store's disk fills up ---------------------------------------------------------


def _disk_full_then_recover(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "small\n"})
    snap = Snapshotter(ws, home=home)
    first = snap.snapshot()
    _random_files(ws, count=6, size=512 * 1024)  # 3 MiB of incompressible content
    with pytest.raises(StoreError, match="disk space"):
        snap.snapshot()
    assert [s.id for s in snap.list()] == [first.id]
    assert snap.verify().ok
    for path in (ws / "big").iterdir():  # free the room and go on
        path.unlink()
    (ws / "a.txt").write_text("edited\n")
    second = snap.snapshot()
    snap.restore(first.id)
    assert (ws / "a.txt").read_text() == "small\n"
    snap.restore(second.id)
    assert (ws / "a.txt").read_text() == "edited\n"
    snap.gc()
    leftovers = [n for _, _, names in os.walk(snap.store_path) for n in names if "tmp" in n]
    assert leftovers == []
    snap.close()


@pytest.mark.parametrize("files", [8, 200], ids=["loose", "pack"])
def test_store_on_a_full_disk(ws: Path, tmp_path: Path, files: int) -> None:
    with tmpfs(tmp_path / "tiny", "1m") as tiny:
        write(ws, {f"pre/{i}.txt": f"{i}\n" for i in range(files)})
        _disk_full_then_recover(ws, tiny / "home")


def test_store_write_failing_with_enospc_injected(ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same fault without a tmpfs: every write into the store's objects fails."""
    write(ws, {"a.txt": "small\n"})
    snap = Snapshotter(ws, home=home)
    first = snap.snapshot()
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, handle: object) -> None:
            self._handle = handle

        def write(self, data: bytes) -> int:
            raise OSError(28, "No space left on device")

        def __getattr__(self, name: str) -> object:
            return getattr(self._handle, name)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self._handle.close()  # type: ignore[attr-defined]

    def fdopen(fd: int, *args: object, **kwargs: object) -> object:
        handle = real_fdopen(fd, *args, **kwargs)  # type: ignore[call-overload]
        return Full(handle) if "objects" in os.readlink(f"/proc/self/fd/{fd}") else handle

    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc to tell store files apart")
    write(ws, {"b.txt": "new content\n", **{f"many/{i}": f"{i}" for i in range(100)}})
    monkeypatch.setattr(os, "fdopen", fdopen)
    with pytest.raises(StoreError, match="disk space"):
        snap.snapshot()
    monkeypatch.undo()
    assert [s.id for s in snap.list()] == [first.id]
    assert snap.verify(full=True).ok
    assert snap.snapshot().id != first.id
    snap.close()


# -- the workspace cannot be written -----------------------------------------------------


def test_restore_into_a_read_only_workspace(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", "4m") as mnt:
        ws = mnt / "ws"
        write(ws, {"a.txt": "a1", "sub/b.txt": "b1"})
        snap = Snapshotter(ws, home=tmp_path / "home")
        first = snap.snapshot()
        write(ws, {"a.txt": "a2", "new.txt": "n"})
        before = read_tree(ws)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        try:
            with pytest.raises(WorkspaceError, match="Read-only file system"):
                snap.restore(first.id)
            assert read_tree(ws) == before
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
        snap.restore(first.id)  # writable again: the restore completes
        assert read_tree(ws) == {"a.txt": ("file", b"a1"), "sub/b.txt": ("file", b"b1")}
        snap.close()


def test_restore_refused_by_permissions_injected(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Root writes anywhere, so a folder without write permission is injected:
    creating and removing names in the workspace fail with EACCES."""
    write(ws, {"a.txt": "a1", "sub/b.txt": "b1"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"a.txt": "a2", "sub/b.txt": "b2", "new.txt": "n"})
    before = read_tree(ws)
    real_open, real_unlink = os.open, os.unlink

    def in_workspace(path: object, kwargs: dict[str, object]) -> bool:
        text = os.fsdecode(path)  # type: ignore[call-overload]
        return "dir_fd" in kwargs or text.startswith(str(ws))

    def deny_open(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if flags & os.O_CREAT and in_workspace(path, kwargs):
            raise PermissionError(13, "Permission denied", os.fsdecode(path))  # type: ignore[call-overload]
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    def deny_unlink(path: object, **kwargs: object) -> None:
        if in_workspace(path, kwargs):
            raise PermissionError(13, "Permission denied", os.fsdecode(path))  # type: ignore[call-overload]
        real_unlink(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", deny_open)
    monkeypatch.setattr(os, "unlink", deny_unlink)
    with pytest.raises(WorkspaceError, match="Permission denied"):
        snap.restore(first.id)
    monkeypatch.undo()
    assert read_tree(ws) == before
    assert snap.list()[0].label == "pre-restore"  # the state it refused to replace is saved too


# -- files that change under the walker ------------------------------------------------


def test_file_deleted_between_listing_and_reading_is_reported(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a", "gone.txt": "g"})
    real_open = objectwriter.open_for_read

    def vanish(path: str) -> int:
        if path.endswith("gone.txt"):
            os.unlink(path)
        return real_open(path)

    monkeypatch.setattr(objectwriter, "open_for_read", vanish)
    info = make().snapshot()
    assert [(s.path, s.reason.value) for s in info.skipped] == [("gone.txt", "vanished")]
    assert set(tree_modes(make(), info.tree_id)) == {"a.txt"}


def test_file_replaced_between_listing_and_reading_records_what_was_read(
    ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a", "swap.txt": "old content"})
    real_open = objectwriter.open_for_read

    def replace(path: str) -> int:
        if path.endswith("swap.txt") and not replaced:
            replaced.append(path)
            Path(path + ".new").write_text("brand new, longer content")
            os.replace(path + ".new", path)
        return real_open(path)

    replaced: list[str] = []
    monkeypatch.setattr(objectwriter, "open_for_read", replace)
    snap = make()
    info = snap.snapshot()
    monkeypatch.undo()
    assert replaced and info.skipped == ()
    (ws / "a.txt").write_text("edit")
    snap.restore(info.id)
    assert (ws / "swap.txt").read_text() == "brand new, longer content"
    again = snap.snapshot()
    assert again.tree_id == info.tree_id
    assert snap.last_scan.files_hashed == 0  # the record describes the file that was read, not the one listed


@pytest.mark.parametrize("keeps_growing", [False, True])
def test_file_growing_while_it_is_hashed(ws: Path, make, monkeypatch: pytest.MonkeyPatch, keeps_growing: bool) -> None:  # type: ignore[no-untyped-def]
    """The file grows between the first fstat and the read: retried; if it
    never holds still, skipped as "changing", never recorded torn."""
    write(ws, {"a.txt": "a", "log.txt": "line 1\n"})
    target = str(ws / "log.txt")
    real_fstat = os.fstat
    grown: list[int] = []

    def fstat(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        if os.readlink(f"/proc/self/fd/{fd}") == target and (keeps_growing or not grown) and len(grown) < 50:
            grown.append(fd)
            with open(target, "a") as handle:
                handle.write(f"line {len(grown) + 1}\n")
        return st

    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc to recognise the file's descriptor")
    monkeypatch.setattr(os, "fstat", fstat)
    snap = make()
    info = snap.snapshot()
    monkeypatch.undo()
    if keeps_growing:
        assert [(s.path, s.reason.value) for s in info.skipped] == [("log.txt", "changed-while-reading")]
        assert set(tree_modes(snap, snap.snapshot().tree_id)) == {
            "a.txt",
            "log.txt",
        }  # once it holds still, it is recorded
    else:
        assert info.skipped == ()
        final = (ws / "log.txt").read_bytes()
        (ws / "log.txt").write_text("other")
        snap.restore(info.id)
        assert (ws / "log.txt").read_bytes() == final


def test_big_file_appended_to_by_another_thread_is_never_recorded_torn(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    big = ws / "stream.log"
    big.write_bytes(b"x" * (9 << 20))  # streamed in chunks (> 8 MiB)
    write(ws, {"a.txt": "a"})
    stop = threading.Event()

    def append() -> None:
        with open(big, "ab") as handle:
            while not stop.is_set():
                handle.write(b"y" * 4096)
                handle.flush()

    writer = threading.Thread(target=append)
    writer.start()
    try:
        snap = make(max_new_file_size=1 << 30)
        info = snap.snapshot()
    finally:
        stop.set()
        writer.join()
    final = big.read_bytes()
    if any(s.path == "stream.log" for s in info.skipped):
        assert [s.reason.value for s in info.skipped] == ["changed-while-reading"]
    else:  # it happened to hold still for one whole read: then what was recorded is a real state
        big.write_bytes(b"")
        snap.restore(info.id)
        restored = big.read_bytes()
        assert final.startswith(restored) and len(restored) >= 9 << 20
    snap.close()


# -- a damaged store -------------------------------------------------------------------


def _two_snapshots(ws: Path, snap: Snapshotter) -> tuple[str, str]:
    write(ws, {"a.txt": "shared\n", "b.txt": "first\n"})
    first = snap.snapshot().id
    write(ws, {"c.txt": "only in the second snapshot\n"})
    return first, snap.snapshot().id


def test_truncated_object_is_reported_and_other_snapshots_still_restore(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    first, second = _two_snapshots(ws, snap)
    loosen(snap)
    store = snap._engine_ok().store
    blob = objects.object_id(b"blob", b"only in the second snapshot\n")
    path = store.writer.loose_path(blob)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2])
    result = snap.verify()
    assert not result.ok
    assert len(result.problems) == 1 and "snapshot 2" in result.problems[0]
    (ws / "c.txt").write_text("edited after the damage")
    with pytest.raises(StoreError, match="damaged"):
        snap.restore(second)
    assert (ws / "c.txt").read_text() == "edited after the damage"  # nothing lost
    snap.restore(first)
    assert read_tree(ws) == {"a.txt": ("file", b"shared\n"), "b.txt": ("file", b"first\n")}


@pytest.mark.parametrize("garbage", [b"not a sha\n", b"", b"0" * 39 + b"\n", b"ref: refs/snapshots/0000000001\n"])
def test_garbage_ref_is_reported_and_the_store_still_works(ws: Path, make, garbage: bytes) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    first, second = _two_snapshots(ws, snap)
    ref = Path(snap.store_path, "refs", "snapshots", "0000000003")
    ref.write_bytes(garbage)
    assert [s.id for s in snap.list()] == [second, first]
    result = snap.verify()
    assert not result.ok and any("0000000003" in p for p in result.problems)
    snap.restore(first)
    assert not (ws / "c.txt").exists()
    write(ws, {"d.txt": "d"})
    assert snap.snapshot().sequence == 4  # never reuses the damaged number
    snap.gc()
    snap.restore(second)
    assert (ws / "c.txt").exists()


def test_missing_pack_index_is_reported_and_rebuilt_from_its_pack(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {f"old/{i}.txt": f"old {i}\n" for i in range(100)})
    snap = make()
    first = snap.snapshot()
    packs_before = set(Path(snap.store_path, "objects", "pack").glob("*.idx"))
    for i in range(100):
        (ws / f"old/{i}.txt").unlink()
    (ws / "old").rmdir()
    write(ws, {f"new/{i}.txt": f"new {i}\n" for i in range(100)})
    second = snap.snapshot()
    assert len(packs_before) == 1
    lost = packs_before.pop()
    lost.unlink()
    snap2 = make()  # a fresh process's view of the store
    result = snap2.verify()
    assert not result.ok
    assert len(result.problems) == 1 and lost.name in result.problems[0] and "rebuilt" in result.problems[0]
    assert lost.exists() and snap2.verify().ok
    write(ws, {"new/0.txt": "edited"})
    snap2.restore(second.id)
    assert (ws / "new/0.txt").read_text() == "new 0\n"
    snap2.restore(first.id)
    assert (ws / "old/0.txt").read_text() == "old 0\n"


def test_a_killed_writers_temporary_files_are_cleared_by_the_next_writer(ws: Path, home: Path) -> None:
    """After 110 kills, 33 temporary files (41.6 MB) were left for gc's one-hour grace."""
    import signal

    write(ws, {"a.txt": "a"})
    snap = Snapshotter(ws, home=home)
    snap.snapshot()
    store = Path(snap.store_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, time; from snapshotter import Snapshotter;"
            "s = Snapshotter(sys.argv[1], home=sys.argv[2]); s._engine_ok().lock.acquire();"
            "store = s.store_path;"
            "os.makedirs(store + '/objects/ab', exist_ok=True);"
            "[open(p, 'wb').write(b'x' * 1000) for p in (store + '/objects/ab/tmp_obj_killed',"
            " store + '/objects/tmp_obj_stream', store + '/objects/pack/tmp_pack_killed',"
            " store + '/objects/pack/tmp_idx_killed', store + '/snapshotter/.statcache-killed.tmp')];"
            "print('holding', flush=True); time.sleep(60)",
            str(ws),
            str(home),
        ],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"holding\n"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    temps = [p for p in store.rglob("*") if p.name.startswith(("tmp_", ".statcache-"))]
    assert len(temps) == 5
    (ws / "a.txt").write_text("b")
    snap.snapshot()  # takes the lock the dead writer held: recovery clears its leftovers
    assert [p for p in store.rglob("*") if p.name.startswith(("tmp_", ".statcache-"))] == []
    assert snap.verify(full=True).ok
    snap.close()


def test_a_gc_that_runs_out_of_space_leaves_no_temporary_pack(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import errno

    from snapshotter.engine.gitstore import packs

    write(ws, {f"f{i}.txt": f"{i}\n" * 50 for i in range(30)})
    snap = make()
    snap.snapshot()
    real_fsync = os.fsync

    def full(fd: int) -> None:
        if "tmp_pack_" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc to tell the pack apart")
    monkeypatch.setattr(packs.os, "fsync", full)
    with pytest.raises(StoreError, match="disk space"):
        snap.gc()
    monkeypatch.undo()
    pack_dir = Path(snap.store_path) / "objects" / "pack"
    assert [p.name for p in pack_dir.iterdir() if p.name.startswith("tmp_")] == []
    assert snap.verify(full=True).ok
