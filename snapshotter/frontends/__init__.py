"""The front ends, one folder each: cli/ (the command line), hooks/ (the agent hooks), page/ (``snapshotter ui``),
mcp/ (the MCP server), watch/ (the watch server), shared/ (what all use); entry.py and hookclient.py start a call."""
