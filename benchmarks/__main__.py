"""`python -m benchmarks [--only api,metering,caches,analytics,pipeline,sentiment,versions]`: one table, also written as JSON."""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks.analytics import analytics_section
from benchmarks.caches import caches_section
from benchmarks.figures import Figure, markdown, read_json, table, write_json
from benchmarks.load import wrk_available
from benchmarks.pipeline import (
    END_DATE,
    EXECUTORS_SIZE,
    INCREMENTAL_SIZE,
    SIZES,
    pipeline_section,
)
from benchmarks.point_in_time import SIZES as RETENTION_SIZES
from benchmarks.sentiment import sentiment_section
from benchmarks.serving import (
    METERING_CONNECTIONS,
    METERING_WORKERS,
    LoadPlan,
    Workspace,
    api_section,
    metering_section,
)
from benchmarks.versions import versions_section

SECTIONS = ("analytics", "api", "metering", "caches", "pipeline", "sentiment", "versions")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--seconds", type=float, default=8.0, help="load duration per route")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up load per route (s)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved load rounds; best kept")
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--workers", type=int, default=1, help="server workers (mi serve's)")
    parser.add_argument("--server", choices=["granian", "uvicorn"], default="granian")
    parser.add_argument(
        "--metering-connections",
        default=",".join(map(str, METERING_CONNECTIONS)),
        help="metering section: connection counts (comma-separated), each on every worker count",
    )
    parser.add_argument(
        "--metering-workers",
        default=",".join(map(str, METERING_WORKERS)),
        help="metering section: worker counts (comma-separated)",
    )
    parser.add_argument("--tool", choices=["auto", "wrk", "python"], default="auto")
    parser.add_argument(
        "--api-metering",
        choices=["sqlite", "off"],
        default="sqlite",
        help="api section: metered on SQLite (default) or MI_METERING_URL=off (the route path alone)",
    )
    parser.add_argument("--symbols", type=int, default=1000, help="scaled universe: symbols")
    parser.add_argument("--days", type=int, default=1600, help="scaled universe: days")
    parser.add_argument("--repeats", type=int, default=3, help="indicator ratio: median of")
    parser.add_argument(
        "--data-dir", type=Path, help="a materialized data dir to reuse (default: a fresh one)"
    )
    parser.add_argument("--no-embedded", action="store_true", help="skip embedded analytics")
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, SIZES)),
        help="pipeline: instruments of each full materialization (comma-separated)",
    )
    parser.add_argument(
        "--incremental",
        type=int,
        default=INCREMENTAL_SIZE,
        help="pipeline: instruments of the incremental daily run (0: none)",
    )
    parser.add_argument(
        "--executors",
        type=int,
        default=EXECUTORS_SIZE,
        help="pipeline: instruments of the executors' comparison (0: none)",
    )
    parser.add_argument(
        "--end-date",
        type=date.fromisoformat,
        default=END_DATE,
        help="pipeline: MI_END_DATE of the full runs",
    )
    parser.add_argument(
        "--retention-sizes",
        default=",".join(map(str, RETENTION_SIZES)),
        help="versions: instruments of each day-of-retention figure (serving and expiry at 5000)",
    )
    parser.add_argument("--out", type=Path, default=Path("data/bench"), help="JSON directory")
    parser.add_argument(
        "--markdown", type=Path, metavar="JSON", help="print a written run as Markdown and exit"
    )
    args = parser.parse_args(argv)
    args.sections = [s.strip() for s in args.only.split(",") if s.strip()]
    args.sizes = [int(n) for n in args.sizes.split(",") if n.strip()]
    args.retention_sizes = tuple(int(n) for n in args.retention_sizes.split(",") if n.strip())
    args.metering_connections = tuple(int(n) for n in args.metering_connections.split(","))
    args.metering_workers = tuple(int(n) for n in args.metering_workers.split(","))
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    return args


def _plan(args: argparse.Namespace) -> LoadPlan:
    tool = args.tool
    if tool == "auto":
        tool = "wrk" if wrk_available() else "python"
        if tool == "python":
            print("  wrk not found (apt-get install -y wrk): using the asyncio/httpx loader, "
                  "which saturates before the server does", file=sys.stderr)  # fmt: skip
    return LoadPlan(
        args.connections,
        args.seconds,
        args.warmup,
        args.rounds,
        args.workers,
        args.server,
        tool,
        args.api_metering,
        args.metering_connections,
        args.metering_workers,
    )


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run(args: argparse.Namespace, scratch: Path) -> tuple[list[Figure], dict[str, Any]]:
    plan = _plan(args)
    workspace = Workspace(scratch, args.data_dir or scratch / "data")
    log = scratch / "servers.log"
    sections: dict[str, Callable[[], list[Figure]]] = {
        "analytics": lambda: analytics_section(
            None if args.no_embedded else workspace.ready() / "warehouse",
            args.symbols,
            args.days,
            args.repeats,
        ),
        "api": lambda: api_section(workspace, plan, log),
        "metering": lambda: metering_section(workspace, plan, log),
        "caches": lambda: caches_section(workspace.ready()),
        "pipeline": lambda: pipeline_section(
            scratch,
            args.out,
            args.sizes,
            args.incremental or None,
            args.end_date,
            args.executors or None,
        ),
        "sentiment": sentiment_section,
        "versions": lambda: versions_section(scratch, retention_sizes=args.retention_sizes),
    }
    info: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "loadavg_start": _loadavg(),
        "load_tool": plan.tool,
        "connections": plan.connections,
        "seconds_per_route": plan.seconds,
        "rounds": plan.rounds,
        "workers": plan.workers,
        "server": plan.server,
        "scaled_universe": [args.symbols, args.days],
        "pipeline": {
            "sizes": args.sizes,
            "incremental": args.incremental,
            "executors": args.executors,
            "end_date": args.end_date.isoformat(),
        },
        "section_seconds": {},
    }
    figures: list[Figure] = []
    for name in (s for s in SECTIONS if s in args.sections):
        print(f"[{name}]", flush=True)
        start = time.perf_counter()
        figures += sections[name]()
        info["section_seconds"][name] = round(time.perf_counter() - start, 1)
    info["loadavg_end"] = _loadavg()
    return figures, info


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.markdown:
        figures, info = read_json(args.markdown)
        print(markdown(figures))
        print(f"\nMeasured {info['started']}, load average at start {info['loadavg_start']}.")
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="mi-bench-"))
    try:
        figures, info = run(args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    path = args.out / f"{time.strftime('%Y%m%dT%H%M%S')}.json"
    write_json(path, figures, info)
    print()
    print(table(figures))
    load = ", ".join(f"{x:.2f}" for x in info["loadavg_start"])
    print(
        f"\n{info['load_tool']}, {info['connections']} connections, {info['workers']} "
        f"{info['server']} worker(s); load average at start {load}; JSON: {path}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
