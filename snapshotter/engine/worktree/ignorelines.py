"""gitignore lines, read and matched as git 2.39 reads and matches them.

git splits an ignore file into patterns in ``dir.c`` (``add_patterns_from_buffer``,
``trim_trailing_spaces``, ``parse_path_pattern``) and matches each one with
``wildmatch.c``. This module does the same, turning every line into one regular
expression with the same meaning, so that ``ignore.IgnoreSource`` can join a
file's lines into one alternation and judge a path with a single ``fullmatch``.

We no longer hand lines to pathspec, because its reading differs from git's
where it matters: it splits lines with ``str.splitlines`` (also at a lone
``\\r``, form feed, NEL, U+2028: ``*\\r`` in a CRLF file became ``*``), rejects
lines git takes (``foo\\``, ``notes \\  ``, ``!``) with an exception, keeps a
space git trims (``x \\\\ ``), and knows neither POSIX classes, nor ``[\\]]``,
nor ``***``. Its expressions were also written for matching whole paths by
prefix, which we had to rewrite anyway (pathspec issue #137).

git compares bytes, not characters: ``?`` is one byte, so ``?.txt`` does not
match ``ü.txt`` (two bytes) and ``??.txt`` does. Our expressions are therefore
written over "byte text": a str whose every character stands for one byte
(latin-1). A path that is all ASCII already is its own byte text; any other is
converted by :func:`byte_text`, which is rare and cheap.

git never rejects a line, and neither do we: a line that matches nothing in git
(a trailing lone backslash, an unclosed ``[``, an unknown ``[:class:]``) gives
no pattern, and a line our translation cannot handle is skipped with a warning
naming its file and line (:func:`parse_source`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass

log = logging.getLogger("snapshotter")


@dataclass(frozen=True)
class Pattern:
    """One ignore line, ready to be matched against a path relative to its file's folder."""

    regex: str
    """Matches the whole relative path (as byte text) when the line does."""
    ignore: bool
    """False for a ``!`` negation."""
    dir_only: bool
    """A trailing ``/``: the line matches folders only."""


def byte_text(text: str) -> str:
    """``text`` as git sees it: each byte of its UTF-8 encoding as one character.

    Names that did not decode come back as the bytes they were on disk
    (``surrogateescape``, as ``os.fsencode`` on POSIX); a lone surrogate, which
    only a Windows name can hold, is kept as ``os.fsencode`` writes it there.
    """
    try:
        return text.encode("utf-8", "surrogateescape").decode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("latin-1")


def lines_of(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, pattern) for each line of an ignore file that git takes as a
    pattern, in file order, as ``add_patterns_from_buffer`` cuts them.

    A UTF-8 byte order mark at the start is skipped; a line ends at ``\\n`` only
    (the last one also at the end of the data); an empty line and a line starting
    with ``#`` are no patterns; one ``\\r`` before the ``\\n`` is dropped (CRLF
    files); a NUL ends the pattern (git handles C strings); unescaped trailing
    spaces are trimmed. Nothing else is stripped: a tab, a form feed or a
    leading space is part of the pattern.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line or line.startswith(b"#"):
            continue
        if line.endswith(b"\r"):
            line = line[:-1]
        if b"\0" in line:
            line = line[: line.index(b"\0")]
        yield number, trim_trailing_spaces(line)


def trim_trailing_spaces(line: bytes) -> bytes:
    """The line without its unescaped trailing spaces (``dir.c: trim_trailing_spaces``).

    A backslash escapes the byte after it, so ``a\\ `` keeps its space; a line
    ending in a lone backslash is left whole (it then matches nothing).
    """
    if not line.endswith(b" "):
        return line
    last_space = -1
    i = 0
    end = len(line)
    while i < end:
        byte = line[i]
        if byte == 0x20:
            if last_space < 0:
                last_space = i
        elif byte == 0x5C:
            i += 1
            if i >= end:
                return line
            last_space = -1
        else:
            last_space = -1
        i += 1
    return line[:last_space] if last_space >= 0 else line


def parse_line(line: bytes) -> Pattern | None:
    """The pattern of one trimmed line (``parse_path_pattern``), None if it matches nothing.

    A line without a ``/`` (a trailing one aside) is matched against the last
    component of a path, at any depth; any other line against the whole path
    relative to its file's folder, with a leading ``/`` only anchoring it. In
    such a path pattern, git compares the part before the first wildcard
    literally and hands the rest to wildmatch as a pattern of its own, so a
    ``**`` that starts that rest counts as starting a path component:
    ``foo**/bar`` matches ``foo/x/bar`` and ``a/b**`` matches ``a/bc/d`` in git
    2.39 (checked with ``git check-ignore``). We keep that.
    """
    ignore = not line.startswith(b"!")
    text = line if ignore else line[1:]
    dir_only = text.endswith(b"/")
    if dir_only:
        text = text[:-1]
    if b"/" not in text:
        body = _wildmatch_regex(text, pathname=False, rest=0)
        regex = None if body is None else "(?:.*/)?" + body
    else:
        if text.startswith(b"/"):
            text = text[1:]
        regex = _wildmatch_regex(text, pathname=True, rest=_literal_length(text))
    if not text or regex is None:
        return None
    return Pattern(regex, ignore, dir_only)


