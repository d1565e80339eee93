"""Request values the router cannot check itself: markets, strategies, clamps and integer path segments."""

from __future__ import annotations

from collections.abc import Sequence

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


def int_segment(name: str, raw: str, *, minimum: int | None = None) -> int:
    """An integer path segment, 422 naming it when it is not one.

    Declare such segments `{name:str}` and parse them here: Litestar answers a `{name:int}` segment
    that is not an integer with 404 (no route matched), where decisions.md asks for 422.
    """
    try:
        value = int(raw)
    except ValueError:
        raise InvalidParameter(name, f"expected an integer, got '{raw}'") from None
    if minimum is not None and value < minimum:
        raise InvalidParameter(name, f"must be at least {minimum}")
    return value


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


def strategy_param(value: str) -> str:
    """A strategy (segment or query, any case); 400 naming the value and the valid ones."""
    strategy = value.lower()
    if strategy not in STRATEGIES:
        raise BadRequest(f"Invalid strategy '{value}'; valid strategies: {', '.join(STRATEGIES)}")
    return strategy
