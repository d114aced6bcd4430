"""Three-way merge results beyond their text: the number of conflicts, and
labels that are not valid UTF-8 (a branch or path name read with surrogates)."""

from __future__ import annotations

from snapshotter.engine.compare.merge import merge_text

BASE = b"".join(b"line %d\n" % n for n in range(1, 21))


def _changed(text: bytes, **lines: bytes) -> bytes:
    out = text
    for number, new in lines.items():
        out = out.replace(b"line %s\n" % number.lstrip("n").encode(), new, 1)
    return out


def test_each_conflict_is_counted() -> None:
    ours = _changed(BASE, n2=b"ours two\n", n15=b"ours fifteen\n")
    theirs = _changed(BASE, n2=b"theirs two\n", n15=b"theirs fifteen\n")
    merged = merge_text(BASE, ours, theirs)
    assert merged.conflicts == 2
    assert merged.content.count(b"<<<<<<< ours\n") == 2 and merged.content.count(b">>>>>>> theirs\n") == 2
    one = merge_text(BASE, ours, _changed(BASE, n2=b"theirs two\n"))
    assert one.conflicts == 1


def test_a_label_that_is_not_utf8_is_written_with_a_replacement() -> None:
    ours = _changed(BASE, n5=b"ours\n")
    theirs = _changed(BASE, n5=b"theirs\n")
    merged = merge_text(BASE, ours, theirs, ours_label="mine-\udcff", theirs_label="théirs")
    assert merged.conflicts == 1
    assert b"<<<<<<< mine-?\n" in merged.content and ">>>>>>> théirs\n".encode() in merged.content
