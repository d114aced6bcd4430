"""Big blobs are streamed whatever their compression ratio: memory stays flat.

A file of zeros inflates about a thousand times: read whole (or inflated one
compressed megabyte at a time) it costs its full size in memory. Each test
builds a store holding such a file, loose (as snapshots store big files) or
forced into a pack (as a forged store, or one packed by another tool, could
hold it), then measures the peak RSS of a fresh process that restores it,
verifies the store, diffs it and compacts it.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from snapshotter import Snapshotter
from snapshotter.engine.gitstore.packs import entry_header, index_v2

SIZE = 128 << 20
"""Far above the streaming threshold (8 MiB) and the read piece (1 MiB); 512 MiB with ``--long``."""
MAX_GROWTH_MIB = 40

resource = pytest.importorskip("resource")  # POSIX only

_CHILD = r"""
import json, os, resource, sys
from snapshotter import Snapshotter

def _status(field):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(field)) / 1024

def peak_mib():
    try:
        return _status("VmHWM:")
    except OSError:  # no /proc: the peak since the process began
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024

def now_mib():
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # Linux: the peak starts again from here
        return _status("VmRSS:")
    except OSError:
        return peak_mib()

ws, home, big, step = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with Snapshotter(ws, home=home, max_new_file_size=1 << 40) as snap:
    big_one, small_one = snap.list()[-1], snap.list()[-2]
    start = now_mib()
    if step == "restore":
        snap.restore(big_one.id)
        assert os.path.getsize(os.path.join(ws, "zeros.bin")) == big
    elif step == "verify":
        result = snap.verify(full=True)
        assert result.ok, result.problems
    elif step == "diff":
        (found,) = snap.diff(big_one.id, small_one.id)
        assert found.binary
    elif step == "gc":
        snap.gc()
    else:
        snap.restore(small_one.id)
print(json.dumps(round(peak_mib() - start, 1)))
"""


def _zeros(path: Path, size: int) -> None:
    with open(path, "wb") as handle:
        handle.truncate(size)


def _pack_the_blob(store_path: str, size: int) -> bytes:
    """Write a pack holding a blob of ``size`` zeros, built chunk by chunk, and
    delete its loose copy: the blob is then in a pack only."""
    digest = hashlib.sha1(b"blob %d\0" % size)
    squeezer = zlib.compressobj(1)
    chunk = bytes(1 << 20)
    pieces = []
    for _ in range(size // len(chunk)):
        digest.update(chunk)
        pieces.append(squeezer.compress(chunk))
    pieces.append(squeezer.flush())
    sha = digest.digest()
    entry = entry_header(3, size) + b"".join(pieces)
    body = b"PACK" + struct.pack(">II", 2, 1) + entry
    checksum = hashlib.sha1(body).digest()
    pack_dir = os.path.join(store_path, "objects", "pack")
    base = os.path.join(pack_dir, "pack-" + checksum.hex())
    Path(base + ".pack").write_bytes(body + checksum)
    Path(base + ".idx").write_bytes(index_v2([sha], [12], [zlib.crc32(entry)], checksum))
    loose = os.path.join(store_path, "objects", sha.hex()[:2], sha.hex()[2:])
    os.unlink(loose)
    return sha


@pytest.mark.parametrize("where", ["loose", "packed"])
def test_big_zero_blob_memory_stays_flat(tmp_path: Path, where: str, request: pytest.FixtureRequest) -> None:
    size = 512 << 20 if request.config.getoption("--long") else SIZE
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "small.txt").write_text("small\n")
    _zeros(ws / "zeros.bin", size)
    with Snapshotter(ws, home=tmp_path / "home", max_new_file_size=1 << 40) as snap:
        snap.snapshot("big")
        (ws / "zeros.bin").write_text("not zeros any more\n")
        snap.snapshot("small")
        store_path = snap.store_path
    if where == "packed":
        _pack_the_blob(store_path, size)
    growth = {}
    for step in ("restore", "verify", "diff", "back", "gc", "restore"):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(ws), str(tmp_path / "home"), str(size), step],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        growth[step if step not in growth else f"{step} again"] = json.loads(done.stdout)
    print(where, "peak RSS growth, MiB:", growth)
    assert max(growth.values()) < MAX_GROWTH_MIB, growth


def test_a_symlink_to_a_huge_target_is_refused_before_it_is_read_whole(ws: Path, home: Path) -> None:
    from conftest import forge_snapshot, read_tree, write

    from snapshotter import UnsafeTree

    with Snapshotter(ws, home=home) as snap:
        write(ws, {"a.txt": "alpha\n"})
        snap.snapshot("first")
        before = read_tree(ws)
        target = snap._engine_ok().store.writer.write(b"blob", b"x" * (1 << 20))
        forged = forge_snapshot(snap, [(b"a.txt", 0o100644, b""), (b"link", 0o120000, target)])
        with pytest.raises(UnsafeTree, match="target of more than"):
            snap.restore(forged)
        assert read_tree(ws) == before
