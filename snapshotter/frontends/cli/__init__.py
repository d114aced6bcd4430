"""The command line: its grammar, a module per family of commands, what is printed, exit codes, settings.
The other front ends reuse its commands and printing; it must not know how a snapshot is taken (public API only)."""
