"""What every front end shares: settings (config, user files), the command grammar, printing and JSON, exit
codes, and the wire a hook call or a relayed command takes to a running watcher. Knows no front end."""
