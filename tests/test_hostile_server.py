"""A hostile or broken git server: every answer it can craft is a typed one-line
error, with the store unchanged and memory bounded, or a fetch that holds.

The server is scripted (``hostile_server``), over ``git://`` and smart HTTP on
loopback; it runs no program, so none of these tests needs git. Each case is
one thing a server controls: the ref advertisement (values, names, its
length, the object format, the protocol version), the pkt-lines and side
band, and the pack (thin, damaged, short, a zlib or delta bomb, endless).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import hostile_server as H
import pytest
from conftest import contents, run_command, write

from snapshotter import RemoteError, Snapshotter
from snapshotter.engine.gitstore.inflate import MAX_WHOLE

NS = b"refs/snapshotter/n/snapshots/"
SERVED = H.snapshot({b"a.txt": b"hello\n", b"b.txt": b"world\n"})
KINDS = ["git", "http"]
Make = Callable[..., Snapshotter]


def after_nak(rest: H.Chunks) -> H.Chunks:
    """``NAK``, then whatever ``rest`` sends (which may never end)."""

    def chunks() -> Iterator[bytes]:
        yield H.pkt(b"NAK\n")
        yield from rest()

    return chunks


def offer(*snapshots: H.Snapshot, caps: bytes = H.CAPS) -> H.Chunks:
    """The advertisement of ``snapshots`` as namespace ``n``."""
    return H.advertise([(s.hex, NS + s.hex) for s in snapshots], caps)


def answer(entries: list[bytes]) -> H.Chunks:
    return H.nak_then(H.once(H.pack(entries)))


def fingerprint(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` with its bytes (lock files, which come and go, left out)."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.name.endswith(".lock")
    }


def one_line(error: BaseException) -> str:
    text = str(error)
    assert text and "\n" not in text and "Traceback" not in text
    assert all(ch.isprintable() for ch in text), repr(text)
    return text


def refused(snap: Snapshotter, url: str, name: str = "n") -> str:
    """Fetch from ``url``: a typed one-line error, and nothing in the store changed."""
    store = Path(snap.store_path)
    before, listed = fingerprint(store), snap.list(limit=None)
    with pytest.raises(RemoteError) as caught:
        snap.fetch(url, name=name)
    assert fingerprint(store) == before
    assert snap.list(limit=None) == listed and snap.verify(full=True).ok
    return one_line(caught.value)


@pytest.fixture
def snap(make: Make, ws: Path) -> Snapshotter:
    write(ws, {"mine.txt": "mine\n"})
    made = make()
    made.snapshot()  # a store with something in it: nothing of it may change
    return made


@pytest.mark.parametrize("kind", KINDS)
def test_a_well_behaved_scripted_server_is_fetched_from(kind: str, snap: Snapshotter) -> None:
    """The scripted server itself, answering as git would: the fetch holds."""
    with H.SERVERS[kind](H.Script(offer(SERVED), answer(SERVED.entries()))) as url:
        assert [info.id for info in snap.fetch(url, name="n").snapshots] == [SERVED.commit.hex()]
    snap.restore(SERVED.commit.hex())
    assert contents(Path(snap.workspace)) == {"a.txt": b"hello\n", "b.txt": b"world\n"}


# -- the ref advertisement -------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_ref_value_that_is_not_a_hex_id_is_a_typed_error(kind: str, snap: Snapshotter) -> None:
    for value in (b"z" * 40, b"a" * 39 + b"g", b"0" * 38):
        script = H.Script(H.advertise([(value, NS + b"a" * 40)]), answer(SERVED.entries()))
        with H.SERVERS[kind](script) as url:
            assert "not a SHA-1 id" in refused(snap, url)
            with pytest.raises(RemoteError) as caught:
                Snapshotter.remote_workspaces(url)
            one_line(caught.value)


def test_refs_outside_the_namespaces_never_stop_a_fetch(snap: Snapshotter) -> None:
    """What a server holds beside ``refs/snapshotter/`` is none of ours: odd values
    or names there are not read."""
    refs = [(b"z" * 40, b"refs/heads/\x1b[31mmain"), (b"x", b"HEAD"), (SERVED.hex, NS + SERVED.hex)]
    with H.git_server(H.Script(H.advertise(refs), answer(SERVED.entries()))) as url:
        assert len(snap.fetch(url, name="n").snapshots) == 1


def test_remote_list_never_prints_a_ref_names_terminal_escapes(tmp_path: Path) -> None:
    hostile = b"refs/snapshotter/\x1b]0;owned\x07\x1b[2J\xe2\x80\xaename/snapshots/" + SERVED.hex
    refs = [(SERVED.hex, hostile), (SERVED.hex, NS + SERVED.hex)]
    with H.git_server(H.Script(H.advertise(refs))) as url:
        listed = Snapshotter.remote_workspaces(url)
        assert [w.name for w in listed] == ["n"]
        done = run_command("remote", "list", url, env={"SNAPSHOTTER_HOME": str(tmp_path / "h")})
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout and "\u202e" not in done.stdout
    assert done.stdout.startswith("n  1 snapshots")


def huge_refs() -> Iterator[bytes]:
    """Ref lines as long as a pkt-line may be, forever."""
    value = b"1" * 40
    yield H.pkt(value + b" refs/heads/x\0" + H.CAPS + b"\n")
    number = 0
    while True:
        number += 1
        yield H.pkt(value + b" refs/heads/%d-" % number + b"x" * 65000 + b"\n")


@pytest.mark.parametrize("kind", KINDS)
def test_an_endless_ref_advertisement_ends_within_its_budget(kind: str, snap: Snapshotter) -> None:
    with H.SERVERS[kind](H.Script(huge_refs)) as url:
        assert "ref advertisement" in refused(snap, url)
        with pytest.raises(RemoteError):
            Snapshotter.remote_workspaces(url)
        with pytest.raises(RemoteError):
            snap.push(url, name="n")


def test_a_push_to_a_server_that_never_stops_advertising_ends(snap: Snapshotter) -> None:
    with H.git_server(H.Script(huge_refs)) as url, pytest.raises(RemoteError) as caught:
        snap.push(url, name="n")
    one_line(caught.value)


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_announcing_sha256_is_refused_and_the_store_config_unchanged(
    kind: str, snap: Snapshotter, tmp_path: Path
) -> None:
    caps = H.CAPS + b" object-format=sha256"
    for refs in ([(SERVED.hex, NS + SERVED.hex)], [(b"a" * 64, NS + b"a" * 64)]):
        with H.SERVERS[kind](H.Script(H.advertise(refs, caps), answer(SERVED.entries()))) as url:
            assert "sha256" in refused(snap, url)
            dest = tmp_path / f"clone-{kind}-{len(refs[0][0])}"
            with pytest.raises(RemoteError):
                Snapshotter.clone(url, "n", None, dest, home=tmp_path / "clone-home")
    for config in (tmp_path / "clone-home").rglob("config"):
        assert b"objectformat" not in config.read_bytes().lower()


def test_an_unknown_protocol_version_is_a_typed_error(snap: Snapshotter) -> None:
    with H.git_server(H.Script(lambda: [H.pkt(b"version 3\n"), H.FLUSH])) as url:
        refused(snap, url)


@pytest.mark.parametrize("kind", KINDS)
def test_a_malformed_pkt_line_is_a_typed_error(kind: str, snap: Snapshotter) -> None:
    for garbage in (b"zzzz", b"0002", b"fff0" + b"x" * 10):
        with H.SERVERS[kind](H.Script(lambda garbage=garbage: [garbage], hang_up=True)) as url:
            refused(snap, url)


@pytest.mark.parametrize("kind", KINDS)
def test_a_servers_error_text_is_shown_without_its_terminal_escapes(kind: str, snap: Snapshotter) -> None:
    text = b"\x1b[31mno\x1b]0;owned\x07 \xe2\x80\xae way"
    err_line = H.Script(lambda: [H.pkt(b"ERR " + text + b"\n")])
    fatal_band = H.Script(offer(SERVED), lambda: [H.pkt(b"NAK\n"), H.pkt(b"\x03" + text), H.FLUSH])
    with H.SERVERS[kind](err_line) as url:
        message = refused(snap, url)
        assert "no" in message and "way" in message
    with H.SERVERS[kind](fatal_band) as url:
        refused(snap, url)  # dulwich's floor release reads band 3 as an unknown channel: typed all the same


def test_a_dumb_http_server_is_refused(snap: Snapshotter) -> None:
    """A server that answers as a plain file server (not ``application/x-git-*``)
    would have dulwich walk loose objects and packs by URL: refused instead."""
    import http.server
    import threading

    class Plain(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            body = SERVED.hex + b"\t" + NS + SERVED.hex + b"\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Plain)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert "smart" in refused(snap, f"http://127.0.0.1:{server.server_address[1]}/x.git")
    finally:
        server.shutdown()
        server.server_close()


# -- the pack ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_an_unknown_side_band_channel_is_a_typed_error(kind: str, snap: Snapshotter) -> None:
    with H.SERVERS[kind](H.Script(offer(SERVED), lambda: [H.pkt(b"NAK\n"), H.pkt(b"\x04xx"), H.FLUSH])) as url:
        refused(snap, url)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("band", [1, 2])
def test_an_endless_pack_stream_ends_within_the_byte_budget(kind: str, band: int, make: Make, ws: Path) -> None:
    """Pack data (band 1) or progress text (band 2) that never ends."""
    write(ws, {"mine.txt": "mine\n"})
    snap = make(max_fetch_bytes=2 << 20)
    snap.snapshot()
    endless = H.sideband(H.endless(b"P" * 65000), channel=band)
    with H.SERVERS[kind](H.Script(offer(SERVED), after_nak(endless))) as url:
        assert "2,097,152" in refused(snap, url)


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_that_trickles_forever_ends_within_the_time_budget(kind: str, make: Make, ws: Path) -> None:
    write(ws, {"mine.txt": "mine\n"})
    snap = make(fetch_timeout=1.5)
    snap.snapshot()
    trickle = H.sideband(H.endless(b"P", pause=0.1), channel=2)
    with H.SERVERS[kind](H.Script(offer(SERVED), after_nak(trickle))) as url:
        started = time.monotonic()
        assert "1.5 s" in refused(snap, url)
    assert time.monotonic() - started < 60  # it ended (a hang would never get here)


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_that_says_nothing_ends_within_the_time_budget(kind: str, make: Make, ws: Path) -> None:
    write(ws, {"mine.txt": "mine\n"})
    snap = make(fetch_timeout=1.5)
    snap.snapshot()

    quiet, late = H.Script(H.once(b"")), H.Script(offer(SERVED))
    quiet.advertisement, late.answer = H.silence(quiet), H.silence(late)
    for script in (quiet, late):
        with H.SERVERS[kind](script) as url:
            started = time.monotonic()
            refused(snap, url)
        assert time.monotonic() - started < 60


@pytest.mark.parametrize("kind", KINDS)
def test_a_thin_pack_whose_base_is_missing_is_refused(kind: str, snap: Snapshotter) -> None:
    missing = H.object_id(b"blob", b"base nobody has\n")
    thin = H.snapshot({}, blobs={b"a.txt": H.object_id(b"blob", b"base nobody has\nand more\n")})
    entries = [*thin.entries(), H.ref_delta(missing, H.delta(16, 25, H.copy(0, 16) + H.insert(b"and more\n")))]
    with H.SERVERS[kind](H.Script(offer(thin), answer(entries))) as url:
        assert "base" in refused(snap, url)


def test_a_thin_pack_whose_base_this_store_holds_is_completed(snap: Snapshotter, tmp_path: Path) -> None:
    """A delta against an object this store has (as git sends for ``thin-pack``):
    the base is added to the new pack, which then reads on its own."""
    from snapshotter.engine.gitstore.packindex import read_through

    with H.git_server(H.Script(offer(SERVED), answer(SERVED.entries()))) as url:
        snap.fetch(url, name="n")
    grown = b"hello\nand more\n"
    second = H.snapshot({}, seq=2, blobs={b"a.txt": H.object_id(b"blob", grown)})
    base = H.object_id(b"blob", b"hello\n")
    entries = [*second.entries(), H.ref_delta(base, H.delta(6, len(grown), H.copy(0, 6) + H.insert(b"and more\n")))]
    packs = Path(snap.store_path) / "objects" / "pack"
    before = set(packs.glob("*.pack"))
    with H.git_server(H.Script(offer(SERVED, second), answer(entries))) as url:
        fetched = snap.fetch(url, name="n").snapshots
    assert [info.id for info in fetched] == [second.commit.hex()]
    (new,) = set(packs.glob("*.pack")) - before
    assert base in read_through(str(new)).ids  # self-contained: the base travels with it
    snap.restore(second.commit.hex())
    assert contents(Path(snap.workspace))["a.txt"] == grown


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("damage", ["checksum", "cut short", "fewer objects", "more objects", "not a pack"])
def test_a_damaged_pack_is_refused(kind: str, damage: str, snap: Snapshotter) -> None:
    good = H.pack(SERVED.entries())
    sent = {
        "checksum": good[:-1] + bytes([good[-1] ^ 1]),
        "cut short": good[: len(good) // 2],
        "fewer objects": H.pack(SERVED.entries(), count=len(SERVED.objects) + 1),
        "more objects": H.pack(SERVED.entries(), count=len(SERVED.objects) - 1),
        "not a pack": b"KCAP" + good[4:],
    }[damage]
    with H.SERVERS[kind](H.Script(offer(SERVED), H.nak_then(H.once(sent)))) as url:
        refused(snap, url)


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_that_leaves_out_an_advertised_snapshot_is_refused(kind: str, snap: Snapshotter) -> None:
    other = H.snapshot({b"c.txt": b"c\n"}, seq=2)
    with H.SERVERS[kind](H.Script(offer(SERVED, other), answer(SERVED.entries()))) as url:
        assert "did not send" in refused(snap, url)


def test_a_delta_whose_result_is_huge_is_refused(snap: Snapshotter) -> None:
    """A few bytes of delta that say they make a gigabyte, or many that each make
    ``MAX_WHOLE``: refused before the work, not after it."""
    base = b"0123456789" * 10
    target = H.object_id(b"blob", b"never made")
    lying = H.ref_delta(H.object_id(b"blob", base), H.delta(len(base), 1 << 30, H.copy(0, 100)))
    sent = H.snapshot({b"base": base}, blobs={b"big": target})
    with H.git_server(H.Script(offer(sent), answer([*sent.entries(), lying]))) as url:
        refused(snap, url)


def test_many_deltas_count_against_the_fetch_budget(make: Make, ws: Path) -> None:
    write(ws, {"mine.txt": "mine\n"})
    snap = make(max_fetch_bytes=64 << 20)
    snap.snapshot()
    base = b"x" * 65536
    base_id = H.object_id(b"blob", base)
    copies = MAX_WHOLE // len(base) - 1
    entries, blobs = [], {}
    for i in range(8):  # each a few KiB on the wire, each making MAX_WHOLE bytes
        tail = b"%d" % i
        made = base * copies + base[:-1] + tail
        blobs[b"f%d" % i] = H.object_id(b"blob", made)
        ops = H.copy(0, 0) * copies + H.copy(0, len(base) - 1) + H.insert(tail)
        entries.append(H.ref_delta(base_id, H.delta(len(base), len(made), ops)))
    sent = H.snapshot({b"base": base}, blobs=blobs)
    with H.git_server(H.Script(offer(sent), answer([*sent.entries(), *entries]))) as url:
        assert "67,108,864" in refused(snap, url)


def test_an_object_over_the_fetch_budget_is_refused_before_it_is_inflated(make: Make, ws: Path) -> None:
    write(ws, {"mine.txt": "mine\n"})
    snap = make(max_fetch_bytes=16 << 20)
    snap.snapshot()
    size = 256 << 20
    sha, bomb = H.zeros_blob(size)
    sent = H.snapshot({}, blobs={b"zeros": sha})
    entries = [lambda e=e: [e] for e in sent.entries()] + [bomb]
    with H.git_server(H.Script(offer(sent), H.nak_then(H.streamed_pack(entries)))) as url:
        assert "16,777,216" in refused(snap, url)


BOMB_CHILD = """
import json, resource, sys
from snapshotter import Snapshotter
url, ws, home = sys.argv[1:4]
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
with Snapshotter(ws, home=home) as snap:
    snap.snapshot()
    before = peak()
    fetched = snap.fetch(url, name="n")
    print(json.dumps({"before": before, "after": peak(), "fetched": len(fetched.snapshots)}))
"""


def test_a_zlib_bomb_is_fetched_in_bounded_memory(tmp_path: Path) -> None:
    """A blob of 256 MiB of zeros (a quarter of a MiB on the wire) is indexed as
    it is inflated, a piece at a time: the fetching process's peak memory grows
    by far less than the blob (dulwich held it whole, and more: +575 MiB for
    512 MiB of zeros, +2.1 GiB for 2 GiB)."""
    size = 256 << 20
    sha, bomb = H.zeros_blob(size)
    sent = H.snapshot({}, blobs={b"zeros": sha})
    entries = [lambda e=e: [e] for e in sent.entries()] + [bomb]
    ws = tmp_path / "ws"
    write(ws, {"mine.txt": "mine\n"})
    with H.git_server(H.Script(offer(sent), H.nak_then(H.streamed_pack(entries)))) as url:
        done = subprocess.run(
            [sys.executable, "-c", BOMB_CHILD, url, str(ws), str(tmp_path / "h")],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    measured = json.loads(done.stdout)
    assert measured["fetched"] == 1
    assert measured["after"] - measured["before"] < 64, measured  # MiB; the blob is 256
