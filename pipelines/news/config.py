"""News configuration: the `[news]` section of the sources TOML, or the embedded market's file drop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

from pipelines.catalog import MARKETS
from pipelines.news.parse import ParsePolicy
from pipelines.news.sources import (
    FeedListNewsSource,
    FileDropNewsSource,
    HttpFeedFetcher,
    NewsSource,
    is_url,
)
from pipelines.platform.config_files import decode, read_toml
from pipelines.platform.settings import PipelineSettings


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class NewsPolicy:
    """The clock and the tolerances news ingestion checks against (Dagster resource `news_policy`)."""

    freshness_hours: float = 48.0
    """The newest article of a market should be at most this old."""
    clock_skew: timedelta = timedelta(minutes=15)
    """How far in the future an item's date may be before it is rejected."""
    clock: Callable[[], datetime] = field(default=utc_now, repr=False)

    def now(self) -> datetime:
        return self.clock()

    def parse_policy(self, now: datetime) -> ParsePolicy:
        return ParsePolicy(now=now, clock_skew=self.clock_skew)


@dataclass(frozen=True)
class NewsConfig:
    """Where each market's feeds come from, and the policy they are checked against."""

    source: NewsSource
    policy: NewsPolicy


class MarketFeeds(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A `[news.<market>]` table: feed URLs and paths, and an optional file drop folder."""

    feeds: tuple[str, ...] = ()
    file_drop: str | None = None


class NewsSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The sources file's `[news]` table: the policy, and one table per market with feeds."""

    freshness_hours: float = 48.0
    clock_skew_minutes: float = 15.0
    timeout_seconds: float = 10.0
    attempts: int = 3
    allowed_hosts: tuple[str, ...] = ()
    """Feed hosts fetched although they resolve inside a network (docs/news-ingestion.md)."""
    crypto: MarketFeeds | None = None
    forex: MarketFeeds | None = None
    commodities: MarketFeeds | None = None
    stocks: MarketFeeds | None = None

    def markets(self) -> dict[str, MarketFeeds]:
        tables = {market: getattr(self, market) for market in MARKETS}
        return {market: table for market, table in tables.items() if table is not None}


if set(MARKETS) - set(NewsSection.__struct_fields__):  # a market added to the catalog
    raise ImportError("NewsSection has no table for every market of the catalog")


def load_news_config(settings: PipelineSettings) -> NewsConfig:
    """The sources TOML's `[news]` section, or the embedded file drop when there is no TOML."""
    if settings.sources_config is None:
        return NewsConfig(
            FileDropNewsSource(settings.embedded_dir), NewsPolicy(clock=settings.news_now)
        )
    path = settings.sources_config
    section = read_toml(path).get("news", {})
    config = parse_news_section(section, base=path.parent, where=f"{path}: [news]")
    return NewsConfig(config.source, replace(config.policy, clock=settings.clock))


def parse_news_section(section: object, base: Path, where: str = "[news]") -> NewsConfig:
    """Build the config from a parsed `[news]` table; relative paths are relative to `base`."""
    news = decode(section, NewsSection, where)
    policy = NewsPolicy(
        freshness_hours=news.freshness_hours,
        clock_skew=timedelta(minutes=news.clock_skew_minutes),
    )
    fetcher = HttpFeedFetcher(
        timeout_seconds=news.timeout_seconds,
        attempts=news.attempts,
        allowed_hosts=news.allowed_hosts,
    )
    feeds = {market: _locations(market, table, base) for market, table in news.markets().items()}
    return NewsConfig(FeedListNewsSource(feeds, fetcher), policy)


def _locations(market: str, table: MarketFeeds, base: Path) -> tuple[str, ...]:
    locations = [f if is_url(f) else str(base / f) for f in table.feeds]
    if table.file_drop is not None:
        locations.append(str(base / table.file_drop / "news" / market))
    return tuple(locations)
