"""Point-in-time rows of the versions section: what retained versions cost, warehouse on a disk.

For each size: a first load (`mi materialize`), then one news refresh (a day of news) and one
daily run (the next day), each a new version; the bytes of the served files each version added
plus its record are what retaining it costs (docs/warehouse.md, "Versions and retention").

At the largest size, then:
- 200 more versions, each naming every served file anew (hard links under new names: the bytes
  are shared, but to the reader each is a version whose every table changed, the most a version
  can cost it to open), committed through `Warehouse.commit` like any run's;
- `mi serve` (one worker, metering off) asked list-symbols `as_of` each of them once, in turn:
  the first answer of a version not open yet (p99), and the worker's RSS after 10 and after 200;
- a warm past version's rate against the current version's (`as_of` of an open version, in
  interleaved rounds, best kept);
- 90 days of versions (96 a day for the last 7, two a day before, as the news and daily jobs
  leave them), committed on a moved clock, then one expiry: its seconds.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from benchmarks.figures import Figure, Goal
from benchmarks.load import LoadResult, run_load
from benchmarks.pipeline import END_DATE, RUN_TIMEOUT
from benchmarks.servers import free_port, mi, mi_serve_command, serving
from benchmarks.threads import process_tree, rss_mib
from pipelines.catalog import TABLES, Manifest, PartitionFile, read_manifest
from pipelines.catalog.versions import Retention, published_at, record_path
from pipelines.warehouse.commits import TableWrite
from pipelines.warehouse.store import Warehouse

SIZES = (50, 5000)
SERVED_SIZE = 5000
"""The size the serving and expiry figures are measured at (the others give a day's bytes only)."""
ROUTE = "/api/v2/crypto/instruments/list-symbols"
FANNED = 200
"""Versions the reader is asked for once each."""
REFRESHES_A_DAY = 96
COLD_GOAL = Goal("project", "<", 50.0)
WARM_GOAL = Goal("ratio", ">=", 0.9)
RSS_GOAL = Goal("ratio", "<=", 1.1)
ROUNDS = 2
SECONDS = 6.0


def point_in_time_figures(scratch: Path, sizes: tuple[int, ...] = SIZES) -> list[Figure]:
    figures: list[Figure] = []
    for size in sizes:
        data_dir = scratch / f"point-in-time-{size}"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MI_")},
            "MI_DATA_DIR": str(data_dir),
            "MI_END_DATE": END_DATE.isoformat(),
            "MI_INSTRUMENTS": str(size),
            "MI_METERING_URL": "off",
        }
        try:
            mi(["materialize"], env, timeout=RUN_TIMEOUT)
            figures += day_figures(data_dir, env, size)
            if size == SERVED_SIZE:
                figures += served_figures(data_dir, env, size)
                figures.append(expiry_figure(data_dir, size))
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
    return figures


def day_figures(data_dir: Path, env: Mapping[str, str], size: int) -> list[Figure]:
    """Bytes a news refresh's version and a daily run's version add, and a day of them."""
    root = data_dir / "warehouse"
    first = _manifest(root)
    next_day = (END_DATE + timedelta(days=1)).isoformat()
    mi(["materialize", "--job", "news"], {**env, "MI_END_DATE": next_day}, timeout=RUN_TIMEOUT)
    news = _manifest(root)
    mi(["materialize", "--job", "daily"], {**env, "MI_END_DATE": next_day}, timeout=RUN_TIMEOUT)
    daily = _manifest(root)
    news_bytes, daily_bytes = _added(root, first, news), _added(root, news, daily)
    day = daily_bytes + REFRESHES_A_DAY * news_bytes
    print(
        f"  {size:,} instruments: a news version adds {news_bytes:,} bytes, a daily version "
        f"{daily_bytes:,}; a day at most {day:,}",
        flush=True,
    )
    details = {
        "news_version_bytes": news_bytes,
        "daily_version_bytes": daily_bytes,
        "refreshes_a_day": REFRESHES_A_DAY,
        "beyond_the_window_a_day_bytes": daily_bytes + news_bytes,
    }
    return [
        Figure(
            "versions",
            f"versions: a day of retention at most (daily run + 96 news refreshes), {size:,} instruments",
            "bytes",
            day,
            details=details,
        ),
    ]


