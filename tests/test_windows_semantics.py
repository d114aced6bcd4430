"""Windows filesystem semantics, simulated on this machine through the hostfs seam.

``hostfs.detect`` is made to return ``WINDOWS_SIMULATED``: no exec bit, no
symlink privilege, case-insensitive names, Windows name rules, no ``dir_fd``
(each folder is lstat-checked instead) and retries for files in use. The
walker, restore and file operations then run their real Windows code paths.
What cannot be simulated here: the ``\\\\?\\`` long-path prefix itself (checked
as a string function) and NTFS's own case folding.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import forge_snapshot, read_tree, tree_modes, write

from snapshotter import FileInUse, UnsafeTree
from snapshotter.engine.gitstore.objects import MODE_EXEC, MODE_FILE, MODE_LINK, MODE_TREE, serialize_tree
from snapshotter.engine.session.checkout import MAX_LINK_TARGET
from snapshotter.engine.worktree import hostfs


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Snapshotter made after this sees a Windows-like filesystem."""
    monkeypatch.setattr(hostfs, "detect", lambda root: hostfs.WINDOWS_SIMULATED)


def _posix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hostfs, "detect", lambda root: hostfs.POSIX)


def test_new_files_are_plain_whatever_their_mode_bits(ws: Path, make, windows: None) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"run.sh": "#!/bin/sh\n", "a.txt": "a"})
    (ws / "run.sh").chmod(0o755)  # Windows would show no such bit
    info = make().snapshot()
    assert tree_modes(make(), info.tree_id) == {"run.sh": MODE_FILE, "a.txt": MODE_FILE}


def test_exec_bit_of_the_previous_snapshot_is_kept(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"run.sh": "#!/bin/sh\n", "a.txt": "a"})
    (ws / "run.sh").chmod(0o755)
    _posix(monkeypatch)
    make().snapshot()  # recorded on a filesystem with exec bits
    monkeypatch.setattr(hostfs, "detect", lambda root: hostfs.WINDOWS_SIMULATED)
    (ws / "run.sh").chmod(0o644)  # the bit is not visible any more
    (ws / "run.sh").write_text("#!/bin/sh\necho edited\n")
    snap = make()
    edited = snap.snapshot()
    assert tree_modes(snap, edited.tree_id)["run.sh"] == MODE_EXEC
    # Without the stat cache the mode comes from the newest snapshot instead.
    os.unlink(os.path.join(snap.store_path, "snapshotter", "statcache"))
    (ws / "run.sh").write_text("#!/bin/sh\necho again\n")
    fresh = make()
    again = fresh.snapshot()
    assert tree_modes(fresh, again.tree_id) == {"run.sh": MODE_EXEC, "a.txt": MODE_FILE}


def test_restore_records_the_target_modes_for_the_next_snapshot(
    ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"tool": "t\n"})
    (ws / "tool").chmod(0o755)
    _posix(monkeypatch)
    executable = make().snapshot()
    (ws / "tool").chmod(0o644)
    plain = make().snapshot()
    assert executable.tree_id != plain.tree_id
    monkeypatch.setattr(hostfs, "detect", lambda root: hostfs.WINDOWS_SIMULATED)
    snap = make()
    result = snap.restore(executable.id)  # a chmod-only change: nothing to do on disk
    assert result.written_paths == ("tool",)
    assert snap.snapshot().tree_id == executable.tree_id
    snap.restore(plain.id)
    assert snap.snapshot().tree_id == plain.tree_id


