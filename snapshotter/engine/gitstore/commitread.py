"""A snapshot's commit, read for what the catalog takes from it: its tree, its
commit time and its message.

dulwich's ``Commit`` parses every header (and its module, with dulwich's
object classes, costs a command that only reads the history about 2 ms to
import: issue #51); the catalog reads four fields, named as dulwich names them
so either reads as a snapshot (``trailers.parse_snapshot``). The headers are
split as dulwich splits them (``tests/test_commitread.py`` holds the two to the
same answers); a commit without a tree or a committer's time raises ValueError,
which the catalog reports as a damaged snapshot.
"""

from __future__ import annotations


class CommitFields:
    """The id (hex), tree id (hex), commit time (seconds) and message (bytes) of
    one commit. A plain class, not a frozen dataclass: making one costs about
    half a millisecond at import, and reading ``log`` is what this saves."""

    __slots__ = ("id", "tree", "commit_time", "message")

    def __init__(self, id: bytes, tree: bytes, commit_time: int, message: bytes) -> None:
        self.id = id
        self.tree = tree
        self.commit_time = commit_time
        self.message = message


def read_commit_fields(sha_hex: bytes, raw: bytes) -> CommitFields:
    """The fields of the commit whose content is ``raw`` (checked against its id
    ``sha_hex`` by whoever read it). The headers end at the first empty line;
    a header's value goes on over the lines that start with a space."""
    if raw.startswith(b"\n"):
        head, message = b"", raw[1:]
    else:
        end = raw.find(b"\n\n")
        head, message = (raw, b"") if end < 0 else (raw[: end + 1], raw[end + 2 :])
    tree = committer = None
    for line in head.split(b"\n"):
        if line.startswith(b" "):
            continue  # a value's next line (a signature's): neither the tree's nor the committer's
        name, _, value = line.partition(b" ")
        if name == b"tree":
            tree = value
        elif name == b"committer":
            committer = value
    if tree is None:
        raise ValueError("the commit names no tree")
    if committer is None:
        raise ValueError("the commit names no committer")
    return CommitFields(sha_hex, tree, _time_of(committer), message)


def _time_of(person: bytes) -> int:
    """The seconds of ``Name <email> seconds zone``, as dulwich's ``parse_time_entry`` finds them."""
    sep = person.rfind(b"> ")
    if sep < 0:
        raise ValueError("the commit's committer line has no time")
    seconds, _, zone = person[sep + 2 :].rpartition(b" ")
    if not zone:
        raise ValueError("the commit's committer line has no time zone")
    return int(seconds)
