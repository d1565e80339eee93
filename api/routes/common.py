"""What every /api/v2 controller shares: mounting, the per-version instrument index, table checks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, TypeVar

import anyio.to_thread
import msgspec
from litestar import Controller, Request

from api.cache import cache_for
from api.dependencies import market_segment, serving_of
from api.dependencies import request_instant_ms as request_instant_ms  # for the controllers
from api.dependencies import request_snapshot as request_snapshot  # for the controllers
from api.dependencies import take_snapshot as take_snapshot
from api.errors import NotFound, TableMissing
from api.params import POINT_IN_TIME
from api.queries import Row as Row  # for the controllers
from api.queries.instruments import adjusted_symbols, instrument_list, listing_days
from api.schemas import Instrument, Wire
from api.warehouse import WarehouseSnapshot
from pipelines.catalog import MARKETS

W = TypeVar("W", bound=Wire)
InstrumentIndex = dict[str, dict[str, Instrument]]
"""market -> upper-case symbol -> Instrument, built once per data version."""

TABLE_RETRY_SECONDS = 60
DATA_ROUTES: dict[str, Any] = {POINT_IN_TIME: True}
"""The `opt` of every data controller: its routes take `as_of` (`api.params.AS_OF`)."""


def mounted(*controllers: type[Controller]) -> list[type[Controller]]:
    """Each controller at its documented path plus an undocumented twin on the other branch.

    A literal /api/v2/crypto/ segment shadows `{market}` in Litestar's router (no fallback), so
    `{market}` groups also answer under /api/v2/crypto/ and crypto-only groups under `{market}`
    (where they answer 404 naming crypto).
    """
    mounts: list[type[Controller]] = []
    for controller in controllers:
        path: str = getattr(controller, "path")  # noqa: B009 (mypy: a slot on Controller)
        if "{market:str}" in path:
            twin = path.replace("{market:str}", "crypto")
        else:
            twin = path.replace("/api/v2/crypto/", "/api/v2/{market:str}/")
        attributes = {"path": twin, "include_in_schema": False}
        mounts += [controller, type(f"{controller.__name__}Twin", (controller,), attributes)]
    return mounts


def market_of(request: Request[Any, Any, Any], serves: tuple[str, ...] = MARKETS) -> str:
    """The request's market (`{market}`, or crypto under /api/v2/crypto/): unknown 404, not
    launched 404, a market the route does not serve 404 naming the ones it does."""
    return serving_of(request).market(market_segment(request), serves)


def require_tables(snapshot: WarehouseSnapshot, *names: str) -> None:
    """503 with Retry-After while a table the route reads is absent from the serving manifest
    (404 on a past version `as_of` named: `TableMissing`)."""
    for name in names:
        if name not in snapshot.manifest.tables:
            raise TableMissing(name, retry_after=TABLE_RETRY_SECONDS)


INSTRUMENT_INDEX = "instrument-index"


async def instrument_index(snapshot: WarehouseSnapshot) -> InstrumentIndex:
    """Every instrument of every market, read once per data version (usually by
    `prepare_snapshot`, before the version is served), built off the event loop."""

    async def load() -> InstrumentIndex:
        require_tables(snapshot, "instruments")
        return await anyio.to_thread.run_sync(_read_instrument_index, snapshot)

    return await cache_for(snapshot).memo(INSTRUMENT_INDEX, load)


def _read_instrument_index(snapshot: WarehouseSnapshot) -> InstrumentIndex:
    index: InstrumentIndex = {}
    frame = instrument_list(snapshot)
    for market, symbol, name, logo in frame.iter_rows():
        upper = symbol.upper()
        index.setdefault(market, {})[upper] = Instrument(name=name, symbol=upper, logo=logo)
    return index


LISTING_INDEX = "listing-index"


@dataclass(frozen=True)
class Listed:
    """When an instrument traded: from its listing's day (None: always) to the day before its
    delisting's (None: still)."""

    listed: date | None
    delisted: date | None

    def on(self, day: date) -> bool:
        started = self.listed is None or self.listed <= day
        return started and (self.delisted is None or day < self.delisted)

    def changes(self) -> list[date]:
        """The days on which its listing status changes."""
        return [d for d in (self.listed, self.delisted) if d is not None]