def parse_source(data: bytes, origin: str) -> list[tuple[int, Pattern]]:
    """(line number, pattern) of every line of one source that can match something.

    ``origin`` names the source in warnings (a path, ``exclude=``). A line that
    the translation cannot handle is skipped with a warning, never fatal: git
    rejects no line, so a snapshot must not fail on one.
    """
    out: list[tuple[int, Pattern]] = []
    for number, line in lines_of(data):
        try:
            pattern = parse_line(line)
        except Exception as exc:  # any failure: one odd line must not stop a snapshot
            warn_once((origin, number, line), "%s, line %d: ignore pattern %r skipped (%s)", origin, number, line, exc)
            continue
        if pattern is not None:
            out.append((number, pattern))
    return out


_WARNED: set[object] = set()


def warn_once(key: object, message: str, *args: object) -> None:
    """Log a warning on the "snapshotter" logger, once per ``key`` in this process:
    ignore files are read again on every scan, and one bad line is news once."""
    if key in _WARNED:
        return
    if len(_WARNED) >= 4096:
        _WARNED.clear()
    _WARNED.add(key)
    log.warning(message, *args)


_SPECIAL = frozenset(b"*?[\\")
_LITERAL = [re.escape(chr(byte)) for byte in range(256)]


def _literal_length(text: bytes) -> int:
    """How many bytes start ``text`` before its first wildcard (``simple_length``)."""
    for i, byte in enumerate(text):
        if byte in _SPECIAL:
            return i
    return len(text)


def _wildmatch_regex(text: bytes, pathname: bool, rest: int) -> str | None:
    """The expression that matches what ``wildmatch(text, name, flags)`` matches,
    None if nothing can match. ``pathname``: WM_PATHNAME (``*``, ``?`` and
    brackets never match ``/``; ``**`` between slashes crosses them); without
    it the name is one path component, so no wildcard meets a ``/`` either.
    ``rest``: where git's wildmatch call starts (see ``parse_line``).
    """
    atoms: list[tuple[str, str]] = []  # (kind, expression): "fixed", "star" ([^/]*) or "cross" (meets slashes)
    i = 0
    end = len(text)
    while i < end:
        byte = text[i]
        if byte == 0x5C:  # backslash: the next byte literally; a lone one at the end matches nothing
            if i + 1 >= end:
                return None
            atoms.append(("fixed", _LITERAL[text[i + 1]]))
            i += 2
        elif byte == 0x3F:  # ?
            atoms.append(("fixed", "[^/]"))
            i += 1
        elif byte == 0x2A:  # a run of stars: two or more are one "**"
            j = i
            while j < end and text[j] == 0x2A:
                j += 1
            atom = ("star", "[^/]*")
            if pathname and j - i >= 2 and (i == rest or text[i - 1] == 0x2F):
                if j == end:
                    atom = ("cross", ".*")
                elif text[j] == 0x2F:  # "**/": no folder, or any number of them
                    atom = ("cross", "(?:.*/)?")
                    j += 1
                elif text[j] == 0x5C and j + 1 < end and text[j + 1] == 0x2F:
                    atom = ("cross", ".*")  # "**\/": crosses slashes, but with no empty shortcut
            if atom[0] == "cross" and atoms and atoms[-1][0] == "cross":  # "**/**/": one is enough
                atom = ("cross", ".*" if ".*" in (atom[1], atoms.pop()[1]) else "(?:.*/)?")
            atoms.append(atom)
            i = j
        elif byte == 0x5B:  # [
            parsed = _bracket(text, i)
            if parsed is None:
                return None
            atoms.append(("fixed", parsed[0]))
            i = parsed[1]
        else:
            atoms.append(("fixed", _LITERAL[byte]))
            i += 1
    return _assembled(atoms)


_LAZY = {"[^/]*": "[^/]*?", ".*": ".*?", "(?:.*/)?": "(?:.*?/)??"}
MAX_BACKTRACKING_WILDCARDS = 2
"""How many ``**`` a line may hold that still backtrack (see ``_assembled``)."""


