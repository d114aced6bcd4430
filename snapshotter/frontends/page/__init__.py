"""The local page (``snapshotter ui``): HTTP on 127.0.0.1, each request a fixed command line, its html/js/css.
Owns the page's checks (token, host, origin); must not know the engine: every answer is a command's JSON."""
