"""The command line: a module per family of commands, and the dispatch that hands ``ui``, ``mcp``, ``watch`` and
``hooks`` to their folders. Its grammar, printing and settings are in shared/; it must not know the engine."""