def _assembled(atoms: list[tuple[str, str]]) -> str:
    """Join the atoms into one expression that never backtracks without end.

    A wildcard followed by fixed text and then by another wildcard that can
    take whatever it could (any wildcard after ``*``, a ``**`` after ``**``)
    may settle for the first place that text matches: a later one would leave
    the next wildcard less to match, never more (the greedy rule of glob
    matching, as CPython's fnmatch applies it). That choice is written as an
    atomic group, emulated by a lookahead and a backreference (named ``zN``;
    ``ignore`` renames them per pattern), so ``*a*a*a*a*a*a*a*b`` against a long
    name costs linear time, not 32 s and more. Only the last wildcard, and a
    ``**`` followed later by a ``*``, still backtrack; a line with more than
    ``MAX_BACKTRACKING_WILDCARDS`` such ``**`` is refused (ValueError).
    """
    out: list[str] = []
    groups = backtracking = 0
    i = 0
    while i < len(atoms):
        kind, expression = atoms[i]
        if kind == "fixed":
            out.append(expression)
            i += 1
            continue
        j = i + 1
        while j < len(atoms) and atoms[j][0] == "fixed":
            j += 1
        following = "".join(expression for _, expression in atoms[i + 1 : j])
        after = atoms[j][0] if j < len(atoms) else None
        if following and (after == "cross" or (after == "star" and kind == "star")):
            out.append(f"(?=(?P<z{groups}>{_LAZY[expression]}{following}))(?P=z{groups})")
            groups += 1
        else:
            backtracking += kind == "cross" and after is not None
            out.append(expression + following)
        i = j
    if backtracking > MAX_BACKTRACKING_WILDCARDS:
        raise ValueError(f"more than {MAX_BACKTRACKING_WILDCARDS} ** followed by * cannot be matched in bounded time")
    return "".join(out)


def _span(first: int, last: int) -> frozenset[int]:
    return frozenset(range(first, last + 1))


_DIGIT = _span(0x30, 0x39)
_UPPER = _span(0x41, 0x5A)
_LOWER = _span(0x61, 0x7A)
_CLASSES: dict[bytes, frozenset[int]] = {
    # git's own ctype (ctype.c): ASCII only, whatever the locale; "space" has no \v or \f.
    b"alnum": _DIGIT | _UPPER | _LOWER,
    b"alpha": _UPPER | _LOWER,
    b"blank": frozenset(b" \t"),
    b"cntrl": _span(0x00, 0x1F) | {0x7F},
    b"digit": _DIGIT,
    b"graph": _span(0x21, 0x7E),
    b"lower": _LOWER,
    b"print": _span(0x20, 0x7E),
    b"punct": _span(0x21, 0x2F) | _span(0x3A, 0x40) | _span(0x5B, 0x60) | _span(0x7B, 0x7E),
    b"space": frozenset(b" \t\n\r"),
    b"upper": _UPPER,
    b"xdigit": _DIGIT | _span(0x41, 0x46) | _span(0x61, 0x66),
}


def _bracket(text: bytes, start: int) -> tuple[str, int] | None:
    """The character class that opens at ``text[start]`` (a ``[``) and the index
    after it, or None where git's wildmatch gives up on the whole pattern: the
    class is not closed, an escape or range ends the text, a ``[:name:]`` is
    unknown, or the class can match no byte at all.

    Read as wildmatch reads it: ``!`` or ``^`` first negates; the first member
    may be ``]``; ``\\`` escapes; ``a-z`` is a range unless the ``-`` is first,
    last, or follows a range or class; ``[:`` not closed by ``:]`` is a ``[``.
    """
    end = len(text)

    def at(k: int) -> int:
        return text[k] if k < end else 0

    k = start + 1
    byte = at(k)
    negated = byte in (0x21, 0x5E)  # ! or ^
    if negated:
        k += 1
        byte = at(k)
    members: set[int] = set()
    previous = 0
    while True:
        if byte == 0:
            return None
        if byte == 0x5C:
            k += 1
            byte = at(k)
            if byte == 0:
                return None
            members.add(byte)
        elif byte == 0x2D and previous and at(k + 1) and at(k + 1) != 0x5D:  # a range
            k += 1
            byte = at(k)
            if byte == 0x5C:
                k += 1
                byte = at(k)
                if byte == 0:
                    return None
            members.update(range(previous, byte + 1))  # empty when reversed
            byte = 0
        elif byte == 0x5B and at(k + 1) == 0x3A:  # "[:"
            name_start = k + 2
            close = name_start
            while at(close) and at(close) != 0x5D:
                close += 1
            if not at(close):
                return None
            if close - name_start - 1 < 0 or text[close - 1] != 0x3A:  # no ":]": a plain "["
                members.add(byte)
            else:
                found = _CLASSES.get(text[name_start : close - 1])
                if found is None:
                    return None
                members.update(found)
                k = close
                byte = 0
        else:
            members.add(byte)
        previous = byte
        k += 1
        byte = at(k)
        if byte == 0x5D:
            break
    members.discard(0x2F)  # never a "/": WM_PATHNAME, or one path component
    if not members and not negated:
        return None
    listed = _ranges(members | {0x2F} if negated else members)
    return ("[^" if negated else "[") + listed + "]", k + 1


def _ranges(members: set[int]) -> str:
    """The members of a character class, in runs, every byte escaped as ``\\xHH``."""
    out = []
    ordered = sorted(members)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(f"\\x{ordered[i]:02x}" if i == j else f"\\x{ordered[i]:02x}-\\x{ordered[j]:02x}")
        i = j + 1
    return "".join(out)
