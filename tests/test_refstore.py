"""``gitstore/refstore.RefStore`` on a real store: which refs a write makes, which
a delete or a pack leaves, and what a reader then sees, loose and packed (what
a mutation run of refstore.py found unchecked). git reads the same refs where
it is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import write

from snapshotter import Snapshotter
from snapshotter.engine.gitstore.refstore import KEPT_LOOSE, RefStore, number_name
from snapshotter.errors import StoreError


def _refs(ws: Path, make: Callable[..., Snapshotter], count: int = 2) -> tuple[RefStore, list[bytes]]:
    """A store holding ``count`` snapshots, and their commit ids (binary)."""
    snap = make()
    commits = []
    for n in range(count):
        write(ws, {"f.txt": f"{n}\n"})
        commits.append(bytes.fromhex(snap.snapshot(f"s{n}").id))
    return RefStore(snap._engine_ok().store.path), commits


def _git_refs(store: str) -> dict[bytes, bytes]:
    done = subprocess.run(
        ["git", "--git-dir", store, "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        check=True,
    )
    return dict(line.split(b" ") for line in done.stdout.splitlines())  # type: ignore[misc]


def _locks(store: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(top, name), store)
        for top, _, names in os.walk(store)
        for name in names
        if name.endswith(".lock")
    )


def test_create_makes_a_ref_only_where_none_is_loose_packed_or_locked(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    refs, (first, second) = _refs(ws, make)
    name = b"refs/snapshotter/test/one"
    assert refs.create(name, first)
    assert not refs.create(name, second)  # loose already
    assert refs.get(name) == first.hex().encode()
    assert refs.pack((b"refs/snapshotter/test",), lambda _: False) == 1
    assert not os.path.exists(refs.file_of(name))
    assert not refs.create(name, second)  # packed already
    assert refs.get(name) == first.hex().encode()
    other = b"refs/snapshotter/test/two"
    Path(refs.file_of(other) + ".lock").write_bytes(b"")
    assert not refs.create(other, second)  # another writer's lock: left to it
    assert refs.get(other) is None
    assert _locks(refs.path) == ["refs/snapshotter/test/two.lock"]


def test_put_overrides_a_packed_ref_and_refuses_a_locked_one_with_a_typed_error(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    refs, (first, second) = _refs(ws, make)
    name = b"refs/snapshotter/test/one"
    refs.put(name, first)
    refs.pack((b"refs/snapshotter/test",), lambda _: False)
    refs.put(name, second)
    assert refs.get(name) == second.hex().encode()
    Path(refs.file_of(name) + ".lock").write_bytes(b"")
    with pytest.raises(StoreError, match=r"one\.lock exists: another git process"):
        refs.put(name, first)
    assert refs.get(name) == second.hex().encode()


def test_delete_removes_loose_and_packed_refs_holding_the_id_given_and_no_other(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    refs, (first, second) = _refs(ws, make)
    base = b"refs/snapshotter/test"
    names = [base + b"/deep/" + bytes([c]) for c in b"abcde"]
    for name in names:
        refs.put(name, first)
    refs.pack((base,), lambda name: name == names[1])  # b stays loose, the others packed
    refs.put(names[2], second)  # c: loose over its packed line
    Path(refs.file_of(names[4]) + ".lock").write_bytes(b"")  # e: another writer's
    wanted: dict[bytes, bytes | None] = {names[0]: None, names[1]: first, names[2]: first, names[3]: second}
    wanted[names[4]] = None
    wanted[base + b"/missing/ref"] = None
    assert refs.delete(wanted) == {names[0], names[1]}
    assert refs.get(names[0]) is None and refs.get(names[1]) is None
    assert refs.get(names[2]) == second.hex().encode()  # held another id
    assert refs.get(names[3]) == first.hex().encode()
    assert refs.get(names[4]) == first.hex().encode()
    assert _locks(refs.path) == ["refs/snapshotter/test/deep/e.lock"]
    os.unlink(refs.file_of(names[4]) + ".lock")
    assert refs.delete({names[2]: second, names[3]: None, names[4]: first}) == {names[2], names[3], names[4]}
    assert refs.everything_below(base) == {}
    assert not os.path.exists(refs.file_of(base + b"/deep"))  # emptied folders go
    assert os.path.isdir(refs.file_of(b"refs/snapshots")) and _locks(refs.path) == []
    if shutil.which("git"):
        assert not any(name.startswith(base) for name in _git_refs(refs.path))


def test_pack_keeps_the_newest_of_each_numbered_folder_loose_outside_the_snapshots(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    refs, (first, second) = _refs(ws, make)
    stack = b"refs/snapshotter/stacks/undo"
    for number in range(1, KEPT_LOOSE + 4):
        refs.put(number_name(stack, number), first)
    refs.put(b"refs/snapshotter/stacks/undo/odd", second)  # no number: packed like any ref
    snapshots_before = refs.loose_count(b"refs/snapshots")
    packed = refs.pack((b"refs/snapshots", b"refs/snapshotter/stacks"), lambda _: False)
    assert packed == snapshots_before + 3 + 1
    assert refs.loose_count(b"refs/snapshots") == 0
    assert sorted(refs.loose_numbers(stack)) == list(range(4, KEPT_LOOSE + 4))
    assert [n for n, _ in refs.numbered(stack)] == list(range(KEPT_LOOSE + 3, 0, -1))
    assert all(value == first for _, value in refs.numbered(stack))
    assert refs.get(b"refs/snapshotter/stacks/undo/odd") == second.hex().encode()
    assert refs.pack((b"refs/snapshots", b"refs/snapshotter/stacks"), lambda _: False) == 0
    if shutil.which("git"):
        seen = _git_refs(refs.path)
        assert seen[number_name(stack, 1)] == first.hex().encode()
        assert seen[b"refs/snapshotter/stacks/undo/odd"] == second.hex().encode()


def test_numbered_refs_merge_loose_and_packed_in_order_from_either_end(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    refs, (first, second) = _refs(ws, make)
    stack = b"refs/snapshotter/stacks/redo"
    top = list(range(20, 20 + KEPT_LOOSE))  # the newest stay loose: 1, 2, 4 and 6 are packed
    for number in [1, 2, 4, 6, *top]:
        refs.put(number_name(stack, number), first)
    assert refs.pack((stack,), lambda _: False) == 4
    for number in (3, 4, 7):
        refs.put(number_name(stack, number), second)  # 4: loose over packed
    expected = [(1, first), (2, first), (3, second), (4, second), (6, first), (7, second)]
    expected += [(n, first) for n in top]
    assert list(refs.numbered(stack, newest_first=False)) == expected
    assert list(refs.numbered(stack)) == expected[::-1]
    assert list(refs.numbered(stack, beyond=4)) == [(3, second), (2, first), (1, first)]
    assert list(refs.numbered(stack, newest_first=False, beyond=3))[:3] == [(4, second), (6, first), (7, second)]
    assert list(refs.numbered(stack, beyond=5))[:2] == [(4, second), (3, second)]
    assert refs.newest_number(stack) == top[-1] and refs.newest_number(stack + b"x") == 0
    length, ends = refs.fingerprint(stack)
    assert length[1:] == (number_name(stack, 1).decode(), number_name(stack, 6).decode())
    assert ends == sorted([3, 4, 7, *top])
    assert refs.folders(b"refs/snapshotter/stacks") == {b"redo"}


def _packed(refs: RefStore) -> bytes:
    return Path(refs.packed.path).read_bytes()


def test_a_packed_refs_file_not_sorted_is_rewritten_sorted_keeping_its_refs(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    refs, (first, second) = _refs(ws, make)
    lines = [second.hex().encode() + b" refs/snapshotter/t/z", first.hex().encode() + b" refs/snapshotter/t/a"]
    Path(refs.packed.path).write_bytes(b"\n".join(lines) + b"\n")  # no header: as an old git or a hand wrote it
    refs.packed.forget()
    refs.put(b"refs/snapshotter/t/m", first)
    assert refs.pack((b"refs/snapshotter/t",), lambda _: False) == 1
    assert _packed(refs) == (
        b"# pack-refs with: sorted \n"
        + first.hex().encode()
        + b" refs/snapshotter/t/a\n"
        + first.hex().encode()
        + b" refs/snapshotter/t/m\n"
        + second.hex().encode()
        + b" refs/snapshotter/t/z\n"
    )
    assert refs.delete({b"refs/snapshotter/t/a": None}) == {b"refs/snapshotter/t/a"}
    assert _packed(refs).startswith(b"# pack-refs with: sorted \n" + first.hex().encode() + b" refs/snapshotter/t/m\n")
    if shutil.which("git"):
        assert _git_refs(refs.path)[b"refs/snapshotter/t/z"] == second.hex().encode()


def test_a_new_packed_refs_file_says_what_git_says(ws: Path, make: Callable[..., Snapshotter]) -> None:
    refs, (first, _) = _refs(ws, make)
    assert not os.path.exists(refs.packed.path)
    refs.put(b"refs/snapshotter/t/one", first)
    refs.pack((b"refs/snapshotter/t",), lambda _: False)
    assert (
        _packed(refs)
        == b"# pack-refs with: peeled fully-peeled sorted \n" + first.hex().encode() + b" refs/snapshotter/t/one\n"
    )


def test_a_rewrite_of_a_locked_or_damaged_packed_refs_changes_nothing_and_leaves_no_lock(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    refs, (first, _) = _refs(ws, make)
    refs.put(b"refs/snapshotter/t/one", first)
    lock = Path(refs.packed.path + ".lock")
    lock.write_bytes(b"")
    with pytest.raises(StoreError, match=r"packed-refs\.lock exists: another git process is changing refs"):
        refs.pack((b"refs/snapshotter/t",), lambda _: False)
    assert lock.read_bytes() == b"" and not os.path.exists(refs.packed.path)  # the other writer's, untouched
    lock.unlink()
    damaged = b"# pack-refs with: peeled fully-peeled sorted \n" + first.hex().encode() + b" refs/snapshotter/t/cut"
    Path(refs.packed.path).write_bytes(damaged)  # its last line cut short
    refs.packed.forget()
    with pytest.raises(StoreError, match="is damaged"):
        refs.pack((b"refs/snapshotter/t",), lambda _: False)
    assert _packed(refs) == damaged and not lock.exists()
    assert refs.get(b"refs/snapshotter/t/one") == first.hex().encode()  # still loose


@pytest.mark.parametrize("kind", ["symlink", "folder"])
def test_a_packed_refs_that_is_no_file_is_a_typed_error_naming_it_never_an_empty_list(
    ws: Path, make: Callable[..., Snapshotter], kind: str
) -> None:
    refs, (first, _) = _refs(ws, make)
    refs.put(b"refs/snapshotter/t/one", first)
    refs.pack((b"refs/snapshotter/t",), lambda _: False)
    packed = Path(refs.packed.path)
    packed.rename(packed.with_name("elsewhere"))
    if kind == "symlink":
        packed.symlink_to("elsewhere")
    else:
        packed.mkdir()
    reason = "a symbolic link" if kind == "symlink" else ".+"
    with pytest.raises(StoreError) as raised:
        RefStore(refs.path).get(b"refs/snapshotter/t/one")
    assert raised.match(
        f"^cannot read {packed} \\({reason}\\): it may name snapshots, so nothing is done without it; "
        "if it is not a file, remove it$"
    )
