"""Sending a store's objects and refs to a git remote, and fetching them back.

A push sends exactly the objects the remote lacks: those reachable from the
commits it asks for and not from any commit the remote's refs already name
(and this store holds), found by walking trees here, each distinct tree once,
so what a local gc did to packs changes nothing. The pack is streamed: objects
are read one at a time from the store, never all held. The remote updates its
refs only once the whole pack is in (git's receive-pack does; so does
dulwich's local client), so a push cut short leaves no ref naming a missing
object, and the next push sends it all again.

A fetch asks for the commits of some refs; the remote sends what this store
lacks (the commits here are its "haves") as one pack, received and checked by
``incoming`` before it enters the store: every object is indexed by hashing
its content, in bounded pieces, so an object can only be what its id says,
and the pack must hold every commit asked for. What the fetched snapshots
hold is checked again before anything is written from them (a restore's
name checks). A server's refs must be SHA-1 ids in its ``sha1`` object format
(this store's); anything else refuses the fetch before a pack is asked for.

Failures come back as one-line ``RemoteError`` s without credentials, and
without the terminal escapes a server may put in its text.
"""

from __future__ import annotations

import itertools
import os
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dulwich.client import HTTPUnauthorized
from dulwich.errors import (
    ApplyDeltaError,
    ChecksumMismatch,
    GitProtocolError,
    HangupException,
    NotGitRepository,
    ObjectFormatException,
    SendPackError,
)
from dulwich.file import FileLocked
from dulwich.objects import ZERO_SHA
from dulwich.pack import UnpackedObject
from dulwich.repo import Repo

from snapshotter.engine.gitstore.incoming import IncomingPack
from snapshotter.engine.gitstore.negotiation import Haves, listing, nearest_held, wanting
from snapshotter.engine.gitstore.objects import MODE_TREE, object_id, parse_tree
from snapshotter.engine.gitstore.outentries import counted, raw_entry, read_checked, streamed
from snapshotter.engine.gitstore.packindex import PackContents, PackDamaged, PackOverBudget
from snapshotter.engine.gitstore.store import MISSING_OR_DAMAGED, Store
from snapshotter.engine.gitstore.transport import Credentials, Remote, printable, without_secrets
from snapshotter.errors import InvalidInput, RemoteAuthError, RemoteError, SnapshotError, StoreError

Refs = dict[bytes, bytes]
"""Ref name -> commit id (hex, as git sends them)."""
RawObject = tuple[int, bytes, bytes]
"""(type number, raw id, content) of an object held in no store (an archive commit)."""
_KINDS = {1: b"commit", 2: b"tree", 3: b"blob"}
_SHA1_HEX = re.compile(rb"[0-9a-f]{40}")


@dataclass(frozen=True)
class Sent:
    """What a push sent: objects (in one pack), the refs the remote took, and the
    refs it refused with why (a server hook, a lost race)."""

    objects: int
    refs_updated: int
    refused: Mapping[str, str]
    bytes: int = 0
    """Bytes of objects as they went into the pack (their entries, headers included)."""


def remote_refs(remote: Remote, prefix: bytes = b"", credentials: Credentials | None = None) -> Refs:
    """The remote's refs (below ``prefix``), as ``git ls-remote`` lists them; a
    RemoteError if the remote is not a SHA-1 repository or a ref there is not
    a SHA-1 id (refs outside ``prefix`` are none of ours and not read)."""
    remote.meter.begin()
    with remote_errors(remote, credentials):
        found = remote.client.get_refs(remote.path.encode(), ref_prefix=[prefix] if prefix else None)
    check_object_format(remote, getattr(found, "object_format", None))
    refs: Mapping[Any, Any] = found.refs
    ours = {bytes(name): bytes(sha) for name, sha in refs.items() if sha is not None and name.startswith(prefix)}
    for name, sha in ours.items():
        if not _SHA1_HEX.fullmatch(sha):
            shown = printable(name.decode("utf-8", "replace"))
            raise RemoteError(f"{remote.shown}: its ref {shown} holds {printable(repr(sha)[:60])}, not a SHA-1 id")
    return ours


