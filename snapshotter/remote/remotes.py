"""Snapshots that outlive the machine: a workspace's snapshots on any git remote.

Everything of one workspace lives on the remote under ``refs/snapshotter/<name>/``
and nothing else there is ever touched (branches, tags, other namespaces):

- ``snapshots/<commit id>``: one ref per snapshot, named by its id, so two
  machines pushing different workspaces, or the same one, can never name two
  snapshots alike, and no push ever moves a ref another made (add only;
  ``prune`` deletes only refs this store created there and retention dropped
  since, never one of a snapshot it found there, fetched or not; nor does a
  push send one it fetched from that remote and name, recorded in
  ``meta/fetched-from/<key>``: another store's, which it may have archived
  or pruned there since);
- ``hosts/<host id>/...``: this store's base, pins, and the newest entries of
  its undo, redo and turn stacks and of its newest sessions' (``hoststate``:
  bounded, whatever the history; labels and sessions travel inside the
  commits), replaced by each push of this store and of no other (each store
  has its own host id);
  its ``archive`` keeps reachable the snapshots it archived there once its own
  ``snapshots/`` refs grew over ``archives.ARCHIVE_AFTER`` (see ``archiving``).

The default name is the folder's name and a short hash of its path, so one
remote can hold many workspaces. A fetch brings a namespace's snapshots in:
the same commits, numbered after the ones here. A push first checks every
file it would send against ``max_push_file_size`` (100 MiB by default, what
hosted servers refuse) and refuses, naming the file, before a byte is sent.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from snapshotter.engine.fsutil import SMALL_FILE_CAP, read_side_file
from snapshotter.engine.gitstore import replication
from snapshotter.engine.gitstore.location import store_key
from snapshotter.engine.gitstore.locking import StoreLock
from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.gitstore.trailers import is_snapshot_commit
from snapshotter.engine.gitstore.transport import Credentials, Remote, open_remote
from snapshotter.engine.gitstore.wirebudget import Budget
from snapshotter.engine.session.engine import Engine
from snapshotter.engine.worktree.ignore import IgnoreStack
from snapshotter.errors import InvalidInput, RemoteError, StoreError
from snapshotter.model import PushResult, RemoteWorkspace, SkippedSnapshot, SnapshotInfo
from snapshotter.remote import archivewalk, archiving, holdings, hoststate, outgoing, pushstate, records

PREFIX = b"refs/snapshotter/"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_HOST_FILE = "host-id"
_PUSHED = "pushed"
_ARRIVALS = "fetched"
_FETCHED_FROM = "fetched-from"
_ID = re.compile(r"[0-9a-f]{40}")
_PUSH_LOCK = "push.lock"
PUSH_LOCK_WAIT = 600.0
"""Seconds a push waits for another push of the same store (a first push of a
big workspace takes minutes) before StoreLocked."""


def check_name(name: object) -> str:
    """A namespace name is part of ref names: letters, digits, ``.``, ``_``, ``-``."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name or name.endswith(".lock"):
        raise InvalidInput(f"a remote name is letters, digits, '.', '_' and '-' (at most 100), not {name!r}")
    return name


def default_name(workspace: str) -> str:
    """The folder's name (its odd characters as ``-``) and 8 digits of its path's hash."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(workspace.rstrip(os.sep)) or "workspace").strip(".-")
    return f"{base[:80] or 'workspace'}-{store_key(workspace)[:8]}"


def host_id(store: Store) -> str:
    """This store's id on remotes: random, made once, kept beside the store."""
    found = _known_host_id(store)
    if found is not None:
        return found
    made = secrets.token_hex(8)
    _write_text(os.path.join(store.meta_dir, _HOST_FILE), made + "\n")
    return made


def _known_host_id(store: Store) -> str | None:
    """This store's id on remotes if it has one yet (a fetch makes none)."""
    try:
        found = read_side_file(os.path.join(store.meta_dir, _HOST_FILE), SMALL_FILE_CAP, follow=False)
        text = found.decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if re.fullmatch(r"[0-9a-f]{16}", text) else None


