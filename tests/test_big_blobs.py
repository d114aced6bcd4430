"""Big blobs are streamed whatever their compression ratio: memory stays flat.

A file of zeros inflates about a thousand times: read whole (or inflated one
compressed megabyte at a time) it costs its full size in memory. Each test
builds a store holding such a file, in a chain pack (as snapshots store big
files), loose (as older versions stored them) or in a pack written by another
tool (as a forged store could hold it), then measures the peak RSS of a fresh process that restores it,
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
from collections.abc import Iterator
from pathlib import Path

import pytest

from snapshotter import Snapshotter
from snapshotter.engine.gitstore.objectwriter import ObjectWriter
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
with Snapshotter(ws, home=home, max_new_file_size=1 << 40, sparse_files=True) as snap:
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


def _zero_pieces(size: int) -> Iterator[bytes]:
    chunk = bytes(1 << 20)
    for _ in range(size // len(chunk)):
        yield chunk


def _keep_the_blob_only(store_path: str, size: int, where: str) -> bytes:
    """Store the blob of ``size`` zeros as older versions did (``loose``) or as a
    pack written by another tool holds it (``packed``), and delete the chain pack
    snapshots keep it in now: it is then stored that way only."""
    digest = hashlib.sha1(b"blob %d\0" % size)
    for piece in _zero_pieces(size):
        digest.update(piece)
    sha = digest.digest()
    pack_dir = os.path.join(store_path, "objects", "pack")
    for name in os.listdir(pack_dir):
        if name.startswith("pack-chain-"):
            os.unlink(os.path.join(pack_dir, name))
    if where == "loose":
        ObjectWriter(os.path.join(store_path, "objects"), lambda sha, relist: False).write_stream(
            b"blob", size, _zero_pieces(size), sha
        )
        return sha
    squeezer = zlib.compressobj(1)
    entry = entry_header(3, size) + b"".join(squeezer.compress(piece) for piece in _zero_pieces(size))
    entry += squeezer.flush()
    body = b"PACK" + struct.pack(">II", 2, 1) + entry
    checksum = hashlib.sha1(body).digest()
    base = os.path.join(pack_dir, "pack-" + checksum.hex())
    Path(base + ".pack").write_bytes(body + checksum)
    Path(base + ".idx").write_bytes(index_v2([sha], [12], [zlib.crc32(entry)], checksum))
    return sha


@pytest.mark.parametrize("where", ["chain", "loose", "packed"])
def test_big_zero_blob_memory_stays_flat(tmp_path: Path, where: str, request: pytest.FixtureRequest) -> None:
    size = 512 << 20 if request.config.getoption("--long") else SIZE
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "small.txt").write_text("small\n")
    _zeros(ws / "zeros.bin", size)
    with Snapshotter(ws, home=tmp_path / "home", max_new_file_size=1 << 40, sparse_files=True) as snap:
        snap.snapshot("big")
        (ws / "zeros.bin").write_text("not zeros any more\n")
        snap.snapshot("small")
        store_path = snap.store_path
    if where != "chain":
        _keep_the_blob_only(store_path, size, where)
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
