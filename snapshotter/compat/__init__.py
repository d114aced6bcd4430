"""Drop-in replacements for the git-based snapshot classes of other libraries.

Switch by changing one import; no git binary or git repository is needed, and
the replacements keep ignored files and never touch the user's own ``.git``:

- :mod:`snapshotter.compat.praisonai`: ``FileSnapshot`` (praisonaiagents.snapshot)
- :mod:`snapshotter.compat.qwed`: ``StateGuard`` (qwed_new.guards.state_guard)
"""
