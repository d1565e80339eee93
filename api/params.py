"""Request parameters: declarations (bounds, defaults, meanings), one strict reading per kind, markets."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Generic, Literal, TypeVar

from litestar.openapi.spec import OpenAPIType
from litestar.params import ParameterKwarg, PathParameter

from api.errors import BadRequest, InvalidParameter, MarketNotLive, NotFound
from pipelines.catalog import ADJUSTMENTS, FILLS, FIRST_PERIOD, LAST_PERIOD, MARKETS, STRATEGIES


def resolve_market(segment: str, live_markets: Sequence[str]) -> str:
    """The canonical market for a `{market}` segment (any case); 404 if unknown or not launched."""
    market = segment.lower()
    if market not in MARKETS:
        raise NotFound(f"Unknown market '{segment}'; markets: {', '.join(MARKETS)}")
    if market not in live_markets:
        raise MarketNotLive(market, live_markets)
    return market


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INTEGER = re.compile(r"-?[0-9]+")
"""decisions.md, Parameters: an integer is ASCII digits with an optional leading `-` (`[0-9]`, not
`\\d`, which matches the digits of every script)."""
_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
"""A number parameter: a plain decimal (no exponent, no `nan` or `inf`)."""
_INT64_DIGITS = 19
_LONGEST_SHOWN = 40


SECONDS = range(10**9, 10**10)
"""docs/clients.md, Parameters: an epoch-milliseconds value that can only be meant as epoch seconds.
As seconds these are every instant from 2001-09-09 to 2286-11-20; as milliseconds they are
1970-01-12 to 1970-04-26: reading them as milliseconds would serve the whole history for a `from`
in seconds, silently, so a 422 names the unit. The cost: a bound cannot sit inside those 105 days
of 1970 (a range around them still can: `from` before, `to` after)."""


def seconds_message(value: int) -> str:
    """What a value in `SECONDS` was probably meant as, and how to send it."""
    meant = datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"is in epoch milliseconds; {value} reads as epoch seconds ({meant}): send {value * 1000}"
    )


def int64(name: str, value: int) -> int:
    """`value`, or 422 naming the parameter when it is outside the signed 64-bit range
    (decisions.md: `skip=45006006736823993237504` is a 422, never a 500 from the database)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise InvalidParameter(name, "outside the signed 64-bit integer range")
    return value


def parse_integer(name: str, text: str) -> int:
    """The one reading of an integer parameter, in the query or the path: ASCII digits with an
    optional leading `-`. Anything else (`5e2`, `500.0`, `+5`, `5_000`, ` 5`, `𝟓`, empty) is a 422
    naming the parameter, as is a value outside 64 bits."""
    if _INTEGER.fullmatch(text) is None:
        raise InvalidParameter(
            name, f"expected an integer (ASCII digits, an optional leading '-'), got {shown(text)}"
        )
    if len(text.lstrip("-")) > _INT64_DIGITS:  # before int(): a 100,000-digit value costs nothing
        raise InvalidParameter(name, "outside the signed 64-bit integer range")
    return int64(name, int(text))


def parse_number(name: str, text: str) -> float:
    """A number parameter: a plain decimal (`3.5`, `-1`, `.5`); an exponent, `nan`, `inf` or
    anything else is a 422 naming it."""
    if len(text) > _LONGEST_SHOWN or _DECIMAL.fullmatch(text) is None:
        raise InvalidParameter(name, f"expected a decimal number such as 3.5, got {shown(text)}")
    return float(text)


def shortened(text: str) -> str:
    """A client's text cut short for an error message: a message stays small whatever is sent."""
    return text if len(text) <= _LONGEST_SHOWN else f"{text[:_LONGEST_SHOWN]}..."


def shown(text: str) -> str:
    """A client's value quoted in an error message, cut short."""
    return repr(shortened(text))


