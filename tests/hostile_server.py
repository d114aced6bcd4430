"""A scripted hostile git server on the loopback interface, for the remote tests.

Unlike ``remote_servers`` (real git behind each protocol), this server runs no
program: it answers ``git-upload-pack`` over ``git://`` or smart HTTP with
whatever a :class:`Script` says, byte for byte: a ref advertisement (crafted,
or endless), then, once the client has said ``done``, an answer (``NAK`` and a
pack, crafted, damaged, thin, a zlib bomb, or endless). The packs are built
here from raw entries, so a test can send what no git would.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from snapshotter.engine.gitstore.objects import serialize_tree
from snapshotter.engine.gitstore.packs import entry_header
from snapshotter.engine.gitstore.trailers import build_commit

CAPS = b"side-band-64k ofs-delta agent=hostile/1"
Chunks = Callable[[], Iterable[bytes]]
"""What the server sends at one step, made afresh for each connection."""


def pkt(data: bytes) -> bytes:
    return b"%04x" % (len(data) + 4) + data


FLUSH = b"0000"


# -- objects and packs --------------------------------------------------------------


def object_id(kind: bytes, content: bytes) -> bytes:
    return hashlib.sha1(b"%s %d\0" % (kind, len(content)) + content).digest()


@dataclass(frozen=True)
class Snapshot:
    """One snapshot's objects (a commit, its tree, its blobs), as a pack holds them."""

    commit: bytes
    """The commit's id (raw)."""
    objects: list[tuple[int, bytes]]
    """(type number, content), commit first."""

    @property
    def hex(self) -> bytes:
        return self.commit.hex().encode()

    def entries(self) -> list[bytes]:
        return [whole(kind, content) for kind, content in self.objects]


def snapshot(files: dict[bytes, bytes], seq: int = 1, blobs: dict[bytes, bytes] | None = None) -> Snapshot:
    """A snapshot commit holding ``files`` (name -> content), whose objects all go
    in the pack; ``blobs`` (name -> blob id) are named in the tree but not sent."""
    entries = [(name, 0o100644, object_id(b"blob", content)) for name, content in files.items()]
    entries += [(name, 0o100644, sha) for name, sha in (blobs or {}).items()]
    tree = serialize_tree(sorted(entries))
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    made = build_commit(
        object_id(b"tree", tree), "sent", seq=seq, label=None, metadata={}, stats=(0, 0, 0), skipped=[], when=when
    )
    raw = made.as_raw_string()
    objects = [(1, raw), (2, tree), *((3, content) for content in files.values())]
    return Snapshot(object_id(b"commit", raw), objects)


def whole(kind: int, content: bytes) -> bytes:
    """A pack entry holding a whole object."""
    return entry_header(kind, len(content)) + zlib.compress(content)


def _varint(size: int) -> bytes:
    out = bytearray()
    while True:
        byte = size & 0x7F
        size >>= 7
        out.append(byte | (0x80 if size else 0))
        if not size:
            return bytes(out)


def delta(base_size: int, result_size: int, ops: bytes) -> bytes:
    """A delta's data: the two sizes, then the ``ops`` as given."""
    return _varint(base_size) + _varint(result_size) + ops


def insert(data: bytes) -> bytes:
    """A delta op that inserts ``data`` (at most 127 bytes)."""
    return bytes([len(data)]) + data


def copy(offset: int, size: int) -> bytes:
    """A delta op copying ``size`` bytes (under 64 KiB, 0 meaning 64 KiB) of the base from ``offset``."""
    return bytes([0x80 | 0x01 | 0x02 | 0x04 | 0x08 | 0x10 | 0x20]) + struct.pack("<I", offset) + struct.pack("<H", size)


def ref_delta(base: bytes, data: bytes) -> bytes:
    """A pack entry holding ``data`` as a delta against the object ``base`` (raw id)."""
    return entry_header(7, len(data)) + base + zlib.compress(data)


def pack(entries: list[bytes], count: int | None = None) -> bytes:
    """A pack of the raw ``entries`` (``count`` in its header: their number unless given)."""
    body = b"PACK" + struct.pack(">II", 2, len(entries) if count is None else count) + b"".join(entries)
    return body + hashlib.sha1(body).digest()


