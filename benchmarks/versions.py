"""The versions section: what a new data version costs a served worker, warehouse on object storage.

For each warehouse (the embedded market, and 5,000 instruments), on moto's S3 server in this
process: a first load (`mi materialize` with `MI_WAREHOUSE_URL=s3://…`), then `mi serve` with two
workers (metering off: only the reader is measured) over it, and:
- a news refresh (`mi materialize --job news` a week on), which commits a version that changed
  only the news tables: each worker's switch time, and the bytes the workers fetched (from their
  log lines) against the bytes of the files that version added (the host fetches each once);
- each worker's RSS against the size of the version's files (its cache dir's size too);
- the p99 of a cheap route (list-symbols) while versions land every 2 s (a table rewritten by an
  `ObjectWarehouse` commit, as a news refresh would) against the same route with no new version,
  in interleaved rounds of one run. In the anchor's rounds the same commits land in a copy of the
  warehouse the server does not read: the benchmark's writer and object store (which in
  production run on other machines) then take the same share of this machine's two cores on both
  sides, and the ratio is what the swaps cost the server.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import httpx
from moto.server import ThreadedMotoServer

from benchmarks.figures import Figure, Goal
from benchmarks.load import LoadResult, run_load
from benchmarks.pipeline import END_DATE, NEWS_DAYS, RUN_TIMEOUT
from benchmarks.point_in_time import SIZES as RETENTION_SIZES
from benchmarks.point_in_time import point_in_time_figures
from benchmarks.servers import free_port, mi, mi_serve_command, serving
from benchmarks.threads import process_tree, rss_mib
from pipelines.catalog import BRIEFS, TABLES, Manifest, S3Location
from pipelines.warehouse.object_store import ObjectWarehouse

SIZES: tuple[int | None, ...] = (None, 5000)
"""Instruments of each warehouse (None: the embedded market's default universe)."""
WORKERS = 2
CHEAP_ROUTE = "/api/v2/crypto/instruments/list-symbols"
LANDING_SECONDS = 2.0
"""How often a version lands during the loaded rounds."""
ROUND_SECONDS = 10.0
ROUNDS = 3
CONNECTIONS = 10
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
}
LOADED = re.compile(
    r"warehouse data version (?P<version>\d+) loaded from \S+ in (?P<seconds>[\d.]+) s "
    r"\((?P<files>\d+) files, (?P<bytes>\d+) bytes fetched\)"
)
SWITCH_GOAL = Goal("project", "<", 0.2)
FETCH_GOAL = Goal("ratio", "<=", 1.0)
P99_GOAL = Goal("ratio", "<", 1.5)


@dataclass(frozen=True)
class Switch:
    """One worker's load of one version, from its log line."""

    version: int
    seconds: float
    files: int
    bytes: int


def switches(log: Path, version: int) -> list[Switch]:
    found = (m.groupdict() for m in LOADED.finditer(log.read_text(errors="replace")))
    loads = [
        Switch(int(m["version"]), float(m["seconds"]), int(m["files"]), int(m["bytes"]))
        for m in found
    ]
    return [s for s in loads if s.version == version]


