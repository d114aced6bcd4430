"""The facade: the Snapshotter class, how every call runs, argument checks, guard, background calls, when upkeep runs.
Knows the history, the remote side and the engine below; must not know the front ends or how a folder is walked."""
