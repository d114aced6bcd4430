"""The watch server (``snapshotter watch``, and the watcher a hook starts) and the relay that hands a command line to
it. It records hook events through hooks/; the wire it speaks is in shared/. Must not know the engine's insides."""
