"""One restore through an opened engine: compare, plan, save the state it replaces, apply.

A :class:`Restore` compares the scan with its target once. A whole restore
compares target to scan, the way its safety snapshot counts its changes from
the newest snapshot (often the target itself): that snapshot takes the
comparison as it is (see ``recording``), and the plan takes it reversed.
What stands in the way untracked that only the workspace's own rules hide is
tracked for the restore before anything is saved (``in_the_way``), so one
safety snapshot holds all it replaces; and nothing is saved before the plan
is checked, so a refused restore leaves no snapshot behind. The safety
snapshot counts its files but reads no blob for line counts: those are
counted when someone asks for them, not while the user waits for the restore.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace

from snapshotter.engine.collector import collector_paused
from snapshotter.engine.compare.treediff import (
    Change,
    Comparison,
    ScannedTree,
    StoredTree,
    changes,
    entry_at,
    path_in_tree,
)
from snapshotter.engine.gitstore.objects import MODE_EXEC, MODE_FILE, object_id
from snapshotter.engine.session.checkout import (
    Plan,
    apply_plan,
    make_plan,
    untracked_among,
)
from snapshotter.engine.session.engine import Engine
from snapshotter.engine.session.in_the_way import SAVEABLE, Judge
from snapshotter.engine.session.selection import normalize_selection, selection_filter
from snapshotter.engine.worktree.fsops import Workspace
from snapshotter.engine.worktree.ignore import policy_stack
from snapshotter.engine.worktree.pathnames import names_checker
from snapshotter.engine.worktree.statcache import StatCache
from snapshotter.engine.worktree.trust import reshaped
from snapshotter.errors import OVERWRITE_UNTRACKED, PathNotFound, RestoreConflict, StoreError
from snapshotter.model import RestoreResult, SkippedPath, SnapshotInfo

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # annotations only: reading the store (``log``, ``show``) does not load the walker
    from snapshotter.engine.worktree.walker import Scan

PRE_RESTORE_LABEL = "pre-restore"
_COMPARED_AT_MOST = 64 << 20
"""A kept file at most this big is read to tell whether it already holds the target's content."""


def restore(
    engine: Engine,
    target: SnapshotInfo,
    files: Sequence[str | os.PathLike[str]] | None = None,
    *,
    dry_run: bool = False,
    safety_label: str = PRE_RESTORE_LABEL,
    safety_message: str | None = None,
    current: Scan | None = None,
    overwrite_untracked: bool = False,
) -> RestoreResult:
    """Make the workspace (or ``files``) match ``target``.

    Unless ``dry_run``, the state being replaced is saved first, as one safety
    snapshot (``safety_label``, ``safety_message``) of ``current`` (if the
    caller already scanned it) and of what the restore replaces untracked. If
    applying fails part-way, the saved state is put back before the error is
    raised, so a failed restore leaves the workspace as it was.

    A file the scan does not track is replaced only where rules from inside
    the workspace alone hide it (see ``in_the_way``); the rest (the caller's
    rules, over the caller's size cap, unreadable...) is never overwritten: a
    whole restore keeps it and says so, a selective one is refused. With
    ``overwrite_untracked`` the ignored and too-large ones are replaced too.
    """
    with collector_paused():  # a plan of 10,000 files makes its tuples by the hundred thousand
        restoring = Restore(engine, target, files, overwrite_untracked)
        done = restoring.run(dry_run, safety_label, safety_message, current)
        del restoring, current  # freed before the collector is back, not gone over by its first run first
    return done


