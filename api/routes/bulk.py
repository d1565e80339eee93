"""/api/v2/{market}/bulk: a whole dataset of one market as a Parquet, Arrow or CSV file, streamed."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.params import FromPath
from litestar.response import Stream

from api.errors import BadRequest, InvalidParameter, NotFound, error_responses
from api.export import (
    DATASETS,
    DEFAULT_FORMAT,
    FORMATS,
    Dataset,
    Format,
    Selection,
    count_sql,
    encoded,
    filename,
)
from api.metering import charge_rows
from api.params import Text, adjustment_param, day_param, day_range
from api.request_values import RequestValues
from api.responses import NOT_MODIFIED, etag_for, not_modified, source_of
from api.routes.common import (
    DATA_ROUTES,
    instrument_index,
    market_of,
    request_snapshot,
    require_tables,
    take_snapshot,
)
from api.warehouse import WarehouseSnapshot
from pipelines.catalog import ADJUSTMENTS

FORMAT = Text(
    "format",
    "the file format: parquet, arrow (an Arrow IPC stream) or csv (any other value answers 400)",
    default=DEFAULT_FORMAT,
    schema_extra={"enum": list(FORMATS)},
)
DAY = {"format": "date"}
FIRST_DAY = Text(
    "from", "the first day, YYYY-MM-DD, inclusive, on the dataset's date column", schema_extra=DAY
)
LAST_DAY = Text(
    "to", "the last day, YYYY-MM-DD, inclusive, on the dataset's date column", schema_extra=DAY
)
SYMBOLS = Text("symbols", "comma-separated symbols (omitted: every symbol of the market)")
ADJUSTMENT = Text(
    "adjustment",
    "daily-prices only: split (the default), all or raw, as get-price-history takes it; any other "
    "value, or the parameter on another dataset, answers 422",
    schema_extra={"enum": list(ADJUSTMENTS)},
)


def dataset_of(name: str) -> Dataset:
    """decisions.md: an unknown dataset answers 404 (naming the datasets)."""
    found = DATASETS.get(name.lower())
    if found is None:
        raise NotFound(f"Unknown dataset '{name}'; datasets: {', '.join(DATASETS)}")
    return found


def format_of(name: str) -> Format:
    """decisions.md: an unknown format answers 400 (naming the formats)."""
    found = FORMATS.get(name.lower())
    if found is None:
        raise BadRequest(f"Invalid format '{name}'; formats: {', '.join(FORMATS)}")
    return found


async def symbols_of(snapshot: WarehouseSnapshot, market: str, raw: str | None) -> tuple[str, ...]:
    """The comma-separated `symbols`, upper case, sorted, once each; 404 naming any that is not an
    instrument of the market (as a `{symbol}` route answers), 422 when it names none."""
    if raw is None:
        return ()
    named = sorted({part.strip().upper() for part in raw.split(",") if part.strip()})
    if not named:
        raise InvalidParameter("symbols", "expected comma-separated symbols")
    known = (await instrument_index(snapshot)).get(market, {})
    unknown = [symbol for symbol in named if symbol not in known]
    if unknown:
        raise NotFound(f"Not instruments of the {market} market: {', '.join(unknown)}")
    return tuple(named)


def adjustment_of(dataset: Dataset, raw: str | None) -> str:
    """decisions.md, Corporate actions: daily-prices is split-adjusted unless `adjustment` says
    otherwise; no other dataset takes the parameter (422, rather than a silent no-op)."""
    if not dataset.adjustable:
        if raw is not None:
            raise InvalidParameter("adjustment", "only the daily-prices dataset is adjusted")
        return "raw"
    return adjustment_param("split" if raw is None else raw)


async def count_rows(snapshot: WarehouseSnapshot, dataset: Dataset, selection: Selection) -> int:
    sql, params = count_sql(dataset, selection)
    return int((await snapshot.fetch(sql, params))["n"].item())


class BulkController(Controller):
    """Whole datasets of a market for the current data version, priced by the rows returned."""

    path = "/api/v2/{market:str}/bulk"
    tags = ["bulk"]  # noqa: RUF012 (Litestar reads this class attribute)
    before_request = staticmethod(take_snapshot)
    opt = DATA_ROUTES

    @get(
        "/{dataset:str}",
        opt={
            "operation": "bulk-export",
            "query": (FORMAT, FIRST_DAY, LAST_DAY, SYMBOLS, ADJUSTMENT),
        },
        responses=error_responses(400, 404, 422, 503),
    )
    async def bulk_export(
        self,
        request: Request[Any, Any, Any],
        dataset: FromPath[str],
    ) -> Response[Any]:
        snapshot = request_snapshot(request)
        market = market_of(request)
        values = RequestValues.of(request.scope)
        found, chosen = dataset_of(dataset), format_of(values.text(FORMAT) or "")
        first, last = (
            day_param("from", values.text(FIRST_DAY)),
            day_param("to", values.text(LAST_DAY)),
        )
        day_range(first, last)
        adjustment = adjustment_of(found, values.text(ADJUSTMENT))
        named = values.text(SYMBOLS)
        symbols = await symbols_of(snapshot, market, named)
        selection = Selection(market, first, last, symbols, adjustment)
        require_tables(snapshot, found.table.name)
        etag = etag_for(snapshot.version, ("bulk-export", found.name, chosen.name, selection))
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        headers |= {k.decode(): v.decode() for k, v in source_of(snapshot)}
        if not_modified(request, etag):
            return Response(b"", status_code=NOT_MODIFIED, headers=headers)
        # Counted on the snapshot the file is read from: the exact rows, charged before a byte.
        await charge_rows(request, await count_rows(snapshot, found, selection))
        name = filename(market, found, snapshot.version, chosen)
        headers["Content-Disposition"] = f'attachment; filename="{name}"'
        body = encoded(snapshot, found, selection, chosen)
        return Stream(body, media_type=chosen.media_type, headers=headers)
