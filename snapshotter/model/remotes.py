"""What pushes and fetches did."""

from __future__ import annotations

from dataclasses import dataclass

from snapshotter.model.snapshots import SnapshotInfo


@dataclass(frozen=True)
class PushResult:
    """What a push sent to a remote, under its namespace ``refs/snapshotter/<name>/``."""

    remote: str
    """The remote, without credentials."""
    name: str
    snapshots_sent: int
    """Snapshots the remote did not hold before."""
    objects_sent: int
    """Git objects sent: only those the remote lacked."""
    refs_updated: int
    pruned: int = 0
    """Remote snapshot refs deleted because retention dropped them here (``prune=True``)."""
    skipped: tuple[SkippedSnapshot, ...] = ()
    """Snapshots left out, and why (``skip_refused=True``); without it, such a snapshot refuses the push."""
    bytes_sent: int = 0
    """Bytes of objects sent (a big file's new version goes as a delta of one the remote holds)."""


@dataclass(frozen=True)
class SkippedSnapshot:
    """A snapshot a push did not send: the first ``path`` that kept it back, and
    the ``reason``: ``"excluded"`` (a path the excludes keep out of snapshots
    now, recorded before they did) or ``"too large"`` (a file over the push limit)."""

    id: str
    path: str
    reason: str


@dataclass(frozen=True)
class FetchResult:
    """What a fetch brought from a remote namespace."""

    remote: str
    name: str
    snapshots: tuple[SnapshotInfo, ...]
    """The snapshots new here, oldest first, numbered after the ones already here."""


@dataclass(frozen=True)
class RemoteWorkspace:
    """One namespace on a remote: a workspace's snapshots, from one or more stores."""

    name: str
    snapshots: int
    hosts: int
    """How many stores (machines) pushed their state there."""
    archives: int = 0
    """How many of those stores hold an archive there (``hosts/<id>/archive``):
    the snapshots archived are not in ``snapshots``, which counts the snapshot
    refs listed (counting them would mean fetching the archives)."""
