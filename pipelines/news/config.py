"""News configuration: the `[news]` section of the sources TOML, or the embedded market's file drop."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pipelines.catalog import MARKETS
from pipelines.news.parse import ParsePolicy
from pipelines.news.sources import (
    FeedListNewsSource,
    FileDropNewsSource,
    HttpFeedFetcher,
    NewsSource,
    is_url,
)
from pipelines.settings import PipelineSettings

_POLICY_KEYS = frozenset({"freshness_hours", "clock_skew_minutes", "timeout_seconds", "attempts"})
_MARKET_KEYS = frozenset({"feeds", "file_drop"})


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


def load_news_config(settings: PipelineSettings) -> NewsConfig:
    """The sources TOML's `[news]` section, or the embedded file drop when there is no TOML."""
    if settings.sources_config is None:
        return NewsConfig(
            FileDropNewsSource(settings.embedded_dir), NewsPolicy(clock=settings.news_now)
        )
    path = settings.sources_config
    with path.open("rb") as handle:
        section = tomllib.load(handle).get("news", {})
    config = parse_news_section(section, base=path.parent)
    return NewsConfig(config.source, replace(config.policy, clock=settings.clock))


def parse_news_section(section: Mapping[str, Any], base: Path) -> NewsConfig:
    """Build the config from a parsed `[news]` table; relative paths are relative to `base`."""
    scalars = {k: v for k, v in section.items() if not isinstance(v, Mapping)}
    markets = {k: v for k, v in section.items() if isinstance(v, Mapping)}
    _refuse_unknown("[news]", set(scalars) - _POLICY_KEYS)
    _refuse_unknown("[news] markets", set(markets) - set(MARKETS))
    policy = NewsPolicy(
        freshness_hours=float(scalars.get("freshness_hours", 48.0)),
        clock_skew=timedelta(minutes=float(scalars.get("clock_skew_minutes", 15.0))),
    )
    fetcher = HttpFeedFetcher(
        timeout_seconds=float(scalars.get("timeout_seconds", 10.0)),
        attempts=int(scalars.get("attempts", 3)),
    )
    feeds = {market: _market_feeds(market, table, base) for market, table in markets.items()}
    return NewsConfig(FeedListNewsSource(feeds, fetcher), policy)


def _market_feeds(market: str, table: Mapping[str, Any], base: Path) -> tuple[str, ...]:
    _refuse_unknown(f"[news.{market}]", set(table) - _MARKET_KEYS)
    listed = table.get("feeds", [])
    if not isinstance(listed, list) or not all(isinstance(f, str) for f in listed):
        raise ValueError(f"[news.{market}] feeds must be a list of URLs and paths")
    locations = [f if is_url(f) else str(base / f) for f in listed]
    drop = table.get("file_drop")
    if drop is not None:
        locations.append(str(base / str(drop) / "news" / market))
    return tuple(locations)


def _refuse_unknown(where: str, unknown: set[str]) -> None:
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
