"""Snapshot commits: how a snapshot's facts are written into, and read from, a commit.

The message's first paragraph is the user's message; label, sequence, counts,
metadata and skipped paths follow as git-style trailers in the last paragraph,
so ``git log`` shows them. Author and committer are a fixed identity: never the
user's git config.

``Snapshot-Stats`` holds the numstat against the snapshot before:
``files=3 additions=12 deletions=4``. A safety snapshot the library takes for
itself (before a restore, undo, redo, revert) records its file count at once
and defers its line counts: ``files=3 lines=uncounted against=<tree id>``
names the tree they are to be counted from (the newest snapshot's when it was
taken). ``catalog`` counts them on first request and keeps them beside the
store (``linecounts``); the commit never changes. Readers that predate this
see no ``additions``/``deletions`` and read them as 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime, timezone

from snapshotter.engine.gitstore.objects import EMPTY_TREE
from snapshotter.errors import InvalidInput
from snapshotter.model import SkippedPath, SkipReason, SnapshotInfo

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # dulwich's object classes load where a commit is built: reading one needs none (``commitread``)
    from dulwich.objects import Commit

    from snapshotter.engine.gitstore.commitread import CommitFields

IDENTITY = b"snapshotter <snapshotter@localhost>"
_TRAILER_SEQ = "Snapshot-Seq"
_TRAILER_LABEL = "Snapshot-Label"
_TRAILER_STATS = "Snapshot-Stats"
_TRAILER_META = "Snapshot-Metadata"
_TRAILER_SKIPPED = "Snapshot-Skipped"
_TRAILER_SESSION = "Snapshot-Session"
_UNCOUNTED = "uncounted"
_HEXLIKE = re.compile(r"[0-9a-fA-F]{7,40}")
_MAX_LABEL = 200


def check_text(what: str, text: str) -> None:
    """Refuse text that cannot be stored as UTF-8 (a lone surrogate): it would
    come back different, and a label so stored would never be found again."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} must be valid Unicode text (it holds a lone surrogate)") from None


def validate_label(label: str | None) -> str | None:
    if label is None:
        return None
    if not isinstance(label, str) or not label or len(label) > _MAX_LABEL:
        raise InvalidInput(f"label must be a non-empty string of at most {_MAX_LABEL} characters")
    check_text("label", label)
    if not _reads_as_stored(label) or label != label.strip():
        raise InvalidInput("label must be one line without control, bidi or other format characters, or outer spaces")
    if label.startswith("@"):
        raise InvalidInput(f"label {label!r} starts with '@', which names relative refs (@, @~2); choose another")
    if _HEXLIKE.fullmatch(label):
        raise InvalidInput(f"label {label!r} looks like a snapshot id; choose a label with a non-hex character")
    return label


def _reads_as_stored(text: str) -> bool:
    """No control or line-breaking character (an escape drives a terminal), and no
    format character but the joiners (a bidi control turns the line around)."""
    import unicodedata  # here: reading snapshots checks no label

    return not any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and ch not in "\u200c\u200d" for ch in text)


def validate_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput("metadata must be a mapping of strings to strings")
    out = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise InvalidInput("metadata keys must be non-empty strings and values strings")
        check_text("metadata", key + value)
        out[key] = value
    return out


def build_commit(
    tree_id: bytes,
    message: str,
    *,
    seq: int,
    label: str | None,
    metadata: Mapping[str, str],
    stats: tuple[int, int, int],
    skipped: list[SkippedPath],
    when: datetime,
    uncounted_against: bytes | None = None,
    session: str | None = None,
) -> BuiltCommit:
    """A parentless commit recording one snapshot. With ``uncounted_against``
    (a tree id) its line counts are deferred: only ``stats``' file count is
    recorded, and the lines are to be counted from that tree."""
    if not isinstance(message, str):
        raise InvalidInput("message must be a string")
    trailers = [f"{_TRAILER_SEQ}: {seq}"]
    if label is not None:
        trailers.append(f"{_TRAILER_LABEL}: {label}")
    if session is not None:
        trailers.append(f"{_TRAILER_SESSION}: {session}")
    files, additions, deletions = stats
    if uncounted_against is None:
        trailers.append(f"{_TRAILER_STATS}: files={files} additions={additions} deletions={deletions}")
    else:
        trailers.append(f"{_TRAILER_STATS}: files={files} lines={_UNCOUNTED} against={uncounted_against.hex()}")
    if metadata:
        trailers.append(f"{_TRAILER_META}: {json.dumps(metadata, ensure_ascii=False, sort_keys=True)}")
    if skipped:
        listed = [[s.path, s.reason.value] for s in skipped]
        trailers.append(f"{_TRAILER_SKIPPED}: {json.dumps(listed, ensure_ascii=False)}")
    text = message.rstrip("\n") + "\n\n" + "\n".join(trailers) + "\n"
    person = IDENTITY + b" %d +0000\n" % int(when.timestamp())
    head = b"tree " + tree_id.hex().encode() + b"\nauthor " + person + b"committer " + person + b"encoding UTF-8\n\n"
    return BuiltCommit(head + text.encode("utf-8", "surrogateescape"))


