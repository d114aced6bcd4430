"""The preload: a forked copy of the process checks unchanged folders on a
second core while the walk checks them too (``worktree.preload``). Whatever the
copy says, the snapshot must be what a walk alone (and git) makes of the folder.
Where the C loop is built a thread does it instead (``preloadthread``, tested in
test_preload_thread.py): it is turned off here, so that the fork is what runs.

``MIN_FILES`` is lowered so that small folders fork too: the rule under test
is the same at any size. And the walk waits for the copy's verdicts
(``WAIT_FOR_COPY``), so every folder the copy vouches for is taken on its
word; otherwise which side checks which folder depends on their speeds.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import alone_in_this_process, git_shadow_tree, needs_git, needs_second_core, no_child_left, write

from snapshotter import Snapshotter
from snapshotter.engine import fsutil
from snapshotter.engine.worktree import classify as classify_module
from snapshotter.engine.worktree import preload, preloadthread, racy, readdir, secondcore, statcache, walker
from snapshotter.engine.worktree.packedfolder import PackedFolder
from snapshotter.errors import SnapshotError

pytestmark = needs_second_core

FOLDERS = 40


@pytest.fixture(autouse=True)
def _eager(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preloadthread, "available", lambda: False)
    monkeypatch.setattr(preload, "MIN_FILES", 0)
    monkeypatch.setattr(preload, "WAIT_FOR_COPY", True)
    alone_in_this_process()


def _files() -> dict[str, str]:
    files = {f"d{i % 5}/f{i}/file{j}.txt": f"folder {i} file {j}\n" for i in range(FOLDERS) for j in range(4)}
    files["top.txt"] = "top\n"
    return files


def _settle() -> None:
    """Old enough for its folders and files to be trusted by the next walk."""
    time.sleep(fsutil.RECENT_NS / 1e9 + 0.03)


def _first(ws: Path, home: Path) -> str:
    write(ws, _files())
    _settle()
    with Snapshotter(ws, home=home) as snap:
        tree = snap.snapshot().tree_id
    _settle()
    return tree


def _again(ws: Path, home: Path, **options: object) -> tuple[str, Snapshotter]:
    """A snapshot by a new instance, which loads the stat cache from its file, as a one-shot command does."""
    with Snapshotter(ws, home=home, **options) as snap:  # type: ignore[arg-type]
        return snap.snapshot().tree_id, snap


def test_an_unchanged_workspace_is_vouched_for_by_the_copy(ws: Path, home: Path) -> None:
    first = _first(ws, home)
    tree, snap = _again(ws, home)
    assert tree == first
    stats = snap.last_scan
    assert stats.files_hashed == 0 and stats.dirs_listed == 0
    assert stats.dirs_preloaded == FOLDERS + 1, "every folder with files (the root too) is the copy's call"
    assert no_child_left()


def test_a_change_in_every_folder_is_found(ws: Path, home: Path, tmp_path: Path) -> None:
    """The copy checks from the far end, the walk from the near end: a changed
    file anywhere must be hashed, so no folder may be vouched for."""
    _first(ws, home)
    write(ws, {f"d{i % 5}/f{i}/file{i % 4}.txt": f"changed {i}\n" for i in range(FOLDERS)})
    tree, snap = _again(ws, home)
    assert snap.last_scan.files_hashed == FOLDERS
    assert snap.last_scan.dirs_preloaded == 1  # the root: its top.txt did not change
    with Snapshotter(ws, home=tmp_path / "cold") as cold:
        assert cold.snapshot().tree_id == tree


def test_changes_at_either_end_are_found(ws: Path, home: Path, tmp_path: Path) -> None:
    """The first and last folders of the walk changed, the rest not: the walk
    takes the copy's word only for the folders it vouched for."""
    _first(ws, home)
    write(ws, {"d0/f0/file0.txt": "first\n", f"d4/f{FOLDERS - 1}/file3.txt": "last, and longer\n"})
    os.utime(ws / "d1/f1/file1.txt", ns=(1, 1))  # same content, older stamp: hashed again, same blob
    tree, snap = _again(ws, home)
    assert snap.last_scan.files_hashed == 3
    assert snap.last_scan.dirs_preloaded == FOLDERS + 1 - 3
    with Snapshotter(ws, home=tmp_path / "cold") as cold:
        assert cold.snapshot().tree_id == tree


