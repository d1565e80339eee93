"""Selection of one connector per market: the sources TOML file, or the embedded file drop."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from pipelines.catalog import MARKETS
from pipelines.prices.sources.base import PriceSource
from pipelines.prices.sources.binance import BinanceSource
from pipelines.prices.sources.ecb import EcbSource
from pipelines.prices.sources.file_drop import FileDropSource
from pipelines.prices.sources.http import HttpFetcher, HttpPolicy, ListedInstrument
from pipelines.prices.sources.stooq import StooqSource
from pipelines.settings import PipelineSettings

KINDS = ("file_drop", "binance", "ecb", "stooq")
DEFAULT_FRESHNESS_DAYS = {"crypto": 2, "forex": 4, "commodities": 4, "stocks": 4}
"""Newest bar may be this many days older than the reference day (weekends and a holiday)."""


class SourcesConfigError(ValueError):
    """The sources file is missing a market or names an unknown kind or parameter."""


@dataclass(frozen=True)
class SourceRegistry:
    """The connector and freshness budget of every market; the `price_sources` resource."""

    sources: Mapping[str, PriceSource]
    freshness_days: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_FRESHNESS_DAYS))
    embedded: bool = False
    """True when every market reads the embedded market's file drop (no sources file)."""

    def for_market(self, market: str) -> PriceSource:
        return self.sources[market]


def load_sources(settings: PipelineSettings) -> SourceRegistry:
    """Read `settings.sources_config`; without one every market reads the embedded file drop."""
    if settings.sources_config is None:
        source = FileDropSource(settings.embedded_dir)
        return SourceRegistry(dict.fromkeys(MARKETS, source), embedded=True)
    path = settings.sources_config
    with path.open("rb") as handle:
        document = tomllib.load(handle)
    return registry_from_toml(document, path)


def registry_from_toml(document: Mapping[str, Any], path: Path) -> SourceRegistry:
    """Build every market's connector from a parsed sources document (see config/sources.example.toml)."""
    http = HttpFetcher(_policy(document.get("http", {}), path))
    markets = document.get("markets", {})
    missing = [m for m in MARKETS if m not in markets]
    if missing:
        raise SourcesConfigError(f"{path}: no [markets.<name>] table for {missing}")
    sources = {m: build_source(m, markets[m], path, http) for m in MARKETS}
    freshness = {
        m: int(markets[m].get("freshness_days", DEFAULT_FRESHNESS_DAYS[m])) for m in MARKETS
    }
    return SourceRegistry(sources, freshness)


def _policy(table: Mapping[str, Any], path: Path) -> HttpPolicy:
    try:
        return HttpPolicy(**table)
    except TypeError as error:
        raise SourcesConfigError(f"{path}: [http] {error}") from error


def build_source(
    market: str, table: Mapping[str, Any], path: Path, http: HttpFetcher
) -> PriceSource:
    """One market's connector from its table; unknown keys are errors, not silently ignored."""
    params = {k: v for k, v in table.items() if k not in ("kind", "freshness_days", "instruments")}
    kind = table.get("kind")
    where = f"{path}: [markets.{market}]"
    listing = [_listed(item, where) for item in table.get("instruments", [])]
    if kind not in KINDS:
        raise SourcesConfigError(f"{where} kind = {kind!r}; expected one of {KINDS}")
    if "start_date" in params:
        params["start_date"] = date.fromisoformat(str(params["start_date"]))
    try:
        if kind == "file_drop":
            root = Path(params.pop("root"))
            return FileDropSource(root if root.is_absolute() else path.parent / root, **params)
        if not listing:
            raise SourcesConfigError(f"{where} kind = {kind!r} needs an instruments list")
        connector = {"binance": BinanceSource, "ecb": EcbSource, "stooq": StooqSource}[kind]
        return connector(listing, str(path), http=http, **params)
    except SourcesConfigError:
        raise
    except (TypeError, KeyError) as error:
        raise SourcesConfigError(f"{where} {type(error).__name__}: {error}") from error
    except ValueError as error:  # a value the connector refuses, e.g. page_limit = 5000
        raise SourcesConfigError(f"{where} {error}") from error


def _listed(item: Mapping[str, Any], where: str) -> ListedInstrument:
    try:
        return ListedInstrument(**{k: str(v) for k, v in item.items()})
    except TypeError as error:
        raise SourcesConfigError(f"{where} instruments entry {dict(item)}: {error}") from error
