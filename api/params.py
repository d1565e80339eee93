"""Request values the router cannot check itself: the market segment and integer path segments."""

from __future__ import annotations

from collections.abc import Sequence

from api.errors import InvalidParameter, MarketNotLive, NotFound
from pipelines.catalog import MARKETS


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