class Restore:
    """One restore of ``target`` (see :func:`restore`)."""

    def __init__(
        self,
        engine: Engine,
        target: SnapshotInfo,
        files: Sequence[str | os.PathLike[str]] | None,
        overwrite_untracked: bool,
    ) -> None:
        self.engine = engine
        self.target = target
        self.selection = normalize_selection(engine.workspace, files) if files is not None else None
        self.within = selection_filter(self.selection) if self.selection is not None else None
        self.overwrite_untracked = overwrite_untracked
        self.tree = engine.stored(target, check_names=names_checker(engine.host))

    def run(self, dry_run: bool, safety_label: str, safety_message: str | None, current: Scan | None) -> RestoreResult:
        engine = self.engine
        if self.selection is not None:
            self._check_selection(self.selection)
        if current is None:
            current = engine.scan(write=not dry_run)
        safety: SnapshotInfo | None = None
        workspace = Workspace(engine.workspace, engine.host)
        try:
            compared = self._compare(current)
            replaced, untracked = self._judge().replaced(compared.found, current, workspace)
            if replaced:  # tracked for this restore: its safety snapshot holds them
                current = engine.scan(write=not dry_run, forced=replaced)
                compared = self._compare(current)
                untracked = untracked_among(compared.found, current, workspace)
            if untracked and self.selection is not None:
                refused = OVERWRITE_UNTRACKED if not self.overwrite_untracked else None
                raise RestoreConflict(_untracked_message(untracked), refused)
            plan = make_plan(
                self.tree, ScannedTree(current), workspace, current, self.within, untracked, *compared.plan
            )
            plan = replace(plan, kept=tuple(item for item in plan.kept if not self._as_target(item, workspace)))
            if not dry_run:
                message = safety_message or f"before restoring {self.target.id[:12]}"
                recorded = engine.save_state(current, message, safety_label, save_cache=False, compared=compared.whole)
                safety = recorded.info
                workspace.close()  # writing starts from fresh checks of every folder, never from the plan's
                self._apply(plan, workspace, safety, current)
        finally:
            workspace.close()
        return _result(plan, self.target, safety, dry_run)

    def _compare(self, current: Scan) -> Compared:
        """The changes from ``current`` to the target, within the selection; a
        whole restore compares the other way round, as a safety snapshot counts
        its changes from the newest snapshot (often the target itself)."""
        if self.within is not None:
            return Compared(changes(ScannedTree(current), self.tree, self.within), None)
        folders: dict[str, tuple[int, bytes]] = {}
        back = changes(self.tree, ScannedTree(current), old_folders=folders)
        whole = Comparison(bytes.fromhex(self.target.tree_id), current, back, folders)
        return Compared([Change(c.path, c.new, c.old) for c in back], whole)

    def _judge(self) -> Judge:
        options = self.engine.options
        policy = policy_stack(options.exclude, options.use_default_excludes)
        return Judge(policy, options.caller_file_cap, self.overwrite_untracked)

    def _as_target(self, item: SkippedPath, workspace: Workspace) -> bool:
        """Whether a kept path already holds what the target has there (then the
        restore leaves nothing undone at it, and does not list it)."""
        if item.reason not in SAVEABLE:
            return False  # unreadable or special: it cannot be told
        entry = entry_at(self.tree, item.path)
        st = workspace.lstat(item.path)
        if entry is None or entry[0] not in (MODE_FILE, MODE_EXEC) or st is None or not stat.S_ISREG(st.st_mode):
            return False
        if not self.engine.host.needs_recorded_modes and bool(st.st_mode & stat.S_IXUSR) != (entry[0] == MODE_EXEC):
            return False
        if st.st_size != self.engine.store.blob_size(entry[1]) or st.st_size > _COMPARED_AT_MOST:
            return False
        try:
            content = workspace.read(item.path, False, _COMPARED_AT_MOST)
        except OSError:
            return False
        return content is not None and object_id(b"blob", content) == entry[1]

    def _check_selection(self, selection: list[str]) -> None:
        """Refuse, before anything is written, a path that is neither in the
        snapshot (as a file, symlink or folder) nor in the workspace."""
        for path in selection:
            if os.path.lexists(os.path.join(self.engine.workspace, *path.split("/"))):
                continue
            if not path_in_tree(self.tree, path):
                raise PathNotFound(f"{path} is neither in snapshot {self.target.id[:12]} nor in the workspace")

    def _apply(self, plan: Plan, workspace: Workspace, safety: SnapshotInfo, current: Scan) -> None:
        apply_or_put_back(self.engine, plan, workspace, safety, current)
        if self.selection is None:
            self.engine.store.set_base(bytes.fromhex(self.target.id))


@dataclass(frozen=True)
class Compared:
    """A restore's changes from the scan to its target, and for a whole
    restore the same comparison as its safety snapshot takes it (target to scan)."""

    found: list[Change]
    whole: Comparison | None

    @property
    def plan(self) -> tuple[list[Change], dict[str, tuple[int, bytes]] | None]:
        """``make_plan``'s ``found`` and ``folders``."""
        return self.found, dict(self.whole.base_folders) if self.whole is not None else None


def apply_or_put_back(engine: Engine, plan: Plan, workspace: Workspace, safety: SnapshotInfo, current: Scan) -> None:
    """Carry out a checked ``plan`` over the scan ``current``, whose state the
    snapshot ``safety`` holds, and save the stat cache; if writing fails
    part-way, put the workspace back as ``safety`` has it, then raise."""
    with engine.watch_paused(len(plan.writes) + len(plan.chmods) + len(plan.deletes)):
        cache = engine.cache_for_writes()
        shapes = dict(cache.shapes)
        try:
            apply_plan(
                plan,
                workspace,
                engine.store.blob_chunks,
                cache,
                engine.phase("writing"),
                engine.options.second_core,
                engine.store.blob_content,
            )
        except BaseException as failure:
            engine.drop_cache()  # records may describe half-applied writes: reload from disk
            try:
                back = engine.scan(write=False)
                undo = make_plan(
                    StoredTree(engine.store, bytes.fromhex(safety.tree_id)), ScannedTree(back), workspace, None, None
                )
                apply_plan(
                    undo,
                    workspace,
                    engine.store.blob_chunks,
                    StatCache(),
                    None,
                    engine.options.second_core,
                    engine.store.blob_content,
                )
            except BaseException:
                raise StoreError(
                    f"writing failed part-way ({failure}) and putting the workspace back failed too; "
                    f"restore {safety.id[:12]} to recover"
                ) from None
            raise
        if engine.options.trust_folder_mtimes:
            reshaped(engine.workspace, shapes, cache)  # else the next walk lists every folder written to
        engine.save_cache(cache)


def _result(plan: Plan, target: SnapshotInfo, safety: SnapshotInfo | None, dry_run: bool) -> RestoreResult:
    written = tuple(p for p, _ in plan.writes + plan.chmods)
    return RestoreResult(
        written=len(written),
        deleted=len(plan.deletes),
        unchanged=max(plan.unchanged, 0),
        written_paths=tuple(sorted(written)),
        deleted_paths=plan.deletes,
        dry_run=dry_run,
        target_id=target.id,
        safety_snapshot_id=safety.id if safety is not None else None,
        kept=plan.kept,
        skipped=plan.left_out,
    )


def _untracked_message(untracked: Sequence[SkippedPath]) -> str:
    shown = ", ".join(f"{item.path} ({item.reason.value})" for item in untracked[:5])
    more = f" and {len(untracked) - 5} more" if len(untracked) > 5 else ""
    return f"restore refused, nothing was written: untracked {shown}{more} stand where the snapshot has a file"
