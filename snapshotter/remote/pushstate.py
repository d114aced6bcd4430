"""What a push remembers for the next one to the same remote and name, so that
it reads only what is new here and the live ends of its records (issue #50:
push costs what it sends, not the history). ``meta/push-state/<key>``, beside
the ``pushed`` record, written after the push's refs were taken and its record
written; a cache: missing, unreadable, or not matching the records (a prune
rewrote ``pushed``, an old release did), the push reads everything, as before,
and writes it again. Killed before it is written, the one before stays: behind
the truth, never ahead (the next push reads more, and skips nothing).

- ``seq``: every snapshot here numbered up to it was settled by that push: on
  the remote under its ``snapshots/`` ref, archived there, fetched from there,
  or left out (``skipped``, judged again by every push);
- ``pushed``: the :class:`records.Tail` of the ``pushed`` record, starting at
  the first line of a snapshot whose ref this store keeps there (unarchived);
  ``dead``: the unarchived ids after that start whose ref was not there
  either (the remote lost it, and a push that read everything did not send it
  again: dropped here, or left out): all the others must be listed, or the
  remote lost refs and the push reads everything;
- ``fetched``: the tail of the ``fetched-from`` record, from its last
  :data:`SETTLED` line (a fetch adds one after the new snapshots' refs) as it
  was before the push looked at this store's refs: every line before it names
  a snapshot numbered up to ``seq`` (or never added), so the next push need
  not read it; a fetch between its lines and its refs, or killed there,
  leaves its lines after it;
- ``archive``: the value this store's ``archive`` ref was left at there (``-``: none).
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from snapshotter.engine.fsutil import SMALL_FILE_CAP, read_side_file
from snapshotter.engine.gitstore.store import Store
from snapshotter.remote import archiving, hoststate
from snapshotter.remote.records import Tail, read_after, read_from, tail_at, write_text

FOLDER = "push-state"
SETTLED = "settled"
"""The line a fetch adds to ``fetched-from`` once the new snapshots' refs are
in (no id: older releases' readers pass it over)."""
_HEADER = "snapshotter push state 1"
_SHA = re.compile(r"[0-9a-f]{40}")
_CAP = max(SMALL_FILE_CAP, 4 << 20)


@dataclass(frozen=True)
class State:
    """See the module's docstring."""

    seq: int
    pushed: Tail
    fetched: Tail
    archive: str | None
    skipped: tuple[tuple[int, str], ...] = ()
    dead: frozenset[str] = frozenset()

    def text(self) -> str:
        lines = [_HEADER, f"seq {self.seq}", f"pushed {self.pushed.text()}", f"fetched {self.fetched.text()}"]
        lines.append(f"archive {self.archive or '-'}")
        lines += [f"skipped {seq} {sha}" for seq, sha in self.skipped]
        lines += [f"dead {sha}" for sha in sorted(self.dead)]
        return "".join(f"{line}\n" for line in lines)


def read_state(path: str) -> State | None:
    """The state at ``path``, or None: missing, unreadable, or not whole."""
    try:
        lines = read_side_file(path, _CAP, follow=False).decode("ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if not lines or lines[0] != _HEADER:
        return None
    fields: dict[str, list[str]] = {}
    skipped: list[tuple[int, str]] = []
    dead: set[str] = set()
    for line in lines[1:]:
        key, *words = line.split(" ")
        if key == "skipped" and len(words) == 2 and words[0].isdigit() and _SHA.fullmatch(words[1]):
            skipped.append((int(words[0]), words[1]))
        elif key == "dead" and len(words) == 1 and _SHA.fullmatch(words[0]):
            dead.add(words[0])
        elif key in ("seq", "pushed", "fetched", "archive"):
            fields[key] = words
        else:
            return None
    seq, archive = fields.get("seq", []), fields.get("archive", [])
    pushed, fetched = Tail.parse(fields.get("pushed", [])), Tail.parse(fields.get("fetched", []))
    if len(seq) != 1 or not seq[0].isdigit() or len(archive) != 1 or pushed is None or fetched is None:
        return None
    tip = None if archive[0] == "-" else archive[0]
    if tip is not None and not _SHA.fullmatch(tip):
        return None
    return State(int(seq[0]), pushed, fetched, tip, tuple(skipped), frozenset(dead))


def write_state(path: str, state: State | None) -> None:
    """Keep ``state`` (None: remove it, so the next push reads everything)."""
    if state is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    write_text(path, state.text())


@dataclass(frozen=True)
class Scan:
    """This store's snapshots a push looked at, newest first: ``above`` every
    one numbered over the settled ``seq`` (all of them, without one), then
    more until those ``wanted`` were found or the bound was reached;
    ``positions``: hex id -> number, of every one looked at; ``newest``: the
    highest number seen (0: none); ``whole``: every snapshot was looked at."""

    above: tuple[tuple[int, str], ...]
    positions: dict[str, int]
    newest: int
    whole: bool


def scan(store: Store, settled: int | None, wanted: Collection[str], bound: int) -> Scan:
    """Walk this store's snapshot refs newest first (``packed-refs`` read from
    its end): every one above ``settled`` (every one, for None), then on while
    an id of ``wanted`` is not found yet, at most ``bound`` more."""
    above: list[tuple[int, str]] = []
    positions: dict[str, int] = {}
    missing = set(wanted)
    newest = below = 0
    for seq, sha in store.iter_snapshot_ids():
        newest = max(newest, seq)
        if settled is not None and seq <= settled:
            if not missing or below >= bound:
                return Scan(tuple(above), positions, newest, False)
            below += 1
        else:
            above.append((seq, sha.hex()))
        positions[sha.hex()] = seq
        missing.discard(sha.hex())
    return Scan(tuple(above), positions, newest, True)


def still_held(store: Store, skipped: tuple[tuple[int, str], ...], scanned: Scan) -> list[tuple[int, str]]:
    """Of the snapshots an earlier push left out (numbered up to the settled
    number, so not among ``scanned.above``), those still here: judged again."""
    above = {sha for _, sha in scanned.above}
    return [(seq, sha) for seq, sha in skipped if sha not in above and _held(store, seq, sha)]


def _held(store: Store, seq: int, sha: str) -> bool:
    found = store.snapshot_id(seq)
    return found is not None and found.hex() == sha


def live_part(text: str, live: Collection[str]) -> tuple[int, frozenset[str]]:
    """Of the ``pushed`` record's ``text`` (read from some start): the offset of
    the first line naming a snapshot of ``live`` (the end, for none: ascii, so
    characters are bytes), and the unarchived ids from there on not in ``live``."""
    at, start = 0, None
    for line in text.splitlines(keepends=True):
        if start is None and line.strip() in live:
            start = at
        at += len(line)
    start = at if start is None else start
    rest = archiving.read_record(text[start:])
    return start, frozenset(sha for sha in rest.unarchived if sha not in live)


BOUND = 4096
"""Snapshots a push looks at below the settled number, at most, for the
numbers of its own listed snapshots (which order its archiving) and of its
sessions' stacks' tops (which rank them): the newest ones, found long before."""


@dataclass(frozen=True)
class View:
    """What a push knows of this store: its ``pushed`` ``record`` (read from
    byte ``pushed_from``), the snapshots it may send (``candidates``, oldest
    first), the numbers of those it looked at (``positions``), those fetched
    from there (``theirs``, read to ``fetched_end``; its lines from
    ``fetched_start`` are those the next push reads), the ``newest`` number,
    and whether it read everything (``whole``: no state, or one not matching)."""

    record: archiving.Record
    pushed_from: int
    candidates: tuple[str, ...]
    positions: dict[str, int]
    theirs: frozenset[str]
    fetched_start: int
    fetched_end: int
    newest: int
    whole: bool


@dataclass(frozen=True)
class Where:
    """The files and names a push's view is read from: its state, its two
    records, the namespace's ``snapshots/`` prefix and this store's ``archive`` ref."""

    state: str
    pushed: str
    fetched: str
    snapshots: bytes
    archive: bytes


def look(store: Store, where: Where, there: Mapping[bytes, bytes], use_state: bool) -> View:
    """This push's :class:`View`: from the state where it can (see the module's
    docstring), else from everything. This store's refs are read before
    ``fetched-from`` is read to its end (a fetch appends there before it adds
    its refs: no snapshot scanned is missed there), and after its last
    :data:`SETTLED` line as read before (see the module's docstring)."""
    state = read_state(where.state) if use_state else None
    if state is not None:
        view = _from_state(store, where, there, state)
        if view is not None:
            return view
    got = read_after(where.pushed, None)
    record = archiving.read_record(got[0] if got is not None else "")
    before = read_after(where.fetched, None) or ("", 0)
    scanned = scan(store, None, (), 0)
    after = read_from(where.fetched, before[1]) or ("", before[1])
    candidates = tuple(sha for _, sha in reversed(scanned.above))
    theirs = _ids(before[0] + after[0])
    return View(record, 0, candidates, scanned.positions, theirs, _settled(before[0]), after[1], scanned.newest, True)


def _from_state(store: Store, where: Where, there: Mapping[bytes, bytes], state: State) -> View | None:
    listed_tip = there.get(where.archive)
    if (listed_tip.decode("ascii", "replace") if listed_tip is not None else None) != state.archive:
        return None  # the archive moved by a push that did not finish, or the remote lost it
    got = read_after(where.pushed, state.pushed)
    if got is None:
        return None
    record = archiving.read_record(got[0])
    own = []
    for sha in record.unarchived:
        if where.snapshots + sha.encode() in there:
            own.append(sha)
        elif sha not in state.dead:
            return None  # the remote lost a ref this store made there: read everything, send it again
    wanted = {*own, *(top for tops in hoststate.session_tops(store).values() for top in tops)}
    before = read_after(where.fetched, state.fetched)
    if before is None:
        return None
    scanned = scan(store, state.seq, wanted, BOUND)
    after = read_from(where.fetched, before[1])
    if scanned.newest < state.seq or after is None:
        return None  # numbers this store never reached: not its state
    skipped = still_held(store, state.skipped, scanned)
    positions = {**scanned.positions, **{sha: seq for seq, sha in skipped}}
    candidates = (*(sha for _, sha in sorted(skipped)), *(sha for _, sha in reversed(scanned.above)))
    theirs = _ids(before[0] + after[0])
    start = state.fetched.start + _settled(before[0])
    return View(record, state.pushed.start, candidates, positions, theirs, start, after[1], scanned.newest, False)


def _settled(text: str) -> int:
    """The offset in ``text`` (ascii) just after its last :data:`SETTLED` line (0: none)."""
    at = text.rfind(SETTLED + "\n")
    while at > 0 and text[at - 1] != "\n":
        at = text.rfind(SETTLED + "\n", 0, at)
    return at + len(SETTLED) + 1 if at >= 0 else 0


def _ids(text: str) -> frozenset[str]:
    """The ids of ``fetched-from`` lines (a line cut short by a crash is none)."""
    return frozenset(line for line in text.splitlines() if _SHA.fullmatch(line))


def settle(where: Where, view: View, live: Collection[str], skipped: Collection[str], tip: bytes | None) -> None:
    """Keep the state a push leaves, once its refs were taken, its record written
    and its deletes done: ``live``, the snapshots its ``snapshots/`` refs there
    now name for this store (unarchived); ``skipped``, those it left out; ``tip``,
    its ``archive`` ref there. Anything unreadable: no state (the next push reads everything)."""
    got = read_from(where.pushed, view.pushed_from)
    state = None
    if got is not None:
        start, dead = live_part(got[0], live)
        pushed = tail_at(where.pushed, view.pushed_from + start, got[1])
        fetched = tail_at(where.fetched, view.fetched_start, view.fetched_end)
        left_out = tuple(sorted((view.positions[sha], sha) for sha in set(skipped) if sha in view.positions))
        if pushed is not None and fetched is not None:
            state = State(view.newest, pushed, fetched, tip.decode("ascii") if tip else None, left_out, dead)
    write_state(where.state, state)
