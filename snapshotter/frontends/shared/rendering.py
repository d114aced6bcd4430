"""What the command line prints: stable JSON documents, text, colour, progress
and the library's warnings (the MCP server's tools return the same JSON shapes).

JSON output (``--json``) is one object per command, ``{"schema": 1, "command":
..., "result": ...}`` or ``{"schema": 1, "command": ..., "error": {...}}``;
the shapes below are the documented schema, and fields are only ever added.
Colour appears only on a terminal without ``NO_COLOR``; the progress line only
on a terminal's stderr, never in pipes or with ``--json``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # the result types name annotations only: `snapshotter --version` does not load the model
    from snapshotter.model import (
        BlameResult,
        FileChange,
        FileDiff,
        GcResult,
        PruneResult,
        RestoreResult,
        RevertResult,
        SessionInfo,
        SnapshotInfo,
        StoreStats,
        UndoResult,
        VerifyResult,
    )

SCHEMA = 1
STATUS_LETTER = {"added": "A", "modified": "M", "deleted": "D", "type_changed": "T", "unreadable": "X"}
"""git's letters; X (git's "unknown") marks a file that exists but cannot be read (kept as last recorded)."""


def _mode(mode: int | None) -> str | None:
    return f"{mode:06o}" if mode is not None else None


def _value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, (tuple, list)):
        return [_value(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return plain_json(value)
    return value


def plain_json(result: Any) -> dict[str, Any]:
    """A result dataclass of flat fields as JSON: datetimes in ISO 8601, tuples as lists."""
    return {f.name: _value(getattr(result, f.name)) for f in fields(result) if not f.name.startswith("_")}


def snapshot_json(info: SnapshotInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "tree_id": info.tree_id,
        "sequence": info.sequence,
        "message": info.message,
        "label": info.label,
        "created_at": info.created_at.isoformat(),
        "files_changed": info.files_changed,
        "additions": info.additions,
        "deletions": info.deletions,
        "metadata": dict(info.metadata),
        "skipped": [{"path": s.path, "reason": s.reason.value} for s in info.skipped],
        "session": info.session,
    }


def diff_json(item: FileDiff, with_patch: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": item.path,
        "status": item.status.value,
        "additions": item.additions,
        "deletions": item.deletions,
        "binary": item.binary,
        "old_mode": _mode(item.old_mode),
        "new_mode": _mode(item.new_mode),
    }
    if with_patch:
        out["patch"] = item.patch
    return out


def change_json(change: FileChange) -> dict[str, Any]:
    return {
        "path": change.path,
        "status": change.status.value,
        "old_mode": _mode(change.old_mode),
        "new_mode": _mode(change.new_mode),
    }


_ESCAPES = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\"}


def quoted(path: str) -> str:
    """``path`` as git prints it with ``core.quotePath`` (its default): as it is
    if every byte is printable ASCII other than ``"`` and ``\\``, else in double
    quotes with C escapes (``\\n``, ``\\t``, ``\\"``...) and octal for the other
    control bytes and every byte of 0x80 and above (a name that is not UTF-8
    comes as its own bytes, held in surrogates). A line then holds exactly one
    path, whatever the name, so a script reading lines gets it right."""
    raw = os.fsencode(path)
    if all(0x20 <= byte < 0x7F and byte not in (34, 92) for byte in raw):
        return path
    out = ['"']
    for byte in raw:
        if byte in _ESCAPES:
            out.append("\\" + _ESCAPES[byte])
        elif byte < 0x20 or byte >= 0x7F:
            out.append(f"\\{byte:03o}")
        else:
            out.append(chr(byte))
    out.append('"')
    return "".join(out)


def restore_json(result: RestoreResult) -> dict[str, Any]:
    return plain_json(result)


def restore_lines(result: RestoreResult) -> list[str]:
    """A restore, a path a line (``write``, ``delete``, ``keep``, ``skip``), then
    the totals and how to undo it."""
    q = quoted
    lines = [f"write  {q(path)}" for path in result.written_paths]
    lines += [f"delete {q(path)}" for path in result.deleted_paths]
    lines += [f"keep   {q(kept.path)} ({kept.reason.value}: not tracked now, left as it is)" for kept in result.kept]
    lines += [f"skip   {q(s.path)} ({s.detail or s.reason.value}: not written here)" for s in result.skipped]
    done = ("would write", "would delete") if result.dry_run else ("wrote", "deleted")
    lines.append(f"{done[0]} {result.written}, {done[1]} {result.deleted}, unchanged {result.unchanged}")
    if result.safety_snapshot_id and not result.dry_run and (result.written or result.deleted):
        lines.append(f"undo with: snapshotter undo (or snapshotter restore {result.safety_snapshot_id[:12]})")
    return lines


def revert_json(result: RevertResult) -> dict[str, Any]:
    return plain_json(result)


def undo_json(result: UndoResult) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "action": result.action,
        "message": result.message,
        "target_id": result.target_id,
        "saved_id": result.saved_id,
        "restore": restore_json(result.restore) if result.restore is not None else None,
        "revert": revert_json(result.revert) if result.revert is not None else None,
    }


def revert_lines(result: RevertResult, taken: str = "revert") -> list[str]:
    """A revert or merge, a path a line (``taken``: a path given the other
    side's version whole, ``merge``, ``conflict``, ``skip``), then the totals
    and how to undo it."""
    q = quoted
    lines = [f"{taken:<8} {q(path)}" for path in result.reverted]
    lines += [f"merge    {q(path)}" for path in result.merged]
    for conflict in result.conflicts:
        marked = ", conflict markers written" if conflict.path in result.marked else ""
        lines.append(f"conflict {q(conflict.path)} ({conflict.reason.value}: {conflict.detail}{marked})")
    for skipped in result.skipped:
        lines.append(f"skip     {q(skipped.path)} ({skipped.detail or skipped.reason.value}: not written here)")
    for path in result.unattributed:
        why = "changed while another session's tool call ran too: whose change it was cannot be told"
        lines.append(f"keep     {q(path)} ({why})")
    verb = "would change" if result.dry_run or not result.applied else "changed"
    lines.append(
        f"{verb} {plural(len(result.reverted) + len(result.merged), 'path')} ({len(result.merged)} merged), "
        f"{len(result.unchanged)} already so, {plural(len(result.conflicts), 'conflict')}"
    )
    if result.safety_snapshot_id:
        lines.append(f"undo with: snapshotter restore {result.safety_snapshot_id[:12]}")
    return lines


def prune_json(result: PruneResult) -> dict[str, Any]:
    return {**plain_json(result), "pruned": [snapshot_json(i) for i in result.pruned]}


def gc_json(result: GcResult) -> dict[str, Any]:
    return plain_json(result)


def stats_json(stats: StoreStats) -> dict[str, Any]:
    return plain_json(stats)


def sessions_json(found: list[SessionInfo]) -> dict[str, Any]:
    """``{"sessions": [{name, agent, agent_session_id, turns, open_turn, last_activity}]}``."""
    return {"sessions": [plain_json(s) for s in found]}


def verify_json(result: VerifyResult) -> dict[str, Any]:
    return plain_json(result)


def readable(text: str) -> str:
    """``text`` as a terminal shows it as stored: control characters (an escape
    would drive the terminal) and bidi and other format characters (which turn
    a line around) written as ``\\x1b`` and ``\\u202e``; the joiners kept. Text
    comes from the folder's history, which an agent can write (an MCP server's
    ``begin_turn`` message, a session's metadata)."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        kind = unicodedata.category(ch)
        if kind == "Cc":
            out.append(f"\\x{ord(ch):02x}")
        elif kind in ("Cf", "Zl", "Zp", "Cs") and ch not in "\u200c\u200d":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def snapshot_line(info: SnapshotInfo, is_base: bool = False) -> str:
    """One line: id, time, counts against the snapshot before it, label, first line of the message;
    ``@`` after the id marks the base."""
    label = f" [{readable(info.label)}]" if info.label else ""
    when = info.created_at.strftime("%Y-%m-%d %H:%M:%S")
    first = readable(info.message.splitlines()[0]) if info.message else ""
    stats = f"{plural(info.files_changed, 'file')} +{info.additions} -{info.deletions}"
    marker = " @" if is_base else "  "
    return f"{info.id[:12]}{marker} {when}  {stats}{label}  {first}".rstrip()


def session_log_lines(
    infos: list[SnapshotInfo], shown: int, base_id: str | None, *, begun_earlier: bool = False
) -> list[str]:
    """``log --session``: the session's snapshots (``infos``, newest first, back
    to where the oldest listed one's turn began, so each is placed in its turn)
    under a heading per turn naming its prompt line; only the newest ``shown``
    snapshots (0: all) are listed. ``begun_earlier``: ``infos`` stop short of
    that start, so the oldest are headed as in a turn begun earlier, or none."""
    from snapshotter.history.owners import POST_TURN, PRE_TURN  # here: the owners load the engine

    groups: list[tuple[str, list[SnapshotInfo]]] = [(BEGUN_EARLIER, [])] if begun_earlier else []
    inside = begun_earlier
    for info in reversed(infos):
        label = info.label or ""
        if label.startswith(PRE_TURN):
            first = readable(info.message.splitlines()[0]) if info.message else ""
            groups.append((f"turn {readable(label[len(PRE_TURN) :])}: {first}".rstrip(), []))
            inside = True
        elif not inside and (not groups or groups[-1][0] != OUTSIDE_TURNS):
            groups.append((OUTSIDE_TURNS, []))
        groups[-1][1].append(info)
        if label.startswith(POST_TURN):
            inside = False
    if inside and groups[-1][0] != BEGUN_EARLIER:
        groups[-1] = (f"{groups[-1][0]}  (open)", groups[-1][1])
    lines: list[str] = []
    left = shown or len(infos)
    for heading, members in reversed(groups):
        if left <= 0:
            break
        listed = list(reversed(members))[:left]
        left -= len(listed)
        lines += [heading, *(f"  {snapshot_line(i, i.id == base_id)}" for i in listed)]
    return lines


OUTSIDE_TURNS = "outside any turn"
BEGUN_EARLIER = "in a turn begun earlier, or outside any turn"


def show_lines(info: SnapshotInfo) -> list[str]:
    """``show REF`` for a person: every fact of one snapshot, a line each."""
    lines = [
        f"snapshot  {info.id}",
        f"sequence  {info.sequence}",
        f"created   {info.created_at.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        f"label     {readable(info.label) if info.label else '-'}",
        f"changes   {plural(info.files_changed, 'file')}, +{info.additions} -{info.deletions} lines "
        "(against the snapshot before it)",
        f"tree      {info.tree_id}",
    ]
    for key, value in sorted(info.metadata.items()):
        lines.append(f"meta      {readable(key)}={readable(value)}")
    for skipped in info.skipped:
        lines.append(f"skipped   {skipped.path} ({skipped.reason.value})")
    lines.append("")
    lines.extend(f"    {readable(line)}" for line in (info.message.splitlines() or ["(no message)"]))
    return lines


def wants_color(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    return stream.isatty() and "NO_COLOR" not in environ and environ.get("TERM") != "dumb"


def colored_patch(patch: str) -> str:
    out = []
    for line in patch.splitlines(keepends=True):
        if line.startswith(
            ("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file", "old mode", "new mode")
        ):
            out.append(f"\x1b[1m{line.rstrip(chr(10))}\x1b[0m\n")
        elif line.startswith("@@"):
            out.append(f"\x1b[36m{line.rstrip(chr(10))}\x1b[0m\n")
        elif line.startswith("+"):
            out.append(f"\x1b[32m{line.rstrip(chr(10))}\x1b[0m\n")
        elif line.startswith("-"):
            out.append(f"\x1b[31m{line.rstrip(chr(10))}\x1b[0m\n")
        else:
            out.append(line)
    return "".join(out)


def stat_lines(diffs: list[FileDiff]) -> list[str]:
    names = [quoted(d.path) for d in diffs]
    width = max((len(name) for name in names), default=0)
    lines = []
    for item, name in zip(diffs, names):
        counts = "Bin" if item.binary else f"{item.additions + item.deletions:>5} {'+' * min(item.additions, 30)}"
        counts += "" if item.binary else "-" * min(item.deletions, 30)
        lines.append(f" {name:<{width}} | {counts}")
    lines.append(stat_summary(len(diffs), sum(d.additions for d in diffs), sum(d.deletions for d in diffs)))
    return lines


def setting_text(value: Any, quoted: bool = True) -> str:
    """A value as a config file writes it (TOML): ``true``, ``"text"``, ``["a", "b"]``
    (a string bare, unless ``quoted``); ``(not set)`` for none."""
    if value is None:
        return "(not set)"
    if isinstance(value, str) and not quoted:
        return value
    return json.dumps(value)


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 file``, ``2 files``."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"


def stat_summary(files: int, added: int, deleted: int) -> str:
    """git's last ``--stat`` line: a side with nothing is left out, unless both are."""
    parts = [f" {plural(files, 'file')} changed"]
    if added or not deleted:
        parts.append(f"{plural(added, 'insertion')}(+)")
    if deleted or not added:
        parts.append(f"{plural(deleted, 'deletion')}(-)")
    return ", ".join(parts)


class ProgressLine:
    """A one-line progress report on a terminal's stderr, at most ten updates a second."""

    MIN_TOTAL = 200

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.started: dict[str, float] = {}
        self.last = 0.0
        self.shown = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if total < self.MIN_TOTAL:
            return
        now = time.monotonic()
        start = self.started.setdefault(phase, now)
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        rate = done / (now - start) if now > start else 0.0
        unit = "objects" if phase == "sending" else "files"
        self.stream.write(f"\r{phase} {done:,}/{total:,} {unit}  {rate:,.0f} {unit}/s ")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


class CaughtWarnings(logging.Handler):
    """The library's warnings during one command or tool call, kept to go with its
    result (``--json``, an MCP tool's answer); with ``echo`` also written to stderr
    as they come, so a person at the command line sees them at once."""

    def __init__(self, echo: bool = False, stream: TextIO | None = None) -> None:
        super().__init__(logging.WARNING)
        self.echo = echo
        self.stream = stream
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage().removeprefix("snapshotter: ")
        self.messages.append(text)
        if self.echo:
            (self.stream or sys.stderr).write(f"snapshotter: warning: {text}\n")


def blame_json(found: BlameResult) -> dict[str, Any]:
    """``{path, lines, runs: [{start, count, source_start, origin}], depth, limit, limited, session}``."""
    return {
        "path": found.path,
        "lines": list(found.lines),
        "session": found.session,
        "runs": [plain_json(run) for run in found.runs],
        "depth": found.depth,
        "limit": found.limit,
        "limited": found.limited,
    }