def check_object_format(remote: Remote, announced: str | None) -> None:
    """Refuse a remote whose objects are not SHA-1 ones (``object-format=sha256``):
    their ids cannot be this store's."""
    if announced not in (None, "sha1"):
        shown = printable(str(announced)[:40])
        raise RemoteError(f"{remote.shown} holds {shown} objects; snapshotter's stores are sha1 ones")


def reachable(store: Store, commits: list[bytes], known: set[bytes] | None = None) -> list[tuple[int, bytes]]:
    """(type, raw id) of every object the ``commits`` (raw ids) reach that is not in
    ``known``, commits first; ``known`` gets them all. A tree already known is
    not entered: its whole content is known with it."""
    seen = known if known is not None else set()
    out: list[tuple[int, bytes]] = []
    trees: list[bytes] = []
    for commit in commits:
        if commit in seen:
            continue
        kind, content = read_checked(store, commit)
        if kind != 1 or not content.startswith(b"tree "):
            continue  # a remote ref may name a tag or a blob: it reaches nothing of ours
        seen.add(commit)
        out.append((1, commit))
        trees.append(bytes.fromhex(content[5:45].decode("ascii")))  # "tree <hex>\n" starts every commit
    while trees:
        tree = trees.pop()
        if tree in seen:
            continue
        seen.add(tree)
        out.append((2, tree))
        for _, mode, sha in parse_tree(read_checked(store, tree)[1]):
            if mode == MODE_TREE:
                trees.append(sha)
            elif mode != 0o160000 and sha not in seen:  # a gitlink names a commit elsewhere: nothing to send
                seen.add(sha)
                out.append((3, sha))
    return out


@dataclass(frozen=True)
class Plan:
    """What a push will send, worked out before connecting to send it: the objects
    the ``wants`` reach and the ``haves`` (commits the remote holds, and so
    does this store: the newest of them, see ``negotiation.nearest_held``) do
    not. ``listed``: every commit the remote's refs named then. ``extra``:
    objects in no store that go in the same pack, after the store's (an
    archive commit and the empty tree, see ``archives``); an update may name
    one of them. Checks run on it before any byte goes."""

    wants: frozenset[bytes]
    haves: frozenset[bytes]
    objects: list[tuple[int, bytes]]
    listed: frozenset[bytes] = frozenset()
    extra: tuple[RawObject, ...] = ()
    known: frozenset[bytes] = frozenset()
    """Every object the ``haves`` reach or the push sends (a delta's base may be any of them)."""


def plan(store: Store, wants: list[bytes], haves: list[bytes], extra: Sequence[RawObject] = ()) -> Plan:
    """The :class:`Plan` for commits ``wants`` over ``haves`` (both hex, as refs
    hold them), with the ``extra`` objects; InvalidInput for one whose content
    is not what its id names (only true objects leave)."""
    for kind, sha, content in extra:
        if kind not in _KINDS or object_id(_KINDS[kind], content) != sha:
            raise InvalidInput(f"the extra object {sha.hex()} is not the object its id names; nothing was pushed")
    listed = frozenset(_hex_set(haves))
    held = nearest_held(store, listed)
    objects, known = _objects(store, held, _hex_set(wants))
    return Plan(frozenset(_hex_set(wants)), held, objects, listed, tuple(extra), frozenset(known))


def _objects(
    store: Store, haves: set[bytes] | frozenset[bytes], wants: set[bytes]
) -> tuple[list[tuple[int, bytes]], set[bytes]]:
    """The objects to send, and every object the remote then holds."""
    known: set[bytes] = set()
    reachable(store, [bytes.fromhex(sha.decode()) for sha in haves], known)
    return reachable(store, [bytes.fromhex(sha.decode()) for sha in sorted(wants)], known), known


