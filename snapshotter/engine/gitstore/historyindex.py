"""The history index: what the sessions' snapshots add up to, kept beside the
refs so that no call reads every snapshot to know it (see docs/store.md, "Long
histories").

Per session (the anonymous one under ``""``): how many snapshots it has and
how many turns, its newest snapshot, whether its newest turn is open (its
``pre-turn`` seen and no matching ``post-turn`` after), the calls it began and
has not closed, its newest closed call and how many it closed, its agent. For
the store: how many snapshots, the labels other than a turn's, a call's or an
abandoned redo's with the newest snapshot holding each per session, and the
highest ``abandoned:<n>``.

It is a cache: the refs are the record. It names the refs it reflects (the
newest sequence folded in, the snapshot refs loose then, a fingerprint of the
``refs/snapshots/`` lines of ``packed-refs``); a snapshot taken since is folded
in as it is read (its ref is newer than what the index names). Only the holder
of the store lock writes the file (atomically; a torn or lost one is rebuilt).
Packing and dropping refs change the fingerprint, so their writer first records
the intent (``pending``), then changes the refs, then records the result: a
reader finding the refs changed completes a recorded intent (a pack changed no
snapshot; a drop removed the snapshots whose refs are gone) and otherwise
rebuilds the index from the refs and the commits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from snapshotter.engine.fsutil import new_temp_file, read_side_file, unlink_quietly
from snapshotter.engine.gitstore.locking import StoreLock
from snapshotter.engine.gitstore.store import Store
from snapshotter.errors import StoreError, StoreLocked
from snapshotter.model import SnapshotInfo

log = logging.getLogger("snapshotter")

FILE_NAME = "history-index"
LOCK_NAME = "lock"
"""The store lock's file in the store's own folder (the engine's ``StoreLock``)."""
CAP = 32 << 20
VERSION = 2
"""2: sessions keep ``ended_calls``. An index of version 1 is rebuilt once: it
took every call a killed agent never closed as open to now, which made each
later step of its session's stretch that call's."""
PRE_TURN, POST_TURN, TOOL, TOOL_DONE, ABANDONED = "pre-turn:", "post-turn:", "tool:", "tool-done:", "abandoned:"
NOT_INDEXED = (PRE_TURN, POST_TURN, TOOL, TOOL_DONE, ABANDONED)
"""Label kinds with one label a snapshot, found from the stacks or near the newest: not kept by name."""

Mark = tuple[int, str]
"""A snapshot named in the index: (sequence number, commit id in hex)."""
Fingerprint = tuple[tuple[int, str, str], list[int]]


def key_of(session: str | None) -> str:
    return session or ""


@dataclass
class SessionFacts:
    """What one session's snapshots add up to."""

    count: int = 0
    turns: int = 0
    newest: Mark | None = None
    newest_time: float = 0.0
    agent: str | None = None
    agent_session: str | None = None
    turn: tuple[str, int, str, str] | None = None
    """The newest turn snapshot: ("pre" or "post", seq, id, the turn's number as labelled);
    a ``post-turn`` ends the turn begun before it, as ``sessions`` has always read it."""
    open_calls: dict[str, Mark] = field(default_factory=dict)
    ended_calls: dict[str, int] = field(default_factory=dict)
    """Of ``open_calls``, those begun in a turn that has ended since: call -> the
    ``post-turn``'s sequence, where such a call's bracket ends (``owners``: a call
    never closed runs to its turn's end)."""
    closed_calls: int = 0
    closed_call: Mark | None = None

    def open_turn(self) -> Mark | None:
        """The ``pre-turn`` snapshot of the newest turn, if it has not ended."""
        return (self.turn[1], self.turn[2]) if self.turn is not None and self.turn[0] == "pre" else None

    def as_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "turns": self.turns,
            "newest": self.newest,
            "newest_time": self.newest_time,
            "agent": self.agent,
            "agent_session": self.agent_session,
            "turn": self.turn,
            "open_calls": self.open_calls,
            "ended_calls": self.ended_calls,
            "closed_calls": self.closed_calls,
            "closed_call": self.closed_call,
        }

    @classmethod
    def of(cls, data: dict[str, Any]) -> SessionFacts:
        turn = data["turn"]
        return cls(
            count=int(data["count"]),
            turns=int(data["turns"]),
            newest=_mark(data["newest"]),
            newest_time=float(data["newest_time"]),
            agent=_text(data["agent"]),
            agent_session=_text(data["agent_session"]),
            turn=(str(turn[0]), int(turn[1]), str(turn[2]), str(turn[3])) if turn is not None else None,
            open_calls={str(k): m for k, v in dict(data["open_calls"]).items() if (m := _mark(v)) is not None},
            ended_calls={str(k): int(v) for k, v in dict(data["ended_calls"]).items()},
            closed_calls=int(data["closed_calls"]),
            closed_call=_mark(data["closed_call"]),
        )