class BuiltCommit:
    """A snapshot's commit as git stores it: written here rather than through
    dulwich's ``Commit`` (the same bytes, ``tests/test_commitread.py``), whose
    module a hook call that records a snapshot need not load (issue #51)."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def as_raw_string(self) -> bytes:
        """The commit's content (as dulwich names it), what its id is computed from."""
        return self.raw


def is_snapshot_commit(raw: bytes) -> bool:
    """Whether a commit's raw text is a snapshot's (it carries our sequence trailer)."""
    return (f"\n{_TRAILER_SEQ}: ".encode()) in raw


def parse_commit(commit: Commit | CommitFields, seq: int) -> SnapshotInfo:
    """The SnapshotInfo a snapshot commit records. Unknown trailers are ignored.
    A snapshot whose lines are not counted yet reads 0 additions and deletions
    here (see :func:`parse_snapshot`)."""
    return parse_snapshot(commit, seq)[0]


def parse_snapshot(commit: Commit | CommitFields, seq: int) -> tuple[SnapshotInfo, bytes | None]:
    """The SnapshotInfo a snapshot commit records and, if its line counts were
    deferred, the tree they are to be counted from (None: they are recorded)."""
    text = commit.message.decode("utf-8", "replace")
    message, _, block = text.rpartition("\n\n")
    fields: dict[str, str] = {}
    for line in block.splitlines():
        name, sep, value = line.partition(": ")
        if sep:
            fields[name] = value
    if _TRAILER_SEQ not in fields:  # not one of ours: show the whole message
        message, fields = text.rstrip("\n"), {}
    stats = dict(part.split("=", 1) for part in fields.get(_TRAILER_STATS, "").split() if "=" in part)
    metadata: dict[str, str] = {}
    skipped: tuple[SkippedPath, ...] = ()
    try:
        raw_meta = json.loads(fields[_TRAILER_META]) if _TRAILER_META in fields else {}
        if isinstance(raw_meta, dict):
            metadata = {str(k): str(v) for k, v in raw_meta.items()}
        raw_skipped = json.loads(fields[_TRAILER_SKIPPED]) if _TRAILER_SKIPPED in fields else []
        skipped = tuple(SkippedPath(str(p), SkipReason(r)) for p, r in raw_skipped)
    except (ValueError, TypeError):
        pass  # a damaged trailer loses its extras, never the snapshot
    against = stats.get("against", "") if stats.get("lines") == _UNCOUNTED else None
    uncounted = None
    if against is not None:
        try:
            uncounted = bytes.fromhex(against) if len(against) == 40 else None
        except ValueError:
            pass
        if uncounted is None:  # damaged: count from nothing, as a damaged newest snapshot is counted
            uncounted = EMPTY_TREE
    info = SnapshotInfo(
        id=commit.id.decode("ascii"),
        tree_id=commit.tree.decode("ascii"),
        message=message,
        label=fields.get(_TRAILER_LABEL),
        created_at=datetime.fromtimestamp(commit.commit_time, tz=timezone.utc),
        files_changed=_int(stats.get("files")),
        additions=_int(stats.get("additions")),
        deletions=_int(stats.get("deletions")),
        metadata=metadata,
        skipped=skipped,
        sequence=seq,
        session=fields.get(_TRAILER_SESSION) or None,
    )
    return info, uncounted


def _int(value: str | None) -> int:
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0
