"""/api/v2/{market}/instruments: symbols, detail, search (crypto) and the scorecard."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from litestar import Controller, Request, Response, get
from litestar.params import FromPath

from api.errors import NotFound, error_responses
from api.params import CRYPTO_ONLY, INCLUDE_DELISTED, SKIP, SYMBOLS_LIMIT, flag_param
from api.queries import instruments as queries
from api.request_values import RequestValues
from api.responses import serve
from api.routes.common import (
    DATA_ROUTES,
    instrument,
    instrument_index,
    instrument_served,
    listed_at,
    listing_index,
    market_of,
    request_instant_ms,
    request_snapshot,
    take_snapshot,
    to_wire,
)
from api.schemas import Instrument, InstrumentSearch, Scorecard, SymbolList

SEARCH_LIMIT = 5


@dataclass(frozen=True)
class Listing:
    """The instruments a listing route answers with, and what its cache key needs of the clock."""

    instruments: dict[str, Instrument]
    effective: date | None
    """The newest listing or delisting on or before the request's day: the answer changes only
    when another takes effect, so this (not the day) is part of the key."""
    clocked: bool
    """A listing or delisting is still to come: the raw request's answer moves with the clock."""


async def listing(request: Request[Any, Any, Any], market: str) -> Listing:
    """decisions.md, Corporate actions: the market's instruments listed on the request's day (its
    `as_of`'s, else today, UTC); with `include_delisted=true` every one."""
    snapshot = request_snapshot(request)
    values = RequestValues.of(request.scope)
    everything = flag_param("include_delisted", values.text(INCLUDE_DELISTED))
    instruments = (await instrument_index(snapshot)).get(market, {})
    spans = (await listing_index(snapshot)).get(market, {})
    day = datetime.fromtimestamp(request_instant_ms(request) / 1000, UTC).date()
    changes = [] if everything else [d for span in spans.values() for d in span.changes()]
    return Listing(
        listed_at(instruments, spans, day, everything),
        max((d for d in changes if d <= day), default=None),
        any(d > day for d in changes),
    )


def search_rank(query: str, item: Instrument) -> tuple[int, int, str] | None:
    """Exact symbol, symbol prefix, name prefix, name substring (case-insensitive), in that order;
    within a rank the shorter matched symbol or name wins, then the alphabetically first. None: no match.
    """
    q, symbol, name = query.lower(), item.symbol.lower(), item.name.lower()
    ranks = ((symbol == q, symbol), (symbol.startswith(q), symbol), (name.startswith(q), name))
    for rank, (hit, matched) in enumerate((*ranks, (q in name, name))):
        if hit:
            return rank, len(matched), matched
    return None


def search(query: str, instruments: list[Instrument]) -> list[Instrument]:
    ranked = [(rank, item) for item in instruments if (rank := search_rank(query, item))]
    return [item for _, item in sorted(ranked, key=lambda pair: pair[0])[:SEARCH_LIMIT]]


class InstrumentsController(Controller):
    """Instrument listing, metadata, search and the technical scorecard."""

    path = "/api/v2/{market:str}/instruments"
    tags = ["instruments"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/list-symbols",
        opt={"operation": "list-symbols", "query": (SYMBOLS_LIMIT, SKIP, INCLUDE_DELISTED)},
        responses=error_responses(400, 404, 422, 503),
    )
    async def list_symbols(self, request: Request[Any, Any, Any]) -> Response[SymbolList]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        values = RequestValues.of(request.scope)
        limit, skip = values.integer(SYMBOLS_LIMIT), values.integer(SKIP)
        listed = await listing(request, market)

        async def build() -> SymbolList:
            return SymbolList(symbols=sorted(listed.instruments)[skip : skip + limit])

        key = ("list-symbols", market, limit, skip, listed.effective)
        return await serve(request, snapshot, key, build, remember=not listed.clocked)

    @get(
        "/get-detail/{symbol:str}",
        opt={"operation": "get-detail"},
        responses=error_responses(404, 503),
    )
    async def get_detail(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
    ) -> Response[Instrument]:
        snapshot = request_snapshot(request)
        market = market_of(request, CRYPTO_ONLY)
        found = await instrument(snapshot, market, symbol)

        async def build() -> Instrument:
            return found

        return await serve(request, snapshot, ("get-detail", market, found.symbol), build)

    @get(
        "/search-instruments/{term:str}",
        opt={"operation": "search-instruments", "query": (INCLUDE_DELISTED,)},
        responses=error_responses(404, 503),
    )
    async def search_instruments(
        self,
        request: Request[Any, Any, Any],
        term: FromPath[str],
    ) -> Response[InstrumentSearch]:
        snapshot = request_snapshot(request)
        market = market_of(request, CRYPTO_ONLY)
        listed = await listing(request, market)

        async def build() -> InstrumentSearch:
            return InstrumentSearch(instruments=search(term, list(listed.instruments.values())))

        key = ("search", market, term.lower(), listed.effective)
        return await serve(request, snapshot, key, build, remember=not listed.clocked)

    @get(
        "/scorecard/{symbol:str}",
        opt={"operation": "scorecard"},
        responses=error_responses(404, 503),
    )
    async def scorecard(
        self,
        request: Request[Any, Any, Any],
        symbol: FromPath[str],
    ) -> Response[Scorecard]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        found = await instrument_served(snapshot, market, symbol, "scorecards")

        async def build() -> Scorecard:
            row = await queries.scorecard(snapshot, market, found.symbol)
            if row is None:
                raise NotFound(f"No scorecard for {found.symbol} yet")
            return to_wire(Scorecard, {"name": found.name, **row, "symbol": found.symbol})

        return await serve(request, snapshot, ("scorecard", market, found.symbol), build)
