"""The page of ``snapshotter ui`` is package data (read with importlib.resources), which PyInstaller does not follow."""

from PyInstaller.utils.hooks import collect_data_files

datas = collect_data_files("snapshotter.frontends.page", includes=["*.html", "*.js", "*.css"])
