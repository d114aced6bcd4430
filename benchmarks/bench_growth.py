"""How snapshotter's time and memory grow with the workspace, beside the git binary.

    python benchmarks/bench_growth.py                                  # 10k, 100k, 300k and 1M files; 3 runs
    python benchmarks/bench_growth.py --sizes 2000,5000 --runs 1       # a quick trial of the script
    python benchmarks/bench_growth.py --json growth.json --chart growth.png

The rows are bench_engine.py's (its workspaces, its git shadow, its settling
and turn-taking; this script imports them): cold snapshot, no-change snapshot,
snapshot with 10 changed, diff of 10 changed, the watch-mode no-change
snapshot when watchdog is installed, and the Python floor (a bare ``lstat``
walk, no git column: how the machine's cost per file grows). Every figure is the median of ``--runs``
runs; ratios are snapshotter / git. Each size is measured in a child process of
its own; after its timed rows, every one-shot operation runs once more in a
lone process of its own, whose peak RSS is reported beside the interpreter's.
The workspace caps are raised to fit each size. benchmarks/README.md says more.

This is a measurement, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_engine import (  # noqa: E402
    OPERATIONS,
    Bench,
    Workspace,
    environment,
    header_line,
    make_workspace,
    max_rss_mib,
    seconds,
    watch_open,
)

from snapshotter import Snapshotter  # noqa: E402
from snapshotter.options import DEFAULTS  # noqa: E402

ROWS = ("cold", "no_change", "changed_10", "diff_10", "watch_no_change", "walk")
"""``walk`` is bench_engine's Python floor (a bare ``scandir`` + ``lstat`` of
every file, no git column): how this machine's own cost per file grows."""
TARGETS_AT = "1000000"
TARGETS = {"cold": 0.5, "no_change": 1.5, "watch_no_change": 0.1}
"""Target ratios to git at 1,000,000 files (issue #20, item 3)."""
GROWTH_FROM = 100_000
"""No row may grow faster than linearly from here to the largest size."""
DEFAULT_SIZES = "10000,100000,300000,1000000"
LONE = {
    "interpreter": "Python, snapshotter and this script imported, nothing else",
    "cold": "cold snapshot into a fresh home",
    "no_change": "no-change snapshot",
    "changed_10": "snapshot, 10 files changed",
    "diff_10": "diff of 10 changed, with patches",
    "watch_no_change": "watch mode: start, first snapshot, then a no-change one",
}
"""What each lone process does; its peak RSS is the figure."""


def caps(ws: Workspace) -> dict[str, int]:
    """The workspace caps, raised explicitly to twice this workspace (never below the defaults)."""
    total = sum(p.stat().st_size for p in ws.paths)
    return {
        "max_workspace_entries": max(DEFAULTS.max_workspace_entries, 2 * len(ws.paths)),
        "max_workspace_bytes": max(DEFAULTS.max_workspace_bytes, 2 * total),
    }


class GrowthBench(Bench):
    """bench_engine's Bench with the caps raised, running only the growth rows."""

    def __init__(self, ws: Workspace, scratch: Path, runs: int) -> None:
        super().__init__(ws, scratch, runs)
        self.options.update(caps(ws))

    def run_all(self) -> None:
        self.measure("cold", self.cold)
        try:
            self.open_main()
        except Exception as exc:  # nothing else can run; keep the cold figures
            for key in ROWS[1:]:
                self.rows[key].status = "error"
                self.rows[key].note = f"opening the store failed: {type(exc).__name__}: {exc}"
            return
        self.measure("no_change", self.no_change)
        self.measure("changed_10", self.changed_10)
        self.measure("diff_10", self.diff_10)
        self.measure("walk", self.walk)
        self.watch(("watch_no_change",))


# -- lone processes: the peak RSS of one operation ------------------------------------------


def own_peak_rss_mib() -> float:
    """This process's peak RSS. On Linux ``ru_maxrss`` survives ``exec``: a child
    reads at least its parent's peak, so VmHWM (this address space's) is read instead."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return max_rss_mib(resource.RUSAGE_SELF)


def lone_run(op: str, ws: Path, home: Path, options: dict[str, Any], before: str) -> dict[str, Any]:
    """In a fresh process: do ``op`` once, return its time and this process's peak RSS."""
    started = time.perf_counter()
    if op == "watch_no_change":
        watcher, why = watch_open(ws, home=home, **options)
        if watcher is None:
            return {"status": "n/a", "note": why}
        with watcher:
            watcher.snapshot("watch start")
            started = time.perf_counter()
            watcher.snapshot()
    elif op != "interpreter":
        with Snapshotter(ws, home=home, **options) as snap:
            if op == "diff_10":
                for d in snap.diff(before):
                    _ = d.patch
            else:
                snap.snapshot(op)
    return {"status": "ok", "seconds": time.perf_counter() - started, "rss_mib": own_peak_rss_mib()}