@dataclass(frozen=True)
class Target:
    """Where a push or fetch goes: the opened remote and the namespace there."""

    remote: Remote
    name: str
    credentials: Credentials | None

    @property
    def snapshots(self) -> bytes:
        return PREFIX + self.name.encode() + b"/snapshots/"


def target(location: str, name: str, credentials: Credentials | None, budget: Budget | None = None) -> Target:
    """The remote at ``location`` and namespace ``name``, its reads within ``budget``."""
    return Target(open_remote(location, credentials, budget=budget), check_name(name), credentials)


def check_outside(to: Target, workspace: str) -> None:
    """Refuse a remote that is a folder inside the workspace: the agent could read
    or rewrite it, and the next snapshot would take it in."""
    if not to.remote.is_local:
        return
    path = os.path.realpath(to.remote.path)
    if path == workspace or path.startswith(workspace.rstrip(os.sep) + os.sep):
        raise InvalidInput(f"the remote {to.remote.shown} is inside the workspace {workspace}; pick a folder outside")


def push(
    store: Store,
    to: Target,
    checks: PushChecks,
    prune: bool,
    progress: Callable[[int, int], None] | None = None,
) -> PushResult:
    """Send this store's snapshots and state to ``to`` (see the module's docstring),
    one push of this store at a time: a foreground push and the background one
    would otherwise race for the remote's ref locks and this store's records."""
    os.makedirs(store.meta_dir, mode=0o700, exist_ok=True)
    with StoreLock(os.path.join(store.meta_dir, _PUSH_LOCK), PUSH_LOCK_WAIT):
        try:
            return _push(store, to, checks, prune, progress)
        finally:
            to.remote.release()


@dataclass(frozen=True)
class PushChecks:
    """What a push checks before sending (see ``outgoing``): the ``policy`` no
    snapshot's path may match, the ``max_file_size`` (0: none), and whether a
    snapshot that fails either is left out (``skip_refused``) or refuses the push."""

    policy: IgnoreStack
    max_file_size: int
    skip_refused: bool = False