def test_a_mode_only_restore_is_remembered_past_the_next_edit_in_its_folder(
    ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Where the filesystem shows no exec bit, the restore's record of the file it
    made executable carries the mode: an edit beside it, which makes the next
    snapshot rebuild the folder from its records, keeps ``tool`` executable."""
    write(ws, {"tool": "t\n", "notes.txt": "n\n"})
    (ws / "tool").chmod(0o755)
    _posix(monkeypatch)
    executable = make().snapshot()
    (ws / "tool").chmod(0o644)
    make().snapshot()
    monkeypatch.setattr(hostfs, "detect", lambda root: hostfs.WINDOWS_SIMULATED)
    snap = make()
    assert snap.restore(executable.id).written_paths == ("tool",)
    (ws / "notes.txt").write_text("edited\n")
    assert tree_modes(snap, snap.snapshot().tree_id) == {"tool": MODE_EXEC, "notes.txt": MODE_FILE}


def test_symlinks_restore_as_files_holding_their_target_and_stay_symlinks(
    ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"src/real.txt": "r\n", "a.txt": "a"})
    os.symlink("src/real.txt", ws / "link")
    _posix(monkeypatch)
    original = make().snapshot()
    (ws / "link").unlink()
    (ws / "a.txt").write_text("changed")
    monkeypatch.setattr(hostfs, "detect", lambda root: hostfs.WINDOWS_SIMULATED)
    snap = make()
    snap.restore(original.id)
    assert not (ws / "link").is_symlink()
    assert (ws / "link").read_bytes() == b"src/real.txt"  # as git does with core.symlinks=false
    assert snap.snapshot().tree_id == original.tree_id  # still recorded as a symlink
    (ws / "link").write_text("src/other.txt")  # editing the stand-in edits the link target
    edited = snap.snapshot()
    modes = tree_modes(snap, edited.tree_id)
    assert modes["link"] == MODE_LINK
    diff = {d.path: d for d in snap.diff(original.id, edited.id)}
    assert set(diff) == {"link"}


def test_case_colliding_names_leave_out_the_second_and_restore_the_rest(ws: Path, make, windows: None) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"keep.txt": "k"})
    snap = make()
    snap.snapshot()
    names = [b"README.md", b"a.txt", b"readme.md"]
    forged = forge_snapshot(snap, [(name, MODE_FILE, b"") for name in names])
    result = snap.restore(forged)
    assert [(s.path, s.reason.value) for s in result.skipped] == [("readme.md", "name-not-allowed")]
    assert "only in case" in result.skipped[0].detail
    assert read_tree(ws) == {"README.md": ("file", b"pwned\n"), "a.txt": ("file", b"pwned\n")}


def test_case_colliding_names_restore_on_a_case_sensitive_filesystem(
    ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    _posix(monkeypatch)
    snap = make()
    forged = forge_snapshot(snap, [(b"README.md", MODE_FILE, b""), (b"readme.md", MODE_FILE, b"")])
    snap.restore(forged)
    assert sorted(os.listdir(ws)) == ["README.md", "readme.md"]


@pytest.mark.parametrize(
    "name", [b"CON", b"aux.txt", b"nul", b"Com1.log", b"LPT9", b"dot.", b"space ", b"a:b", b"back\\slash"]
)
def test_names_windows_cannot_hold_are_left_out_and_the_rest_restored(
    ws: Path, make, windows: None, name: bytes
) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    forged = forge_snapshot(snap, [(b"ok.txt", MODE_FILE, b""), (b"sub", 0o040000, _tree(snap, [(name, MODE_FILE)]))])
    result = snap.restore(forged)
    assert [s.path for s in result.skipped] == ["sub/" + name.decode()]
    assert (ws / "ok.txt").read_text() == "pwned\n"
    assert not (ws / "sub").exists()  # nothing else was in it


def test_reserved_windows_names_are_fine_on_posix(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    _posix(monkeypatch)
    snap = make()
    snap.restore(forge_snapshot(snap, [(b"aux.txt", MODE_FILE, b""), (b"dot.", MODE_FILE, b"")]))
    assert sorted(os.listdir(ws)) == ["aux.txt", "dot."]


def _tree(snap, entries: list[tuple[bytes, int]]) -> bytes:  # type: ignore[no-untyped-def]
    from snapshotter.engine.gitstore.objects import serialize_tree

    writer = snap._engine_ok().store.writer
    blob = writer.write(b"blob", b"x\n")
    return writer.write(b"tree", serialize_tree([(name, mode, blob) for name, mode in entries]))


def test_paths_longer_than_260_characters_round_trip(ws: Path, make, windows: None) -> None:  # type: ignore[no-untyped-def]
    deep = "/".join(f"folder-{i:02d}-with-a-long-name" for i in range(12)) + "/file.txt"
    assert len(str(ws / deep)) > 300
    write(ws, {deep: "deep\n", "top.txt": "t"})
    snap = make()
    first = snap.snapshot()
    (ws / deep).write_text("changed\n")
    (ws / "top.txt").unlink()
    snap.restore(first.id)
    assert (ws / deep).read_text() == "deep\n"
    assert (ws / "top.txt").read_text() == "t"


def test_long_path_prefix_is_added_only_where_needed() -> None:
    short = "C:\\work\\a.txt"
    long = "C:\\" + "\\".join(["x" * 50] * 6)
    unc = "\\\\server\\share\\" + "\\".join(["y" * 50] * 6)
    assert hostfs.windows_long_path(short) == short
    assert hostfs.windows_long_path(long) == "\\\\?\\" + long
    assert hostfs.windows_long_path("\\\\?\\" + long) == "\\\\?\\" + long
    assert hostfs.windows_long_path(unc) == "\\\\?\\UNC\\" + unc[2:]
    assert hostfs.windows_long_path(long.replace("\\", "/")) == "\\\\?\\" + long
    assert hostfs.WINDOWS.native(long) == "\\\\?\\" + long
    assert hostfs.POSIX.native(long) == long


def _busy(monkeypatch: pytest.MonkeyPatch, name: str, times: float) -> list[str]:
    """Make replacing or deleting ``name`` fail as a sharing violation ``times`` times."""
    calls: list[str] = []
    real_replace, real_unlink = os.replace, os.unlink

    def check(path: object) -> None:
        text = os.fsdecode(path)  # type: ignore[call-overload]
        if text.endswith(os.sep + name) and len(calls) < times:
            calls.append(text)
            raise PermissionError(13, "The process cannot access the file because it is being used", path)

    def replace(src: object, dst: object, **kwargs: object) -> None:
        check(dst)
        real_replace(src, dst, **kwargs)  # type: ignore[arg-type]

    def unlink(path: object, **kwargs: object) -> None:
        check(path)
        real_unlink(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "unlink", unlink)
    return calls


def test_a_file_in_use_for_a_moment_is_retried(ws: Path, make, windows: None, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"busy.txt": "v1", "other.txt": "o1"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"busy.txt": "v2", "other.txt": "o2"})
    calls = _busy(monkeypatch, "busy.txt", times=2)
    snap.restore(first.id)
    assert len(calls) == 2
    assert read_tree(ws) == {"busy.txt": ("file", b"v1"), "other.txt": ("file", b"o1")}


@pytest.mark.parametrize("change", ["modify", "delete"])
def test_a_file_kept_in_use_is_named_and_the_workspace_put_back(
    ws: Path, make, windows: None, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a1", "busy.txt": "v1", "z.txt": "z1"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"a.txt": "a2", "z.txt": "z2"})
    if change == "modify":
        write(ws, {"busy.txt": "v2"})
    else:
        write(ws, {"new/busy.txt": "fresh"})
    before = read_tree(ws)
    _busy(monkeypatch, "busy.txt", times=float("inf"))
    with pytest.raises(FileInUse, match="busy.txt is in use by another program"):
        snap.restore(first.id)
    assert read_tree(ws) == before


def test_windows_files_are_not_given_exec_modes_by_umask(ws: Path, make, windows: None) -> None:  # type: ignore[no-untyped-def]
    """The stat key of a restored file carries the git mode, so an unchanged
    file is a cache hit on the next snapshot (nothing re-read)."""
    write(ws, {f"f{i}.txt": str(i) for i in range(5)})
    snap = make()
    first = snap.snapshot()
    for i in range(5):
        (ws / f"f{i}.txt").write_text("changed")
    snap.restore(first.id)
    snap.snapshot()
    assert snap.last_scan.files_hashed == 0
    assert all(stat.S_ISREG(os.lstat(ws / f"f{i}.txt").st_mode) for i in range(5))


def test_a_workspace_path_at_a_name_left_out_is_neither_written_nor_deleted(ws: Path, make, windows: None) -> None:  # type: ignore[no-untyped-def]
    """The target holds ``readme.md`` and ``docs/`` besides ``README.md`` and ``DOCS/``,
    which this filesystem cannot tell apart: the second of each is left out, and
    what the workspace has at those paths (a file, a folder's file) stays as it is."""
    write(ws, {"readme.md": "mine\n", "docs/notes.txt": "my notes\n"})
    snap = make()
    snap.snapshot()
    writer = snap._engine_ok().store.writer
    blob = writer.write(b"blob", b"x\n")
    folder = writer.write(b"tree", serialize_tree([(b"a.txt", MODE_FILE, blob)]))
    entries = [(b"DOCS", MODE_TREE, folder), (b"README.md", MODE_FILE, b""), (b"docs", MODE_TREE, folder)]
    forged = forge_snapshot(snap, [*entries, (b"readme.md", MODE_FILE, b"")])
    result = snap.restore(forged)
    assert [s.path for s in result.skipped] == ["docs", "readme.md"]
    assert result.deleted_paths == ()
    assert read_tree(ws) == {
        "DOCS/a.txt": ("file", b"x\n"),
        "README.md": ("file", b"pwned\n"),
        "docs/notes.txt": ("file", b"my notes\n"),
        "readme.md": ("file", b"mine\n"),
    }


def test_a_symlink_target_up_to_the_cap_restores_as_its_stand_in_file(ws: Path, make, windows: None) -> None:  # type: ignore[no-untyped-def]
    """Without symlinks a link is a file holding its target: one of exactly
    ``MAX_LINK_TARGET`` bytes is written, one byte more refuses the restore."""
    write(ws, {"a.txt": "a\n"})
    snap = make()
    snap.snapshot()
    writer = snap._engine_ok().store.writer
    longest = b"t" * MAX_LINK_TARGET
    fits = forge_snapshot(snap, [(b"link", MODE_LINK, writer.write(b"blob", longest))], seq=998)
    too_long = forge_snapshot(snap, [(b"link", MODE_LINK, writer.write(b"blob", longest + b"t"))])
    with pytest.raises(UnsafeTree, match=f"'link' with a target of more than {MAX_LINK_TARGET} bytes"):
        snap.restore(too_long)
    assert read_tree(ws) == {"a.txt": ("file", b"a\n")}
    snap.restore(fits)
    assert read_tree(ws) == {"link": ("file", longest)}
