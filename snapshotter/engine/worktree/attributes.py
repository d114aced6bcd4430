"""What ``.gitattributes`` say about diffing a path: binary, text, or up to its bytes.

git counts no lines of a file whose ``diff`` attribute is unset (``-diff``, or
the ``binary`` macro, which is ``-diff -merge -text``): ``git diff --numstat``
shows ``-`` ``-`` and the patch says ``Binary files ... differ``. A file whose
``diff`` attribute is set (``diff``) is text whatever bytes it holds. Anything
else (unspecified, ``!diff``, a driver ``diff=NAME``: we read no git config,
so a driver's ``binary`` setting is unknown) leaves the choice to the content
(a NUL in the first 8,000 bytes).

The sources are read as ``git diff`` reads them in a working tree, lowest
precedence first: the ``.gitattributes`` above the workspace inside its
repository, then each one from the workspace's root down to the path's folder,
then the repository's ``info/attributes``. Within a file the last matching line
wins. A pattern is matched as in ``.gitignore`` (``ignorelines``), relative to
its file's folder; a negated pattern is not allowed (git warns and skips it), and
a pattern ending in ``/`` matches folders only, so never a file. Macros defined
with ``[attr]`` in a top-level file are expanded, as is the built-in ``binary``.

Each file is read once per :class:`DiffAttributes`, with the same care as an
ignore file (no symlink followed, regular files only, capped). Only the ``diff``
attribute is used: no content filter (``eol``, ``filter=``) is applied to what a
snapshot stores (see DESIGN.md, Diff).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from snapshotter.engine.worktree.gitrepo import UserRepository
from snapshotter.engine.worktree.ignore import alternation, read_ignore_file
from snapshotter.engine.worktree.ignorelines import byte_text, lines_of, parse_line, warn_once

ATTRIBUTES_FILE = ".gitattributes"
_BUILTIN_MACROS = {"binary": (("diff", False), ("merge", False), ("text", False))}

Assigned = tuple[tuple[str, "bool | str | None"], ...]
"""What one line assigns: (attribute, state) in order."""
_COMPILE_ERRORS = (re.error, RecursionError, OverflowError, ValueError)


class _Source:
    """The lines of one attributes file that say something of ``diff``, joined
    into one expression, last line first: one ``fullmatch`` finds the line that
    decides for a path."""

    def __init__(self, rules: list[tuple[str, bool | str | None]], origin: str) -> None:
        self.regex: re.Pattern[str] | None = None
        self.states: list[bool | str | None] = []
        rules = rules[::-1]
        try:
            self.regex, owners = alternation([regex for regex, _ in rules]) if rules else (None, [])
        except _COMPILE_ERRORS:  # some line does not compile: drop it, keep the rest
            rules = [rule for rule in rules if _compiles(rule[0], origin)]
            self.regex, owners = alternation([regex for regex, _ in rules]) if rules else (None, [])
        self.states = [None] + [rules[owner][1] for owner in owners[1:]]

    def decides(self, subject: str) -> tuple[bool, bool | str | None]:
        """(whether a line of this file matches ``subject``, the state it sets)."""
        match = self.regex.fullmatch(subject) if self.regex is not None else None
        return (False, None) if match is None else (True, self.states[match.lastindex or 0])


class DiffAttributes:
    """The ``diff`` attribute of paths of one workspace (see the module's docstring)."""

    def __init__(self, workspace: str, repository: UserRepository | None = None) -> None:
        self.workspace = workspace
        self.macros: dict[str, Assigned] = dict(_BUILTIN_MACROS)
        above: list[tuple[str, _Source]] = []
        last: _Source | None = None
        if repository is not None:
            folder, inside = repository.root, repository.prefix.split("/") if repository.prefix else []
            for depth in range(len(inside)):  # the repository's root, then down to the workspace's parent
                source = self._read(os.path.join(folder, *inside[:depth], ATTRIBUTES_FILE), top=depth == 0)
                if source.regex is not None:
                    above.insert(0, ("/".join(inside[depth:]) + "/", source))
            info = self._read(os.path.join(repository.common_dir, "info", "attributes"), top=True, follow=True)
            last = info if info.regex is not None else None
        self._above = above
        self._last = last
        self._own: dict[str, _Source | None] = {}
        self._chains: dict[str, list[tuple[int, _Source]]] = {}

    def binary(self, path: str) -> bool | None:
        """True: ``-diff`` (no lines counted); False: ``diff`` (text whatever its
        bytes); None: the content decides."""
        chain = self._chain(path.rpartition("/")[0])
        if not (chain or self._above or self._last):
            return None
        text = path if path.isascii() else byte_text(path)
        if self._last is not None:
            found, state = self._last.decides(text)
            if found:
                return _verdict(state)
        for cut, source in chain:  # the path's folder first, up to the workspace's root
            found, state = source.decides(text[cut:])
            if found:
                return _verdict(state)
        for below, source in self._above:
            found, state = source.decides(byte_text(below) + text)
            if found:
                return _verdict(state)
        return None

    def _chain(self, folder: str) -> list[tuple[int, _Source]]:
        """The attributes files that apply in ``folder``, its own first: (where
        a path's part relative to that file's folder starts, the file's lines)."""
        found = self._chains.get(folder)
        if found is None:
            parent = self._chain(folder.rpartition("/")[0]) if folder else []
            own = self._source_in(folder)
            cut = len(byte_text(folder)) + 1 if folder else 0
            found = self._chains[folder] = [(cut, own), *parent] if own is not None else parent
        return found

    def _source_in(self, folder: str) -> _Source | None:
        path = os.path.join(self.workspace, *folder.split("/"), ATTRIBUTES_FILE) if folder else None
        source = self._read(path or os.path.join(self.workspace, ATTRIBUTES_FILE), top=not folder and not self._above)
        return source if source.regex is not None else None

    def _read(self, path: str, top: bool, follow: bool = False) -> _Source:
        rules: list[tuple[str, bool | str | None]] = []
        for number, line in lines_of(read_ignore_file(path, follow)):
            try:
                rule = self._parse(line, top)
            except ValueError as exc:
                warn_once((path, number), "%s, line %d: attributes line skipped (%s)", path, number, exc)
                continue
            if rule is not None:
                rules.append(rule)
        return _Source(rules, path)

    def _parse(self, line: bytes, top: bool) -> tuple[str, bool | str | None] | None:
        """One line: its pattern's expression and the ``diff`` state it sets, if
        it sets one (a macro definition is kept aside and sets nothing itself)."""
        text = line.strip(b" \t")
        if not text or text.startswith(b"#"):
            return None
        if text.startswith(b'"'):
            pattern, rest = _quoted(text)
        else:
            pattern, _, rest = text.replace(b"\t", b" ").partition(b" ")
        assigned = tuple(self._expanded(_tokens(rest)))
        if pattern.startswith(b"[attr]"):
            if top:
                self.macros[pattern[6:].decode("latin-1")] = assigned
            return None
        if pattern.startswith(b"!"):
            raise ValueError("negative patterns are ignored in git attributes")
        states = [value for name, value in assigned if name == "diff"]
        parsed = parse_line(pattern)
        if parsed is None or parsed.dir_only or not states:
            return None
        return parsed.regex, states[-1]

    def _expanded(self, tokens: Iterator[tuple[str, bool | str | None]]) -> Iterator[tuple[str, bool | str | None]]:
        for name, value in tokens:
            yield name, value
            if value is True and name in self.macros:
                yield from self.macros[name]


def _verdict(state: bool | str | None) -> bool | None:
    return not state if isinstance(state, bool) else None  # unset: binary; set: text


def _compiles(regex: str, origin: str) -> bool:
    try:
        re.compile(regex, re.DOTALL)
    except _COMPILE_ERRORS as exc:
        warn_once((origin, regex), "%s: an attributes pattern skipped, it cannot be compiled (%s)", origin, exc)
        return False
    return True


def _tokens(rest: bytes) -> Iterator[tuple[str, bool | str | None]]:
    """(name, state) of each attribute of a line: True set, False unset, None
    unspecified, a str for ``name=value``."""
    for token in rest.split():
        word = token.decode("utf-8", "surrogateescape")
        if word.startswith("-"):
            yield word[1:], False
        elif word.startswith("!"):
            yield word[1:], None
        elif "=" in word:
            name, _, value = word.partition("=")
            yield name, value
        else:
            yield word, True


def _quoted(text: bytes) -> tuple[bytes, bytes]:
    """A line whose pattern is in C-style double quotes: (pattern, the rest)."""
    out = bytearray()
    i = 1
    while i < len(text):
        byte = text[i]
        if byte == 0x22:
            return bytes(out), text[i + 1 :]
        if byte == 0x5C and i + 1 < len(text):
            nxt = text[i + 1 : i + 2]
            octal = re.match(rb"[0-7]{3}", text[i + 1 : i + 4])
            if octal:
                out.append(int(octal.group(), 8) & 0xFF)
                i += 4
                continue
            out += {b"t": b"\t", b"n": b"\n", b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v", b"r": b"\r"}.get(
                nxt, nxt
            )
            i += 2
            continue
        out.append(byte)
        i += 1
    raise ValueError("an unclosed quote")
