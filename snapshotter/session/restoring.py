"""One restore through an opened engine: save the state it replaces, plan, apply.

A :class:`Restore` owns what it carries from its safety snapshot to its
writes: the safety snapshot's comparison with the target (its plan is that
comparison reversed, when the target was the newest snapshot). It lives as
long as the restore, and no longer. The safety snapshot counts its files but
reads no blob for line counts: those are counted when someone asks for them
(see ``recording``), not while the user waits for the restore.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import replace

from snapshotter.collector import collector_paused
from snapshotter.compare.treediff import Change, Comparison, ScannedTree, StoredTree, changes, entry_at, path_in_tree
from snapshotter.errors import OVERWRITE_UNTRACKED, PathNotFound, RestoreConflict, StoreError
from snapshotter.gitstore.objects import MODE_EXEC, MODE_FILE, object_id
from snapshotter.model import RestoreResult, SkippedPath, SnapshotInfo
from snapshotter.session.checkout import (
    SAVEABLE,
    Plan,
    apply_plan,
    make_plan,
    normalize_selection,
    selection_filter,
    untracked_among,
    untracked_in_the_way,
)
from snapshotter.session.engine import Engine
from snapshotter.session.recording import Recorded
from snapshotter.session.rules_after import RulesAfter, touches_rules, tracked_after
from snapshotter.worktree.fsops import Workspace
from snapshotter.worktree.ignore import root_stack
from snapshotter.worktree.pathnames import names_checker
from snapshotter.worktree.statcache import StatCache
from snapshotter.worktree.walker import Scan

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
    current: Scan | None = None,
    overwrite_untracked: bool = False,
) -> RestoreResult:
    """Make the workspace (or ``files``) match ``target``.

    Unless ``dry_run``, the state being replaced is saved first (``current``,
    if the caller already scanned and saved it). If applying fails part-way,
    the saved state is put back before the error is raised, so a failed
    restore leaves the workspace as it was.

    A file the scan does not track (ignored, too large, unreadable...) is
    never overwritten: a whole restore keeps it and says so, a selective
    one is refused. With ``overwrite_untracked`` the ignored and too-large
    ones are tracked for this restore, so the safety snapshot holds their
    content before they are replaced.
    """
    with collector_paused():  # a plan of 10,000 files makes its tuples by the hundred thousand
        return Restore(engine, target, files, overwrite_untracked).run(dry_run, safety_label, current)


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

    def run(self, dry_run: bool, safety_label: str, current: Scan | None) -> RestoreResult:
        engine = self.engine
        if self.selection is not None:
            self._check_selection(self.selection)
        if current is None:
            current = engine.scan(write=not dry_run)
        safety: SnapshotInfo | None = None
        workspace = Workspace(engine.workspace, engine.host)
        try:
            current, untracked, found = self._untracked(current, workspace, dry_run)
            compared: Comparison | None = None
            if not dry_run:
                message = f"before restoring {self.target.id[:12]}"
                recorded = engine.save_state(current, message, safety_label, save_cache=False, base_side=self.tree)
                if untracked is None:  # a whole restore: what is in the way comes from the safety's comparison
                    after = self._after_safety(current, workspace, recorded, message, safety_label)
                    current, untracked, found, recorded = after
                safety, compared = recorded.info, recorded.compared
            plan = make_plan(
                self.tree, ScannedTree(current), workspace, current, self.within, compared, untracked, found
            )
            plan = replace(plan, kept=tuple(item for item in plan.kept if not self._as_target(item, workspace)))
            workspace.close()  # writing starts from fresh checks of every folder, never from the plan's
            if safety is not None:
                self._apply(plan, workspace, safety, current)
        finally:
            workspace.close()
        return _result(plan, self.target, safety, dry_run)

    def _untracked(
        self, current: Scan, workspace: Workspace, dry_run: bool
    ) -> tuple[Scan, list[SkippedPath] | None, list[Change] | None]:
        """The scan to restore over, the untracked paths in the target's way and
        the comparison that found them; a whole restore (not a dry run) finds
        them after its safety snapshot, from the comparison that one makes.
        Refuses a selective restore over one."""
        if self.selection is None and not self.overwrite_untracked and not dry_run:
            return current, None, None
        untracked, found = untracked_in_the_way(self.tree, current, workspace, self.within)
        forced = self._tracked_after(untracked, found, current, workspace)
        if untracked and self.overwrite_untracked:
            forced.extend(item.path for item in untracked if item.reason in SAVEABLE)
        if forced:
            current = self.engine.scan(write=not dry_run, forced=forced)
            untracked = [item for item in untracked if item.path not in set(forced)]
            return self._refused_over(current, untracked, None)
        return self._refused_over(current, untracked, found)

    def _refused_over(
        self, current: Scan, untracked: list[SkippedPath], found: list[Change] | None
    ) -> tuple[Scan, list[SkippedPath], list[Change] | None]:
        if untracked and self.selection is not None:
            raise RestoreConflict(
                _untracked_message(untracked), OVERWRITE_UNTRACKED if not self.overwrite_untracked else None
            )
        return current, untracked, found

    def _after_safety(
        self, current: Scan, workspace: Workspace, recorded: Recorded, message: str, label: str
    ) -> tuple[Scan, list[SkippedPath] | None, list[Change] | None, Recorded]:
        """A whole restore's untracked paths in the way, once its safety snapshot
        is saved. If the rules the restore writes back track some of them, the
        state is saved again with those tracked too (see ``rules_after``)."""
        if recorded.compared is not None:
            found = [Change(c.path, c.new, c.old) for c in recorded.compared.found]
        else:  # the state was held already: nothing was compared on the way
            found = changes(ScannedTree(current), self.tree)
        if not touches_rules(found):
            return current, None, None if recorded.compared is not None else found, recorded
        untracked = untracked_among(found, current, workspace)
        forced = self._tracked_after(untracked, found, current, workspace)
        if not forced:
            return current, untracked, None if recorded.compared is not None else found, recorded
        current = self.engine.scan(write=True, forced=forced)
        recorded = self.engine.save_state(current, message, label, save_cache=False, base_side=self.tree)
        return current, [item for item in untracked if item.path not in set(forced)], None, recorded

    def _tracked_after(
        self, untracked: list[SkippedPath], found: list[Change], current: Scan, workspace: Workspace
    ) -> list[str]:
        """The ignored paths in the way that the rules the restore writes back track."""
        if not untracked or not touches_rules(found):
            return []  # the same .gitignore files before and after: the same verdicts
        engine, options = self.engine, self.engine.options
        base = root_stack(engine.workspace, options.exclude, options.use_default_excludes, engine.repository)
        rules = RulesAfter(engine.workspace, base, self.tree, engine.store.blob_chunks, current, self.within)

        def size_of(path: str) -> int | None:
            st = workspace.lstat(path)
            return st.st_size if st is not None and (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)) else None

        return tracked_after(untracked, rules, options.max_new_file_size, size_of)

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


def apply_or_put_back(engine: Engine, plan: Plan, workspace: Workspace, safety: SnapshotInfo, current: Scan) -> None:
    """Carry out a checked ``plan`` over the scan ``current``, whose state the
    snapshot ``safety`` holds, and save the stat cache; if writing fails
    part-way, put the workspace back as ``safety`` has it, then raise."""
    with engine.watch_paused(len(plan.writes) + len(plan.chmods) + len(plan.deletes)):
        cache = engine.cache_for_writes()
        try:
            apply_plan(
                plan, workspace, engine.store.blob_chunks, cache, engine.phase("writing"), engine.options.second_core
            )
        except BaseException as failure:
            engine.drop_cache()  # records may describe half-applied writes: reload from disk
            try:
                back = engine.scan(write=False)
                undo = make_plan(
                    StoredTree(engine.store, bytes.fromhex(safety.tree_id)), ScannedTree(back), workspace, None, None
                )
                apply_plan(undo, workspace, engine.store.blob_chunks, StatCache(), None, engine.options.second_core)
            except BaseException:
                raise StoreError(
                    f"writing failed part-way ({failure}) and putting the workspace back failed too; "
                    f"restore {safety.id[:12]} to recover"
                ) from None
            raise
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