def send(
    store: Store,
    remote: Remote,
    updates: Mapping[bytes, bytes | None],
    credentials: Credentials | None = None,
    planned: Plan | None = None,
    progress: Callable[[int, int], None] | None = None,
    expected: Mapping[bytes, bytes | None] | None = None,
) -> Sent:
    """Push ``updates`` (ref -> commit id in hex, None to delete) to ``remote``,
    with the objects it lacks: the ``planned`` ones (less any that refs the
    remote shows only now already reach), else worked out here, and the plan's
    ``extra`` ones after them; ``progress(done, total)`` is told as objects go.
    A ref in ``expected`` moves only from that value (hex, None: absent), the
    one a listing read: moved since, it is refused, never overwritten."""
    sent = [0, 0]
    moved: set[bytes] = set()
    extra = planned.extra if planned is not None else ()
    extra_ids = {sha.hex().encode() for _, sha, _ in extra}  # wanted by an update, read from no store
    report = progress  # the inner function's own ``progress`` is dulwich's

    def update_refs(old: dict[Any, Any]) -> dict[Any, Any]:
        new = dict(old)
        for name, value in updates.items():
            if expected is not None and name in expected and old.get(name) != expected[name]:
                moved.add(name)  # receive-pack checks only the value it advertised
            elif value is None:
                if name in new:
                    new[name] = ZERO_SHA
            else:
                new[name] = value
        return new

    def generate_pack_data(
        have: object, want: object, ofs_delta: bool = True, progress: object = None
    ) -> tuple[int, Iterator[UnpackedObject]]:
        remote.meter.sending()
        wants = _hex_set(want) - extra_ids
        known: set[bytes] | frozenset[bytes]
        if planned is None or not wants <= planned.wants:
            made = plan(store, sorted(wants), sorted(_hex_set(have)))
            objects, known = made.objects, made.known
        else:  # the refs the remote shows only now: what they reach is not sent (and may be a delta's base)
            fresh = {sha for sha in _hex_set(have) - planned.listed if store.has_object(bytes.fromhex(sha.decode()))}
            skip: set[bytes] = set()
            reachable(store, [bytes.fromhex(sha.decode()) for sha in fresh], skip)
            objects = [entry for entry in planned.objects if entry[1] not in skip] if skip else planned.objects
            known = planned.known | skip if skip else planned.known
        sent[0] = len(objects) + len(extra)
        entries = itertools.chain(streamed(store, objects, report, known.__contains__), map(raw_entry, extra))
        return sent[0], counted(entries, sent)

    remote.meter.begin()
    with remote_errors(remote, credentials):
        result = remote.client.send_pack(remote.path.encode(), update_refs, generate_pack_data)
    status = result.ref_status or {}
    status = {**status, **{name: "moved since it was listed" for name in moved}}
    refused = {printable(name.decode("utf-8", "replace")): printable(str(why)) for name, why in status.items() if why}
    updated = sum(1 for name in updates if name.decode("utf-8", "replace") not in refused)
    return Sent(sent[0], updated, refused, sent[1])


def receive(
    store: Store, remote: Remote, refs: Refs, credentials: Credentials | None = None, more_haves: Sequence[bytes] = ()
) -> int:
    """Fetch the commits ``refs`` name that this store lacks, with what they
    reach (less what ``more_haves``, hex ids of commits held here, reach), as
    one pack checked before it enters the store (see ``incoming``; the
    remote's budget caps its bytes and its objects' inflated size); returns
    how many commits were asked for. A RemoteError, and the store as it was,
    if the pack does not check out or lacks one of them."""
    wanted = sorted({sha for sha in refs.values() if not store.has_object(bytes.fromhex(sha.decode()))})
    if not wanted:
        return 0
    remote.meter.begin()
    incoming = IncomingPack(store.packs.dir)
    try:
        with remote_errors(remote, credentials):
            haves: Any = Haves(store, more_haves)  # dulwich's GraphWalker protocol, typed with its ObjectID
            result = remote.client.fetch_pack(
                remote.path.encode(),
                wanting(wanted, remote.meter),
                haves,
                incoming.write,
                ref_prefix=listing(refs, set(wanted)),
            )
            check_object_format(remote, getattr(result, "object_format", None))
            contents = _checked(store, remote, incoming, wanted, remote.meter.budget.max_bytes)
        incoming.install(contents)
    finally:
        incoming.discard()
    store.release_packs()  # the new pack is listed afresh at the next read
    return len(wanted)