def _push(
    store: Store, to: Target, checks: PushChecks, prune: bool, progress: Callable[[int, int], None] | None
) -> PushResult:
    new_there = replication.missing_local_repository(to.remote)
    there = {} if new_there else replication.remote_refs(to.remote, PREFIX + to.name.encode() + b"/", to.credentials)
    host_prefix = PREFIX + to.name.encode() + b"/hosts/" + host_id(store).encode() + b"/"
    where = _where(store, to, host_prefix)
    # This store's snapshots since its last push here, and the live end of its records (``pushstate``);
    # everything where it has no state (a prune, a new remote, a remote that lost refs).
    view = pushstate.look(store, where, there, use_state=not (prune or new_there))
    made, prefix = view.record, to.snapshots
    # Never one its record marks archived (the listing no longer names it, an archive holds it there),
    # nor one fetched from there: another store's, which it may have archived (or pruned) since.
    new = [
        sha
        for sha in view.candidates
        if prefix + sha.encode() not in there and sha not in made.archived and sha not in view.theirs
    ]
    prunable = set(made.unarchived) - set(view.positions) if prune else set()  # never in this push's archive
    taken = view.positions
    step = archiving.choose(made, there, prefix, where.archive, int(time.time()), prunable, taken)
    state = hoststate.state_refs(store, host_prefix, taken)
    held = {value.decode() for value in there.values()}
    outgoing_commits = sorted((set(new) | {value.decode() for value in state.values()}) - held)
    skipped = outgoing.policy_refusals(store, [bytes.fromhex(sha) for sha in outgoing_commits], checks.policy)
    while True:
        if skipped and not checks.skip_refused:
            raise outgoing.refuse(skipped[0], checks.max_file_size)  # before a byte goes
        left_out = {entry.id for entry in skipped}
        sending = [sha for sha in new if sha not in left_out]
        updates = _updates(store, to, there, sending, prunable, state, left_out)
        if step.tip is not None:
            updates[step.ref] = step.tip  # round 1: the archive moves with the rest
        if not updates:
            break
        wants = [v for v in updates.values() if v is not None and v != step.tip]
        plan = replication.plan(store, wants, list(there.values()), step.extra)
        big = outgoing.oversized(store, plan.objects, checks.max_file_size)
        if not big:
            break
        wanted = [bytes.fromhex(sha) for sha in outgoing_commits if sha not in left_out]
        more = outgoing.size_refusals(store, big, wanted)
        if not more:  # reached only through a commit the remote holds: no snapshot to leave out
            raise outgoing.refuse(SkippedSnapshot("", f"{next(iter(big)).hex()}", "too large"), checks.max_file_size)
        skipped += more
    if not updates and not step.finish:
        live = {sha for sha in made.unarchived if prefix + sha.encode() in there}
        pushstate.settle(where, view, live, [entry.id for entry in skipped], step.listed)
        return PushResult(to.remote.shown, to.name, 0, 0, 0, 0, tuple(skipped))
    if new_there:
        replication.ensure_local_repository(to.remote)
    sent = replication.Sent(0, 0, {})
    if updates:
        expected = {step.ref: step.listed} if step.tip is not None else None
        sent = replication.send(store, to.remote, updates, to.credentials, plan, progress, expected)
    archive_refused = sent.refused.get(step.ref.decode())
    refused = _still_refused(to, {k: v for k, v in sent.refused.items() if k != step.ref.decode()}, updates)
    if refused:
        first = next(iter(refused.items()))
        raise RemoteError(f"{to.remote.shown} refused {len(refused)} refs ({first[0]}: {first[1]})")
    # Only what this push created there, never a snapshot that was there already (another
    # store's, fetched here): a later prune deletes only what this store made.
    # Added to as snapshots go (one line each), rewritten whole only when a prune takes some out.
    dropped = {ref[len(prefix) :].decode() for ref, v in updates.items() if v is None and ref.startswith(prefix)}
    archived = list(step.snapshots) if step.tip is not None and archive_refused is None else []
    if dropped:
        pushstate.write_state(where.state, None)  # a state names offsets in the record it replaces
        made = archiving.Record(made.order, made.archived | set(archived))
        _write_text(where.pushed, made.text(dropped, sending))
    elif sending or archived:
        _append_text(
            where.pushed, "".join(f"{sha}\n" for sha in sending) + "".join(f"{sha} archived\n" for sha in archived)
        )
    # Round 2, only once the remote took the archive and the record says so: every ref deleted is named by it.
    deleting = [prefix + sha.encode() for sha in (*step.finish, *archived)]
    finished = archiving.delete_refs(store, to.remote, deleting, to.credentials)
    if finished == len(deleting) and archive_refused is None:  # else the next push reads everything
        live = {sha for sha in made.unarchived if prefix + sha.encode() in there} - dropped - set(archived)
        tip = step.tip if step.tip is not None else step.listed
        pushstate.settle(where, view, live | set(sending), left_out, tip)
    else:
        pushstate.write_state(where.state, None)
    counts = (len(sending), sent.objects, sent.refs_updated + finished, len(dropped))
    return PushResult(to.remote.shown, to.name, *counts, tuple(skipped), bytes_sent=sent.bytes)


def _updates(
    store: Store,
    to: Target,
    there: replication.Refs,
    sending: list[str],
    prunable: set[str],
    state: dict[bytes, bytes],
    left_out: set[str],
) -> dict[bytes, bytes | None]:
    """The ref updates of a push: each snapshot to send, each this store made
    there, not archived, and dropped since (``prunable``), and this store's
    state refs, less those naming a snapshot ``left_out``."""
    updates: dict[bytes, bytes | None] = {to.snapshots + sha.encode(): sha.encode() for sha in sending}
    for sha in prunable:
        if to.snapshots + sha.encode() in there:
            updates[to.snapshots + sha.encode()] = None
    host_prefix = PREFIX + to.name.encode() + b"/hosts/" + host_id(store).encode() + b"/"
    kept = {ref: value for ref, value in state.items() if value.decode() not in left_out}
    for ref, value in kept.items():
        if there.get(ref) != value:
            updates[ref] = value
    for ref in there:
        if ref.startswith(host_prefix) and ref not in state and ref != host_prefix + archiving.ARCHIVE:
            updates[ref] = None  # this store's state only: no other store's is ever touched, nor its archive
    return updates


