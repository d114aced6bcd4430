"""Model-based randomized testing: random workspace edits interleaved with
snapshot, restore (full and selective), diff, checkpoint, undo, redo, prune
and gc, checked against a plain-Python model of what each must do.

The model knows every file in the workspace (ignored ones too), which of them
the ignore rules track, what each snapshot holds, and the undo and redo
stacks. After every step the real folder must equal the model exactly
(content, exec bit, symlink target, folders). The restore rule (SECURITY.md):
a restore brings back every path the target holds, saving first what it
replaces untracked, unless a rule from outside the agent's reach hides it
(here the default excludes, for ``s.key``); the workspace's own rules (its
``.gitignore`` and ``.git/info/exclude``, which a restore never writes) keep
nothing. A restore must refuse exactly when such a kept file is in the way,
and then change nothing and save nothing.

CI runs a bounded number of examples; ``python -m pytest tests/test_model.py
--long`` runs thousands of steps.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from snapshotter import PathNotFound, RestoreConflict, Retention, Snapshotter

Entry = tuple[str, bytes, bool]
"""(kind "file" or "link", content or link target, executable)."""
Files = dict[str, Entry]

FOLDERS = ["", "d", "d/e", "sp ace", "n"]
NAMES = ["a", "x.log", "keep.log", "n", "n.md", "ünï cödé.md", "s.key"]
"""``n.md`` sits beside the folders ``n`` and ``d/n`` (git's tree order); ``s.key`` is a
default exclude (``*.key``): never tracked, never replaced by a restore."""
PATHS = sorted({(folder + "/" if folder else "") + name for folder in FOLDERS for name in NAMES})
CONTENTS = [b"", b"one line\n", b"two\nlines\n", b"no newline", b"bin\0ary\n", b"one line\nchanged\n"]
TARGETS = ["a", "d/b.txt", "../outside", "missing/target", "ü"]
IGNORE_VARIANTS = {
    "none": None,
    "logs": b"*.log\n",
    "logs-but-keep": b"*.log\n!keep.log\n",
    "folder-d": b"d/\n",
}


def verdict(path: str, is_dir: bool, rules: bytes | None) -> bool | None:
    """What one source of our small set of rules says of a path: ignored, re-included, or nothing."""
    name = path.rpartition("/")[2]
    if rules == b"d/\n":
        return True if is_dir and name == "d" else None
    if rules == b"*.log\n!keep.log\n" and name == "keep.log":
        return False
    if rules in (b"*.log\n", b"*.log\n!keep.log\n") and name.endswith(".log"):
        return True
    return None


def ignored(path: str, sources: list[bytes | None]) -> bool:
    """What git decides for ``sources`` (the most specific first: the ``.gitignore``,
    then ``info/exclude``): a folder on the way that is ignored is never entered;
    else the first source with a verdict decides. The git-oracle tests prove the
    engine agrees with git."""

    def judged(at: str, is_dir: bool) -> bool:
        return next((v for v in (verdict(at, is_dir, rules) for rules in sources) if v is not None), False)

    return any(judged(folder, True) for folder in parents(path)) or judged(path, False)


def by_policy(path: str) -> bool:
    """The default excludes, as far as the model's names meet them: the caller's rule."""
    return path.endswith(".key")


def tracked(files: Files, info_exclude: bytes | None = None) -> Files:
    gitignore = files.get(".gitignore")
    rules = gitignore[1] if gitignore is not None and gitignore[0] == "file" else None
    return {p: e for p, e in files.items() if not by_policy(p) and not ignored(p, [rules, info_exclude])}


def parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def observe(root: Path) -> tuple[Files, set[str]]:
    """Every file, symlink and folder below ``root``."""
    files: Files = {}
    folders: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        if not prefix:
            dirnames[:] = [name for name in dirnames if name != ".git"]  # info/exclude: no restore writes it
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                files[prefix + name] = ("link", os.fsencode(os.readlink(full)), False)
                dirnames.remove(name)
            else:
                folders.add(prefix + name)
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                files[prefix + name] = ("link", os.fsencode(os.readlink(full)), False)
            else:
                st_mode = os.lstat(full).st_mode
                files[prefix + name] = ("file", Path(full).read_bytes(), bool(st_mode & stat.S_IXUSR))
    return files, folders


def _lines(content: bytes) -> int:
    return content.count(b"\n") + (1 if content and not content.endswith(b"\n") else 0)


class WorkspaceModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="snapshotter-model-"))
        self.ws = self.tmp / "ws"
        (self.ws / ".git" / "info").mkdir(parents=True)  # a repository without commits: its info/exclude applies
        self.info_exclude: bytes | None = None
        self.snap = Snapshotter(
            self.ws,
            home=self.tmp / "home",
            retention=Retention(max_snapshots=5, max_age=None, max_store_bytes=None),
        )
        self.files: Files = {}
        self.folders: set[str] = set()
        self.snapshots: dict[str, Files] = {}
        self.order: list[str] = []
        self.trees: dict[str, str] = {}
        self.undo_stack: list[tuple[str, Files]] = []
        self.redo_stack: list[tuple[str, Files]] = []
        self.outcomes: dict[str, int] = {}

    def teardown(self) -> None:
        try:
            verified = self.snap.verify(full=True)
            assert verified.ok, verified.problems
        finally:
            self.snap.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------

    def _blocked(self, path: str) -> bool:
        """A parent of ``path`` is a file or symlink, or ``path`` is a folder."""
        return any(p in self.files for p in parents(path)) or path in self.folders

    def _put(self, path: str, entry: Entry) -> None:
        full = self.ws / path
        full.parent.mkdir(parents=True, exist_ok=True)
        self.folders.update(parents(path))
        if full.is_symlink() or full.exists():
            full.unlink()
        kind, data, executable = entry
        if kind == "link":
            os.symlink(os.fsdecode(data), full)
        else:
            full.write_bytes(data)
            full.chmod(0o755 if executable else 0o644)
        self.files[path] = entry

    def _note(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def _sync_retention(self) -> None:
        """Retention may drop snapshots after any mutating call, never a protected one."""
        infos = self.snap.list(limit=None)
        listed = [info.id for info in infos]
        protected = {i for i, _ in self.undo_stack} | {i for i, _ in self.redo_stack}
        for sha in list(self.snapshots):
            if sha not in listed:
                assert sha not in protected, f"retention dropped protected snapshot {sha[:12]}"
                # The newest state is never lost; its snapshot may go when a newer one holds the same
                # state (an abandoned redo point is kept as a relabelled copy, duplicates go first).
                assert sha != self.order[-1] or self.trees[sha] in {info.tree_id for info in infos}, (
                    "retention dropped the newest snapshot"
                )
                del self.snapshots[sha]
                self.order.remove(sha)

    def _tracked(self, files: Files) -> Files:
        return tracked(files, self.info_exclude)

    def _nothing_saved(self) -> None:
        """A refused restore, undo or redo saves nothing: its plan is checked before its safety snapshot."""
        newest = self.snap.list(limit=1)
        assert not newest or newest[0].id in self.snapshots, "a refused restore left a snapshot behind"

    def _replaced(self, target: Files, within: Callable[[str], bool]) -> set[str]:
        """The untracked files a restore of ``target`` (the paths ``within`` the
        selection) replaces, saving them first: those only the workspace's own
        rules hide, at a path the target holds, where it has a folder on the
        way, or below a folder where it has a file."""
        current = self._tracked(self.files)
        untracked = {p for p in self.files if p not in current and not by_policy(p)}
        out: set[str] = set()
        for path in filter(within, target):
            out.update(p for p in [path, *parents(path)] if p in untracked)
            out.update(p for p in untracked if p.startswith(path + "/"))
        return out

    def _record(self, sha: str, state: Files) -> None:
        if sha not in self.snapshots:
            self.order.append(sha)
        self.snapshots[sha] = state
        self.trees[sha] = self.snap.get(sha).tree_id

    # -- workspace edits -----------------------------------------------------------------

    @rule(
        path=st.sampled_from(PATHS),
        how=st.sampled_from(["write", "append", "truncate", "chmod"]),
        content=st.sampled_from(CONTENTS),
        executable=st.booleans(),
    )
    def edit_file(self, path: str, how: str, content: bytes, executable: bool) -> None:
        """Create or rewrite a file, append to it, cut it in half, or flip its exec bit."""
        entry = self.files.get(path)
        if how == "write":
            if not self._blocked(path):
                self._put(path, ("file", content, executable))
        elif entry is not None and entry[0] == "file":
            if how == "append":
                self._put(path, ("file", entry[1] + (content or b"\0"), entry[2]))
            elif how == "truncate":
                self._put(path, ("file", entry[1][: len(entry[1]) // 2], entry[2]))
            else:
                (self.ws / path).chmod(0o755 if executable else 0o644)
                self.files[path] = ("file", entry[1], executable)

    @rule(path=st.sampled_from(PATHS))
    def delete(self, path: str) -> None:
        if path in self.files:
            (self.ws / path).unlink()
            del self.files[path]

    @rule(path=st.sampled_from(PATHS), link_to=st.sampled_from(TARGETS))
    def symlink(self, path: str, link_to: str) -> None:
        if not self._blocked(path):
            self._put(path, ("link", link_to.encode(), False))

    @rule(
        folder=st.sampled_from(["n", "d/n"]), inner=st.sampled_from(["a", "x.log"]), content=st.sampled_from(CONTENTS)
    )
    def swap_file_and_folder(self, folder: str, inner: str, content: bytes) -> None:
        """``n`` as a file becomes a folder holding a file (maybe an ignored one), and back."""
        if any(p in self.files for p in parents(folder)):
            return
        full = self.ws / folder
        if folder in self.folders:
            shutil.rmtree(full)
            self.files = {p: e for p, e in self.files.items() if not p.startswith(folder + "/")}
            self.folders = {f for f in self.folders if f != folder and not f.startswith(folder + "/")}
            self._put(folder, ("file", content, False))
        else:
            if folder in self.files:
                full.unlink()
                del self.files[folder]
            self._put(folder + "/" + inner, ("file", content, False))

    @rule(source=st.sampled_from(PATHS), dest=st.sampled_from(PATHS))
    def rename(self, source: str, dest: str) -> None:
        if source in self.files and source != dest and not self._blocked(dest) and not dest.startswith(source + "/"):
            (self.ws / dest).parent.mkdir(parents=True, exist_ok=True)
            self.folders.update(parents(dest))
            os.replace(self.ws / source, self.ws / dest)
            self.files[dest] = self.files.pop(source)

    @rule(variant=st.sampled_from(sorted(IGNORE_VARIANTS)))
    def edit_gitignore(self, variant: str) -> None:
        rules = IGNORE_VARIANTS[variant]
        if rules is None:
            if ".gitignore" in self.files:
                (self.ws / ".gitignore").unlink()
                del self.files[".gitignore"]
        else:
            self._put(".gitignore", ("file", rules, False))

    @rule(variant=st.sampled_from(sorted(IGNORE_VARIANTS)))
    def edit_info_exclude(self, variant: str) -> None:
        """The same rules in ``.git/info/exclude``, which no restore writes back."""
        rules = IGNORE_VARIANTS[variant]
        path = self.ws / ".git" / "info" / "exclude"
        if rules is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(rules)
        self.info_exclude = rules

    @rule(folder=st.sampled_from(FOLDERS[1:]))
    def empty_a_folder(self, folder: str) -> None:
        """Delete every file below ``folder``, keeping the folders."""
        for path in [p for p in self.files if p.startswith(folder + "/")]:
            (self.ws / path).unlink()
            del self.files[path]

    @rule(folder=st.sampled_from(FOLDERS[1:]))
    def make_empty_folder(self, folder: str) -> None:
        if not any(p in self.files for p in [*parents(folder), folder]):
            (self.ws / folder).mkdir(parents=True, exist_ok=True)
            self.folders.update([*parents(folder), folder])

    # -- snapshotter operations ------------------------------------------------------------

    @rule()
    def snapshot(self) -> None:
        info = self.snap.snapshot()
        self._record(info.id, self._tracked(self.files))
        assert info.skipped == ()
        self._sync_retention()

    def _predict_full_restore(self, target: Files) -> tuple[bool, Files, set[str], Files]:
        """(refused, files after, folders after, the state its safety snapshot
        holds) for restoring ``target`` in full. What it replaces untracked is
        tracked for it: saved first, then replaced (SECURITY.md)."""
        current = self._tracked(self.files)
        replaced = self._replaced(target, lambda path: True)
        saved = {**current, **{p: self.files[p] for p in replaced}}
        untracked = {p for p in self.files if p not in saved}
        deleted = {p for p in saved if p not in target}
        for path in target:
            if any(q in untracked for q in parents(path)):
                return True, self.files, self.folders, saved
            if path in self.folders and any(u.startswith(path + "/") for u in untracked):
                return True, self.files, self.folders, saved
        files = {p: e for p, e in self.files.items() if p not in deleted}
        folders = set(self.folders)
        for folder in sorted({a for p in deleted for a in parents(p)}, key=lambda f: f.count("/"), reverse=True):
            below = folder + "/"
            if not any(p.startswith(below) for p in files) and not any(f.startswith(below) for f in folders):
                folders.discard(folder)
        for path in target:  # a folder in the way of a file holds nothing left: it goes
            if path in folders:
                folders = {f for f in folders if f != path and not f.startswith(path + "/")}
        files.update({p: e for p, e in target.items() if p not in untracked})  # untracked in the way: kept
        folders.update(a for p in target for a in parents(p))
        return False, files, folders, saved

    def _restore_full(self, sha: str, state: Files) -> bool:
        refused, files, folders, saved = self._predict_full_restore(state)
        before = observe(self.ws)
        try:
            result = self.snap.restore(sha)
        except RestoreConflict:
            assert refused, "restore refused although nothing untracked was in the way"
            assert observe(self.ws) == before, "a refused restore changed the workspace"
            self._nothing_saved()
            self._note("restore refused")
            return False
        assert not refused, "restore went ahead over an untracked file in the way"
        self.files, self.folders = files, folders
        if result.safety_snapshot_id is not None:
            self._record(result.safety_snapshot_id, saved)
            self._undo_point(result.safety_snapshot_id, saved, result)
        self._note("restore done")
        return True

    def _undo_point(self, sha: str, state: Files, result: object) -> None:
        """A restore that changed something makes the state it replaced an undo point (undo takes it back)."""
        if getattr(result, "written", 0) or getattr(result, "deleted", 0):
            self.undo_stack.append((sha, state))
            self.redo_stack.clear()

    @rule(pick=st.integers(min_value=0))
    @precondition(lambda self: bool(self.snapshots))
    def restore_full(self, pick: int) -> None:
        sha = self.order[pick % len(self.order)]
        self._restore_full(sha, self.snapshots[sha])
        self._sync_retention()

    @rule(pick=st.integers(min_value=0), chosen=st.lists(st.sampled_from(PATHS + FOLDERS[1:]), min_size=1, max_size=3))
    @precondition(lambda self: bool(self.snapshots))
    def restore_selected(self, pick: int, chosen: list[str]) -> None:
        sha = self.order[pick % len(self.order)]
        target = self.snapshots[sha]
        current = self._tracked(self.files)
        before_files, before_folders = observe(self.ws)

        def within(path: str) -> bool:
            return any(path == c or path.startswith(c + "/") for c in chosen)

        in_neither = [
            c
            for c in chosen
            if not os.path.lexists(self.ws / c) and not any(t == c or t.startswith(c + "/") for t in target)
        ]
        if in_neither:
            with pytest.raises(PathNotFound):
                self.snap.restore(sha, chosen)
            assert observe(self.ws) == (before_files, before_folders), "a refused restore changed the workspace"
            self._note("selective: a path in neither")
            return
        replaced = self._replaced(target, within)
        saved = {**current, **{p: before_files[p] for p in replaced}}
        kept_in_the_way = any(
            by_policy(p) and p.startswith(t + "/") for t in target if within(t) for p in before_files
        )  # a default-excluded file below a folder where the target has a file: never deleted
        try:
            result = self.snap.restore(sha, chosen)
        except RestoreConflict:
            assert kept_in_the_way, "a selective restore refused though only the workspace's rules hid what was there"
            assert observe(self.ws) == (before_files, before_folders), "a refused restore changed the workspace"
            self._nothing_saved()
            self._note("selective refused")
            self._sync_retention()
            return
        assert not kept_in_the_way, "a selective restore went ahead over a file the default excludes keep"
        after_files, after_folders = observe(self.ws)
        for path in set(target) | set(before_files) | set(after_files):
            if within(path):
                if path in target:
                    assert after_files.get(path) == target[path], f"{path} not restored"
                elif path in saved:
                    assert path not in after_files, f"{path} should have been removed"
                else:
                    assert after_files.get(path) == before_files.get(path), f"untracked {path} touched"
            elif path in replaced:
                assert path not in after_files, f"{path}, on the way to a restored path, should have been removed"
            elif not any(path in parents(t) for t in target if within(t)):  # a file on the way to one is replaced
                assert after_files.get(path) == before_files.get(path), f"{path} outside the selection changed"
        self.files, self.folders = after_files, after_folders
        if result.safety_snapshot_id is not None:
            self._record(result.safety_snapshot_id, saved)
            self._undo_point(result.safety_snapshot_id, saved, result)
        self._note("selective done")
        self._sync_retention()

    @rule(pick=st.integers(min_value=0))
    @precondition(lambda self: bool(self.snapshots))
    def diff_against_workspace(self, pick: int) -> None:
        sha = self.order[pick % len(self.order)]
        target = self.snapshots[sha]
        current = self._tracked(self.files)
        expected = {p for p in set(target) | set(current) if target.get(p) != current.get(p)}
        found = self.snap.diff(sha)
        assert {d.path for d in found} == expected
        for d in found:
            entry = current.get(d.path)
            if d.path not in target and entry is not None and entry[0] == "file" and b"\0" not in entry[1]:
                assert (d.additions, d.deletions) == (_lines(entry[1]), 0)

    @rule(first=st.integers(min_value=0), second=st.integers(min_value=0))
    @precondition(lambda self: len(self.snapshots) >= 2)
    def diff_between_snapshots(self, first: int, second: int) -> None:
        a, b = self.order[first % len(self.order)], self.order[second % len(self.order)]
        old, new = self.snapshots[a], self.snapshots[b]
        expected = {p for p in set(old) | set(new) if old.get(p) != new.get(p)}
        assert {d.path for d in self.snap.diff(a, b)} == expected

    @rule()
    def checkpoint(self) -> None:
        info = self.snap.checkpoint()
        state = self._tracked(self.files)
        self._record(info.id, state)
        self.undo_stack.append((info.id, state))
        self.redo_stack.clear()
        self._sync_retention()

    def _undo_or_redo(self, action: str, target_id: str, target: Files) -> tuple[str, Files] | None:
        """Run ``action``, which must restore ``target``; the id and state of the
        saved state, or None if it was refused (and then changed nothing)."""
        refused, files, folders, saved = self._predict_full_restore(target)
        before = observe(self.ws)
        try:
            result = self.snap.undo() if action == "undo" else self.snap.redo()
        except RestoreConflict:
            assert refused and observe(self.ws) == before
            self._nothing_saved()
            self._note(f"{action} refused")
            return None
        assert not refused and result.ok and result.target_id == target_id
        assert result.saved_id is not None
        self.files, self.folders = files, folders
        self._record(result.saved_id, saved)
        self._note(f"{action} done")
        return result.saved_id, saved

    @rule()
    def undo(self) -> None:
        current = self._tracked(self.files)
        at_top = bool(self.undo_stack) and self.undo_stack[-1][1] == current
        if not self.undo_stack or (at_top and len(self.undo_stack) < 2):
            assert not self.snap.undo()  # honest "nothing to undo", never a fake success
            self._sync_retention()  # the call still ran retention, which a refused restore before it had not
            return
        target_id, target = self.undo_stack[-2] if at_top else self.undo_stack[-1]
        saved = self._undo_or_redo("undo", target_id, target)
        if saved is not None:
            if at_top:
                self.undo_stack.pop()
            self.redo_stack.append(saved)
        self._sync_retention()  # a refused undo may have saved a state too

    @rule()
    def redo(self) -> None:
        if not self.redo_stack:
            assert not self.snap.redo()
            self._sync_retention()  # the call still ran retention, which a refused restore before it had not
            return
        target_id, target = self.redo_stack[-1]
        if self._undo_or_redo("redo", target_id, target) is not None:
            self.redo_stack.pop()
            self.undo_stack.append((target_id, target))
        self._sync_retention()  # a refused redo may have saved a state too

    @rule(collect=st.booleans())
    def prune_or_gc(self, collect: bool) -> None:
        if collect:
            self.snap.gc()
        else:
            self.snap.prune()
        self._sync_retention()

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def workspace_equals_the_model(self) -> None:
        files, folders = observe(self.ws)
        assert files == self.files
        assert folders == self.folders

    @invariant()
    def listed_snapshots_are_the_models(self) -> None:
        listed = {info.id: info for info in self.snap.list(limit=None)}
        for sha in self.snapshots:
            assert sha in listed


def _settings(long: bool) -> settings:
    return settings(
        max_examples=1000 if long else 25,
        stateful_step_count=60 if long else 40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


@pytest.mark.skipif(os.name != "posix", reason="exec bits and symlinks are modelled POSIX-style")
def test_random_operation_sequences_match_the_model(request: pytest.FixtureRequest) -> None:
    long = bool(request.config.getoption("--long"))
    run = WorkspaceModel.TestCase
    run.settings = _settings(long)
    run().runTest()


@pytest.mark.skipif(os.name != "posix", reason="exec bits and symlinks are modelled POSIX-style")
def test_an_abandoned_redo_point_relabelled_keeps_the_newest_state() -> None:
    """A sequence hypothesis found in CI: the redo point an undo saved (the newest
    snapshot the model knew) was abandoned by a restore, kept as a relabelled
    copy, and its original dropped by retention as a duplicate state."""
    model = WorkspaceModel()
    try:
        for _ in range(3):
            model.checkpoint()
        model.edit_file(path="a", how="write", content=b"", executable=False)
        for _ in range(2):
            model.checkpoint()
        model.undo()
        model.restore_selected(pick=0, chosen=["a"])
        model.workspace_equals_the_model()
        model.listed_snapshots_are_the_models()
    finally:
        model.teardown()


@pytest.mark.skipif(os.name != "posix", reason="exec bits and symlinks are modelled POSIX-style")
def test_undo_after_restoring_over_a_rule_the_restore_took_away() -> None:
    """A sequence hypothesis found: d/n/a recorded, then hidden by a new 'd/' rule;
    restoring the old snapshot takes the rule away and tracks d/n/a for the
    restore; undo brings the rule back and keeps d/n/a, as it stood before."""
    model = WorkspaceModel()
    try:
        model.checkpoint()
        model.swap_file_and_folder(content=b"", folder="d/n", inner="a")
        model.checkpoint()
        model.edit_gitignore(variant="folder-d")
        model.restore_full(pick=1)
        model.workspace_equals_the_model()
        model.undo()
        model.workspace_equals_the_model()
        model.listed_snapshots_are_the_models()
    finally:
        model.teardown()


@pytest.mark.skipif(os.name != "posix", reason="exec bits and symlinks are modelled POSIX-style")
def test_a_restore_that_abandons_a_redo_point_keeps_the_state_saved_before_the_redo() -> None:
    """Found by the model (--long), from stop 38: with every other snapshot an undo
    point, retention dropped the pre-redo snapshot (the only one of its state)
    and kept the newer abandoned:1 copy of a state other snapshots hold."""
    model = WorkspaceModel()
    try:
        for _ in range(3):
            model.checkpoint()
        model.swap_file_and_folder(content=b"", folder="n", inner="a")
        model.checkpoint()
        model.checkpoint()
        model.undo()
        model.undo()
        model.edit_gitignore(variant="folder-d")
        model.redo()
        model.restore_full(pick=0)
        model.listed_snapshots_are_the_models()
    finally:
        model.teardown()


@pytest.mark.skipif(os.name != "posix", reason="exec bits and symlinks are modelled POSIX-style")
def test_a_restore_after_an_undo_keeps_the_redo_point_it_abandons() -> None:
    """Issue 47, item 11 (hypothesis drew it in CI): a restore over a rule that
    hides a file it brings back wrote a second, unreported safety snapshot,
    which stood as the newest; retention then dropped the pre-undo snapshot,
    the only one of the newest state the model knew, and its abandoned copy."""
    model = WorkspaceModel()
    try:
        model.delete(path="a")
        for _ in range(7):
            model.checkpoint()
        model.swap_file_and_folder(folder="n", inner="x.log", content=b"")
        model.checkpoint()
        model.edit_gitignore(variant="logs")
        model.restore_full(pick=7)
        model.edit_gitignore(variant="folder-d")
        model.undo()
        model.restore_full(pick=7)
        model.workspace_equals_the_model()
        model.listed_snapshots_are_the_models()
    finally:
        model.teardown()