_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def day_param(name: str, raw: str | None) -> date | None:
    """A `YYYY-MM-DD` day (None when absent); 422 naming the parameter when it is not one."""
    if raw is None:
        return None
    try:
        if _DAY.fullmatch(raw):
            return date.fromisoformat(raw)
    except ValueError:
        pass
    raise InvalidParameter(name, f"expected a date YYYY-MM-DD, got {shown(raw)}")


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
    meaning: str = ""
    """What the value is, for the OpenAPI document (the bounds are added to it)."""
    epoch_ms: bool = False
    """An instant in epoch milliseconds: a value that can only be seconds is a 422 (`SECONDS`)."""

    def clamp(self, value: int) -> int:
        return clamp(value, self.low, self.high)

    def served(self, value: int) -> int:
        """A request's value as the route serves it: 422 outside 64 bits (or below `low` when not
        clamped), else clamped."""
        if int64(self.name, value) < self.low and not self.clamped:
            raise InvalidParameter(self.name, f"must be at least {self.low}")
        if self.epoch_ms and value in SECONDS:
            raise InvalidParameter(self.name, seconds_message(value))
        return self.clamp(value)

    def value_of(self, value: int | None) -> int | Default:
        """The value a request is served with: its default when absent, else clamped."""
        return self.default if value is None else self.clamp(value)

    def parameter(self) -> ParameterKwarg:
        """A path segment as the OpenAPI document shows it: a 64-bit integer with its bounds
        (though the route reads it from text: `RequestValues.integer`)."""
        return PathParameter(description=self.description, schema_extra=self.schema())

    def schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": OpenAPIType.INTEGER.value, "format": "int64"}
        if self.low > INT64_MIN:
            schema["minimum"] = self.low
        if self.high is not None:
            schema["maximum"] = self.high
        if self.default is not None:
            schema["default"] = self.default
        return schema

    def openapi(self) -> dict[str, Any]:
        """The query parameter's OpenAPI object."""
        return _parameter(self.name, self.description, self.schema())

    @property
    def description(self) -> str:
        written = "ASCII digits with an optional leading '-' (anything else answers 422)"
        if not self.clamped:
            rule = f"at least {self.low} (less answers 422)" if self.low > INT64_MIN else ""
        elif self.high is None:
            rule = f"values below {self.low} are raised to it"
        else:
            rule = f"clamped to {self.low}..{self.high} (values outside are served as the nearest bound)"
        unit = (
            f"a value from {SECONDS.start:,} to {SECONDS.stop - 1:,} reads as epoch seconds and "
            "answers 422"
            if self.epoch_ms
            else ""
        )
        return "; ".join(part for part in (self.meaning, rule, unit, written) if part)


@dataclass(frozen=True, slots=True)
class Text:
    """A query parameter read as text (a choice, keywords, a day): the route checks its value."""

    name: str
    meaning: str
    default: str | None = None
    schema_extra: Mapping[str, Any] = field(default_factory=dict)

    def openapi(self) -> dict[str, Any]:
        schema = {"type": "string", **self.schema_extra}
        if self.default is not None:
            schema["default"] = self.default
        return _parameter(self.name, self.meaning, schema)


@dataclass(frozen=True, slots=True)
class Number:
    """A query parameter read as a plain decimal (`parse_number`)."""

    name: str
    meaning: str
    default: float

    def openapi(self) -> dict[str, Any]:
        schema = {"type": "number", "default": self.default}
        return _parameter(self.name, f"{self.meaning}; a plain decimal such as 3.5", schema)


QueryParameterDeclaration = Bounds[Any] | Text | Number
"""What a route declares in `opt["query"]`: the query parameters it takes (any other answers 422)."""


