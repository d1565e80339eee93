"""API settings, built from an environment mapping by `load_settings` (never read at import)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from api.warehouse.files import DEFAULT_CACHE_BYTES
from pipelines.catalog import MANIFEST_NAME, MARKETS, LocalStorage, S3Location, open_storage

API_VERSION = "1.0.0"
"""The interface version the spec carries; reported by `/api/v1/status` and the OpenAPI document."""


@dataclass(frozen=True)
class ApiSettings:
    """Everything the app needs to know about its environment, decided once at startup."""

    data_dir: Path
    live_markets: tuple[str, ...] = MARKETS
    """Markets served; a real market not listed here answers 404 'is not available yet'."""
    version: str = API_VERSION
    materialization_max_age: timedelta = timedelta(hours=36)
    """Older than this, the newest materialization makes `/api/v1/status` report `degraded`."""
    manifest_poll_seconds: float = 1.0
    """How often the warehouse reader stats the manifest for a new data version."""
    check_timeout_seconds: float = 2.0
    """A status check slower than this counts as failed."""
    warehouse_url: str | None = None
    """`s3://bucket/prefix` (`MI_WAREHOUSE_URL`, the same setting the pipeline writes by): read the
    warehouse from object storage instead of `<data_dir>/warehouse` (a path is a local root)."""
    s3_endpoint_url: str | None = None
    """An S3-compatible endpoint for `warehouse_url` (`MI_S3_ENDPOINT_URL`); None: AWS S3."""
    warehouse_cache_dir: Path | None = None
    """Where the host's workers keep the files they fetched from an object-storage warehouse
    (`MI_WAREHOUSE_CACHE_DIR`; None: `<data_dir>/cache/warehouse`)."""
    warehouse_cache_bytes: int = DEFAULT_CACHE_BYTES
    """The bound of that disk cache (`MI_WAREHOUSE_CACHE_MB`)."""

    @property
    def warehouse(self) -> LocalStorage | S3Location:
        """The storage the warehouse is read from, chosen as the pipeline chooses where to write."""
        if self.warehouse_url:
            return open_storage(self.warehouse_url, self.s3_endpoint_url)
        return LocalStorage(self.data_dir / "warehouse")

    @property
    def warehouse_dir(self) -> Path | S3Location:
        """What the app's reader watches: the local warehouse directory, or the S3 location."""
        storage = self.warehouse
        return storage.root if isinstance(storage, LocalStorage) else storage

    @property
    def cache_dir(self) -> Path:
        """The warehouse file cache's directory (shared by the host's worker processes)."""
        return self.warehouse_cache_dir or self.data_dir / "cache" / "warehouse"

    @property
    def manifest_path(self) -> Path:
        """The local manifest (unused with `warehouse_url`)."""
        return self.data_dir / "warehouse" / MANIFEST_NAME


def parse_markets(raw: str) -> tuple[str, ...]:
    """A comma-separated market list, validated against the catalog and returned in catalog order."""
    named = {part.strip().lower() for part in raw.split(",") if part.strip()}
    unknown = sorted(named - set(MARKETS))
    if unknown:
        raise ValueError(
            f"MI_LIVE_MARKETS: unknown markets {unknown}; real markets: {list(MARKETS)}"
        )
    if not named:
        raise ValueError("MI_LIVE_MARKETS names no market; unset it to serve all four")
    return tuple(m for m in MARKETS if m in named)


def load_settings(env: Mapping[str, str] | None = None) -> ApiSettings:
    """Read `MI_DATA_DIR`, `MI_LIVE_MARKETS`, `MI_MATERIALIZATION_MAX_AGE_HOURS`,
    `MI_MANIFEST_POLL_SECONDS`, `MI_WAREHOUSE_URL`, `MI_S3_ENDPOINT_URL`, `MI_WAREHOUSE_CACHE_DIR`,
    `MI_WAREHOUSE_CACHE_MB`."""
    env = os.environ if env is None else env
    markets = env.get("MI_LIVE_MARKETS")
    max_age = env.get("MI_MATERIALIZATION_MAX_AGE_HOURS")
    poll = env.get("MI_MANIFEST_POLL_SECONDS")
    cache_dir = env.get("MI_WAREHOUSE_CACHE_DIR")
    cache_mb = env.get("MI_WAREHOUSE_CACHE_MB")
    defaults = ApiSettings(data_dir=Path("data"))
    return ApiSettings(
        data_dir=Path(env.get("MI_DATA_DIR", "data")).resolve(),
        live_markets=parse_markets(markets) if markets is not None else MARKETS,
        materialization_max_age=(
            timedelta(hours=float(max_age)) if max_age else defaults.materialization_max_age
        ),
        manifest_poll_seconds=float(poll) if poll else defaults.manifest_poll_seconds,
        warehouse_url=env.get("MI_WAREHOUSE_URL") or None,
        s3_endpoint_url=env.get("MI_S3_ENDPOINT_URL") or None,
        warehouse_cache_dir=Path(cache_dir).resolve() if cache_dir else None,
        warehouse_cache_bytes=(
            _megabytes("MI_WAREHOUSE_CACHE_MB", cache_mb)
            if cache_mb
            else defaults.warehouse_cache_bytes
        ),
    )


def _megabytes(name: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}: {raw!r} is not a whole number of MiB") from None
    if value <= 0:
        raise ValueError(f"{name}: must be a positive number of MiB, not {value}")
    return value << 20
