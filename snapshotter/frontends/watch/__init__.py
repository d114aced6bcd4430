"""The watch server (``snapshotter watch``) and what it shares with the command line: the wire protocol, and the relay
that hands a command line to a running watcher. Must not know the engine beyond the public API."""
