"""Fetch's side of archives (docs/remotes.md, "Archives", "Fetch"; issue #50):
the snapshots the hosts' ``archive`` commits hold, which no ``snapshots/`` ref
names any more once a store archived them.

A fetch lists each host's ``refs/snapshotter/<name>/hosts/<host id>/archive``,
asks for the tips it has not seen (telling the server the tips it saw last
time, which it holds, as haves), then walks first parents from each new tip in
what arrived back to the tip seen last time, collecting the snapshot parents.
The tips seen are kept per remote and name in ``meta/archives/<key>`` (one
``<ref name> <tip>`` line each, then the listed snapshot ids), written after the new snapshots' refs: a
fetch killed before it walks again and adds nothing twice. The file is a
cache: missing or unreadable, the next fetch walks each chain whole, once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from snapshotter.engine.gitstore import archives
from snapshotter.engine.gitstore.store import Store
from snapshotter.errors import StoreError
from snapshotter.remote import records

_FOLDER = "archives"
_HOST_ARCHIVE = re.compile(rb"hosts/[A-Za-z0-9._-]{1,100}/archive")
"""A host id as any release writes one (16 hex digits now); any other name a
server lists there is none of ours (and never reaches the cache's lines)."""
_SHA = re.compile(r"[0-9a-f]{40}")
_LINE = re.compile(r"(refs/snapshotter/[A-Za-z0-9._/-]{1,300}) ([0-9a-f]{40})")


def archive_refs(refs: Mapping[bytes, bytes], namespace: bytes) -> dict[bytes, bytes]:
    """Of ``refs`` (a listing of ``namespace``, ``refs/snapshotter/<name>/``),
    the hosts' ``archive`` refs: ref name -> tip (hex)."""
    return {
        name: sha for name, sha in refs.items() if name.startswith(namespace) and is_archive(name[len(namespace) :])
    }


def is_archive(rest: bytes) -> bool:
    """Whether ``rest``, a ref name after ``refs/snapshotter/<name>/``, is a host's ``archive``."""
    return _HOST_ARCHIVE.fullmatch(rest) is not None


def cache_file(store: Store, shown: str, name: str) -> str:
    """Where the tips a fetch from remote ``shown``, namespace ``name``, saw are kept."""
    return records.record_path(store.meta_dir, _FOLDER, shown, name)


@dataclass(frozen=True)
class Seen:
    """What the last fetch from one remote and name saw: each host's archive
    ``tips`` (ref name -> hex tip) and the snapshot ids (hex) its listing
    ``named`` (those of them the next listing lacks were most likely archived
    since, and are haves then: the server does not send them again)."""

    tips: Mapping[bytes, bytes]
    named: frozenset[bytes]


def read_seen(path: str) -> Seen:
    """What a fetch saw last time; nothing if the cache is missing, unreadable
    or not ours (read guarded: never through a symlink, capped)."""
    text = records.read_file(path)  # guarded and capped; empty if missing or unreadable
    tips: dict[bytes, bytes] = {}
    named: set[bytes] = set()
    for line in text.splitlines():
        match = _LINE.fullmatch(line)
        if match:
            tips[match.group(1).encode()] = match.group(2).encode()
        elif _SHA.fullmatch(line):
            named.add(line.encode())
    return Seen(tips, frozenset(named))


def write_seen(path: str, seen: Seen) -> None:
    """Keep ``seen`` as what this fetch saw, replacing the cache whole."""
    lines = [f"{name.decode('ascii')} {sha.decode('ascii')}\n" for name, sha in sorted(seen.tips.items())]
    lines += [f"{sha.decode('ascii')}\n" for sha in sorted(seen.named)]
    records.write_text(path, "".join(lines))


def more_haves(
    store: Store, seen: Seen, tips: Mapping[bytes, bytes], named: set[bytes], held: set[bytes]
) -> list[bytes]:
    """Haves beyond the newest snapshots (hex), for a fetch that wants new
    archive ``tips``: the tips seen last time that moved and this store still
    holds (one upkeep dropped, unreferenced, is never claimed), and the snapshots
    in ``held`` (hex) the last listing ``named`` and this one does not. The
    server then sends nothing they reach: no archived snapshot this store has."""
    out: list[bytes] = []
    for name, sha in sorted(seen.tips.items()):
        if tips.get(name) not in (None, sha) and store.has_object(bytes.fromhex(sha.decode())):
            out.append(sha)
    return out + sorted((seen.named - named) & held)


def walk(store: Store, tips: Mapping[bytes, bytes], seen: Seen) -> set[bytes]:
    """The snapshots (raw ids) the archives from each new tip in ``tips`` back to
    the one ``seen`` for that ref name hold: first parents followed in the store
    (the pack just received). A chain that never meets its seen tip (rebuilt by
    a prune) is walked whole; one cut short by a commit missing here or not an
    archive ends there (what it held is not taken, never a wrong one)."""
    found: set[bytes] = set()
    walked: set[bytes] = set()
    for name, tip in sorted(tips.items()):
        stop = seen.tips.get(name)
        at: bytes | None = bytes.fromhex(tip.decode())
        while at is not None and at not in walked and (stop is None or at.hex().encode() != stop):
            walked.add(at)
            try:
                kind, content = store.read_raw(at)
            except (KeyError, StoreError):
                break
            archive = archives.read_archive(content) if kind == 1 else None
            if archive is None:
                break
            found.update(archive.snapshots)
            at = archive.previous
    return found
