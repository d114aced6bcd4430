"""Where the ``snapshotter`` command starts (and ``python -m snapshotter``): an
agent hook call (``snapshotter hook AGENT EVENT``) goes straight to
``hookclient``, before the grammar or anything else is imported, since an
agent pays for it on every tool call; everything else to ``cli``.

Ctrl-C ends a command with exit code 130 and one line, whenever it lands:
while the command line imports what it runs (a second or more on a cold
cache), while it works, or while it unwinds; never with a traceback."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not ``typing``'s: every hook call pays for this module's imports
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line: ``argv``, or (``None``) this program's own, and then
    this process is the command's: its garbage collection is timed for a
    command line (``collecting``), and it leaves as soon as it is done (``_leave``)."""
    if argv is not None:
        return _main(list(argv))
    from snapshotter.frontends.shared import collecting

    collecting.hold()
    try:
        code = _main(sys.argv[1:])
    finally:
        collecting.end()
    _leave(code)
    return code  # only where ``os._exit`` is not there to call


def _leave(code: int) -> None:
    """Leave the process without the interpreter's finalization, which tears down
    every module and what it holds only for the system to take the memory back
    (25-30 ms after a snapshot of 100,000 files, measured from outside). First what
    finalization does that matters: wait for the threads that are not daemons
    (``threading._shutdown``, as the interpreter does, which first tells thread
    pools to stop), run the ``atexit`` handlers (weakref finalizers close the
    store; logging flushes) and flush the output. A command that raised leaves
    the usual way, with the interpreter's report, and so does one run under a
    profiler or a tracer (``python -m cProfile``, a debugger), which reports after."""
    import atexit
    import os
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None or not hasattr(atexit, "_run_exitfuncs"):
        return
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return
    shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone (the pipe was flushed before: ``cli.main``), a closed stream
            pass
    os._exit(code)


def _main(words: list[str]) -> int:
    if words[:1] == ["hook"]:
        from snapshotter.frontends import hookclient

        return hookclient.main(words[1:])
    try:
        from snapshotter.frontends.cli import cli

        code = cli.main(words)  # says itself that Ctrl-C stopped a command it was running
    except KeyboardInterrupt:  # while importing, or outside the command's own handling
        _say_interrupted()
        code = _EXIT_INTERRUPTED
    if code == _EXIT_INTERRUPTED:
        _ignore_ctrl_c()
    return code


_EXIT_INTERRUPTED = 130  # ``failures.EXIT_INTERRUPTED``: not imported, a Ctrl-C may land in that import


def _say_interrupted() -> None:
    try:
        sys.stderr.write("snapshotter: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _ignore_ctrl_c() -> None:
    """Ignore any further Ctrl-C while the interpreter exits: closing the store
    at exit must not be cut short into a traceback."""
    import signal

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):  # not the main thread (a command run inside another program)
        pass
