"""Pipeline settings, built from an environment mapping by `load_settings` (never read at import)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import TypeVar

from pipelines.catalog.storage import LocalStorage, S3Location, open_storage
from pipelines.platform.config_files import ConfigurationError

T = TypeVar("T")
DEFAULT_SEED = 20_260_101
DEFAULT_SHARD_SYMBOLS = 1_000
"""Most symbols a shard holds (`MI_SHARD_SYMBOLS`): a full history of 1,000 symbols fits any step
in a few hundred MiB."""
EXECUTORS = ("in_process", "multiprocess", "celery", "k8s")
"""Dagster executors a run can use (`MI_EXECUTOR`), the first the default; k8s needs dagster-k8s,
which the project does not lock (docs/deployment.md)."""
CELERY_BROKER_URL = "pyamqp://guest:guest@127.0.0.1:5672//"
"""RabbitMQ on this machine, as every machine of the project runs it."""
CELERY_BACKEND_URL = "redis://127.0.0.1:6379/14"
"""Step results in Redis: they outlive a broker restart (RabbitMQ's `rpc://` replies would not)."""


class SettingsError(ConfigurationError):
    """An `MI_*` variable whose value the pipeline cannot use (its message names the variable)."""


@dataclass(frozen=True)
class PipelineSettings:
    """Where the pipeline reads and writes, and which sources it uses."""

    data_dir: Path
    sources_config: Path | None
    """A sources TOML file selecting connectors per market; None means the embedded market."""
    seed: int
    """Seed of the embedded market: the same seed gives the same files."""
    end_date: date | None
    """Last day of the embedded market; None means today (UTC) at run time."""
    instruments: int | None = None
    """Total instruments of a scaled embedded market (benchmarks); None means the default universe."""
    dagster_postgres_url: str | None = None
    """The Dagster instance's storage (runs, events, schedules) on PostgreSQL; None: SQLite files."""
    executor: str = EXECUTORS[0]
    """How a run of the daily job executes its steps: one of `EXECUTORS`."""
    warehouse_url: str | None = None
    """`s3://bucket/prefix`: the warehouse on object storage instead of `<data_dir>/warehouse`."""
    s3_endpoint_url: str | None = None
    """An S3-compatible endpoint for `warehouse_url` (MinIO, ...); None: AWS S3."""
    now: datetime | None = None
    """A fixed "now" for the news clock (`MI_NOW`, ISO 8601; demos and tests); None: the clock."""
    shard_symbols: int = DEFAULT_SHARD_SYMBOLS
    """Most symbols a shard holds (`MI_SHARD_SYMBOLS`)."""
    news_cadence_minutes: int = 15
    """How often the news refresh runs (`MI_NEWS_CADENCE_MINUTES`, a divisor of 60)."""
    celery_broker_url: str = CELERY_BROKER_URL
    """Where `MI_EXECUTOR=celery` sends steps and `mi workers` takes them (`MI_CELERY_BROKER_URL`)."""
    celery_backend_url: str = CELERY_BACKEND_URL
    """Where the workers put each step's events for the run (`MI_CELERY_BACKEND_URL`)."""
    versions_keep_all_days: float = 7.0
    """Every version of this many last days is retained (`MI_VERSIONS_KEEP_ALL_DAYS`)."""
    versions_retain_days: float = 90.0
    """Beyond that, the last version of each UTC day back this far (`MI_VERSIONS_RETAIN_DAYS`)."""

    @property
    def warehouse_dir(self) -> Path:
        return self.data_dir / "warehouse"

    @property
    def warehouse(self) -> LocalStorage | S3Location:
        """Where the warehouse is read from: `warehouse_url` when set, else `warehouse_dir`."""
        return open_storage(self.warehouse_url or self.warehouse_dir, self.s3_endpoint_url)

    @property
    def duckdb_path(self) -> Path:
        return self.data_dir / "warehouse.duckdb"

    @property
    def embedded_dir(self) -> Path:
        return self.data_dir / "sources" / "embedded"

    def resolved_end_date(self) -> date:
        return self.end_date or self.clock().date()

    def clock(self) -> datetime:
        """Now (UTC), or the fixed `now` when one is set."""
        return self.now or datetime.now(UTC)

    def news_now(self) -> datetime:
        """The instant news is read as of: now, never after the end date's last second."""
        return news_instant(self.clock(), self.end_date)


def news_instant(now: datetime, end_date: date | None) -> datetime:
    """`now`, never after `end_date`'s last second (the embedded market's news stops there)."""
    if end_date is None:
        return now
    return min(now, datetime.combine(end_date, time(23, 59, 59), UTC))


def load_settings(env: Mapping[str, str] | None = None) -> PipelineSettings:
    """Read `MI_DATA_DIR`, `MI_SOURCES`, `MI_SEED`, `MI_END_DATE`, `MI_INSTRUMENTS`,
    `MI_DAGSTER_POSTGRES_URL`, `MI_EXECUTOR`, `MI_WAREHOUSE_URL`, `MI_S3_ENDPOINT_URL`, `MI_NOW`,
    `MI_SHARD_SYMBOLS`, `MI_NEWS_CADENCE_MINUTES`, `MI_CELERY_BROKER_URL`, `MI_CELERY_BACKEND_URL`,
    `MI_VERSIONS_KEEP_ALL_DAYS`, `MI_VERSIONS_RETAIN_DAYS`
    (all optional)."""
    env = os.environ if env is None else env
    executor = env.get("MI_EXECUTOR") or EXECUTORS[0]
    if executor not in EXECUTORS:
        raise SettingsError(f"MI_EXECUTOR: {executor!r} is not one of {list(EXECUTORS)}")
    cadence = _read(env, "MI_NEWS_CADENCE_MINUTES", int, "a whole number of minutes")
    cadence = 15 if cadence is None else cadence
    if cadence < 1 or 60 % cadence:
        raise SettingsError(f"MI_NEWS_CADENCE_MINUTES: {cadence} does not divide an hour")
    sources = env.get("MI_SOURCES")
    if sources and not Path(sources).is_file():
        raise SettingsError(
            f"MI_SOURCES: {sources!r} is not a file (unset it for the embedded market)"
        )
    seed = _read(env, "MI_SEED", int, "a whole number")
    return PipelineSettings(
        data_dir=Path(env.get("MI_DATA_DIR", "data")).resolve(),
        sources_config=Path(sources).resolve() if sources else None,
        seed=DEFAULT_SEED if seed is None else seed,
        end_date=_read(env, "MI_END_DATE", date.fromisoformat, "a day (YYYY-MM-DD)"),
        instruments=_read(env, "MI_INSTRUMENTS", _positive, "a positive whole number"),
        dagster_postgres_url=env.get("MI_DAGSTER_POSTGRES_URL") or None,
        executor=executor,
        warehouse_url=env.get("MI_WAREHOUSE_URL") or None,
        s3_endpoint_url=env.get("MI_S3_ENDPOINT_URL") or None,
        now=_read(env, "MI_NOW", _instant, "an ISO 8601 instant (2026-03-02T14:00:00Z)"),
        shard_symbols=_read(env, "MI_SHARD_SYMBOLS", _positive, "a positive whole number")
        or DEFAULT_SHARD_SYMBOLS,
        news_cadence_minutes=cadence,
        celery_broker_url=env.get("MI_CELERY_BROKER_URL") or CELERY_BROKER_URL,
        celery_backend_url=env.get("MI_CELERY_BACKEND_URL") or CELERY_BACKEND_URL,
        versions_keep_all_days=_days_or(env, "MI_VERSIONS_KEEP_ALL_DAYS", 7.0),
        versions_retain_days=_days_or(env, "MI_VERSIONS_RETAIN_DAYS", 90.0),
    )


def _read(env: Mapping[str, str], name: str, parse: Callable[[str], T], what: str) -> T | None:
    """The variable parsed, None when unset or empty; a SettingsError naming it and what it must
    be when it cannot be parsed."""
    text = env.get(name)
    if not text:
        return None
    try:
        return parse(text)
    except ValueError:
        raise SettingsError(f"{name}: {text!r} is not {what}") from None


def _days_or(env: Mapping[str, str], name: str, default: float) -> float:
    days = _read(env, name, _days, "a number of days (0 or more)")
    return default if days is None else days


def _days(text: str) -> float:
    days = float(text)
    if not 0 <= days < float("inf"):
        raise ValueError(text)
    return days


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _instant(text: str) -> datetime:
    """An ISO 8601 instant; one without a zone is UTC."""
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
