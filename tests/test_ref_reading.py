"""Reading the store's numbered refs (``engine/gitstore/refreading``): each loose ref file
read once while it stays the same file, so a snapshot's cost does not grow
with the history; and what is not a plain ref file is damaged, never followed."""

from __future__ import annotations

import builtins
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from dulwich.refs import Ref

from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore.refreading import LooseRefs


def _refs_folder(snap: Snapshotter) -> Path:
    return Path(snap.store_path) / "refs" / "snapshots"


def test_each_ref_file_is_read_once_while_it_stays_the_same_file(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "a.txt").write_text("0\n")
    with Snapshotter(ws, home=home, retention=Retention.unlimited()) as snap:
        for i in range(60):
            (ws / "a.txt").write_text(f"{i}\n")
            snap.snapshot(f"s{i}")
        reads: list[str] = []
        real_open, real_os_open = builtins.open, os.open

        def counted_open(path: Any, *args: Any, **kwargs: Any) -> Any:
            reads.append(os.fsdecode(path))
            return real_open(path, *args, **kwargs)

        def counted_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
            reads.append(os.fsdecode(path))
            return real_os_open(path, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", counted_open)  # dulwich's GitFile opens with it
        monkeypatch.setattr(os, "open", counted_os_open)
        for i in range(10):
            time.sleep(0.15)  # the refs before have settled (fsutil.RECENT_NS): they stayed, never read again
            (ws / "a.txt").write_text(f"more {i}\n")
            snap.snapshot(f"more {i}")
        assert len(snap.list(limit=None)) == 70
    folder = os.sep + os.path.join("refs", "snapshots") + os.sep
    read = [path for path in reads if folder in path and not path.endswith(".lock")]
    assert len(read) <= 8 * 10, len(read)  # a new ref is read at each ask until it settles; through dulwich: 2,025


def test_a_ref_rewritten_by_rename_is_read_again(ws: Path, home: Path) -> None:
    (ws / "a.txt").write_text("1\n")
    with Snapshotter(ws, home=home) as snap:
        first = snap.snapshot("one")
        (ws / "a.txt").write_text("2\n")
        second = snap.snapshot("two")
        store = snap._engine_ok().store
        assert set(store.snapshot_refs().values()) == {bytes.fromhex(first.id), bytes.fromhex(second.id)}
        (ref,) = [p for p in _refs_folder(snap).iterdir() if int(p.name) == first.sequence]
        forged = ref.with_name(ref.name + ".new")
        forged.write_text(second.id + "\n")
        os.replace(forged, ref)  # as a ref writer rewrites: a new file renamed in place
        assert store.snapshot_refs()[first.sequence] == bytes.fromhex(second.id)


def test_a_stack_entry_popped_and_pushed_again_at_once_is_read_anew(ws: Path, home: Path) -> None:
    """The same ref name, a new file of the same size within one clock tick (its
    inode freed a moment before may be reused): never the old content. (On this
    machine's filesystem the inode was not reused, so keying by inode alone
    passed too.)"""
    (ws / "a.txt").write_text("1\n")
    with Snapshotter(ws, home=home) as snap:
        one = bytes.fromhex(snap.snapshot("one").id)
        (ws / "a.txt").write_text("2\n")
        two = bytes.fromhex(snap.snapshot("two").id)
        store = snap._engine_ok().store
        for _ in range(50):
            store.push("ui-test", one)
            assert store.stack("ui-test") == [one]
            assert store.pop("ui-test") == one
            store.push("ui-test", two)
            assert store.stack("ui-test") == [two]
            assert store.pop("ui-test") == two


def test_a_number_made_again_on_a_reused_inode_is_read_anew_and_the_refs_below_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest ref removed and made again, and the filesystem giving the new
    file the freed inode (simulated: the listing reports the old inode, as ext4
    may): its new content, while the refs below it, which stayed, are not read."""
    folder = tmp_path / "refs" / "stack"
    folder.mkdir(parents=True)
    for number in range(1, 6):
        (folder / f"{number:020d}").write_text(f"{number:040x}\n")
    loose = LooseRefs(str(tmp_path))
    assert len(loose.read(b"refs/stack", dict)) == 5
    top = folder / f"{5:020d}"
    old_inode = top.stat().st_ino
    time.sleep(0.15)  # the five settle (fsutil.RECENT_NS) before the next listing
    assert len(loose.read(b"refs/stack", dict)) == 5
    top.unlink()
    top.write_text(f"{6:040x}\n")  # popped and pushed again
    real_scandir, reads = os.scandir, []

    class ReusedInode:
        def __init__(self, entry: os.DirEntry[str]) -> None:
            self.entry, self.name, self.path = entry, entry.name, entry.path
            self.is_symlink, self.is_dir = entry.is_symlink, entry.is_dir

        def inode(self) -> int:
            return old_inode if self.name == top.name else self.entry.inode()

        def stat(self, follow_symlinks: bool = True) -> Any:
            real = self.entry.stat(follow_symlinks=follow_symlinks)
            return SimpleNamespace(st_ino=self.inode(), st_ctime_ns=real.st_ctime_ns)

    def listing(path: Any) -> Any:
        return iter([ReusedInode(entry) for entry in real_scandir(path)])

    real_open = os.open

    def counted_open(path: Any, *args: Any, **kwargs: Any) -> int:
        reads.append(os.path.basename(os.fsdecode(path)))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", listing)
    monkeypatch.setattr(os, "open", counted_open)
    found = loose.read(b"refs/stack", dict)
    assert found[b"refs/stack/" + top.name.encode()] == f"{6:040x}".encode()
    assert reads == [top.name]  # made since the last listing; 4 had settled by then, so it stayed, and 1 to 3
    reads.clear()
    loose.read(b"refs/stack", dict)
    assert reads == [top.name]  # made just before the last listing, so it may have been made again since
    reads.clear()
    time.sleep(0.15)
    loose.read(b"refs/stack", dict)
    assert reads == [top.name]  # still made within a tick of the listing before; this listing is long after it
    reads.clear()
    loose.read(b"refs/stack", dict)
    assert reads == []  # settled before the last listing: it stayed


def test_symlinks_nested_folders_and_lock_files_are_never_followed(ws: Path, home: Path) -> None:
    (ws / "a.txt").write_text("1\n")
    with Snapshotter(ws, home=home) as snap:
        made = snap.snapshot("one")
        folder = _refs_folder(snap)
        (ref,) = folder.iterdir()
        (folder / "00000000000000000777").symlink_to(ref)  # would pose as a second snapshot
        (folder / "nested").mkdir()
        (folder / "nested" / "5").write_text(made.id + "\n")
        (folder / "00000000000000000778.lock").write_text(made.id + "\n")  # a ref being written
        store = snap._engine_ok().store
        assert list(store.snapshot_refs().values()) == [bytes.fromhex(made.id)]
        damaged = store.damaged_refs()
        assert [name for name in damaged if "777" in name or "nested" in name] == [
            "refs/snapshots/00000000000000000777",
            "refs/snapshots/nested/5",
        ]
        assert not any("778" in name for name in damaged)
        assert [info.id for info in snap.list(limit=None)] == [made.id]


def test_a_ref_named_by_a_digit_that_is_not_ascii_is_damaged_and_never_breaks_reading(ws: Path, home: Path) -> None:
    """``'²'.isdigit()`` is true, and ``int('²')`` raises: such a name planted in
    the store is a damaged ref, reported as one, at every ask."""
    (ws / "a.txt").write_text("1\n")
    with Snapshotter(ws, home=home) as snap:
        first = snap.snapshot("one")
        (_refs_folder(snap) / "²").write_text(first.id + "\n")
        store = snap._engine_ok().store
        for _ in range(3):
            assert [info.id for info in snap.list(limit=None)] == [first.id]
            assert store.damaged_refs() == ["refs/snapshots/²"]


def test_the_sessions_listed_are_those_dulwich_finds_refs_for(ws: Path, home: Path) -> None:
    """Sessions come from a listing of their folders, not a walk of every stack
    entry: the same names as dulwich's ``keys()`` gives, for folders with refs at
    any depth, empty ones, ones holding only a lock, a name git refuses, packed refs."""
    (ws / "a.txt").write_text("1\n")
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot("one")
        for name in ("claude-code-1", "codex-2"):
            session = snap.in_session(name)
            session.begin_turn("a prompt")
            (ws / "a.txt").write_text(f"{name}\n")
            session.end_turn()
        store = snap._engine_ok().store
        sessions = Path(store.path) / "refs" / "snapshotter" / "sessions"
        (sessions / "empty" / "undo").mkdir(parents=True)
        (sessions / "locked" / "undo").mkdir(parents=True)
        (sessions / "locked" / "undo" / f"{1:020d}.lock").write_text("being written\n")
        (sessions / "bad..name" / "undo").mkdir(parents=True)
        (sessions / "bad..name" / "undo" / f"{1:020d}").write_text("1" * 40 + "\n")
        (sessions / "flat").mkdir()
        (sessions / "flat" / "stray").write_text("2" * 40 + "\n")
        with open(Path(store.path) / "packed-refs", "a") as packed:
            packed.write("3" * 40 + f" refs/snapshotter/sessions/packed/undo/{1:020d}\n")
        with Snapshotter(ws, home=home) as again:  # a fresh open: packed-refs read anew
            fresh = again._engine_ok().store
            found = fresh.repo.refs.keys(Ref(b"refs/snapshotter/sessions"))
            assert fresh.sessions() == sorted({key.split(b"/", 1)[0].decode() for key in found})
            assert fresh.sessions() == ["claude-code-1", "codex-2", "flat", "packed"]


class _Reads:
    """What a block of calls reads of the store: ref files opened, bytes read of
    ``packed-refs``, snapshot commits parsed; and bytes of pack indexes read or
    hashed whole (``index_bytes``, not in :meth:`total`)."""

    def __init__(self, store_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
        import hashlib

        from snapshotter.engine.gitstore import packindex, trailers

        self.ref_files = 0
        self.packed_bytes = 0
        self.commits = 0
        self.index_bytes = 0
        counter = self

        class _CountedHashlib:
            """``hashlib`` as the pack index loader sees it: what it hashes is counted."""

            def __getattr__(self, name: str) -> Any:
                return getattr(hashlib, name)

            @staticmethod
            def sha1(data: Any = b"", **kwargs: Any) -> Any:
                counter.index_bytes += len(memoryview(data))
                return hashlib.sha1(data, **kwargs)

        monkeypatch.setattr(packindex, "hashlib", _CountedHashlib())
        refs = os.path.join(store_path, "refs") + os.sep
        packed = os.path.join(store_path, "packed-refs")
        self._fds: dict[int, str] = {}
        real_os_open, real_read, real_pread = os.open, os.read, os.pread
        real_parse = trailers.parse_snapshot

        def counted_open(path: Any, *args: Any, **kwargs: Any) -> int:
            fd = real_os_open(path, *args, **kwargs)
            name = os.fsdecode(path)
            if name.startswith(refs) and not name.endswith(".lock"):
                self.ref_files += 1
            self._fds[fd] = name
            return fd

        def counted_read(fd: int, size: int) -> bytes:
            data = real_read(fd, size)
            if self._fds.get(fd, "").startswith(packed):
                self.packed_bytes += len(data)
            elif self._fds.get(fd, "").endswith(".idx"):
                self.index_bytes += len(data)
            return data

        def counted_pread(fd: int, size: int, offset: int) -> bytes:
            data = real_pread(fd, size, offset)
            if self._fds.get(fd, "").startswith(packed):
                self.packed_bytes += len(data)
            return data

        def counted_parse(*args: Any, **kwargs: Any) -> Any:
            self.commits += 1
            return real_parse(*args, **kwargs)

        monkeypatch.setattr(os, "open", counted_open)
        monkeypatch.setattr(os, "read", counted_read)
        monkeypatch.setattr(os, "pread", counted_pread)
        monkeypatch.setattr(trailers, "parse_snapshot", counted_parse)

    def total(self) -> tuple[int, int, int]:
        return self.ref_files, self.packed_bytes, self.commits


def _reads_of_one_snapshot(ws: Path, home: Path, store_path: str) -> tuple[int, int, int]:
    """What a snapshot taken by a new Snapshotter (as a hook without its
    watcher takes one) reads, with retention on (no snapshot old enough to drop)."""
    with pytest.MonkeyPatch.context() as patch:
        reads = _Reads(store_path, patch)
        with Snapshotter(ws, home=home, retention=Retention(max_snapshots=None)) as snap:
            with open(ws / "d00" / "f000.txt", "a") as handle:
                handle.write("one more line\n")
            snap.snapshot("one more")
        return reads.total()


def test_what_a_snapshot_reads_does_not_grow_with_the_history(tmp_path: Path) -> None:
    """At 300 and at 3,000 snapshots a snapshot opens as many ref files, reads
    as many bytes of ``packed-refs`` and parses as many snapshot commits (a few
    more of each, at most: the loose refs not packed yet differ)."""
    import longhistory

    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=4, files=10)
    history.build(300)
    store_path = Snapshotter(history.ws, home=history.home).store_path
    _reads_of_one_snapshot(history.ws, history.home, store_path)  # the first reads the folder whole
    short = _reads_of_one_snapshot(history.ws, history.home, store_path)
    history.build(3000)
    _reads_of_one_snapshot(history.ws, history.home, store_path)
    long = _reads_of_one_snapshot(history.ws, history.home, store_path)
    files, packed, commits = (b - a for a, b in zip(short, long))
    assert files <= 4 and commits <= 4, (short, long)
    assert packed <= 2 * 16384, (short, long)  # a block or two more of a search: never the whole file


def test_a_search_of_packed_refs_finds_what_a_sorted_list_finds(tmp_path: Path) -> None:
    """``packed-refs`` as git writes it (sorted, one ``<id> <name>`` line a ref):
    numbered refs of several folders with gaps of every size (what retention
    leaves), refs that are no number, and peeled lines. The search (halving,
    or interpolating between numbered refs of one folder) ends where
    ``bisect`` over the sorted names ends, for every name there, every name
    between them and every folder's ends."""
    import bisect
    import random

    from snapshotter.engine.gitstore.packedrefs import GIT_HEADER, PackedRefs, prefix_end

    rng = random.Random(50)
    names: set[bytes] = set()
    for folder in (b"refs/snapshots", b"refs/snapshotter/sessions/a/undo", b"refs/snapshotter/sessions/b/turns"):
        number = 0
        for _ in range(rng.choice([1, 40, 700])):
            number += rng.choice([1, 1, 1, 2, 7, 500, 40_000])
            names.add(folder + b"/%010d" % number)
    names |= {b"refs/snapshotter/base", b"refs/snapshotter/pins/" + b"ab" * 20, b"refs/heads/main", b"refs/tags/v1"}
    ordered = sorted(names)
    lines, offsets, ids = [GIT_HEADER], [], {}
    at = len(GIT_HEADER)
    for name in ordered:
        offsets.append(at)
        ids[name] = b"%040x" % rng.getrandbits(160)
        line = ids[name] + b" " + name + b"\n"
        if name == b"refs/tags/v1":
            line += b"^%040x\n" % rng.getrandbits(160)  # a peeled tag: its line belongs to the ref above
        lines.append(line)
        at += len(line)
    (tmp_path / "packed-refs").write_bytes(b"".join(lines))
    view = PackedRefs(str(tmp_path)).view()
    asked = set(ordered) | {b"", b"refs/", b"zzz"}
    for name in ordered:
        folder, _, leaf = name.rpartition(b"/")
        asked |= {folder + b"/", prefix_end(folder + b"/"), name + b"0"}
        if leaf.isdigit():
            asked |= {folder + b"/%010d" % (int(leaf) + step) for step in (-1, 1, 3)}
    for name in sorted(asked):
        expected = bisect.bisect_left(ordered, name)
        assert view.lower_bound(name) == (offsets[expected] if expected < len(ordered) else at), name
        assert view.get(name) == ids.get(name), name


def test_a_new_process_finds_the_folders_ends_from_the_writers_hints_and_never_trusts_wrong_ones(
    tmp_path: Path,
) -> None:
    """After packing, the writer keeps where the searches for each folder's ends
    end (``packedbounds``): a new Snapshotter's ``log`` and ``sessions`` then
    search ``packed-refs`` for none of them. Hints that are wrong (the right
    file's identity, every offset off) are each checked and passed over:
    the answers stay those of a search."""
    import longhistory

    from snapshotter.engine.gitstore import packedbounds, packedrefs

    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=4, files=10)
    history.build(1500)
    calls: dict[str, Any] = {"log": lambda snap: snap.list(limit=20), "sessions": lambda snap: snap.sessions()}
    with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
        expected = {name: call(snap) for name, call in calls.items()}
        meta = os.path.join(snap.store_path, "snapshotter")
    assert os.path.exists(os.path.join(meta, packedbounds.FILE_NAME))
    searched: list[bytes] = []
    real = packedrefs.View._search

    def counted(self: Any, name: bytes) -> int:
        searched.append(name)
        return real(self, name)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(packedrefs.View, "_search", counted)
        for name, call in calls.items():
            with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
                assert call(snap) == expected[name]
        assert not [name for name in searched if not name[-10:].isdigit()], searched  # numbered refs only
        path = os.path.join(meta, packedbounds.FILE_NAME)
        head, _, body = Path(path).read_bytes().partition(b"\n")
        wrong = b"".join(
            b"%d %s\n" % (int(o) + 67, n) for o, _, n in (line.partition(b" ") for line in body.splitlines())
        )
        Path(path).write_bytes(head + b"\n" + wrong)
        searched.clear()
        for name, call in calls.items():
            with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
                assert call(snap) == expected[name]
        assert any(not name[-10:].isdigit() for name in searched)  # the wrong hints were searched past
