"""How soon the first screen of ``snapshotter ui`` is ready on a long history:
5,000 snapshots of a 100,000-file folder, in three sessions with turns.

    python benchmarks/bench_ui.py                       # 100,000 files, 5,000 snapshots, 5 runs
    python benchmarks/bench_ui.py --files 20000 --snapshots 1000 --runs 3 --json out.json

Rows, each timed in a fresh server (a new process: nothing cached):

- ``server ready``: ``snapshotter ui`` started until it prints its URL;
- ``first screen, HTTP``: the requests the first screen makes (the page, its
  script and style, the newest 100 snapshots), one after another, from a
  client in this process;
- ``first screen, browser``: headless Chromium (selenium, Debian's
  ``chromium`` and ``chromium-driver``) from navigation until the page has drawn
  its lanes; left out where they are missing;
- ``git log -100 --shortstat``: git listing the newest 100 snapshot commits
  of the same store with their counts, for scale (git has no such page).

The page asks for 100 snapshots at a time, never the whole history; the
target (issue #33) is a first screen under one second. Building the history
takes a few minutes (watch mode records each snapshot in milliseconds). This
is a measurement, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import generated_workspace  # noqa: E402

from snapshotter import Retention, Snapshotter  # noqa: E402

SESSIONS = ("claude-code-5e551011", "codex-5e551012")


def build(files: int, snapshots: int) -> tuple[Path, Path, Path]:
    scratch, ws, paths = generated_workspace("bench-ui-", files)
    home = scratch / "home"
    started = time.perf_counter()
    with Snapshotter(ws, home=home, watch=True, retention=Retention.unlimited()) as snap:
        snap.snapshot("first")
        made = 1
        turn = 0
        while made < snapshots:
            turn += 1
            session = snap.in_session(SESSIONS[turn % 2]) if turn % 3 else snap
            agent = {"agent": SESSIONS[turn % 2].split("-")[0]}
            if session is snap:
                _edit(paths[turn % len(paths)], turn)
                snap.snapshot(f"a person's edit {turn}")
                made += 1
                continue
            session.begin_turn(f"turn {turn}: tidy {paths[turn % len(paths)].name}", metadata=agent)
            for call in range(3):
                session.tool_snapshot(f"call-{turn}-{call}", metadata=agent)
                _edit(paths[(turn * 7 + call) % len(paths)], turn)
                session.tool_done(f"call-{turn}-{call}", metadata=agent)
            session.end_turn(metadata=agent)
            made += 8
            if made % 500 < 8:
                print(f"  {made:,} snapshots, {time.perf_counter() - started:.0f} s", flush=True)
    return scratch, ws, home


def _edit(path: Path, turn: int) -> None:
    with open(path, "a") as handle:
        handle.write(f"edited in turn {turn}\n")


def start_server(ws: Path, home: Path) -> tuple[subprocess.Popen[str], str, float]:
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "snapshotter", "-C", str(ws), "--home", str(home), "ui"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    ready = time.perf_counter() - started
    if "http://" not in line:
        server.kill()
        raise SystemExit(f"the server did not start: {line}{server.stderr.read() if server.stderr else ''}")
    return server, line.split()[-1], ready


def first_screen_http(url: str) -> float:
    base, token = url.split("/?token=")
    started = time.perf_counter()
    for path in ("/", "/page.js", "/page.css", "/api/log?skip=0&limit=100"):
        query = f"{'&' if '?' in path else '?'}token={token}"
        with urllib.request.urlopen(base + path + query) as answer:
            answer.read()
    return time.perf_counter() - started


def browser() -> Any:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        return None
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or ""
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1400,900",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or ""), options=options)


def first_screen_browser(driver: Any, url: str) -> float:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get(url)
    WebDriverWait(driver, 30, poll_frequency=0.05).until(
        lambda d: d.execute_script("return document.body.dataset.ready === '1'")
    )
    return float(driver.execute_script("return document.body.dataset.readyAt")) / 1000  # the page's own clock


def git_log(store: str) -> float:
    newest = subprocess.run(
        [
            "git",
            "--git-dir",
            store,
            "for-each-ref",
            "--sort=-creatordate",
            "--count=1",
            "--format=%(objectname)",
            "refs/snapshots/",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    started = time.perf_counter()
    subprocess.run(["git", "--git-dir", store, "log", "-100", "--shortstat", newest], capture_output=True, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--snapshots", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    scratch, ws, home = build(args.files, args.snapshots)
    rows: dict[str, list[float]] = {
        "server ready": [],
        "first screen, HTTP": [],
        "first screen, browser": [],
        "git log -100 --shortstat": [],
    }
    driver = browser()
    try:
        with Snapshotter(ws, home=home) as snap:
            store, count = snap.store_path, snap.store_stats().snapshots
        print(f"{count:,} snapshots of {args.files:,} files; store {store}")
        for _ in range(args.runs):
            server, url, ready = start_server(ws, home)
            try:
                rows["server ready"].append(ready)
                rows["first screen, HTTP"].append(first_screen_http(url))
                if driver is not None:
                    server.kill()
                    server.wait()
                    server, url, _ = start_server(ws, home)
                    rows["first screen, browser"].append(first_screen_browser(driver, url))
            finally:
                server.kill()
                server.wait()
            if shutil.which("git"):
                rows["git log -100 --shortstat"].append(git_log(store))
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(scratch, ignore_errors=True)
    figures = {name: {"median": statistics.median(v), "min": min(v), "max": max(v)} for name, v in rows.items() if v}
    for name, figure in figures.items():
        print(f"{name:<28} median {figure['median']:.3f} s  (min {figure['min']:.3f}, max {figure['max']:.3f})")
    if args.json:
        Path(args.json).write_text(json.dumps({"files": args.files, "snapshots": count, "rows": figures}, indent=1))


if __name__ == "__main__":
    main()