@dataclass
class State:
    """The index as kept in the file."""

    as_of: int = 0
    fingerprint: Fingerprint = ((0, "", ""), [])
    count: int = 0
    sessions: dict[str, SessionFacts] = field(default_factory=dict)
    labels: dict[str, dict[str, Mark | None]] = field(default_factory=dict)
    """Label -> session key -> its newest snapshot holding it (None: that one was dropped; look again)."""
    abandoned: int = 0
    pending: dict[str, Any] | None = None
    age_pass: float = 0.0
    """When retention last looked for snapshots past the age limit (see ``maintenance``)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "as_of": self.as_of,
            "fingerprint": [list(self.fingerprint[0]), self.fingerprint[1]],
            "count": self.count,
            "sessions": {name: facts.as_json() for name, facts in self.sessions.items()},
            "labels": self.labels,
            "abandoned": self.abandoned,
            "pending": self.pending,
            "age_pass": self.age_pass,
        }

    @classmethod
    def of(cls, data: dict[str, Any]) -> State:
        if data.get("version") != VERSION:
            raise ValueError("another version")
        packed, loose = data["fingerprint"]
        return cls(
            as_of=int(data["as_of"]),
            fingerprint=((int(packed[0]), str(packed[1]), str(packed[2])), [int(n) for n in loose]),
            count=int(data["count"]),
            sessions={str(k): SessionFacts.of(v) for k, v in dict(data["sessions"]).items()},
            labels={
                str(label): {str(k): _mark(v) for k, v in dict(held).items()}
                for label, held in dict(data["labels"]).items()
            },
            abandoned=int(data["abandoned"]),
            pending=dict(data["pending"]) if data["pending"] is not None else None,
            age_pass=float(data.get("age_pass", 0.0)),
        )

    # -- folding snapshots in, and out ---------------------------------------------------

    def fold(self, info: SnapshotInfo) -> None:
        """Count in ``info``, a snapshot newer than every one folded before."""
        facts = self.sessions.setdefault(key_of(info.session), SessionFacts())
        mark = (info.sequence, info.id)
        self.count += 1
        facts.count += 1
        facts.newest, facts.newest_time = mark, info.created_at.timestamp()
        facts.agent = info.metadata.get("agent") or facts.agent
        facts.agent_session = info.metadata.get("agent-session") or facts.agent_session
        label = info.label or ""
        if label.startswith(PRE_TURN):
            facts.turns += 1
            facts.turn = ("pre", info.sequence, info.id, label[len(PRE_TURN) :])
        elif label.startswith(POST_TURN):
            number = label[len(POST_TURN) :]
            if facts.turn is not None and facts.turn[0] == "pre" and facts.turn[3] == number:
                begun = facts.turn[1]  # the turn this ends: the calls still open in it end here
                for call, (seq, _) in facts.open_calls.items():
                    if seq >= begun:
                        facts.ended_calls.setdefault(call, info.sequence)
            facts.turn = ("post", info.sequence, info.id, number)
        elif label.startswith(TOOL_DONE):
            facts.open_calls.pop(label[len(TOOL_DONE) :], None)
            facts.ended_calls.pop(label[len(TOOL_DONE) :], None)
            facts.closed_calls += 1
            facts.closed_call = mark
        elif label.startswith(TOOL):
            facts.open_calls[label[len(TOOL) :]] = mark
            facts.ended_calls.pop(label[len(TOOL) :], None)
        elif label.startswith(ABANDONED):
            number = label[len(ABANDONED) :]
            if number.isascii() and number.isdigit() and len(number) < 19:
                self.abandoned = max(self.abandoned, int(number))
        elif label:
            self.labels.setdefault(label, {})[key_of(info.session)] = mark

    def unfold(self, seq: int, sha: str, session: str | None, label: str) -> None:
        """Count out a dropped snapshot."""
        self.count = max(0, self.count - 1)
        name = key_of(session)
        facts = self.sessions.get(name)
        if facts is not None:
            facts.count -= 1
            if facts.count <= 0:
                del self.sessions[name]
            elif label.startswith(PRE_TURN):
                facts.turns = max(0, facts.turns - 1)
            if facts.turn is not None and facts.turn[1] == seq:
                facts.turn = None
            facts.open_calls = {call: mark for call, mark in facts.open_calls.items() if mark[0] != seq}
            facts.ended_calls = {  # a dropped turn's end no longer ends its calls (as ``owners`` reads what is kept)
                call: end for call, end in facts.ended_calls.items() if end != seq and call in facts.open_calls
            }
            if label.startswith(TOOL_DONE):
                facts.closed_calls = max(0, facts.closed_calls - 1)
                if facts.closed_call is not None and facts.closed_call[0] == seq:
                    facts.closed_call = None
        held = self.labels.get(label)
        if held is not None and held.get(name) is not None and held[name] == (seq, sha):
            held[name] = None  # an older one may hold it still: looked for when asked


def _mark(value: object) -> Mark | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError("not a snapshot's mark")
    return int(value[0]), str(value[1])


def _text(value: object) -> str | None:
    return str(value) if value is not None else None


Dropped = tuple[int, str, "str | None", str]
"""A snapshot being dropped, as the index needs it: (seq, id, session, label)."""


class HistoryIndex:
    """The index of one store, in memory, checked against the refs at each ask."""

    def __init__(self, store: Store, read: Callable[[int, bytes], SnapshotInfo | None]) -> None:
        self.store = store
        self.path = os.path.join(store.meta_dir, FILE_NAME)
        self._read = read
        """(seq, id) -> the snapshot's facts (None: damaged)."""
        self._state: State | None = None
        self._saved: dict[str, Any] | None = None

    def current(self) -> State:
        """The index as the refs are now: checked, completed, caught up."""
        for _ in range(3):
            fingerprint = self.store.snapshot_fingerprint()
            state = self._state
            if state is None or not _matches(state, fingerprint):
                state = self._load()
                if state is not None and not _matches(state, fingerprint) and state.pending is not None:
                    self._complete(state, fingerprint)
                    if _matches(state, fingerprint):
                        self._state = state
                        self._keep(state)
                if state is None or not _matches(state, fingerprint):
                    continue
            self._state = state
            self._catch_up(state, fingerprint)
            return state
        state = self._rebuilt()
        self._state = state
        self._keep(state)
        return state

    def _keep(self, state: State) -> None:
        """Save a rebuilt or completed index if the store lock is free at once, so
        the next call loads it (a rebuild reads every snapshot: some 20 s at
        100,000) instead of rebuilding it again. Never waits: a holder of the
        lock saves the index itself at the end of its pass (``maintain``).
        Saved only if it still matches the refs under the lock (writers change
        them only under it); a read-only store is rebuilt again next time."""
        lock = StoreLock(os.path.join(self.store.meta_dir, LOCK_NAME), 0, on_recover=self.store.recover)
        try:
            lock.acquire()
        except (StoreLocked, StoreError, OSError):  # locked: a writer holds it (maybe this process)
            return
        try:
            if _matches(state, self.store.snapshot_fingerprint()):
                self.save()
        except (StoreError, OSError) as exc:
            log.debug("snapshotter: the history index %s is not saved: %s", self.path, exc)
        finally:
            lock.release()

    def _load(self) -> State | None:
        try:
            data = json.loads(read_side_file(self.path, CAP, follow=False))
            state = State.of(data)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            log.debug("snapshotter: the history index %s is rebuilt: %s", self.path, exc)
            return None
        self._saved = data
        return state

    def _complete(self, state: State, fingerprint: Fingerprint) -> None:
        """Finish what a writer recorded before changing the refs (see the module's docstring)."""
        pending = state.pending or {}
        for seq, sha, session, label in pending.get("drop", []):
            if seq <= state.as_of and self.store.snapshot_id(int(seq)) != bytes.fromhex(sha):
                state.unfold(int(seq), str(sha), session, str(label))
        state.pending = None
        state.fingerprint = (fingerprint[0], [n for n in fingerprint[1] if n <= state.as_of])

    def _catch_up(self, state: State, fingerprint: Fingerprint) -> None:
        if not any(n > state.as_of for n in fingerprint[1]):
            return
        newer: list[tuple[int, bytes]] = []
        for seq, sha in self.store.iter_snapshot_ids():
            if seq <= state.as_of:
                break
            newer.append((seq, sha))
        for seq, sha in reversed(newer):
            info = self._read(seq, sha)
            if info is not None:
                state.fold(info)
        if newer:
            state.as_of = newer[0][0]
        state.fingerprint = (fingerprint[0], [n for n in fingerprint[1] if n <= state.as_of])

    def _rebuilt(self) -> State:
        """The index made afresh from every snapshot ref and commit."""
        state = State()
        fingerprint = self.store.snapshot_fingerprint()
        for seq, sha in self.store.iter_oldest_first():
            info = self._read(seq, sha)
            if info is not None:
                state.fold(info)
            state.as_of = seq
        state.fingerprint = (fingerprint[0], [n for n in fingerprint[1] if n <= state.as_of])
        return state

    def rebuild(self) -> State:
        self._state = self._rebuilt()
        return self._state

    # -- writing (hold the store lock) ---------------------------------------------------

    def save(self) -> None:
        """Write the index if it changed since it was read or written."""
        state = self._state
        if state is None:
            return
        data = state.as_json()
        if data == self._saved:
            return
        _write(self.path, json.dumps(data, separators=(",", ":")).encode("utf-8"))
        self._saved = data

    @contextlib.contextmanager
    def dropping(self, infos: Iterable[SnapshotInfo]) -> Iterator[None]:
        """Around the deletion of the refs of ``infos``: the intent recorded
        before, the result after."""
        state = self.current()
        going = [(info.sequence, info.id, info.session, info.label or "") for info in infos]
        state.pending = {"drop": going}
        self.save()
        yield
        fingerprint = self.store.snapshot_fingerprint()
        self._complete(state, fingerprint)
        remaining = next(self.store.iter_snapshot_ids(), (0, b""))[0]  # newest first: the highest
        state.as_of = min(state.as_of, remaining) if remaining else 0
        state.fingerprint = (fingerprint[0], [n for n in fingerprint[1] if n <= state.as_of])
        self.save()

    @contextlib.contextmanager
    def packing(self) -> Iterator[None]:
        """Around a pack of the refs: nothing changes but where they are."""
        state = self.current()
        state.pending = {"pack": True}
        self.save()
        yield
        self._complete(state, self.store.snapshot_fingerprint())
        self.save()


def _matches(state: State, fingerprint: Fingerprint) -> bool:
    packed, loose = fingerprint
    return state.fingerprint[0] == packed and [n for n in loose if n <= state.as_of] == state.fingerprint[1]


def _write(path: str, data: bytes) -> None:
    """Replace the file whole (a temporary file of our own, renamed): never synced,
    a cache lost to a power cut is rebuilt."""
    fd, tmp = new_temp_file(os.path.dirname(path), ".history-index-", ".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        unlink_quietly(tmp)
        raise