@needs_git
def test_the_tree_is_gits(ws: Path, home: Path, tmp_path: Path) -> None:
    _first(ws, home)
    write(ws, {"d2/f7/file1.txt": "edited\n", "d3/new.txt": "new\n"})
    (ws / "d4/f9/file2.txt").unlink()
    tree, snap = _again(ws, home)
    assert snap.last_scan.dirs_preloaded == FOLDERS + 1 - 2  # f9 listed again, f7 changed (d3 has no files of its own)
    assert tree == git_shadow_tree(ws, tmp_path / "shadow")


def test_without_waiting_the_result_is_the_same(ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As it runs for real: each side checks what it reaches first."""
    monkeypatch.setattr(preload, "WAIT_FOR_COPY", False)
    _first(ws, home)
    write(ws, {f"d{i % 5}/f{i}/file{i % 4}.txt": f"changed {i}\n" for i in range(0, FOLDERS, 3)})
    tree, snap = _again(ws, home)
    assert snap.last_scan.files_hashed == len(range(0, FOLDERS, 3))
    assert no_child_left()
    with Snapshotter(ws, home=home.parent / "cold") as cold:
        assert cold.snapshot().tree_id == tree


def test_the_option_turns_it_off(ws: Path, home: Path) -> None:
    _first(ws, home)
    _, snap = _again(ws, home, second_core=False)
    assert snap.last_scan.dirs_preloaded == 0


def again_beside_another_thread(ws: Path, home: Path) -> Snapshotter:
    """``_again`` while another thread of this process waits (as a library's host may have)."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        return _again(ws, home)[1]
    finally:
        stop.set()
        other.join()


def test_not_while_another_thread_runs(ws: Path, home: Path) -> None:
    """A fork copies only the calling thread: a lock another one held would stay held in the copy."""
    _first(ws, home)
    snap = again_beside_another_thread(ws, home)
    assert snap.last_scan.dirs_preloaded == 0
    assert snap.last_scan.files_seen == FOLDERS * 4 + 1


@pytest.fixture
def failing_walk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """The walk fails in its tenth folder with files, the copy still running
    (whether the walk checks that folder itself or takes the copy's word)."""
    calls = [0]
    real_classify = classify_module.classify
    real_take = readdir.take_vouched

    def count() -> None:
        calls[0] += 1
        if calls[0] == 10:
            raise SnapshotError("the walk failed")

    def classify(*args: object) -> None:
        count()
        real_classify(*args)  # type: ignore[arg-type]

    def take_vouched(*args: object) -> int:
        count()
        taken = real_take(*args)  # type: ignore[arg-type]
        if taken < 0:
            calls[0] -= 1  # the walk checks it itself: classify counts it
        return taken

    def arm() -> None:
        monkeypatch.setattr(walker, "classify", classify)
        monkeypatch.setattr(walker, "take_vouched", take_vouched)

    yield arm


def no_preload_thread() -> bool:
    """Whether no thread of the preload (``preloadthread``) is running."""
    return not any(thread.name == "snapshotter-preload" for thread in threading.enumerate())


def test_no_copy_or_thread_outlives_a_failed_walk(ws: Path, home: Path, failing_walk: Callable[[], None]) -> None:
    first = _first(ws, home)
    failing_walk()
    with pytest.raises(SnapshotError, match="the walk failed"), Snapshotter(ws, home=home) as snap:
        snap.snapshot()
    assert no_child_left() and no_preload_thread()
    with Snapshotter(ws, home=home) as snap:
        assert snap.snapshot().tree_id == first


def test_the_walk_order_is_the_walkers(ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy starts from the walk's far end only if it predicts the walk's order."""
    _first(ws, home)
    visited: list[str] = []
    real = classify_module.classify

    def classify(walk, node, *args):  # type: ignore[no-untyped-def]
        visited.append(node.rel)
        real(walk, node, *args)

    monkeypatch.setattr(walker, "classify", classify)
    monkeypatch.setattr(secondcore, "SUPPORTED", False)
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot()
        cache = snap._engine._current_cache()  # type: ignore[union-attr]
    predicted = preload.walk_order(cache)
    assert predicted == visited


def test_the_same_instance_is_helped_too(ws: Path, home: Path, tmp_path: Path) -> None:
    """After its first snapshot an instance holds decoded tables, not the
    file's packed bytes: the copy checks those as well."""
    write(ws, _files())
    _settle()
    with Snapshotter(ws, home=home) as snap:
        first = snap.snapshot().tree_id
        _settle()
        assert snap.snapshot().tree_id == first
        assert snap.last_scan.dirs_preloaded == FOLDERS + 1
        write(ws, {"d1/f6/file2.txt": "edited in place\n"})
        second = snap.snapshot().tree_id
        assert snap.last_scan.files_hashed == 1 and snap.last_scan.dirs_preloaded == FOLDERS
    with Snapshotter(ws, home=tmp_path / "cold") as cold:
        assert cold.snapshot().tree_id == second
    assert no_child_left()


def test_folders_a_restore_wrote_to_are_relisted_by_the_copy(ws: Path, home: Path, tmp_path: Path) -> None:
    """A restore leaves the folders it wrote to without a shape: the walk must
    list them again, and the copy lists them on its side too. The walk takes
    the copy's listing, and the snapshot is the one a walk alone makes."""
    first = _first(ws, home)
    with Snapshotter(ws, home=home) as snap:
        target = snap.list()[0].id
        write(ws, {f"d{i % 5}/f{i}/file{j}.txt": f"second {i} {j}\n" for i in range(FOLDERS) for j in range(4)})
        snap.snapshot()
        assert snap.restore(target).written == 4 * FOLDERS
    _settle()
    tree, snap = _again(ws, home)
    assert tree == first
    stats = snap.last_scan
    assert stats.files_hashed == 0
    assert stats.dirs_listed == FOLDERS, "each folder the restore wrote to is listed again..."
    assert stats.dirs_preloaded == FOLDERS + 1, "...by the copy, which checked its files too"
    _settle()
    tree, snap = _again(ws, home)
    assert tree == first and snap.last_scan.dirs_listed == 0, "the walk left their shapes"
    assert no_child_left()


def test_a_relisting_is_taken_only_as_the_walk_would_judge_it(ws: Path, home: Path, tmp_path: Path) -> None:
    """The restore wrote a file the rules now ignore (they changed since the
    target was taken) into a folder: the names differ from the listing the
    walk last judged, so the walk lists the folder and leaves the file out,
    though the copy found it and its record."""
    write(ws, _files())
    with Snapshotter(ws, home=home) as snap:
        write(ws, {"d1/f6/note.log": "a log\n"})
        target = snap.snapshot().id
    _settle()
    with Snapshotter(ws, home=home, exclude=["*.log"]) as snap:
        (ws / "d1/f6/note.log").unlink()
        snap.snapshot()
        snap.restore(target)
    assert (ws / "d1/f6/note.log").exists()
    _settle()
    tree, snap = _again(ws, home, exclude=["*.log"])
    assert snap.last_scan.dirs_listed >= 1
    with Snapshotter(ws, home=tmp_path / "alone", exclude=["*.log"], second_core=False) as alone:
        assert alone.snapshot().tree_id == tree
    assert no_child_left()


def test_a_folder_changed_after_the_restore_is_listed_by_the_walk(ws: Path, home: Path, tmp_path: Path) -> None:
    """A new file beside those the restore wrote, or one gone: the copy's
    listing is not the table's names, so it vouches for nothing there."""
    _first(ws, home)
    with Snapshotter(ws, home=home) as snap:
        target = snap.list()[0].id
        write(ws, {f"d{i % 5}/f{i}/file0.txt": f"second {i}\n" for i in range(FOLDERS)})
        snap.snapshot()
        snap.restore(target)
    write(ws, {"d2/f7/extra.txt": "new\n"})
    (ws / "d3/f8/file1.txt").unlink()
    _settle()
    tree, snap = _again(ws, home)
    assert snap.last_scan.dirs_preloaded == FOLDERS + 1 - 2
    with Snapshotter(ws, home=tmp_path / "alone", second_core=False) as alone:
        assert alone.snapshot().tree_id == tree


def _saved_cache(ws: Path, home: Path) -> statcache.StatCache:
    """The stat cache the last snapshot saved, loaded as a new instance loads it (packed tables)."""
    with Snapshotter(ws, home=home) as snap:
        return statcache.load(snap._engine_ok()._cache_path)


def _verdicts_run_here(
    ws: Path, home: Path, cache: statcache.StatCache | None = None, cutoff: int | None = None, reached_at: int = 0
) -> dict[str, tuple[int, int, int, int]]:
    """The copy's loop (``_check_from_the_end``) run in this process, as the fork
    runs it, over ``cache`` (by default the stat cache the last snapshot saved):
    folder -> its verdict (total bytes or -1, and the folder's stat it holds
    for), read from a pipe. In this process a mutation run sees it (it never
    sees the fork)."""
    if cache is None:
        cache = _saved_cache(ws, home)
    keys = {preload._key(cache.folder(rel)): rel for rel in preload.walk_order(cache) if cache.folder(rel)}
    read, written = os.pipe()
    try:
        reached = preload.shared_memory()  # the walk has reached no folder yet, the copy sent nothing
        preload._REACHED.pack_into(reached, 0, reached_at)
        preload._check_from_the_end(str(ws), cache, cache.racy_cutoff() if cutoff is None else cutoff, written, reached)
        os.close(written)
        data = b""
        while chunk := os.read(read, 1 << 16):
            data += chunk
    finally:
        os.close(read)
    found: dict[str, tuple[int, int, int, int]] = {}
    for source, place, total, mtime, ctime, inode in preload._VERDICT.iter_unpack(data):
        rel = keys[source, place]
        assert rel not in found, "one verdict per folder"
        found[rel] = (total, mtime, ctime, inode)
    return found


def _as_walked(ws: Path, rel: str, total: int) -> tuple[int, int, int, int]:
    own = os.stat(ws / rel)
    return (total, own.st_mtime_ns, own.st_ctime_ns, own.st_ino)


def test_the_copys_loop_vouches_for_each_unchanged_folder_with_its_bytes_and_stat(ws: Path, home: Path) -> None:
    _first(ws, home)
    found = _verdicts_run_here(ws, home)
    expected = {
        f"d{i % 5}/f{i}": _as_walked(ws, f"d{i % 5}/f{i}", sum(len(f"folder {i} file {j}\n") for j in range(4)))
        for i in range(FOLDERS)
    }
    expected[""] = _as_walked(ws, "", len("top\n"))
    assert found == expected


def test_the_copys_loop_vouches_for_no_folder_that_changed(ws: Path, home: Path) -> None:
    """A file rewritten (same size), one added, one removed, a folder whose file
    became a subfolder: each such folder gets -1 (the walk checks it itself)."""
    _first(ws, home)
    write(ws, {"d1/f1/file0.txt": "FOLDER 1 FILE 0\n", "d2/f2/new.txt": "new\n"})
    (ws / "d3/f3/file1.txt").unlink()
    (ws / "d4/f4/file2.txt").unlink()
    (ws / "d4/f4/file2.txt").mkdir()
    _settle()
    found = _verdicts_run_here(ws, home)
    changed = {"d1/f1", "d2/f2", "d3/f3", "d4/f4"}
    assert {rel for rel, verdict in found.items() if verdict[0] == preload._MISMATCH} == changed
    assert len(found) == FOLDERS + 1
    assert found["d0/f5"] == _as_walked(ws, "d0/f5", sum(len(f"folder 5 file {j}\n") for j in range(4)))


def test_the_copy_relists_a_folder_a_restore_wrote_to_and_checks_its_names(ws: Path, home: Path) -> None:
    """Folders a restore wrote to have no shape: the copy lists them itself, and
    vouches for none that changed since (a name more, one less, a subfolder).
    (Their own stat changed too, so this does not single out ``_holds_only``'s
    name check: ``test_a_folder_changed_after_the_restore_is_listed_by_the_walk``
    covers it through the fork.)"""
    _first(ws, home)
    with Snapshotter(ws, home=home) as snap:
        target = snap.list()[0].id
        write(ws, {f"d{i % 5}/f{i}/file{j}.txt": f"second {i} {j}\n" for i in range(FOLDERS) for j in range(4)})
        snap.snapshot()
        snap.restore(target)
    write(ws, {"d1/f1/extra.txt": "x\n"})
    (ws / "d2/f2/file3.txt").unlink()
    (ws / "d3/f3/sub").mkdir()
    _settle()
    found = _verdicts_run_here(ws, home)
    for rel in ("d1/f1", "d2/f2", "d3/f3"):
        assert found[rel][0] == preload._MISMATCH, rel
    assert found["d0/f5"] == _as_walked(ws, "d0/f5", sum(len(f"folder 5 file {j}\n") for j in range(4)))
    assert len(found) == FOLDERS + 1


def _unchanged(ws: Path, i: int) -> tuple[int, int, int, int]:
    """The verdict the copy gives folder ``i`` of ``_files`` left as written."""
    return _as_walked(ws, f"d{i % 5}/f{i}", sum(len(f"folder {i} file {j}\n") for j in range(4)))


def test_the_copys_loop_checks_an_instances_decoded_tables_too(ws: Path, home: Path) -> None:
    """An instance may hold decoded tables (a dict per folder: a watcher's scan
    shares them), not the file's packed bytes: the copy's loop checks them with
    ``racy.unchanged_files``, with the same verdicts. (A save holds what it
    packed as ``PackedFolder``s again: ``statcache._hold_packed``.)"""
    write(ws, _files())
    _settle()
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot()
        _settle()
        cache = snap._engine._current_cache()  # type: ignore[union-attr]
        for rel in list(cache.tables):
            folder = cache.folder(rel)
            if type(folder) is PackedFolder:
                cache.tables[rel] = folder.as_dict()
        assert not any(type(cache.folder(rel)) is PackedFolder for rel in cache.tables)
        write(ws, {"d1/f6/file2.txt": "edited in place\n"})
        _settle()
        found = _verdicts_run_here(ws, home, cache)
    assert found["d1/f6"][0] == preload._MISMATCH
    assert found["d2/f7"] == _unchanged(ws, 7) and found[""] == _as_walked(ws, "", len("top\n"))
    assert {rel for rel, verdict in found.items() if verdict[0] == preload._MISMATCH} == {"d1/f6"}
    assert len(found) == FOLDERS + 1


@pytest.mark.parametrize("every", [5, 8])
def test_the_copy_sends_its_verdicts_as_it_goes(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch, every: int
) -> None:
    """The walk takes a verdict only if it has arrived: the copy sends its
    verdicts as soon as the folders checked since it last sent hold
    ``_FLUSH_FILES`` files (here 5 or 8; a folder holds 4, the root 1), not all
    at the end."""
    _first(ws, home)
    monkeypatch.setattr(preload, "_FLUSH_FILES", every)
    batches: list[bytes] = []
    real_send = secondcore.send

    def send(out: int, data: bytes) -> None:
        batches.append(data)
        real_send(out, data)

    monkeypatch.setattr(secondcore, "send", send)
    cache = _saved_cache(ws, home)
    found = _verdicts_run_here(ws, home, cache)
    assert len(found) == FOLDERS + 1
    by_key = {preload._key(cache.folder(rel)): len(cache.folder(rel)) for rel in found}
    sizes = [[by_key[v[0], v[1]] for v in preload._VERDICT.iter_unpack(batch)] for batch in batches]
    assert len(sizes) > 1
    for files in sizes[:-1]:
        assert sum(files[:-1]) < every <= sum(files), sizes  # sent once it held enough, not later
    assert sum(sizes[-1][:-1]) < every, sizes


def test_the_copy_counts_each_piece_before_and_after_it_writes_it(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk reads the pipe only when the copy's count of moves has moved.
    The copy counts one before writing each piece (at most a page, which fits
    the smallest pipe once the walk has drained it), so a full pipe cannot hold
    it while the walk looks at an unmoved count; and one after, so a piece the
    walk looked for between the two is read on its next look, not left in the
    pipe until the next piece (or for ever, after the last)."""
    _first(ws, home)
    monkeypatch.setattr(preload, "_FLUSH_FILES", 4)  # a verdict per folder: many pieces
    monkeypatch.setattr(preload, "_PIECE", preload._VERDICT.size * 3)  # three verdicts a piece
    shared = preload.shared_memory()
    counts: list[tuple[int, int]] = []
    real_send = secondcore.send

    def send(out: int, data: bytes) -> None:
        counts.append((preload.pipe_moves(shared), len(data)))
        real_send(out, data)

    monkeypatch.setattr(secondcore, "send", send)
    monkeypatch.setattr(preload, "shared_memory", lambda: shared)
    found = _verdicts_run_here(ws, home)
    assert len(found) == FOLDERS + 1
    assert [moves for moves, _ in counts] == list(range(1, 2 * len(counts), 2))
    assert preload.pipe_moves(shared) == 2 * len(counts)
    assert all(0 < size <= preload._VERDICT.size * 3 for _, size in counts)
    assert sum(size for _, size in counts) == preload._VERDICT.size * (FOLDERS + 1)


def test_the_copy_says_from_which_folder_of_the_order_it_has_sent(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After each batch the copy writes in the shared memory the place in the
    walk's order of the last folder it sent (the nearest to the walk's end):
    before it, the walk has no verdict to ask for."""
    _first(ws, home)
    monkeypatch.setattr(preload, "_FLUSH_FILES", 9)  # a batch every third folder or so
    shared = preload.shared_memory()
    assert not preload.sent_from(shared, 10**9)  # nothing sent yet
    cache = _saved_cache(ws, home)
    order = preload.walk_order(cache)
    places: list[int] = []
    real_send = secondcore.send

    def send(out: int, data: bytes) -> None:
        real_send(out, data)
        places.append(min(order.index(_rel_of(cache, order, v)) for v in preload._VERDICT.iter_unpack(data)))

    monkeypatch.setattr(secondcore, "send", send)
    monkeypatch.setattr(preload, "shared_memory", lambda: shared)
    found = _verdicts_run_here(ws, home, cache)
    assert len(places) > 2 and places == sorted(places, reverse=True)
    assert min(order.index(rel) for rel in found) == places[-1]
    assert preload.sent_from(shared, places[-1])
    assert not preload.sent_from(shared, places[-1] - 1)


def _rel_of(cache: statcache.StatCache, order: list[str], verdict: tuple[int, ...]) -> str:
    return next(rel for rel in order if cache.folder(rel) and preload._key(cache.folder(rel)) == verdict[:2])


def test_the_walk_drains_the_pipe_even_where_it_asks_for_no_verdict(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy, ahead, fills the pipe with verdicts of folders the walk has
    not come to: the walk must read them as soon as the count of moves moves,
    or a full pipe stops the copy while the walk, not yet there, never reads."""
    monkeypatch.setattr(preload, "WAIT_FOR_COPY", False)
    _first(ws, home)
    cache = _saved_cache(ws, home)
    order = preload.walk_order(cache)
    place = len(order) - 1
    table = cache.folder(order[place])
    verdict = preload._VERDICT.pack(*preload._key(table), 7, 1, 2, 3)
    read, written = os.pipe()
    os.set_blocking(read, False)
    shared = preload.shared_memory()
    copy = secondcore.Copy(-1, read)
    try:
        preload._send(written, verdict, shared, place)
        walk_side = preload.Preload(copy, shared)
        assert not walk_side.may_hold(place - 1)
        with pytest.raises(BlockingIOError):
            os.read(read, 1)  # drained
        assert walk_side.may_hold(place)
        assert walk_side.total(table) == 7
    finally:
        os.close(written)
        os.close(read)


def test_the_walk_asks_for_no_verdict_before_the_copy_has_sent_one(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asking for a verdict that cannot have come costs a few calls at each
    folder the walk checks itself: while the copy has sent nothing for the
    folders from the walk's place on, the walk does not ask."""
    _first(ws, home)
    write(ws, {"d1/f6/file2.txt": "edited in place\n"})
    _settle()
    asked: list[str] = []
    real_verdict = preload.Preload._verdict
    real_loop = preload._check_from_the_end

    def verdict(self: preload.Preload, table: statcache.Folder) -> tuple[int, int, int, int] | None:
        asked.append("asked")
        return real_verdict(self, table)

    def late(*args: object) -> None:
        time.sleep(1.0)
        real_loop(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(preload.Preload, "_verdict", verdict)
    monkeypatch.setattr(preload, "WAIT_FOR_COPY", False)
    monkeypatch.setattr(preload, "_check_from_the_end", late)
    tree, snap = _again(ws, home)
    assert asked == [] and snap.last_scan.dirs_preloaded == 0
    assert snap.last_scan.files_hashed == 1
    assert no_child_left()
    with Snapshotter(ws, home=home.parent / "cold") as cold:
        assert cold.snapshot().tree_id == tree


def test_the_walk_reads_the_pipe_only_when_the_copy_has_sent(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asking the pipe at every folder whose verdict has not come costs a system
    call and an exception each (about 4,400 a walk of 100,000 files): the walk
    reads it only when the copy's count of pieces has moved since it last read.
    Here the copy starts late, so the walk checks every folder itself, reading
    nothing; then a copy that has sent is read, and its verdicts taken."""
    _first(ws, home)
    write(ws, {"d1/f6/file2.txt": "edited in place\n"})
    _settle()
    reads: list[int] = []
    real_chunks = secondcore.Copy.chunks
    real_loop = preload._check_from_the_end

    def chunks(self: secondcore.Copy, size: int) -> Iterator[bytes]:
        reads.append(size)
        return real_chunks(self, size)

    def late(*args: object) -> None:
        time.sleep(1.0)
        real_loop(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(secondcore.Copy, "chunks", chunks)
    monkeypatch.setattr(preload, "WAIT_FOR_COPY", False)
    monkeypatch.setattr(preload, "_check_from_the_end", late)
    tree, snap = _again(ws, home)
    assert reads == [] and snap.last_scan.dirs_preloaded == 0
    assert snap.last_scan.files_hashed == 1
    assert no_child_left()
    monkeypatch.setattr(preload, "_check_from_the_end", real_loop)
    monkeypatch.setattr(preload, "WAIT_FOR_COPY", True)
    write(ws, {"d1/f6/file2.txt": "edited in place again\n"})
    _settle()
    again, snap = _again(ws, home)
    assert 1 <= len(reads) <= 2 and snap.last_scan.dirs_preloaded == FOLDERS + 1 - 1
    assert no_child_left()
    with Snapshotter(ws, home=home.parent / "cold") as cold:
        assert cold.snapshot().tree_id == again != tree


def first_with_a_folder_set_back(ws: Path, home: Path) -> None:
    """``_first``, with folder d2/f7's mtime set back to 1970 before the snapshot."""
    write(ws, _files())
    os.utime(ws / "d2/f7", ns=(1_000_000_000, 1_000_000_000))
    _settle()
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot()
    _settle()


def test_a_folder_whose_mtime_was_set_back_is_vouched_for(ws: Path, home: Path) -> None:
    """An unpacked archive or ``touch -d`` leaves a folder's mtime before its
    ctime: its own stat is compared field by field with its shape's."""
    first_with_a_folder_set_back(ws, home)
    assert os.stat(ws / "d2/f7").st_mtime_ns != os.stat(ws / "d2/f7").st_ctime_ns
    found = _verdicts_run_here(ws, home)
    assert found["d2/f7"] == _unchanged(ws, 7)
    assert all(verdict[0] != preload._MISMATCH for verdict in found.values())


def test_a_folder_that_cannot_be_opened_is_skipped_and_the_rest_still_checked(ws: Path, home: Path) -> None:
    """The first folder the copy comes to (the walk's last) was replaced by a
    symlink to its own files: the copy does not open it through the link, gives
    no verdict (the walk will say what it found) and goes on with the rest."""
    _first(ws, home)
    cache = _saved_cache(ws, home)
    first = next(rel for rel in reversed(preload.walk_order(cache)) if cache.folder(rel))
    moved = ws.parent / "moved-away"
    (ws / first).rename(moved)
    (ws / first).symlink_to(moved, target_is_directory=True)
    found = _verdicts_run_here(ws, home, cache)
    assert first not in found
    assert len(found) == FOLDERS and all(verdict[0] != preload._MISMATCH for verdict in found.values())


def test_the_copy_skips_exactly_the_folders_the_walk_finds_racy(ws: Path, home: Path) -> None:
    """A folder whose shape's ctime is at or above the cutoff is listed again by
    the walk (``racy.fresh``), which asks no verdict for it: the copy checks
    none of those, the one exactly at the cutoff included."""
    _first(ws, home)
    cache = _saved_cache(ws, home)
    with_files = [rel for rel in preload.walk_order(cache) if cache.folder(rel)]
    ctimes = sorted(cache.shapes[rel][1] for rel in with_files)
    cutoff = ctimes[len(ctimes) // 2]
    at_cutoff = {rel for rel in with_files if cache.shapes[rel][1] == cutoff}
    found = _verdicts_run_here(ws, home, cache, cutoff)
    assert at_cutoff and not at_cutoff & set(found)
    assert set(found) == {rel for rel in with_files if racy.fresh(cache.shapes[rel][1], cutoff)}


def test_a_cache_of_exactly_min_files_is_preloaded(ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _first(ws, home)
    files = _saved_cache(ws, home).size_hint()
    assert files == FOLDERS * 4 + 1
    monkeypatch.setattr(preload, "MIN_FILES", files)
    assert _again(ws, home)[1].last_scan.dirs_preloaded == FOLDERS + 1
    monkeypatch.setattr(preload, "MIN_FILES", files + 1)
    assert _again(ws, home)[1].last_scan.dirs_preloaded == 0


def test_the_copy_stops_where_the_walk_has_reached_and_sends_what_it_checked(ws: Path, home: Path) -> None:
    """The walk has reached half of its order: the copy checks the other half,
    from the far end, and still sends the verdicts it holds when it stops."""
    _first(ws, home)
    cache = _saved_cache(ws, home)
    order = preload.walk_order(cache)
    half = len(order) // 2
    found = _verdicts_run_here(ws, home, cache, reached_at=half)
    assert set(found) == {rel for rel in order[half:] if cache.folder(rel)} and found
    assert all(verdict[0] != preload._MISMATCH for verdict in found.values())


def test_a_workspace_whose_name_ends_in_a_space_is_checked_by_the_copy(home: Path, tmp_path: Path) -> None:
    ws = tmp_path / "project "
    _first(ws, home)
    found = _verdicts_run_here(ws, home)
    assert len(found) == FOLDERS + 1 and found["d2/f7"] == _unchanged(ws, 7)


def _restored(ws: Path, home: Path) -> None:
    """Every folder with files written to by a restore (to the first snapshot):
    none has a shape, so the copy lists each itself."""
    with Snapshotter(ws, home=home) as snap:
        target = snap.list()[0].id
        write(ws, {f"d{i % 5}/f{i}/file0.txt": f"second {i}\n" for i in range(FOLDERS)})
        snap.snapshot()
        assert snap.restore(target).written == FOLDERS


def test_the_copy_lists_a_folder_again_only_once_its_stat_has_settled(ws: Path, home: Path) -> None:
    """A folder without a shape that changed a moment ago (a file made and
    removed: the same names) may change again within the same clock tick
    unseen: the copy does not vouch for it; the others, settled, it does."""
    _first(ws, home)
    _restored(ws, home)
    _settle()
    (ws / "d1/f1/tmp.txt").write_text("a moment\n")
    (ws / "d1/f1/tmp.txt").unlink()
    found = _verdicts_run_here(ws, home)
    assert found["d1/f1"][0] == preload._MISMATCH
    assert found["d2/f7"] == _unchanged(ws, 7)


def test_a_symlink_to_a_folder_is_one_of_a_relisted_folders_files(ws: Path, home: Path) -> None:
    """A folder without a shape holds a symlink to a folder (recorded as a
    link, as git does): listing it, the copy takes the link for what it is, not
    for the folder it points to, and vouches for the folder."""
    write(ws, _files())
    (ws / "d1/f1/link").symlink_to("../f6", target_is_directory=True)
    _settle()
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot()
    _settle()
    _restored(ws, home)
    _settle()
    found = _verdicts_run_here(ws, home)
    links = len(os.readlink(ws / "d1/f1/link"))
    assert found["d1/f1"] == _as_walked(ws, "d1/f1", sum(len(f"folder 1 file {j}\n") for j in range(4)) + links)
    assert all(verdict[0] != preload._MISMATCH for verdict in found.values())