def _still_refused(to: Target, refused: Mapping[str, str], updates: Mapping[bytes, bytes | None]) -> dict[str, str]:
    """The refused refs the remote does not hold as wanted: one another push (of
    another process) set to the same value meanwhile was done, not refused."""
    if not refused:
        return {}
    now = replication.remote_refs(to.remote, PREFIX + to.name.encode() + b"/", to.credentials)
    return {name: why for name, why in refused.items() if now.get(name.encode()) != updates.get(name.encode(), b"?")}


def fetch(engine: Engine, source: Target) -> list[SnapshotInfo]:
    """Bring ``source``'s snapshots into this store (hold the store lock): the same
    commits, with refs numbered after this store's; returns the new ones, oldest first.
    Only the listed snapshots the last fetch from there did not see listed are
    looked up here (``holdings``: the newest refs, then each on its own), and
    only what this store lacks is asked for or looked at: it read every
    snapshot ref here (0.14 s at 100,000). A snapshot dropped here since a
    fetch saw it listed is not brought back. The snapshots the hosts archived
    there come too (``archivewalk``), the archive commits without a ref; this
    store's own archive is not walked (it holds what this store pushed)."""
    store = engine.store
    namespace = PREFIX + source.name.encode() + b"/"
    cache = archivewalk.cache_file(store, source.remote.shown, source.name)
    seen = archivewalk.read_seen(cache)
    own = namespace + b"hosts/" + (_known_host_id(store) or "").encode() + b"/" + archiving.ARCHIVE
    try:
        listed = replication.remote_refs(source.remote, namespace, source.credentials)
        there = {name: value for name, value in listed.items() if name.startswith(source.snapshots)}
        tips = archivewalk.archive_refs(listed, namespace)  # the snapshots no snapshots/ ref names any more
        if not there and not tips:
            raise RemoteError(
                f"{source.remote.shown} holds no snapshots named {source.name!r}; `remote list` shows them"
            )
        named = set(there.values())
        # One the last listing named was brought (or held) by the fetch that saw it: its cache is
        # written after its refs, so a fetch killed before them left those unseen, to look up again.
        known = seen.named | holdings.held(store, named - seen.named)
        missing = {name: value for name, value in there.items() if value not in known}
        new_tips = {name: tip for name, tip in tips.items() if seen.tips.get(name) != tip and name != own}
        gone = holdings.held(store, seen.named - named, exact=False) if new_tips else set()
        more = archivewalk.more_haves(store, seen, new_tips, named, gone) if new_tips else []
        replication.receive(store, source.remote, {**missing, **new_tips}, source.credentials, more)
    finally:
        source.remote.release()
    candidates = {bytes.fromhex(value.decode()) for value in missing.values()}
    archived = {sha.hex().encode() for sha in archivewalk.walk(store, new_tips, seen)} - seen.named
    candidates |= {bytes.fromhex(name.decode()) for name in archived - holdings.held(store, archived)}
    arrived: list[tuple[tuple[int, int], bytes]] = []
    for sha in candidates:
        try:
            kind, content = store.read_raw(sha)
        except (KeyError, StoreError):
            continue  # not sent, or damaged: not a snapshot to list
        if kind == 1 and is_snapshot_commit(content):  # anything else on the remote is not ours to list
            arrived.append((_taken_in_order(content), sha))
    made: list[SnapshotInfo] = []
    new = [sha for _, sha in arrived]
    _note_arrivals(store, new)  # before their refs: retention counts their age from now
    if new:  # before their refs too: killed after, a push would send them back as this store's
        _append_text(_record_path(store, _FETCHED_FROM, source), "".join(f"{sha.hex()}\n" for sha in new))
    for _, sha in sorted(arrived):
        seq = store.next_seq()
        while not store.add_snapshot_ref(seq, sha):
            seq += 1
        made.append(engine.catalog.info(seq, sha))
    if new:  # after their refs: a push need not read the lines before it again (``pushstate``)
        _append_text(_record_path(store, _FETCHED_FROM, source), pushstate.SETTLED + "\n")
    now = archivewalk.Seen(tips, frozenset(named))
    if now != seen:  # after the refs: killed before, the next fetch walks again
        archivewalk.write_seen(cache, now)
    return made