def zeros_blob(size: int) -> tuple[bytes, Chunks]:
    """(id, the pack entry as chunks) of a blob of ``size`` zero bytes: a zlib bomb,
    about a thousandth of ``size`` on the wire, never held whole here."""
    digest = hashlib.sha1(b"blob %d\0" % size)
    piece = bytes(1 << 20)
    for _ in range(size // len(piece)):
        digest.update(piece)
    digest.update(bytes(size % len(piece)))
    squeezed = _zeros_compressed(size)

    def chunks() -> Iterator[bytes]:
        yield entry_header(3, size)
        yield squeezed

    return digest.digest(), chunks


_SQUEEZED: dict[int, bytes] = {}


def _zeros_compressed(size: int) -> bytes:
    if size not in _SQUEEZED:
        squeezer = zlib.compressobj(9)
        piece = bytes(1 << 20)
        out = [squeezer.compress(piece) for _ in range(size // len(piece))]
        out.append(squeezer.compress(bytes(size % len(piece))))
        out.append(squeezer.flush())
        _SQUEEZED[size] = b"".join(out)
    return _SQUEEZED[size]


def streamed_pack(entries: list[Chunks]) -> Chunks:
    """A pack of entries given as chunks, its checksum computed as it goes."""

    def chunks() -> Iterator[bytes]:
        digest = hashlib.sha1()
        head = b"PACK" + struct.pack(">II", 2, len(entries))
        digest.update(head)
        yield head
        for entry in entries:
            for chunk in entry():
                digest.update(chunk)
                yield chunk
        yield digest.digest()

    return chunks


# -- what the server says -------------------------------------------------------------


def advertise(refs: list[tuple[bytes, bytes]], caps: bytes = CAPS) -> Chunks:
    """A protocol-0 ref advertisement of (value, name) pairs, then a flush."""

    def chunks() -> Iterator[bytes]:
        for i, (value, name) in enumerate(refs):
            yield pkt(value + b" " + name + (b"\0" + caps if i == 0 else b"") + b"\n")
        yield FLUSH

    return chunks


def sideband(data: Chunks, channel: int = 1, size: int = 65515) -> Chunks:
    """``data`` in side-band-64k packets of ``channel``."""

    def chunks() -> Iterator[bytes]:
        for chunk in data():
            for at in range(0, len(chunk), size):
                yield pkt(bytes([channel]) + chunk[at : at + size])

    return chunks


def nak_then(pack_chunks: Chunks, flush: bool = True) -> Chunks:
    """``NAK``, the pack in side band 1, and a flush (an ordinary upload-pack answer)."""
    banded = sideband(pack_chunks)

    def chunks() -> Iterator[bytes]:
        yield pkt(b"NAK\n")
        yield from banded()
        if flush:
            yield FLUSH

    return chunks


def once(data: bytes) -> Chunks:
    return lambda: [data]


def endless(piece: bytes, pause: float = 0.0) -> Chunks:
    """``piece`` again and again, forever (``pause`` seconds apart)."""

    def chunks() -> Iterator[bytes]:
        while True:
            yield piece
            if pause:
                time.sleep(pause)

    return chunks


@dataclass
class Script:
    """What the server sends: ``advertisement`` on connecting; ``answer`` once the
    client has said ``done`` (with ``hang_up``, nothing more: the connection is
    closed after the advertisement). ``connections`` counts the clients served."""

    advertisement: Chunks
    answer: Chunks = field(default_factory=lambda: once(FLUSH))
    hang_up: bool = False
    connections: int = 0
    stopped: threading.Event = field(default_factory=threading.Event)
    """Set when the server stops: its endless and silent answers end then."""


def silence(script: Script) -> Chunks:
    """Nothing at all, until the server stops (the connection stays open)."""

    def chunks() -> Iterator[bytes]:
        script.stopped.wait(120)
        yield from ()

    return chunks


def _send_all(send: Callable[[bytes], object], chunks: Chunks, stopped: threading.Event) -> None:
    with contextlib.suppress(OSError):
        for chunk in chunks():
            if stopped.is_set():
                return
            send(chunk)


def _read_pkts(read: Callable[[int], bytes]) -> bool:
    """Read the client's packets until ``done`` (True) or the end of its stream."""
    while True:
        head = read(4)
        if len(head) < 4:
            return False
        size = int(head, 16)
        if size < 4:
            continue  # flush, delim
        line = read(size - 4)
        if line.rstrip(b"\n") == b"done":
            return True


@contextlib.contextmanager
def git_server(script: Script) -> Iterator[str]:
    """The script served as ``git://127.0.0.1:PORT/x.git``."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve(connection: socket.socket) -> None:
        with connection:
            reader = connection.makefile("rb")
            try:
                head = reader.read(4)
                reader.read(int(head, 16) - 4)  # git-upload-pack /x.git\0host=...
                _send_all(connection.sendall, script.advertisement, script.stopped)
                if not script.hang_up and _read_pkts(reader.read):
                    _send_all(connection.sendall, script.answer, script.stopped)
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_WR)
            except (OSError, ValueError):
                pass

    def accept_loop() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            script.connections += 1
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    try:
        yield f"git://127.0.0.1:{listener.getsockname()[1]}/x.git"
    finally:
        stop.set()
        script.stopped.set()
        thread.join(5)
        listener.close()


@contextlib.contextmanager
def http_server(script: Script) -> Iterator[str]:
    """The script served over smart HTTP as ``http://127.0.0.1:PORT/x.git``
    (responses without a length, ended by closing: an endless one never ends)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            script.connections += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/x-git-upload-pack-advertisement")
            self.end_headers()
            service = self.path.partition("service=")[2].encode()
            self.wfile.write(pkt(b"# service=" + service + b"\n") + FLUSH)
            _send_all(self.wfile.write, script.advertisement, script.stopped)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            at = [0]

            def read(size: int) -> bytes:
                out = body[at[0] : at[0] + size]
                at[0] += size
                return out

            self.send_response(200)
            self.send_header("Content-Type", "application/x-git-upload-pack-result")
            self.end_headers()
            if _read_pkts(read):
                _send_all(self.wfile.write, script.answer, script.stopped)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/x.git"
    finally:
        script.stopped.set()
        server.shutdown()
        server.server_close()


SERVERS = {"git": git_server, "http": http_server}
