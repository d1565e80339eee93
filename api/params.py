"""Request values the router cannot check itself: markets, strategies, clamps and integer path segments."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Generic, Literal, TypeVar

from litestar.openapi.spec import OpenAPIType
from litestar.params import ParameterKwarg, PathParameter, QueryParameter

from api.errors import BadRequest, InvalidParameter, MarketNotLive, NotFound
from pipelines.catalog import MARKETS, STRATEGIES


def resolve_market(segment: str, live_markets: Sequence[str]) -> str:
    """The canonical market for a `{market}` segment (any case); 404 if unknown or not launched."""
    market = segment.lower()
    if market not in MARKETS:
        raise NotFound(f"Unknown market '{segment}'; markets: {', '.join(MARKETS)}")
    if market not in live_markets:
        raise MarketNotLive(market, live_markets)
    return market


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def int64(name: str, value: int) -> int:
    """`value`, or 422 naming the parameter when it is outside the signed 64-bit range
    (decisions.md: `skip=45006006736823993237504` is a 422, never a 500 from the database)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise InvalidParameter(name, "outside the signed 64-bit integer range")
    return value


def int_segment(name: str, raw: str, *, minimum: int | None = None) -> int:
    """An integer path segment, 422 naming it when it is not one (or not a 64-bit one).

    Declare such segments `{name:str}` and parse them here: Litestar answers a `{name:int}` segment
    that is not an integer with 404 (no route matched), where decisions.md asks for 422.
    """
    try:
        value = int64(name, int(raw))
    except ValueError:
        raise InvalidParameter(name, f"expected an integer, got '{raw}'") from None
    if minimum is not None and value < minimum:
        raise InvalidParameter(name, f"must be at least {minimum}")
    return value


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def day_param(name: str, raw: str | None) -> date | None:
    """A `YYYY-MM-DD` day (None when absent); 422 naming the parameter when it is not one."""
    if raw is None:
        return None
    try:
        if _DAY.fullmatch(raw):
            return date.fromisoformat(raw)
    except ValueError:
        pass
    raise InvalidParameter(name, f"expected a date YYYY-MM-DD, got '{raw}'")


def day_range(start: date | None, end: date | None) -> None:
    """decisions.md: `from` later than `to` answers 422."""
    if start is not None and end is not None and start > end:
        raise InvalidParameter("from", "must not be later than 'to'")


CRYPTO_ONLY: tuple[str, ...] = ("crypto",)
"""Markets of the routes the spec lists under /api/v2/crypto/ (and get-detail, search-instruments)."""
NON_CRYPTO: tuple[str, ...] = ("forex", "commodities", "stocks")
"""Markets of get-current-trend and get-trend-segments."""


def route_market(segment: str, live_markets: Sequence[str], serves: Sequence[str] = MARKETS) -> str:
    """`resolve_market`, then 404 naming the markets a route serves when it does not serve this one."""
    market = resolve_market(segment, live_markets)
    if market not in serves:
        raise NotFound(
            f"This route serves the {', '.join(serves)} market{'s' * (len(serves) > 1)} only, not {market}"
        )
    return market


def clamp(value: int, low: int, high: int | None = None) -> int:
    """Bounds from decisions.md: values outside are clamped, not rejected."""
    value = max(value, low)
    return value if high is None else min(value, high)


Default = TypeVar("Default", int, None)


@dataclass(frozen=True, slots=True)
class Bounds(Generic[Default]):
    """An integer parameter's bounds (decisions.md: clamped, not rejected) and its default: the one
    definition the route, its cost rule (`api.metering.config`) and its OpenAPI schema read."""

    name: str
    default: Default
    """The value when the parameter is absent (None: absent means no limit)."""
    low: int
    high: int | None = None
    source: Literal["query", "path"] = "query"
    clamped: bool = True
    """False: a value below `low` is a 422 (get-price-history's `limit`), not raised to it."""

    def clamp(self, value: int) -> int:
        return clamp(value, self.low, self.high)

    def served(self, value: int) -> int:
        """A request's value as the route serves it: 422 outside 64 bits (or below `low` when not
        clamped), else clamped."""
        if int64(self.name, value) < self.low and not self.clamped:
            raise InvalidParameter(self.name, f"must be at least {self.low}")
        return self.clamp(value)

    def value_of(self, value: int | None) -> int | None:
        """The value a request is served with: its default when absent, else clamped."""
        return self.default if value is None else self.clamp(value)

    def parameter(self) -> ParameterKwarg:
        """The parameter as the OpenAPI document shows it: a 64-bit integer with its bounds (a
        path segment too, though the route parses it from text) and what happens outside them."""
        schema: dict[str, Any] = {"type": OpenAPIType.INTEGER, "format": "int64", "minimum": self.low}  # fmt: skip
        if self.high is not None:
            schema["maximum"] = self.high
        declared = PathParameter if self.source == "path" else QueryParameter
        return declared(description=self.description, schema_extra=schema)

    @property
    def description(self) -> str:
        if not self.clamped:
            return f"at least {self.low} (less answers 422)"
        if self.high is None:
            return f"values below {self.low} are raised to it"
        return (
            f"clamped to {self.low}..{self.high} (values outside are served as the nearest bound)"
        )


SKIP = Bounds("skip", default=0, low=0)
SYMBOLS_LIMIT = Bounds("limit", default=100, low=1, high=1000)
BRIEFS_LIMIT = Bounds("limit", default=10, low=1, high=500)
SEARCH_LIMIT = Bounds("limit", default=20, low=1, high=500)
SENTIMENT_LIMIT = Bounds("limit", default=30, low=1, high=3650)
LEGACY_SENTIMENT_DAYS = Bounds("days", default=30, low=1, high=3650, source="path")
PRICE_POINTS_LIMIT = Bounds("limit", default=None, low=1, clamped=False)
"""No default: without `limit` get-price-history answers every point (a value below 1 is a 422)."""
INDICATOR_PERIOD = Bounds("period", default=30, low=2, high=365)
BACKTEST_YEARS = Bounds("years", default=2, low=1, high=20)
BACKTEST_TRADES_LIMIT = Bounds("limit", default=50, low=1, high=1000)
RECENT_TRADES_LIMIT = Bounds("limit", default=10, low=1, high=100)
TREND_HISTORY_LIMIT = Bounds("limit", default=1, low=1, high=5000, source="path")
RECOMMENDATIONS_LIMIT = Bounds("limit", default=10, low=1, high=100)
TREND_SEGMENTS_LIMIT = Bounds("limit", default=50, low=1, high=500)

SCALED_BY: dict[str, Bounds[Any]] = {
    "get-recent-briefs": BRIEFS_LIMIT,
    "search-briefs": SEARCH_LIMIT,
    "get-sentiment-history": SENTIMENT_LIMIT,
    "legacy-sentiment": LEGACY_SENTIMENT_DAYS,
    "get-trend-history": TREND_HISTORY_LIMIT,
    "get-backtest-history": BACKTEST_YEARS,
    "get-backtest-summary": BACKTEST_YEARS,
    "get-price-history": PRICE_POINTS_LIMIT,
}
"""The parameter each scaled cost (`[costs.<operation>]` tables of the metering config) follows."""


def strategy_param(value: str) -> str:
    """A strategy (segment or query, any case); 400 naming the value and the valid ones."""
    strategy = value.lower()
    if strategy not in STRATEGIES:
        raise BadRequest(f"Invalid strategy '{value}'; valid strategies: {', '.join(STRATEGIES)}")
    return strategy