def _parameter(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


SKIP = Bounds("skip", default=0, low=0, meaning="how many entries to skip")
SYMBOLS_LIMIT = Bounds("limit", default=100, low=1, high=1000, meaning="most symbols returned")
BRIEFS_LIMIT = Bounds("limit", default=10, low=1, high=500, meaning="most briefs returned")
SEARCH_LIMIT = Bounds("limit", default=20, low=1, high=500, meaning="most briefs returned")
SENTIMENT_LIMIT = Bounds("limit", default=30, low=1, high=3650, meaning="most days returned")
LEGACY_SENTIMENT_DAYS = Bounds(
    "days", default=30, low=1, high=3650, source="path", meaning="days up to the newest stored day"
)
PRICE_POINTS_LIMIT = Bounds(
    "limit",
    default=None,
    low=1,
    clamped=False,
    meaning="only the most recent N points (of the range, when `from` or `to` narrows it)",
)
"""No default: without `limit` get-price-history answers every point (a value below 1 is a 422)."""
PRICES_FROM = Bounds(
    "from",
    default=None,
    low=INT64_MIN,
    clamped=False,
    meaning="the first instant, in epoch milliseconds, inclusive",
    epoch_ms=True,
)
PRICES_TO = Bounds(
    "to",
    default=None,
    low=INT64_MIN,
    clamped=False,
    meaning="the last instant, in epoch milliseconds, inclusive",
    epoch_ms=True,
)
INDICATOR_PERIOD = Bounds(
    "period",
    default=30,
    low=FIRST_PERIOD,
    high=LAST_PERIOD,
    meaning="the analysis window in days",
)
"""Clamped to the periods the warehouse holds for every symbol (the catalog's)."""
BACKTEST_YEARS = Bounds("years", default=2, low=1, high=20, meaning="the backtest window in years")
BACKTEST_TRADES_LIMIT = Bounds(
    "limit", default=50, low=1, high=1000, meaning="most trades returned"
)
RECENT_TRADES_LIMIT = Bounds("limit", default=10, low=1, high=100, meaning="most trades returned")
TREND_HISTORY_LIMIT = Bounds(
    "limit",
    default=1,
    low=1,
    high=5000,
    source="path",
    meaning="most points returned, newest first",
)
RECOMMENDATIONS_LIMIT = Bounds(
    "limit", default=10, low=1, high=100, meaning="most recommendations returned"
)
TREND_SEGMENTS_LIMIT = Bounds(
    "limit", default=50, low=1, high=500, meaning="most segments returned, newest first"
)

MAX_KEYWORDS = 20
MAX_KEYWORD_LENGTH = 64
KEYWORDS = Text(
    "keywords",
    f"whitespace-separated words that must all occur in a brief's title (any case); at most "
    f"{MAX_KEYWORDS} words of at most {MAX_KEYWORD_LENGTH} characters (more answers 422)",
)
STRATEGY_FILTER = Text(
    "strategy",
    "aggressive or conservative (any other value answers 400); omitted: both",
    schema_extra={"enum": list(STRATEGIES)},
)
STRATEGY_CHOICE = Text(
    "strategy",
    "aggressive or conservative (any other value answers 400)",
    default="aggressive",
    schema_extra={"enum": list(STRATEGIES)},
)
FILL = Text(
    "fill",
    "close: orders fill at the close of the signal's bar; next_open: at the next bar's open (a "
    "signal on the latest bar is pending, no trade yet); any other value answers 422",
    default="close",
    schema_extra={"enum": list(FILLS)},
)
ADJUSTMENT = Text(
    "adjustment",
    "split: each price divided by the split ratios after its bar and the volume multiplied by "
    "them (what the analytics are computed on); all: splits and dividends (a total-return "
    "series); raw: as traded; the latest bar is as traded under each; any other value answers 422",
    default="split",
    schema_extra={"enum": list(ADJUSTMENTS)},
)
INCLUDE_DELISTED = Text(
    "include_delisted",
    "true: also the instruments delisted by the request's day (or `as_of`'s); false (the "
    "default): only those listed then; any other value answers 422",
    default="false",
    schema_extra={"enum": ["true", "false"]},
)
ACTIONS_FROM = Text(
    "from",
    "the first day listed, YYYY-MM-DD; default: the instrument's first action",
    schema_extra={"format": "date"},
)
ACTIONS_TO = Text(
    "to", "the last day listed, YYYY-MM-DD; default: its latest", schema_extra={"format": "date"}
)
VERSIONS_LIMIT = Bounds("limit", default=50, low=1, high=500, meaning="most versions returned")
VERSIONS_FROM = Text(
    "from", "the earliest publish instant listed: RFC 3339, or a day YYYY-MM-DD (its start)"
)
VERSIONS_TO = Text(
    "to", "the latest publish instant listed: RFC 3339, or a day YYYY-MM-DD (its end)"
)
STATUS_DAYS = 366
"""The most days one data-status answer lists (decisions.md, Freshness)."""
STATUS_DEFAULT_DAYS = 30
STATUS_FROM = Text(
    "from",
    f"the first day listed, YYYY-MM-DD; default {STATUS_DEFAULT_DAYS - 1} days before `to` "
    f"(at most the {STATUS_DAYS} days through `to` are listed)",
    schema_extra={"format": "date"},
)
STATUS_TO = Text(
    "to", "the last day listed, YYYY-MM-DD; default today (UTC)", schema_extra={"format": "date"}
)
AS_OF = Text(
    "as_of",
    "answer as the API did then: an RFC 3339 instant (with Z or an offset) or a data version id "
    "as sent in x-data-version; the retained version current at that instant answers, with the "
    "body and ETag served then (an instant before the oldest retained version answers 404, one in "
    "the future means now)",
    schema_extra={
        "anyOf": [
            {"type": "string", "format": "date-time"},
            {"type": "string", "pattern": "^[0-9]{1,19}$"},
        ]
    },
)
"""Every data route takes it (its controller's `opt["point_in_time"]`); decisions.md, Point in time."""
POINT_IN_TIME = "point_in_time"
"""The `opt` key of the controllers whose routes take `as_of` (every data route)."""
MIN_SCORE = Number("min_score", "the lowest score (0 to 5) a recommendation may have", 3.5)

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


def keyword_list(keywords: str | None) -> list[str]:
    """search-briefs' keywords, lower case; 422 beyond `MAX_KEYWORDS` or `MAX_KEYWORD_LENGTH`."""
    words = (keywords or "").lower().split()
    if len(words) > MAX_KEYWORDS:
        raise InvalidParameter("keywords", f"at most {MAX_KEYWORDS} keywords, got {len(words)}")
    long = next((word for word in words if len(word) > MAX_KEYWORD_LENGTH), None)
    if long is not None:
        raise InvalidParameter(
            "keywords", f"a keyword has at most {MAX_KEYWORD_LENGTH} characters, got {len(long)}"
        )
    return words


def one_of(name: str, value: str | None, choices: Sequence[str]) -> str:
    """`value` when it is one of `choices`, as written; 422 naming the parameter otherwise."""
    if value is None or value not in choices:
        raise InvalidParameter(
            name, f"expected one of {', '.join(choices)}, got {shown(value or '')}"
        )
    return value


def fill_param(value: str | None) -> str:
    """A backtest's fill (`FILL`)."""
    return one_of("fill", value, FILLS)


def flag_param(name: str, value: str | None) -> bool:
    """A `true` / `false` parameter (`INCLUDE_DELISTED`); 422 naming it otherwise."""
    return one_of(name, value, ("true", "false")) == "true"


def adjustment_param(value: str | None) -> str:
    """A price series' adjustment (`ADJUSTMENT`)."""
    return one_of("adjustment", value, ADJUSTMENTS)


def strategy_param(value: str) -> str:
    """A strategy (segment or query, any case); 400 naming the value and the valid ones."""
    strategy = value.lower()
    if strategy not in STRATEGIES:
        raise BadRequest(f"Invalid strategy '{value}'; valid strategies: {', '.join(STRATEGIES)}")
    return strategy