def lone(op: str, ws: Path, home: Path, options: dict[str, Any], before: str = "") -> dict[str, Any]:
    """Run ``op`` in a child process of its own (this script with an internal flag)."""
    spec = {"op": op, "ws": str(ws), "home": str(home), "options": options, "before": before}
    command = [sys.executable, str(Path(__file__).resolve()), "--lone", json.dumps(spec)]
    child = subprocess.run(command, capture_output=True, text=True)
    if child.returncode != 0:
        note = (child.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  lone process, {LONE[op]}: failed: {note}", flush=True)
        return {"status": "error", "note": note}
    result: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    figure = f"{result['rss_mib']:.0f} MiB" if result["status"] == "ok" else f"{result['status']}: {result['note']}"
    print(f"  lone process, {LONE[op]}: {figure}", flush=True)
    return result


def lone_all(bench: GrowthBench) -> dict[str, dict[str, Any]]:
    """Each one-shot row once more in a lone process, on the settled store the rows left."""
    ws, rng = bench.ws, random.Random(3)
    options = {k: v for k, v in bench.options.items() if k != "retention"}  # the child adds the same retention

    def settle() -> str:
        time.sleep(1.1)  # every mtime past the racy window, then a snapshot that settles the stat cache
        with Snapshotter(ws.root, home=bench.home, **bench.options) as snap:
            return snap.snapshot("settle").id

    out = {"interpreter": lone("interpreter", ws.root, bench.home, options)}
    settle()
    out["no_change"] = lone("no_change", ws.root, bench.home, options)
    ws.edit(ws.pick(10, rng), rng)
    out["changed_10"] = lone("changed_10", ws.root, bench.home, options)
    before = settle()
    ws.edit(ws.pick(10, rng), rng)
    out["diff_10"] = lone("diff_10", ws.root, bench.home, options, before)
    out["watch_no_change"] = lone("watch_no_change", ws.root, bench.home, options)
    fresh = bench.scratch / "home-lone-cold"
    shutil.rmtree(fresh, ignore_errors=True)
    out["cold"] = lone("cold", ws.root, fresh, options)
    shutil.rmtree(fresh, ignore_errors=True)
    return out


# -- one size (in a child process) ---------------------------------------------------------


def measure_one(files: int, scratch: Path, runs: int, out: Path) -> None:
    scratch.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(f"[{files}] generating {files:,} files in {scratch} ...", flush=True)
    ws = make_workspace(str(files), scratch / "ws", 1)
    generated = time.perf_counter() - started
    total = sum(p.stat().st_size for p in ws.paths)
    time.sleep(1.1)  # let every mtime fall strictly before the first cache write (racy rule)
    bench = GrowthBench(ws, scratch, runs)
    bench.run_all()
    if bench.snap is not None:
        bench.snap.close()
        bench.snap = None
    lone_rss = lone_all(bench)
    result = {
        "name": str(files),
        "description": ws.describe(),
        "files": len(ws.paths),
        "bytes": total,
        "caps": {key: bench.options[key] for key in ("max_workspace_entries", "max_workspace_bytes")},
        "operations": {key: bench.rows[key].as_json(OPERATIONS[key]) for key in ROWS},
        "lone": lone_rss,
        "tree_mismatches": bench.tree_mismatches,
        "seconds_generating": generated,
        "seconds_total": time.perf_counter() - started,
        # The measuring process held the generated paths and every row: a ceiling, not the library's figure.
        "peak_rss_mib": {"snapshotter_process": own_peak_rss_mib()},
    }
    out.write_text(json.dumps(result, indent=2))


# -- the parent: one child per size, then the report ----------------------------------------


def growth(workspaces: list[dict[str, Any]], start: int | None = None) -> dict[str, dict[str, float | None]]:
    """Per row and side: (time at the largest / time at ``start``) / (files ratio); 1.0 is linear.
    ``start`` defaults to the smallest size; None when either figure is missing."""
    ordered = sorted(workspaces, key=lambda w: w["files"])
    last = ordered[-1]
    first = ordered[0] if start is None else next((w for w in ordered if w["files"] == start), None)
    factors: dict[str, dict[str, float | None]] = {}
    for key in ROWS:
        factors[key] = {}
        for side in ("snapshotter", "git"):
            factor = None
            if first is not None and last["files"] > first["files"]:
                a = first["operations"][key][f"{side}_median"]
                b = last["operations"][key][f"{side}_median"]
                if a and b:
                    factor = (b / a) / (last["files"] / first["files"])
            factors[key][side] = factor
    return factors


def print_table(result: dict[str, Any], runs: int) -> None:
    with_target = result["name"] == TARGETS_AT
    print(f"\n{result['description']} ({result['bytes'] / 2**20:,.0f} MiB), median of {runs} run{'s' * (runs != 1)}")
    header = f"{'operation':<36} {'snapshotter':>12} {'git':>10} {'ratio':>7} {'RSS MiB':>8}"
    print(header + (f" {'target':>7}" if with_target else ""))
    for key in ROWS:
        row, solo = result["operations"][key], result["lone"].get(key, {})
        rss = f"{solo['rss_mib']:.0f}" if solo.get("status") == "ok" else "-"
        if row["status"] != "ok":
            line = f"{row['label']:<36} {row['status']:>12} {'':>10} {'':>7} {rss:>8}"
        else:
            ratio = f"{row['ratio']:.2f}" if row["ratio"] is not None else "-"
            line = f"{row['label']:<36} {seconds(row['snapshotter_median']):>12} {seconds(row['git_median']):>10}"
            line += f" {ratio:>7} {rss:>8}"
        if with_target:
            line += f" {TARGETS[key]:>7.2f}" if key in TARGETS else f" {'':>7}"
        print(line)
    base = result["lone"]["interpreter"]
    base_text = f"{base['rss_mib']:.0f} MiB" if base.get("status") == "ok" else base.get("status", "-")
    print(
        f"RSS: peak of a lone process doing the row once; the interpreter with the imports: {base_text}; "
        f"the whole measuring process: {result['peak_rss_mib']['snapshotter_process']:.0f} MiB"
    )
    for key in ROWS:
        row, solo = result["operations"][key], result["lone"].get(key, {})
        if row["note"]:
            print(f"  {row['label']}: {row['status']}: {row['note']}")
        if key in LONE and solo.get("status") != "ok":
            print(f"  {row['label']}, lone process: {solo.get('status')}: {solo.get('note')}")
    for mismatch in result["tree_mismatches"]:
        print(f"  tree ids differ: {mismatch}")


def print_growth(report: dict[str, Any]) -> None:
    sizes = sorted(w["files"] for w in report["workspaces"])
    if len(sizes) < 2:
        return
    spans = [(None, report["growth"])]
    if GROWTH_FROM in sizes and sizes[-1] > GROWTH_FROM and sizes[0] != GROWTH_FROM:
        spans.append((GROWTH_FROM, report["growth_from_100k"]))
    for start, factors in spans:
        low = sizes[0] if start is None else start
        print(f"\ngrowth from {low:,} to {sizes[-1]:,} files relative to linear (1.00 = linear, above = faster)")
        print(f"{'operation':<36} {'snapshotter':>12} {'git':>10}")
        for key in ROWS:
            cells = [f"{v:.2f}" if v is not None else "-" for v in factors[key].values()]
            print(f"{OPERATIONS[key]:<36} {cells[0]:>12} {cells[1]:>10}")


def draw_chart(report: dict[str, Any], path: str) -> None:
    """Time per row against files (log-log, both sides), and peak RSS against files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

    workspaces = sorted(report["workspaces"], key=lambda w: w["files"])
    files = [w["files"] for w in workspaces]
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 8))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, key in enumerate(ROWS):
        colour = colours[i % len(colours)]
        for side, style, marker in (("snapshotter", "-", "o"), ("git", "--", "x")):
            points = [(n, w["operations"][key][f"{side}_median"]) for n, w in zip(files, workspaces)]
            points = [(n, t) for n, t in points if t]
            if points:
                label = f"{OPERATIONS[key]} ({side})"
                left.plot(*zip(*points), style, marker=marker, color=colour, label=label)
        solo = [(n, w["lone"].get(key, {})) for n, w in zip(files, workspaces)]
        points = [(n, s["rss_mib"]) for n, s in solo if s.get("status") == "ok"]
        if points:
            right.plot(*zip(*points), "-", marker="o", color=colour, label=f"lone: {OPERATIONS[key]}")
    base = [(n, w["lone"]["interpreter"].get("rss_mib")) for n, w in zip(files, workspaces)]
    base = [(n, r) for n, r in base if r]
    if base:
        right.plot(*zip(*base), ":", color="grey", label="interpreter and imports")
    whole = [(n, w["peak_rss_mib"]["snapshotter_process"]) for n, w in zip(files, workspaces)]
    right.plot(*zip(*whole), "--", color="black", label="whole measuring process")
    cold = [(n, w["operations"]["cold"]["snapshotter_median"]) for n, w in zip(files, workspaces)]
    cold = [(n, t) for n, t in cold if t]
    if len(files) > 1 and cold:
        n0, t0 = cold[0]
        left.plot(files, [t0 * n / n0 for n in files], ":", color="grey", label="linear (through the first cold)")
    for ax, ylabel in ((left, "median seconds"), (right, "peak RSS, MiB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("files in the workspace")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", linewidth=0.3)
        ax.xaxis.set_major_locator(FixedLocator(files))  # a tick per measured size
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
    left.set_title("time per operation (solid: snapshotter, dashed: git)", fontsize=9)
    right.set_title("peak RSS of a lone snapshotter process per operation", fontsize=9)
    versions = report["versions"]
    fig.suptitle(
        f"growth beside git {versions['git']}, median of {report['runs']}; {report['date'][:10]}, "
        f"{report['machine']['cores']} cores, Python {versions['python']}, snapshotter {versions['snapshotter']}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_sizes(text: str) -> list[int]:
    sizes = []
    for token in (t.strip() for t in text.split(",")):
        if token.isdigit() and int(token) > 0:
            sizes.append(int(token))
        elif token:
            raise SystemExit(f"--sizes takes file counts, comma-separated; not {token!r}")
    return sorted(set(sizes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help=f"file counts to measure (default {DEFAULT_SIZES})")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is reported (default 3)")
    parser.add_argument("--json", help="also write every raw time, median, ratio and RSS to this file")
    parser.add_argument("--chart", help="also draw time and RSS against files as a PNG (needs matplotlib)")
    parser.add_argument("--scratch", help="folder for workspaces and stores (default: a temp folder, removed after)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure this size in this process
    parser.add_argument("--out", help=argparse.SUPPRESS)  # internal: where that child writes its results
    parser.add_argument("--lone", help=argparse.SUPPRESS)  # internal: one operation in a lone process
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")

    if args.lone:
        from snapshotter import Retention

        spec = json.loads(args.lone)
        options = dict(spec["options"], retention=Retention(max_store_bytes=None))
        print(json.dumps(lone_run(spec["op"], Path(spec["ws"]), Path(spec["home"]), options, spec["before"])))
        return
    if args.one:
        measure_one(int(args.one), Path(args.scratch), args.runs, Path(args.out))
        return

    sizes = parse_sizes(args.sizes)
    if not sizes:
        raise SystemExit("--sizes is empty")
    if args.chart:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise SystemExit("--chart needs matplotlib: pip install matplotlib") from None
    if shutil.which("git") is None:
        raise SystemExit("git is needed on PATH for the side-by-side figures")
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="snapgrowth-")).resolve()
    report = environment(args.runs)
    report.update(targets_at=TARGETS_AT, targets=TARGETS, sizes=sizes, workspaces=[])
    failed = []
    print(header_line(report), flush=True)
    for files in sizes:
        out = scratch / f"growth-{files}.json"
        out.unlink(missing_ok=True)
        command = [sys.executable, str(Path(__file__).resolve()), "--one", str(files), "--out", str(out)]
        command += ["--runs", str(args.runs), "--scratch", str(scratch / str(files))]
        child = subprocess.run(command)
        if child.returncode != 0 or not out.exists():
            print(f"[{files}] failed (exit {child.returncode}); going on with the next size", flush=True)
            failed.append(str(files))
            continue
        result = json.loads(out.read_text())
        report["workspaces"].append(result)
        print_table(result, args.runs)
        report["growth"] = growth(report["workspaces"])
        report["growth_from_100k"] = growth(report["workspaces"], GROWTH_FROM)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2))
        if not args.scratch:
            shutil.rmtree(scratch / str(files), ignore_errors=True)
    if report["workspaces"]:
        print_growth(report)
    if args.chart and report["workspaces"]:
        draw_chart(report, args.chart)
        print(f"\nchart: {args.chart}")
    if args.json:
        print(f"figures: {args.json}")
    if not args.scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
