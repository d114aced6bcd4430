"""The store reads a commit's tree, time and message as dulwich's ``Commit`` does."""

from __future__ import annotations

import pytest
from dulwich.objects import Commit
from hypothesis import given, settings
from hypothesis import strategies as st

from snapshotter.engine.gitstore.commitread import read_commit_fields

TREE = b"4b825dc642cb6eb9a060e54bf8d69288fbee4904"
PARENT = b"a" * 40
SIGNATURE = b"gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEz\n -----END PGP SIGNATURE-----\n"


def commit_text(message: bytes, *, parents: int = 0, extra: bytes = b"", when: int = 1700000000) -> bytes:
    head = b"tree " + TREE + b"\n" + b"".join(b"parent " + PARENT + b"\n" for _ in range(parents))
    people = b"author A U <a@x> 1 +0000\ncommitter snapshotter <s@localhost> %d -0130\n" % when
    return head + people + extra + b"\n" + message


@settings(max_examples=300, deadline=None)
@given(
    message=st.binary(max_size=200),
    parents=st.integers(0, 2),
    extra=st.sampled_from([b"", b"encoding UTF-8\n", SIGNATURE, b"x-custom one\n two\n"]),
    when=st.integers(0, 2**40),
)
def test_a_commit_reads_as_dulwich_reads_it(message: bytes, parents: int, extra: bytes, when: int) -> None:
    raw = commit_text(message, parents=parents, extra=extra, when=when)
    theirs = Commit.from_string(raw)
    ours = read_commit_fields(theirs.id, raw)
    assert (ours.id, ours.tree, ours.commit_time, ours.message) == (
        theirs.id,
        theirs.tree,
        theirs.commit_time,
        theirs.message,
    )


@pytest.mark.parametrize(
    "raw",
    [
        b"author A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\nno tree\n",
        b"tree " + TREE + b"\nauthor A <a@x> 1 +0000\n\nno committer\n",
        b"tree " + TREE + b"\ncommitter A <a@x> soon +0000\n\nno time\n",
        b"tree " + TREE + b"\ncommitter A a@x 1 +0000\n\nno email's brackets\n",
    ],
)
def test_a_commit_without_a_tree_or_a_time_is_refused_as_damaged(raw: bytes) -> None:
    """dulwich leaves these None (and reading the snapshot failed untyped); the
    store's readers raise ValueError, which the catalog reports as a damaged snapshot."""
    with pytest.raises(ValueError):
        read_commit_fields(b"0" * 40, raw)


@settings(max_examples=300, deadline=None)
@given(
    message=st.text(max_size=80),
    when=st.integers(0, 2**33),
    label=st.none() | st.sampled_from(["pre-turn:3", "tool:x", "checkpoint"]),
    uncounted=st.booleans(),
)
def test_a_snapshot_commit_is_written_as_dulwich_writes_it(
    message: str, when: int, label: str | None, uncounted: bool
) -> None:
    """The store writes a snapshot's commit text itself (dulwich's object classes
    are not loaded to record a hook's snapshot); its bytes, so its id, are the ones
    dulwich's ``Commit`` makes of the same fields."""
    from datetime import datetime, timezone

    from snapshotter.engine.gitstore.trailers import IDENTITY, build_commit

    built = build_commit(
        bytes.fromhex(TREE.decode()),
        message,
        seq=7,
        label=label,
        metadata={"k": "v"},
        stats=(1, 2, 3),
        skipped=[],
        when=datetime.fromtimestamp(when, tz=timezone.utc),
        uncounted_against=bytes(20) if uncounted else None,
    )
    theirs = Commit()
    theirs.tree = TREE
    theirs.parents = []
    theirs.author = theirs.committer = IDENTITY
    theirs.author_time = theirs.commit_time = when
    theirs.author_timezone = theirs.commit_timezone = 0
    theirs.encoding = b"UTF-8"
    theirs.message = read_commit_fields(b"", built.as_raw_string()).message
    assert built.as_raw_string() == theirs.as_raw_string()
