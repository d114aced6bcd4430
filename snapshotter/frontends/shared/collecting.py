"""When a ``snapshotter`` process lets Python's cyclic garbage collector run (issue #51).

The collector runs after every 700 net allocations, and every object that
importing a module makes (its functions, classes, code, constants) lives as
long as the process. A command imports about a hundred modules before it does
anything, so the collections meanwhile traverse ever more objects and free
none: about 5 ms of a 60 ms ``log``. At exit the interpreter collects
everything once more, only to give back memory the system takes back anyway:
about 8 ms more.

So the process's entry (``entry``, ``hookclient``), and only when it runs as
the program, holds collections off (:func:`hold`) until the command begins its
work (:func:`begin`): what exists then moves to the permanent generation
(``gc.freeze``: never traversed again, never freed, as it would not have been)
and collections run as usual from there, through every walk, restore and
server. As the process exits (:func:`end`) what exists is frozen again, so the
last collections traverse nothing; ``atexit`` handlers and ``weakref``
finalizers (which close the store) run all the same. A command run inside
another program (a test, a watcher serving a command for another process)
never calls :func:`hold` or :func:`end`: nothing changes for it.
"""

from __future__ import annotations

import gc

_held = False


def hold() -> None:
    """No collection until :func:`begin` (the process's entry, as it starts)."""
    global _held
    if gc.isenabled() and not _held:
        gc.disable()
        _held = True


def begin() -> None:
    """The command's work begins: collections run again, over what is made from now on.
    Also before a fork whose child lives on (a watcher), so the child collects."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()


def end() -> None:
    """The process is about to exit: its last collections need traverse nothing."""
    begin()
    gc.freeze()
