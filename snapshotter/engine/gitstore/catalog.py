"""Finding snapshots: listing, resolving ids, prefixes and labels, reading their facts.

Snapshot commits never change, so each one is parsed once per process. A
snapshot whose commit cannot be read (missing, truncated, not a commit) is
damaged: listing, the newest, the base and retention pass over it (with one
warning per process), so it never blocks the others; asking for it by id
says what is wrong, and ``verify()`` reports it.

A safety snapshot's line counts are deferred (see ``linecounts``): what the
catalog reads for its own use (the newest, the base, resolving refs) never
counts them; :meth:`Catalog.counted` does, once per snapshot, through the
counter the session gives it, and keeps the result.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping

from snapshotter.engine.gitstore import trailers
from snapshotter.engine.gitstore.historyindex import NOT_INDEXED, HistoryIndex, Mark, key_of
from snapshotter.engine.gitstore.inflate import MAX_WHOLE
from snapshotter.engine.gitstore.linecounts import LineCounts
from snapshotter.engine.gitstore.objects import EMPTY_TREE, TYPE_NAMES
from snapshotter.engine.gitstore.store import DAMAGED_OBJECT, MISSING_OR_DAMAGED, Store
from snapshotter.errors import LIST_SNAPSHOTS, VERIFY, InvalidRef, SnapshotNotFound, StoreError
from snapshotter.model import SnapshotInfo

_FULL_ID = re.compile(r"[0-9a-fA-F]{40}")
_ID_PREFIX = re.compile(r"[0-9a-fA-F]{7,39}")
_RELATIVE = re.compile(r"@(?:~([0-9]*))?")
"""``@`` is the base (the snapshot the workspace was last made equal to);
``@~N`` the snapshot N places older than it in sequence order (``@~`` = ``@~1``)."""
_BACK = re.compile(r"(.+?)~([0-9]*)")
"""``REF~N``: the snapshot N places older than REF (an id, prefix or label), as git's ``~``."""

Ref = str | SnapshotInfo
LineCounter = Callable[[bytes, bytes], tuple[int, int]]
"""(tree, tree counted from) -> (additions, deletions), as a snapshot's record counts them."""
log = logging.getLogger("snapshotter")


def _newest_mark(mark: Mark | None) -> int:
    return mark[0] if mark is not None else 1 << 62  # one dropped: looked for again


