"""The agent hooks: each agent CLI's conventions, installing their settings, a hook event -> turns and tool calls.
The call itself starts in ../hookclient.py, which loads as little as it can and fails open; no engine insides here."""