@contextmanager
def object_storage() -> Iterator[str]:
    """moto's S3 server on a free loopback port; its credentials in this process's environment."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    saved = {name: os.environ.get(name) for name in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        server.stop()


def version_bytes(location: S3Location, manifest: Manifest) -> dict[str, int]:
    """Every file of the version (served and internal tables) and its size."""
    client = boto3.client("s3", endpoint_url=location.endpoint_url, region_name="us-east-1")
    sizes = {}
    for path in _paths(manifest):
        reply = client.head_object(Bucket=location.bucket, Key=location.key(path))
        sizes[path] = int(reply["ContentLength"])
    return sizes


def wait_for(log: Path, version: int, workers: int, timeout: float = 60) -> list[Switch]:
    deadline = time.monotonic() + timeout
    while len(found := switches(log, version)) < workers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"version {version} reached {len(found)} of {workers} workers")
        time.sleep(0.05)
    return found


class Landing:
    """Commits a version every `every` seconds (BRIEFS of crypto rewritten) while running."""

    def __init__(self, location: S3Location, every: float) -> None:
        self.store = ObjectWarehouse(location)
        self.briefs = self.store.read(BRIEFS, ["crypto"])
        self.every = every
        self.versions: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Landing:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.versions.append(self.store.write(BRIEFS, "crypto", self.briefs).version)


def p99_rounds(
    base: str, location: S3Location, unread: S3Location
) -> tuple[list[LoadResult], list[LoadResult], int]:
    """Interleaved rounds of the cheap route: versions landing in `unread` (a warehouse the server
    does not read), then in the served one; and how many versions the server saw."""
    quiet: list[LoadResult] = []
    landing: list[LoadResult] = []
    landed = 0
    run_load(base, [CHEAP_ROUTE], {}, CONNECTIONS, 2.0)  # warm-up
    for _ in range(ROUNDS):
        with Landing(unread, LANDING_SECONDS):
            quiet.append(run_load(base, [CHEAP_ROUTE], {}, CONNECTIONS, ROUND_SECONDS))
        with Landing(location, LANDING_SECONDS) as versions:
            landing.append(run_load(base, [CHEAP_ROUTE], {}, CONNECTIONS, ROUND_SECONDS))
        landed += len(versions.versions)
        print(f"    p99 quiet {quiet[-1].p99_ms:.2f} ms, with versions landing "
              f"{landing[-1].p99_ms:.2f} ms ({len(versions.versions)} versions)", flush=True)  # fmt: skip
    return quiet, landing, landed


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def size_label(instruments: int | None) -> str:
    return "embedded market" if instruments is None else f"{instruments:,} instruments"


def warehouse_figures(scratch: Path, endpoint: str, instruments: int | None) -> list[Figure]:
    label = size_label(instruments)
    location = S3Location.parse(f"s3://mi-bench-{uuid.uuid4().hex[:12]}/wh", endpoint_url=endpoint)
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
        Bucket=location.bucket
    )
    data_dir = scratch / f"versions-{instruments or 'embedded'}"
    env: dict[str, str] = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MI_")},
        **CREDENTIALS,
        "MI_WAREHOUSE_URL": location.url,
        "MI_S3_ENDPOINT_URL": endpoint,
        "MI_DATA_DIR": str(data_dir),
        "MI_END_DATE": END_DATE.isoformat(),
        "MI_METERING_URL": "off",
        **({} if instruments is None else {"MI_INSTRUMENTS": str(instruments)}),
    }
    started = time.perf_counter()
    mi(["materialize"], env, timeout=RUN_TIMEOUT)
    print(f"  {label}: first load to S3 in {time.perf_counter() - started:.1f} s", flush=True)
    port = free_port()
    serve_log = scratch / f"serve-{instruments or 'embedded'}.log"
    try:
        with serving(mi_serve_command(port, WORKERS, "granian"), env, port, CHEAP_ROUTE, serve_log) as server:  # fmt: skip
            return _measure(
                server.base, server.process.pid, location, data_dir, label, serve_log, env
            )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _measure(
    base: str,
    root_pid: int,
    location: S3Location,
    data_dir: Path,
    label: str,
    serve_log: Path,
    env: Mapping[str, str],
) -> list[Figure]:
    workers = [pid for pid in process_tree(root_pid) if pid != root_pid]
    before = location.read_manifest()
    if before is None:
        raise RuntimeError("the first load committed no manifest")
    wait_for(serve_log, before.version, WORKERS)
    _traffic(base)
    news_day = END_DATE + timedelta(days=NEWS_DAYS)
    mi(["materialize", "--job", "news"], {**env, "MI_END_DATE": news_day.isoformat()})
    after = location.read_manifest()
    if after is None or after.version == before.version:
        raise RuntimeError("the news refresh committed no new version")
    loads = wait_for(serve_log, after.version, WORKERS)
    sizes = version_bytes(location, after)
    served = {p: sizes[p] for name in after.tables if name in TABLES for p in after.files(name)}
    added = {path: size for path, size in served.items() if path not in _paths(before)}
    changed = sorted({name for name in after.tables if after.files(name) != before.files(name)})
    _traffic(base)
    rss = [rss_mib(pid) for pid in workers]
    whole = sum(sizes.values()) / 2**20
    cache = sum(p.stat().st_size for p in (data_dir / "cache").rglob("*") if p.is_file()) / 2**20
    quiet, landing, landed = p99_rounds(base, location, _copy_of(location))
    details: dict[str, Any] = {
        "tables_changed": changed,
        "files_added": len(added),
        "per_worker": [vars(s) for s in loads],
        "rss_mib": rss,
        "cache_mib_all_workers": round(cache, 1),
        "served_tables_mib": round(sum(served.values()) / 2**20, 1),
    }
    print(f"  {label}: news-only version ({', '.join(changed)}): switch "
          f"{[s.seconds for s in loads]} s, fetched {[s.bytes for s in loads]} bytes of "
          f"{sum(added.values())} added; RSS {rss} MiB, version {whole:.0f} MiB", flush=True)  # fmt: skip
    return [
        Figure("versions", f"versions: news-only version, switch per worker, {label}", "s",
               max(s.seconds for s in loads), goal=SWITCH_GOAL, details=details),
        Figure("versions", f"versions: news-only version, bytes fetched by the host's workers, {label}",
               "bytes", sum(s.bytes for s in loads), sum(added.values()),
               "bytes of the files the version added", FETCH_GOAL),
        Figure("versions", f"versions: worker RSS, {label}", "MiB", max(rss), whole,
               "size of the version's files", details={"cache_mib": round(cache, 1)}),
        Figure("versions", f"versions: list-symbols p99, versions landing every 2 s, {label}",
               "ms", median([r.p99_ms for r in landing]), median([r.p99_ms for r in quiet]),
               "p99 with the versions landing elsewhere", P99_GOAL,
               {"versions_landed": landed, "quiet": [r.as_json() for r in quiet],
                "landing": [r.as_json() for r in landing]}),
    ]  # fmt: skip


def _copy_of(location: S3Location) -> S3Location:
    """A second warehouse with the served one's news table, for the anchor's commits."""
    copy = S3Location.parse(f"{location.url}-unread", endpoint_url=location.endpoint_url)
    ObjectWarehouse(copy).write(
        BRIEFS, "crypto", ObjectWarehouse(location).read(BRIEFS, ["crypto"])
    )
    return copy


def _paths(manifest: Manifest) -> set[str]:
    return {path for name in manifest.tables for path in manifest.files(name)}


def _traffic(base: str) -> None:
    """A few routes of every market, as clients would ask between versions."""
    with httpx.Client(base_url=base, timeout=30) as client:
        for market in ("crypto", "forex", "commodities", "stocks"):
            symbols = client.get(f"/api/v2/{market}/instruments/list-symbols?limit=20").json()
            for symbol in symbols.get("symbols", [])[:5]:
                client.get(f"/api/v2/{market}/technical-analysis/get-price-history/{symbol}")


def versions_section(
    scratch: Path,
    sizes: tuple[int | None, ...] = SIZES,
    retention_sizes: tuple[int, ...] = RETENTION_SIZES,
) -> list[Figure]:
    figures: list[Figure] = []
    with object_storage() as endpoint:
        for instruments in sizes:
            figures += warehouse_figures(scratch, endpoint, instruments)
    return figures + point_in_time_figures(scratch, retention_sizes)
