"""Restoring a big file kept as a chain of deltas (issue #53): copied in the kernel, checked cheaply.

The spans of a restored version that lie in the pack as they are (the key
frame's stored blocks) are copied from the pack to the file by the kernel
(``os.splice`` through a pipe, else ``os.copy_file_range``); where the kernel
cannot (no such call, another file system), the same spans are read and written. Either way the file is byte for
byte the version (``git cat-file`` is the oracle where git is installed). A
restore does not hash the file again against its id, as ``git checkout`` does
not: it checks the CRC-32 the pack index keeps for each entry the chain uses,
so a damaged pack fails the restore with a typed error, and the file that was
there stays as it was. ``verify`` still hashes every blob.
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GIT, git, git_env

from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore import bigfacts
from snapshotter.engine.gitstore.packread import PackFile, _entry_header
from snapshotter.errors import StoreError

SIZE = 10 << 20  # over the big-file threshold (8 MiB)
CHANGE = 64 << 10
_KERNEL_CALLS = ("splice", "copy_file_range")


def _blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def _text(rng: random.Random, size: int) -> bytes:
    """Bytes that compress (a key frame of them is deflated, not kept in stored blocks)."""
    words = [rng.randbytes(6).hex().encode() for _ in range(500)]
    out = bytearray()
    while len(out) < size:
        out += b" ".join(rng.choice(words) for _ in range(12)) + b"\n"
    return bytes(out[:size])


def _versions(ws: Path, snap: Snapshotter, count: int, compressible: bool = False) -> list[tuple[str, bytes]]:
    """``count`` snapshots of ``db.bin``, each after three scattered 64 KiB
    rewrites and an insertion of a few bytes (a delta of the last)."""
    rng = random.Random(530)
    fresh = (lambda size: _text(rng, size)) if compressible else rng.randbytes
    data = bytearray(fresh(SIZE))
    made = []
    for i in range(count):
        if i:
            for _ in range(3):
                at = rng.randrange(0, len(data) - CHANGE)
                data[at : at + CHANGE] = fresh(CHANGE)
            at = rng.randrange(0, len(data))
            data[at:at] = fresh(100)
        (ws / "db.bin").write_bytes(data)
        made.append((snap.snapshot(f"v{i}").id, bytes(data)))
    return made


def _chain_pack(snap: Snapshotter) -> Path:
    pack_dir = Path(snap.store_path) / "objects" / "pack"
    found = [p for p in pack_dir.iterdir() if p.name.startswith(bigfacts.PREFIX) and p.name.endswith(".pack")]
    assert len(found) == 1, found
    return found[0]


def _git_content(snap: Snapshotter, snapshot: str, tmp: Path) -> bytes | None:
    if GIT is None:
        return None
    import subprocess

    env = git_env(tmp)
    blob = git("--git-dir", snap.store_path, "rev-parse", f"{snapshot}^{{tree}}:db.bin", env=env).strip()
    done = subprocess.run([GIT, "--git-dir", snap.store_path, "cat-file", "blob", blob], capture_output=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count the bytes ``os.<name>`` copies from the pack (the real call does
    the copy; a splice out of its pipe, into the file, is not counted again)."""
    real = getattr(os, name)
    copied: list[int] = []

    def counted(*args: int, **kwargs: int | None) -> int:
        done: int = real(*args, **kwargs)
        if name != "splice" or len(args) > 3 or "offset_src" in kwargs:
            copied.append(done)
        return done

    monkeypatch.setattr(os, name, counted)
    return copied


def _restores_every_version(
    ws: Path, tmp_path: Path, make: Callable[..., Snapshotter], compressible: bool = False
) -> None:
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = _versions(ws, snap, 5, compressible)
    assert len(list(_chain_pack(snap).parent.glob(bigfacts.PREFIX + "*.pack"))) == 1  # one key frame, four deltas
    for snapshot, content in [*reversed(versions), versions[-1]]:
        snap.restore(snapshot)
        assert (ws / "db.bin").read_bytes() == content
        assert sorted(p.name for p in ws.iterdir()) == ["db.bin"]  # no temporary file left beside it
    for snapshot, content in versions:
        oracle = _git_content(snap, snapshot, tmp_path)
        assert oracle is None or oracle == content
    if GIT is not None:
        git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", "--no-progress", env=git_env(tmp_path))