def served_figures(data_dir: Path, env: Mapping[str, str], size: int) -> list[Figure]:
    root = data_dir / "warehouse"
    versions = fan_out(Warehouse(root), FANNED)
    port = free_port()
    log = data_dir / "serve.log"
    with serving(mi_serve_command(port, 1, "granian"), env, port, ROUTE, log) as server:
        (worker,) = [pid for pid in process_tree(server.process.pid) if pid != server.process.pid]
        cold: list[float] = []
        rss: dict[int, float] = {}
        with httpx.Client(base_url=server.base, timeout=60) as client:
            client.get(ROUTE).raise_for_status()
            for number, version in enumerate(versions, start=1):
                started = time.perf_counter()
                client.get(ROUTE, params={"as_of": str(version)}).raise_for_status()
                cold.append((time.perf_counter() - started) * 1000)
                if number in (10, FANNED):
                    rss[number] = rss_mib(worker)
        warm = f"{ROUTE}?as_of={versions[-1]}"
        current: list[LoadResult] = []
        past: list[LoadResult] = []
        for _ in range(ROUNDS):
            current.append(run_load(server.base, [ROUTE], {}, 10, SECONDS))
            past.append(run_load(server.base, [warm], {}, 10, SECONDS))
    cold.sort()
    p99 = cold[int(len(cold) * 0.99) - 1]
    best_current = max(r.rps for r in current)
    best_past = max(r.rps for r in past)
    label = f"{size:,} instruments"
    print(
        f"  {label}: as_of first answer p99 {p99:.1f} ms (median {cold[len(cold) // 2]:.1f}); "
        f"warm {best_past:,.0f} against current {best_current:,.0f} requests/s; RSS {rss}",
        flush=True,
    )
    return [
        Figure(
            "versions",
            f"versions: as_of first answer of a version not open, p99, {label}",
            "ms",
            round(p99, 1),
            goal=COLD_GOAL,
            details={
                "median_ms": round(cold[len(cold) // 2], 1),
                "max_ms": round(cold[-1], 1),
                "versions": len(cold),
            },
        ),
        Figure(
            "versions",
            f"versions: warm past version, list-symbols rate, {label}",
            "requests/s",
            round(best_past),
            round(best_current),
            "the current version's rate",
            WARM_GOAL,
        ),
        Figure(
            "versions",
            f"versions: worker RSS after {FANNED} as_of versions, {label}",
            "MiB",
            round(rss[FANNED]),
            round(rss[10]),
            "after 10",
            RSS_GOAL,
        ),
    ]


def fan_out(warehouse: Warehouse, count: int) -> list[int]:
    """`count` versions, each naming every served file of the current one under a new name (a
    hard link: no bytes copied), committed one by one; their version ids."""
    versions = []
    for number in range(count):
        manifest = _manifest(warehouse.root)
        writes = []
        for name in TABLES:
            for market in manifest.markets(name):
                parts = manifest.partitions(name, market)
                linked = {key: _linked(warehouse.root, entry) for key, entry in parts.items()}
                writes.append(TableWrite(name, market, linked))
        versions.append(warehouse.commit(writes, run_id=f"fan-out-{number}").version)
    return versions


def expiry_figure(data_dir: Path, size: int) -> Figure:
    """90 days of versions on a moved clock (the news tables' files linked anew in each), then
    one expiry."""
    root = data_dir / "warehouse"
    start = published_at(_manifest(root).updated_at) + timedelta(seconds=1)
    at = [start]
    warehouse = Warehouse(root, duckdb_path=None, clock=lambda: at[0])
    news_tables = [name for name in TABLES if name in ("raw_news", "briefs", "sentiment_daily")]
    commits = 0
    for day in range(90):
        times = REFRESHES_A_DAY if day >= 83 else 2
        for slot in range(times):
            at[0] = start + timedelta(days=day, minutes=15 * slot * (96 // times))
            manifest = _manifest(root)
            writes = [
                TableWrite(
                    name,
                    market,
                    {
                        key: _linked(root, entry)
                        for key, entry in manifest.partitions(name, market).items()
                    },
                )
                for name in news_tables
                for market in manifest.markets(name)
            ]
            warehouse.commit(writes)
            commits += 1
    at[0] = start + timedelta(days=90)
    started = time.perf_counter()
    expiry = warehouse.expire(Retention())
    seconds = time.perf_counter() - started
    print(
        f"  {size:,} instruments: expiry over {commits} versions of 90 days in {seconds:.2f} s "
        f"({len(expiry.kept)} kept, {len(expiry.expired)} expired, {len(expiry.removed)} files "
        f"deleted)",
        flush=True,
    )
    return Figure(
        "versions",
        f"versions: expiry of 90 days of versions, {size:,} instruments",
        "s",
        round(seconds, 2),
        details={
            "versions": commits,
            "kept": len(expiry.kept),
            "expired": len(expiry.expired),
            "files_deleted": len(expiry.removed),
            "bytes_freed": expiry.freed_bytes,
        },
    )


def _linked(root: Path, entry: PartitionFile) -> PartitionFile:
    """The file under a new name (a hard link): a new file to every reader, no bytes copied."""
    source = root / entry.path
    target = source.with_name(f"{source.stem.split('-v')[0]}-v{secrets.token_hex(6)}.parquet")
    os.link(source, target)
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    return PartitionFile(str(target.relative_to(root)), entry.rows, now)


def _added(root: Path, before: Manifest, after: Manifest) -> int:
    """Bytes of the served files `after` names that `before` did not, plus `after`'s record."""
    old = {path for name in TABLES for path in before.files(name)}
    new = {path for name in TABLES for path in after.files(name)} - old
    record = root / record_path(after.version)
    return sum((root / path).stat().st_size for path in new) + record.stat().st_size


def _manifest(root: Path) -> Manifest:
    manifest = read_manifest(root)
    if manifest is None:
        raise RuntimeError(f"no warehouse at {root}")
    return manifest