ListingIndex = dict[str, dict[str, Listed]]
"""market -> upper-case symbol -> its listing span (instruments with a listing or delisting)."""


async def listing_index(snapshot: WarehouseSnapshot) -> ListingIndex:
    """Every listed or delisted instrument's span, per market, read once per data version (none
    while the warehouse has no corporate actions table)."""

    async def load() -> ListingIndex:
        if "corporate_actions" not in snapshot.manifest.tables:
            return {}
        frame = await anyio.to_thread.run_sync(listing_days, snapshot)
        index: ListingIndex = {}
        for market, symbol, listed, delisted in frame.iter_rows():
            index.setdefault(market, {})[symbol] = Listed(listed, delisted)
        return index

    return await cache_for(snapshot).memo(LISTING_INDEX, load)


def listed_at(
    instruments: dict[str, Instrument], spans: dict[str, Listed], day: date, everything: bool
) -> dict[str, Instrument]:
    """decisions.md, Corporate actions: the instruments listed on `day` (not one delisted on it or
    before, nor one listed after it), or with `everything` all of them."""
    if everything or not spans:
        return instruments
    return {s: i for s, i in instruments.items() if s not in spans or spans[s].on(day)}


ADJUSTED_INDEX = "adjusted-index"


async def adjusted_index(snapshot: WarehouseSnapshot) -> dict[str, frozenset[str]]:
    """Per market, the symbols whose series an adjustment changes (those with a split or a
    dividend among their bars), read once per data version: every other symbol's adjusted series
    is its traded one, bit for bit, and is served without the join (about 2 ms a query)."""

    async def load() -> dict[str, frozenset[str]]:
        if "price_adjustments" not in snapshot.manifest.tables:
            return {}
        frame = await anyio.to_thread.run_sync(adjusted_symbols, snapshot)
        found: dict[str, set[str]] = {}
        for market, symbol in frame.iter_rows():
            found.setdefault(market, set()).add(symbol)
        return {market: frozenset(symbols) for market, symbols in found.items()}

    return await cache_for(snapshot).memo(ADJUSTED_INDEX, load)


def prepare_snapshot(snapshot: WarehouseSnapshot) -> None:
    """What every version's first requests would otherwise build on their way: computed by the
    reader's thread before it swaps the snapshot in (`DuckDBWarehouseReader(prepare=...)`)."""
    if "instruments" in snapshot.manifest.tables:
        cache_for(snapshot).preset(INSTRUMENT_INDEX, _read_instrument_index(snapshot))


async def instrument(snapshot: WarehouseSnapshot, market: str, symbol: str) -> Instrument:
    """The instrument `symbol` (any case) of `market`; 404 when it is not one."""
    found = (await instrument_index(snapshot)).get(market, {}).get(symbol.upper())
    if found is None:
        raise NotFound(f"Symbol '{symbol.upper()}' is not an instrument of the {market} market")
    return found


async def instrument_served(
    snapshot: WarehouseSnapshot, market: str, symbol: str, *tables: str
) -> Instrument:
    """`instrument` (404 when absent), then 503 while a table the route reads is not materialized.

    The order is the spec's: a symbol that is not an instrument is the client's error whatever the
    state of the data behind it.
    """
    found = await instrument(snapshot, market, symbol)
    require_tables(snapshot, *tables)
    return found


def iso_date(value: object) -> str | None:
    """A stored date as `YYYY-MM-DD` (strings pass through)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def to_wire(cls: type[W], row: Row) -> W:
    """A Struct from a row (extra columns ignored, numbers converted); a missing field is a 500."""
    return msgspec.convert(row, cls, strict=False)
