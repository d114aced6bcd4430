"""PyInstaller hook for ``isal.isal_zlib``, the ISA-L compressor behind the ``fast`` extra.

The extension imports these from C when it loads (``PyInit_isal_zlib``), where
PyInstaller cannot see them. Without them ``from isal import isal_zlib`` raises
ImportError in the frozen app and ``snapshotter.engine.gitstore.deflate`` falls back to zlib.
This hook runs only when ``isal.isal_zlib`` is bundled, so builds without the
``fast`` extra are untouched.
"""

hiddenimports = [
    "isal.igzip_lib",  # its ``error`` becomes ``isal_zlib.error``
    "gzip",  # some isal releases take ``gzip.BadGzipFile`` at load time
]