@pytest.mark.parametrize("kernel", _KERNEL_CALLS)
def test_a_deep_version_is_copied_from_the_pack_by_the_kernel_byte_exact(
    ws: Path, tmp_path: Path, make: Callable[..., Snapshotter], monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    if getattr(os, kernel, None) is None:
        pytest.skip(f"no os.{kernel} on this system")
    if kernel != "splice":
        monkeypatch.delattr(os, "splice", raising=False)
    copied = _counting(monkeypatch, kernel)
    _restores_every_version(ws, tmp_path, make)
    assert sum(copied) > 5 * (SIZE // 2)  # most of each version came straight from the key frame's stored blocks


@pytest.mark.parametrize("how", ["missing", "EXDEV", "ENOSYS", "EINVAL", "EOPNOTSUPP", "EPERM"])
def test_where_the_kernel_cannot_copy_the_spans_are_read_and_written_byte_exact(
    ws: Path, tmp_path: Path, make: Callable[..., Snapshotter], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    refused: dict[str, int] = {}
    for name in _KERNEL_CALLS:
        if how == "missing":
            monkeypatch.delattr(os, name, raising=False)
            continue

        def refuse(*args: int, name: str = name, **kwargs: int | None) -> int:
            refused[name] = refused.get(name, 0) + 1
            raise OSError(getattr(errno, how), os.strerror(getattr(errno, how)))

        monkeypatch.setattr(os, name, refuse)
    _restores_every_version(ws, tmp_path, make)
    if how != "missing":
        assert sorted(refused) == sorted(_KERNEL_CALLS)  # each tried, refused, and the spans read and written


def _flip_in_key_frame(pack: Path, at: int) -> None:
    """Flip a byte ``at`` bytes into the key frame's first stored block."""
    opened = PackFile(str(pack))
    try:
        _, _, used, _ = _entry_header(opened.read_at(64, 12), b"\0" * 20)
    finally:
        opened.close()
    where = 12 + used + 2 + 5 + at  # the entry's header, zlib's header, the stored block's header
    os.chmod(pack, 0o644)
    with open(pack, "r+b") as handle:
        handle.seek(where)
        byte = handle.read(1)
        handle.seek(where)
        handle.write(bytes([byte[0] ^ 0x01]))


def test_a_version_of_a_compressed_key_frame_is_inflated_and_checked_byte_exact(
    ws: Path, tmp_path: Path, make: Callable[..., Snapshotter]
) -> None:
    _restores_every_version(ws, tmp_path, make, compressible=True)


def test_without_unnamed_files_a_version_is_written_under_a_name_of_its_own_then_renamed(
    ws: Path, tmp_path: Path, make: Callable[..., Snapshotter], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    _restores_every_version(ws, tmp_path, make)


@pytest.mark.parametrize(
    ("kernel", "unnamed", "compressible"),
    [(True, True, False), (False, True, False), (True, False, False), (False, False, False), (True, True, True)],
)
def test_a_damaged_key_frame_fails_the_restore_and_leaves_the_file_as_it_was(
    ws: Path,
    make: Callable[..., Snapshotter],
    monkeypatch: pytest.MonkeyPatch,
    kernel: bool,
    unnamed: bool,
    compressible: bool,
) -> None:
    if not kernel:
        for name in _KERNEL_CALLS:
            monkeypatch.delattr(os, name, raising=False)
    if not unnamed:
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = _versions(ws, snap, 4, compressible)
    key_frame = _blob_id(versions[0][1])
    _flip_in_key_frame(_chain_pack(snap), 1000)
    with pytest.raises(StoreError) as raised:
        snap.restore(versions[1][0])
    # the damaged object is named: the key frame by its CRC-32; a deflated one fails to inflate first
    assert key_frame in str(raised.value) or (compressible and _blob_id(versions[1][1]) in str(raised.value))
    assert (ws / "db.bin").read_bytes() == versions[-1][1]  # the newest version, as it was
    assert sorted(p.name for p in ws.iterdir()) == ["db.bin"]
    result = snap.verify()
    assert not result.ok
    assert any(key_frame[:12] in problem or "does not match" in problem for problem in result.problems), result.problems