def _checked(
    store: Store, remote: Remote, incoming: IncomingPack, wanted: list[bytes], max_inflated: int
) -> PackContents:
    """The received pack read through, holding every commit ``wanted``."""
    if not incoming.size:
        raise RemoteError(f"{remote.shown} did not send the snapshots it lists; nothing was taken")

    def outside(sha: bytes) -> tuple[int, bytes] | None:
        try:
            return store.read_raw(sha)
        except (KeyError, StoreError):
            return None

    try:
        contents = incoming.read(outside, max_inflated)
    except PackOverBudget as exc:
        raise remote.meter.too_large(exc.inflated) from None
    except PackDamaged as exc:
        raise RemoteError(f"{remote.shown} sent a pack that cannot be read: it {exc}; nothing was taken") from None
    held = set(contents.ids)
    missing = [sha for sha in wanted if bytes.fromhex(sha.decode()) not in held]
    if missing:
        raise RemoteError(
            f"{remote.shown} did not send {len(missing)} of the snapshots it lists "
            f"({missing[0].decode()}); nothing was taken"
        )
    return contents


def missing_local_repository(remote: Remote) -> bool:
    """Whether the remote is a folder on this machine that does not exist yet;
    InvalidInput if its parent folder does not exist either (see
    :func:`ensure_local_repository`)."""
    if not remote.is_local or os.path.lexists(remote.path):
        return False
    parent = os.path.dirname(os.path.abspath(remote.path))
    if not os.path.isdir(parent):
        raise InvalidInput(
            f"the remote {remote.shown} does not exist, nor does its folder {parent}: a push makes a new "
            "repository only inside a folder that exists (check the path, or create the folder first)"
        )
    return True


def ensure_local_repository(remote: Remote) -> None:
    """A remote that is a folder on this machine and does not exist yet becomes an
    empty bare repository, made only inside a folder that exists: a typo
    anywhere else (``/nonexistent/x.git``) is refused, never made at any depth
    (a git server's repositories are its owner's to make)."""
    if missing_local_repository(remote):
        try:
            os.mkdir(remote.path, mode=0o700)
        except FileExistsError:
            pass  # another push made it meanwhile: it is opened as it is
        except OSError as exc:
            raise InvalidInput(f"cannot make the remote {remote.shown}: {exc.strerror}") from None
        else:
            Repo.init_bare(remote.path).close()


def _hex_set(values: object) -> set[bytes]:
    return {bytes(v) for v in values if v and bytes(v) != ZERO_SHA}  # type: ignore[attr-defined]


class remote_errors:  # noqa: N801 (used as a context manager, like contextlib's)
    """Whatever the client raises, as a one-line RemoteError without credentials
    or terminal escapes. Inside, dulwich reads what a server sent: anything
    it raises that is not ours (a ``ValueError`` for a protocol version, an
    ``AssertionError`` for a side-band channel, ...) is the server's answer
    that could not be read, never a traceback."""

    def __init__(self, remote: Remote, credentials: Credentials | None) -> None:
        self.remote, self.credentials = remote, credentials

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: object
    ) -> Literal[False]:
        if error is None or isinstance(error, SnapshotError) or not isinstance(error, Exception):
            return False  # ours already, or an interruption (Ctrl-C) that is not the server's doing
        where = self.remote.shown
        if isinstance(error, HTTPUnauthorized):
            raise RemoteAuthError(f"{where} refused the credentials (HTTP 401); check the user and token") from None
        if isinstance(error, FileLocked):  # a path remote that another push is writing to this moment
            raise RemoteError(f"{where}: another push is updating the same refs there; push again") from None
        if isinstance(error, NotGitRepository):
            raise RemoteError(f"{where} is not a git repository; create a bare one there first") from None
        damaged = (ChecksumMismatch, ApplyDeltaError, ObjectFormatException, zlib.error, BufferError)
        if isinstance(error, damaged):  # BufferError: dulwich closing a pack it failed to read
            raise RemoteError(f"{where} sent damaged objects ({type(error).__name__}); nothing was taken") from None
        text = without_secrets(str(error) or type(error).__name__, self.credentials)
        first = printable(text.splitlines()[0] if text.strip() else "the connection failed")
        lost = isinstance(error, (HangupException, GitProtocolError, SendPackError, OSError, EOFError))
        if lost or isinstance(error, MISSING_OR_DAMAGED) or type(error).__module__.startswith("paramiko"):
            raise RemoteError(f"{where}: {first}") from None
        raise RemoteError(f"{where} sent an answer that cannot be read ({type(error).__name__}: {first})") from error