def recently_fetched(store: Store, within: float) -> set[str]:
    """Snapshots fetched less than ``within`` seconds ago. Retention keeps them, as it
    keeps pins, for its age limit counted from their arrival here: a fetched
    checkpoint of last month would otherwise go at once, before it was used."""
    now = time.time()
    found: set[str] = set()
    for line in _read_file(os.path.join(store.meta_dir, _ARRIVALS)).splitlines():
        sha, _, when = line.partition(" ")
        if when.isascii() and when.isdigit() and len(when) <= 12 and now - int(when) < within:  # seconds, bounded
            found.add(sha)
    return found


def _note_arrivals(store: Store, shas: list[bytes]) -> None:
    """Record ``shas`` as fetched now; entries of what is no longer here (its
    commit gone: dropped and collected) go. One object lookup an entry, so
    what it costs grows with the fetched snapshots held, not with the history."""
    path = os.path.join(store.meta_dir, _ARRIVALS)
    known = {line.partition(" ")[0]: line for line in _read_file(path).splitlines() if line}
    now = time.time()
    for sha in shas:
        known[sha.hex()] = f"{sha.hex()} {now:.0f}"
    live = {sha for sha in known if _ID.fullmatch(sha) and store.has_object(bytes.fromhex(sha))}
    _write_text(path, "".join(f"{line}\n" for sha, line in sorted(known.items()) if sha in live))


_read_file = records.read_file
_append_text = records.append_text
"""Appends a list kept here. A line cut short by a crash is no id and is
passed over by ``archiving.read_record``: that snapshot is then not pruned,
never one pruned that this store did not make."""
_write_text = records.write_text


def workspaces(location: str, credentials: Credentials | None) -> list[RemoteWorkspace]:
    """The namespaces a remote holds, by name, with their snapshot refs counted,
    the stores that pushed there, and those of them holding an archive."""
    remote = open_remote(location, credentials)
    counts: dict[str, int] = {}
    hosts: dict[str, set[str]] = {}
    archived: dict[str, int] = {}
    try:
        refs = replication.remote_refs(remote, PREFIX, credentials)
    finally:
        remote.release()
    for ref in refs:
        name, _, rest = ref[len(PREFIX) :].decode("utf-8", "replace").partition("/")
        if not _NAME.fullmatch(name):
            continue  # no namespace snapshotter makes (or fetches): a name that may hold terminal escapes
        if rest.startswith("snapshots/"):
            counts[name] = counts.get(name, 0) + 1
        elif rest.startswith("hosts/"):
            hosts.setdefault(name, set()).add(rest.split("/")[1])
            if archivewalk.is_archive(ref[len(PREFIX) + len(name) + 1 :]):
                archived[name] = archived.get(name, 0) + 1
    names = sorted(set(counts) | set(hosts))
    return [
        RemoteWorkspace(name, counts.get(name, 0), len(hosts.get(name, ())), archived.get(name, 0)) for name in names
    ]


def _taken_in_order(content: bytes) -> tuple[int, int]:
    """(commit time, sequence number where it was taken): the order snapshots were
    taken in, even within one second."""
    when = seq = 0
    for line in content.split(b"\n"):
        if line.startswith(b"committer "):
            with contextlib.suppress(IndexError, ValueError):
                when = int(line.rsplit(b" ", 2)[1])
        elif line.startswith(b"Snapshot-Seq: "):
            with contextlib.suppress(ValueError):
                seq = int(line.partition(b": ")[2])
    return when, seq


def _pushed_file(store: Store, to: Target) -> str:
    return _record_path(store, _PUSHED, to)


def _where(store: Store, to: Target, host_prefix: bytes) -> pushstate.Where:
    """Where a push to ``to`` keeps its state and records (``pushstate``)."""
    state, pushed, fetched = (_record_path(store, folder, to) for folder in (pushstate.FOLDER, _PUSHED, _FETCHED_FROM))
    return pushstate.Where(state, pushed, fetched, to.snapshots, host_prefix + archiving.ARCHIVE)


def _record_path(store: Store, folder: str, to: Target) -> str:
    """This store's record in ``folder`` for one remote and name."""
    return records.record_path(store.meta_dir, folder, to.remote.shown, to.name)
