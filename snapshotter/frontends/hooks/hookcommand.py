"""The command line an installed hook runs, and telling ours from a person's.

``snapshotter hook`` always exits 0 and prints only the agent's "go on" (nothing,
or ``{}`` for Gemini CLI). What it cannot do is answer when it cannot start: the
environment ``hooks install`` ran from was deleted or re-made (the shell's 127),
its Python was removed (a "bad interpreter", 127 or 126), or ``python -m
snapshotter`` finds no package (1). Gemini CLI then blocks the prompt, and
Copilot CLI denies the tool. So the line written answers for it, in the shell
the agent runs it with, and only when the program did not exit 0, which a
``snapshotter hook`` that ran always does: a working hook's output and exit
are untouched, and the call costs no second program start.

- POSIX shells (Claude Code, and Codex and Gemini CLI off Windows; Copilot's
  ``bash``): ``PROGRAM hook AGENT EVENT || exit 0``, Gemini CLI's
  ``... || echo '{}'`` (it reads stdout as JSON, and would take the shell's
  "not found" on stderr for a reason to block).
- PowerShell (Copilot's ``powershell``; Gemini CLI on Windows runs every command
  with it): ``& PROGRAM hook AGENT EVENT; if (-not $?) { exit 0 }``, Gemini CLI's
  ``{ $global:LASTEXITCODE = 0; '{}' }`` (it ends the command with
  ``exit $LASTEXITCODE``).

A command is ours when it is exactly one of these forms (or the form older
versions wrote, without the guard) around a plain program (words without shell
operators) that names snapshotter, for this agent and the very event it is
installed under: a person's hook that runs or mentions ``snapshotter hook``
in a command line of its own is theirs.
"""

from __future__ import annotations

import os
import re
import shlex

from snapshotter.engine import fsutil

POSIX, POWERSHELL = "posix", "powershell"
_GUARDS = {
    (POSIX, ""): ("", " || exit 0"),
    (POSIX, "{}"): ("", " || echo '{}'"),
    (POWERSHELL, ""): ("& ", "; if (-not $?) { exit 0 }"),
    (POWERSHELL, "{}"): ("& ", "; if (-not $?) { $global:LASTEXITCODE = 0; '{}' }"),
}
_UNGUARDED = (("", ""), ("& ", ""))
"""The forms written before the guard (``hooks install`` upgrades them in place)."""
_WORD = r"""(?:"[^"]*"|'[^']*'|[^\s"'`$;&|<>(){}]+)"""
_PLAIN = re.compile(rf"{_WORD}(?:[ \t]+{_WORD})*")
_NAMES = ("snapshotter", "snapshotter.exe")


def line(program: str, agent: str, event: str, answer: str, shell: str = POSIX) -> str:
    """The command that runs ``program hook AGENT EVENT`` and answers ``answer``
    itself where the program cannot start."""
    head, tail = _GUARDS[(shell, answer)]
    return f"{head}{program} hook {agent} {event}{tail}"


def program_of(command: object, agent: str, event: str, given: str | None = None) -> str | None:
    """The program of ``command`` if it is one of ours for ``agent`` and ``event``
    (None: it is not). ``given``: a program named by ``hooks install --command``
    this time, which an unguarded command may have too."""
    if not isinstance(command, str):
        return None
    ending = f" hook {agent} {event}"
    for (head, tail), guarded in [*((form, True) for form in _GUARDS.values()), *((f, False) for f in _UNGUARDED)]:
        if not (command.startswith(head) and command.endswith(ending + tail)):
            continue
        program = command[len(head) : len(command) - len(ending + tail)]
        if _PLAIN.fullmatch(program) and _names_us(program, guarded, given):
            return program
    return None


def _names_us(program: str, guarded: bool, given: str | None) -> bool:
    """Whether a plain program is snapshotter: as ``install`` writes it (one path
    named snapshotter, or an interpreter with ``-m snapshotter``), the one given
    by ``--command``, or, behind our guard, any words ending with it."""
    if given is not None and program == given:
        return True
    words = [word.strip("'\"") for word in re.findall(_WORD, program)]
    named = os.path.basename(words[-1].replace("\\", "/")).lower() in _NAMES
    with_m = len(words) >= 3 and words[-2:] == ["-m", "snapshotter"]
    if guarded:
        return named or with_m
    return (len(words) == 1 and named) or (len(words) == 3 and with_m)


def runs(program: str | None) -> bool:
    """Whether a hook's program is there to start: its first word an executable
    file and, for a script, its interpreter too (a removed Python leaves the
    script of a deleted environment's ``snapshotter`` behind)."""
    try:
        first = shlex.split(program or "", posix=os.name != "nt")[0].strip('"')
    except (ValueError, IndexError):
        return False
    if not (os.path.isfile(first) and os.access(first, os.X_OK)):
        return False
    interpreter = _interpreter_of(first)
    return interpreter is None or (os.path.isfile(interpreter) and os.access(interpreter, os.X_OK))


def _interpreter_of(script: str) -> str | None:
    """The program a ``#!`` script names (for pip's ``/bin/sh`` trampoline, used
    where the path is too long for ``#!``, the Python it ``exec``s); None for a
    binary, or a file that cannot be read."""
    try:
        head = fsutil.read_side_file(script, cap=1 << 16)[:4096]
    except OSError:
        return None  # a binary larger than a script is; or unreadable: the exec check above stands
    if not head.startswith(b"#!"):
        return None
    lines = head.decode("utf-8", "replace").splitlines()
    words = lines[0][2:].split()
    if not words:
        return None
    if os.path.basename(words[0]) == "sh" and len(lines) > 1 and lines[1].startswith("'''exec' "):
        try:
            return shlex.split(lines[1][len("'''exec' ") :])[0]
        except (ValueError, IndexError):
            return words[0]
    return words[0]