class Catalog:
    """The snapshots of one store; ``count`` counts deferred line counts."""

    def __init__(self, store: Store, count: LineCounter | None = None, session: str | None = None) -> None:
        self.store = store
        self.count = count
        self.session = session
        """A label names this session's newest snapshot with it, if it has one (see :meth:`labelled`)."""
        self._infos: dict[bytes, SnapshotInfo] = {}
        self._damaged: set[bytes] = set()
        self._uncounted: dict[bytes, bytes] = {}
        """Snapshots read whose lines are not counted yet: the tree to count from."""
        self.line_counts = LineCounts(store.meta_dir)
        self.index = HistoryIndex(store, self._readable)
        """What the sessions' snapshots add up to (see ``historyindex``)."""

    def newest_first(self, below: int | None = None) -> Iterator[SnapshotInfo]:
        """Every readable snapshot, newest first (only those numbered below
        ``below``); damaged ones are passed over. Lazily: a caller that stops
        early reads only the refs and commits it took."""
        for seq, sha in self.store.iter_snapshot_ids(below):
            found = self._readable(seq, sha)
            if found is not None:
                yield found

    def oldest_first(self, above: int | None = None) -> Iterator[SnapshotInfo]:
        """Every readable snapshot, oldest first (only those numbered above ``above``), lazily."""
        for seq, sha in self.store.iter_oldest_first(above):
            found = self._readable(seq, sha)
            if found is not None:
                yield found

    def since(self, start: int) -> list[SnapshotInfo]:
        """The readable snapshots numbered above ``start``, oldest first: reads only those."""
        return list(self.newest_first_down_to(start))[::-1]

    def newest_first_down_to(self, start: int) -> Iterator[SnapshotInfo]:
        """The readable snapshots numbered above ``start``, newest first."""
        for info in self.newest_first():
            if info.sequence <= start:
                return
            yield info

    def _readable(self, seq: int, sha: bytes) -> SnapshotInfo | None:
        try:
            return self.info(seq, sha)
        except StoreError as exc:
            if sha not in self._damaged:
                self._damaged.add(sha)
                log.warning("snapshotter: passing over a damaged snapshot: %s", exc)
            return None

    def latest(self) -> SnapshotInfo | None:
        return next(self.newest_first(), None)

    def latest_tree(self) -> bytes:
        latest = self.latest()
        return bytes.fromhex(latest.tree_id) if latest is not None else EMPTY_TREE

    def base(self) -> SnapshotInfo | None:
        """The snapshot the workspace was last made equal to (by a snapshot, a
        restore, undo or redo); the newest one if none is recorded or it is gone."""
        found = self._base_position()
        base = self._readable(*found) if found is not None else None
        return base if base is not None or found is None else self.latest()

    def base_tree(self) -> bytes:
        base = self.base()
        return bytes.fromhex(base.tree_id) if base is not None else EMPTY_TREE

    def _base_position(self) -> tuple[int, bytes] | None:
        """(seq, id) of the base if it is a snapshot here, else of the newest; None: none."""
        sha = self.store.base()
        seq = self.store.seq_of(sha) if sha is not None else None
        if sha is not None and seq is not None:
            return seq, sha
        return next(self.store.iter_snapshot_ids(), None)

    def select(
        self,
        limit: int | None,
        label: str | None = None,
        metadata: Mapping[str, str] | None = None,
        session: str | None = None,
        below: int | None = None,
    ) -> list[SnapshotInfo]:
        """Newest first, keeping those with ``label``, every ``metadata`` pair, and
        taken in ``session`` (None: any session; ``""``: the anonymous one);
        ``below``: only snapshots numbered below it (the next page of a log)."""
        out: list[SnapshotInfo] = []
        for info in self.newest_first(below):
            if limit is not None and len(out) >= limit:
                break
            if label is not None and info.label != label:
                continue
            if metadata and any(info.metadata.get(k) != v for k, v in metadata.items()):
                continue
            if session is not None and (info.session or "") != session:
                continue
            out.append(info)
        return out

    def info(self, seq: int, sha: bytes) -> SnapshotInfo:
        info = self._infos.get(sha)
        if info is None:
            try:
                commit = self.store.read_commit(sha)
            except KeyError:
                raise StoreError(f"snapshot {seq} points at missing commit {sha.hex()}", VERIFY) from None
            except TypeError:
                raise StoreError(f"snapshot {seq} does not point at a commit", VERIFY) from None
            except DAMAGED_OBJECT as exc:
                raise StoreError(f"snapshot {seq} ({sha.hex()[:12]}) is damaged ({exc})", VERIFY) from None
            info, against = trailers.parse_snapshot(commit, seq)
            if against is not None:
                self._uncounted[sha] = against
            self._infos[sha] = info
        return info

    def counted(self, info: SnapshotInfo) -> SnapshotInfo:
        """``info`` with its line counts, counted now if they were deferred and
        nobody counted them yet (then kept: a snapshot is counted once)."""
        sha = bytes.fromhex(info.id)
        against = self._uncounted.get(sha)
        if against is None:
            return info
        found = self.line_counts.get(sha)
        if found is None:
            if self.count is None:
                return info
            try:
                found = self.count(bytes.fromhex(info.tree_id), against)
            except StoreError as exc:
                log.warning("snapshotter: cannot count the lines of snapshot %s: %s", info.id[:12], exc)
                return info
            self.line_counts.keep(sha, *found)
        counted = dataclasses.replace(info, additions=found[0], deletions=found[1])
        self._infos[sha] = counted
        del self._uncounted[sha]
        return counted

    def counted_all(self, infos: Iterable[SnapshotInfo]) -> list[SnapshotInfo]:
        return [self.counted(info) for info in infos]

    def settle(self) -> None:
        """Before a compaction: count every kept snapshot whose lines are
        uncounted and whose tree to count from no kept snapshot holds (the
        compaction may delete it), then forget the counts of snapshots gone."""
        kept = list(self.newest_first())
        trees = {info.tree_id for info in kept}
        orphans = [
            info
            for info in kept
            if (against := self._uncounted.get(bytes.fromhex(info.id))) is not None
            and against != EMPTY_TREE
            and against.hex() not in trees
        ]
        for info in orphans:
            self.counted(info)
        if orphans:
            self.line_counts.sync()  # on disk before the trees they come from may go
        self.line_counts.keep_only(bytes.fromhex(info.id) for info in kept)

    def get(self, ref: Ref) -> SnapshotInfo:
        return self.info(*self.resolve(ref))

    def resolve(self, ref: Ref) -> tuple[int, bytes]:
        """(seq, commit id) for a full id, a unique id prefix of 7+ hex digits, a
        label, ``@``, or any of them followed by ``~N`` (N places older, in
        sequence order; a label that is spelled so wins)."""
        if isinstance(ref, SnapshotInfo):
            ref = ref.id
        if not isinstance(ref, str):
            raise InvalidRef(f"a snapshot ref must be a string, not {type(ref).__name__}")
        text = ref.strip()
        if not text or len(text) > 256 or any(ch < " " for ch in text):
            raise InvalidRef(f"malformed snapshot ref {ref!r}; pass an id, an id prefix or a label")
        relative = _RELATIVE.fullmatch(text)
        if relative is not None:
            return self._relative(text, int(relative.group(1) or 1) if relative.group(1) is not None else 0)
        back = _BACK.fullmatch(text)
        if back is not None and self.labelled(text) is None:
            return self._older(text, self.resolve(back.group(1)), int(back.group(2) or 1))
        if _FULL_ID.fullmatch(text):
            sha = bytes.fromhex(text)
            seq = self.store.seq_of(sha)
            if seq is not None:
                return seq, sha
            try:
                type_num, _ = self.store.object_header(sha)  # never inflated whole: it may be a big blob
                content = self.store.read_raw(sha)[1] if type_num == 1 else b""
            except MISSING_OR_DAMAGED + (StoreError,):
                # a damaged commit does not say its number: a ref naming it is looked for (only then)
                named = next((seq for seq, found in self.store.iter_snapshot_ids() if found == sha), None)
                if named is not None:
                    return named, sha
                raise SnapshotNotFound(f"no snapshot {text}", LIST_SNAPSHOTS) from None
            if type_num == 1 and trailers.is_snapshot_commit(content):  # one of ours, whose ref is gone
                raise SnapshotNotFound(
                    f"snapshot {text[:12]} was dropped (by retention, prune or another process)", LIST_SNAPSHOTS
                )
            kind = TYPE_NAMES.get(type_num, b"object").decode()
            raise InvalidRef(f"{text} is a {kind}, not a snapshot; pass a snapshot id or label")
        if _ID_PREFIX.fullmatch(text):
            hits = [(seq, sha) for sha in sorted(self.store.ids_starting_with(text)) if (seq := self.store.seq_of(sha))]
            if len(hits) > 1:
                raise InvalidRef(f"id prefix {text} is ambiguous; give more digits")
            if hits:
                return hits[0]
            raise SnapshotNotFound(f"no snapshot id starts with {text}", LIST_SNAPSHOTS)
        found = self.labelled(text)
        if found is not None:
            return found.sequence, bytes.fromhex(found.id)
        raise SnapshotNotFound(f"no snapshot labelled {text!r}", LIST_SNAPSHOTS)

    def labelled(self, label: str) -> SnapshotInfo | None:
        """The newest snapshot carrying ``label`` taken in this catalog's session,
        else the newest carrying it in any session; None if none does. Sessions
        sharing a folder number their turns alike: ``pre-turn:3`` is one's own.
        A label other than a turn's, a call's or an abandoned redo's is found
        through the history index; those are looked for from the newest."""
        if not label.startswith(NOT_INDEXED):
            held = self.index.current().labels.get(label)
            if held is None:
                return None  # no snapshot holds it
            own = key_of(self.session)
            mark = held[own] if own in held else max(held.values(), key=_newest_mark, default=None)
            if mark is not None and (own in held or None not in held.values()):
                seq, sha = mark
                if self.store.snapshot_id(seq) == bytes.fromhex(sha):
                    found = self._readable(seq, bytes.fromhex(sha))
                    if found is not None:
                        return found
        return self._scan_for(label)

    def _scan_for(self, label: str) -> SnapshotInfo | None:
        newest = None
        for info in self.newest_first():
            if info.label == label:
                if info.session == self.session:
                    return info
                newest = newest or info
        return newest

    def _relative(self, text: str, back: int) -> tuple[int, bytes]:
        base = self._base_position()
        if base is None:
            raise SnapshotNotFound(f"{text} names no snapshot: there are none yet")
        return self._older(text, base, back, "the base")

    def _older(self, text: str, start: tuple[int, bytes], back: int, named: str = "it") -> tuple[int, bytes]:
        """The snapshot ``back`` places older than ``start`` (seq, id) in sequence
        order: reads the ``back`` refs below it, no more."""
        if back == 0:
            return start
        older = 0
        for pair in self.store.iter_snapshot_ids(start[0]):
            older += 1
            if older == back:
                return pair
        raise SnapshotNotFound(f"{text} goes back past the oldest snapshot ({older} older than {named})")

    def read_blob(self, sha: bytes, limit: int = MAX_WHOLE) -> bytes:
        """A blob's content; ``ObjectTooLarge`` if it is larger than ``limit``."""
        try:
            type_num, content = self.store.read_raw(sha, limit)
        except KeyError:
            raise StoreError(f"blob {sha.hex()} is missing from the store", VERIFY) from None
        if type_num != 3:
            raise StoreError(f"object {sha.hex()} should be a blob; the store is damaged")
        return content
