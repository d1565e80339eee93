"""Selection of one connector per market: the sources TOML file, or the embedded file drop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from pipelines.catalog import MARKETS
from pipelines.platform.config_files import ConfigFileError, decode, read_toml
from pipelines.platform.settings import PipelineSettings
from pipelines.prices.sources.base import PriceSource
from pipelines.prices.sources.binance import BinanceSource
from pipelines.prices.sources.ecb import EcbSource
from pipelines.prices.sources.file_drop import FileDropSource
from pipelines.prices.sources.http import HttpFetcher, HttpPolicy, ListedInstrument
from pipelines.prices.sources.stooq import StooqSource

DEFAULT_FRESHNESS_DAYS = {"crypto": 2, "forex": 4, "commodities": 4, "stocks": 4}
"""Newest bar may be this many days older than the reference day (weekends and a holiday)."""


class SourcesConfigError(ConfigFileError):
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


class _Market(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="kind"
):
    """A `[markets.<name>]` table; `kind` names the connector. A key left out (UNSET) takes the
    connector's own default, so each default lives in one place: the connector."""

    freshness_days: int | UnsetType = UNSET

    def connector_args(self) -> dict[str, Any]:
        """The keys given, for the connector's constructor."""
        own = {"freshness_days", "instruments"}
        return {
            name: value
            for name in self.__struct_fields__
            if name not in own and (value := getattr(self, name)) is not UNSET
        }


class FileDropMarket(_Market, frozen=True, tag="file_drop"):
    root: str
    name: str | UnsetType = UNSET
    max_file_mb: int | UnsetType = UNSET
    """A file larger than this is rejected whole, unread (`FileBounds`)."""
    max_rows: int | UnsetType = UNSET
    """A Parquet file of more rows (from its metadata) is rejected whole, unread."""


class _WebMarket(_Market, frozen=True):
    instruments: tuple[ListedInstrument, ...] = ()
    base_url: str | UnsetType = UNSET


class BinanceMarket(_WebMarket, frozen=True, tag="binance"):
    quote: str | UnsetType = UNSET
    start_date: date | UnsetType = UNSET
    page_limit: int | UnsetType = UNSET


class EcbMarket(_WebMarket, frozen=True, tag="ecb"):
    start_date: date | UnsetType = UNSET


class StooqMarket(_WebMarket, frozen=True, tag="stooq"):
    suffix: str | UnsetType = UNSET
    params: dict[str, str] | UnsetType = UNSET


MarketTable = FileDropMarket | BinanceMarket | EcbMarket | StooqMarket
CONNECTORS: dict[type[_WebMarket], type[BinanceSource | EcbSource | StooqSource]] = {
    BinanceMarket: BinanceSource,
    EcbMarket: EcbSource,
    StooqMarket: StooqSource,
}


class SourcesFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The sources file (config/sources.example.toml): a table per market, the shared `[http]`
    keys, and the news domain's `[news]` table (read by `pipelines.news.config`)."""

    markets: dict[str, dict[str, Any]] = {}
    """Each decoded on its own (`MarketTable`), so that an error names its market."""
    http: HttpPolicy = msgspec.field(default_factory=HttpPolicy)
    news: dict[str, Any] = {}


def reads_embedded(settings: PipelineSettings) -> bool:
    """Whether every market reads the embedded market's file drop (no sources file is set), as
    `load_sources` decides it, without reading the file."""
    return settings.sources_config is None


def load_sources(settings: PipelineSettings) -> SourceRegistry:
    """Read `settings.sources_config`; without one every market reads the embedded file drop."""
    path = settings.sources_config
    if path is None:  # reads_embedded
        source = FileDropSource(settings.embedded_dir)
        return SourceRegistry(dict.fromkeys(MARKETS, source), embedded=True)
    return registry_from_toml(read_toml(path, SourcesConfigError), path)


def registry_from_toml(document: Mapping[str, Any], path: Path) -> SourceRegistry:
    """Build every market's connector from a parsed sources document (see config/sources.example.toml)."""
    sources_file: SourcesFile = decode(document, SourcesFile, str(path), SourcesConfigError)
    missing = [m for m in MARKETS if m not in sources_file.markets]
    if missing:
        raise SourcesConfigError(f"{path}: no [markets.<name>] table for {missing}")
    http = HttpFetcher(sources_file.http)
    markets: dict[str, MarketTable] = {
        m: decode(
            sources_file.markets[m], MarketTable, f"{path}: [markets.{m}]", SourcesConfigError
        )
        for m in MARKETS
    }
    sources = {m: build_source(m, markets[m], path, http) for m in MARKETS}
    freshness = {
        m: DEFAULT_FRESHNESS_DAYS[m] if (days := markets[m].freshness_days) is UNSET else days
        for m in MARKETS
    }
    return SourceRegistry(sources, freshness)


def build_source(market: str, table: MarketTable, path: Path, http: HttpFetcher) -> PriceSource:
    """One market's connector from its table."""
    where = f"{path}: [markets.{market}]"
    args = table.connector_args()
    try:
        if isinstance(table, FileDropMarket):
            root = Path(args.pop("root"))
            return FileDropSource(root if root.is_absolute() else path.parent / root, **args)
        if not table.instruments:
            raise SourcesConfigError(
                f"{where} kind = {table.__struct_config__.tag!r} needs an instruments list"
            )
        connector = CONNECTORS[type(table)]
        return connector(list(table.instruments), str(path), http=http, **args)
    except ValueError as error:  # a value the connector refuses, e.g. page_limit = 5000
        if isinstance(error, SourcesConfigError):
            raise
        raise SourcesConfigError(f"{where} {error}") from error
