"""Bulk export: the datasets, their filters and file formats, streamed batch by batch."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Protocol

import polars as pl
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.ipc as pa_ipc
import pyarrow.parquet as pq

from api.warehouse import WarehouseSnapshot
from pipelines.catalog import (
    BACKTEST_SUMMARIES,
    BACKTEST_TRADES,
    BRIEFS,
    CORPORATE_ACTIONS,
    DAILY_PRICES,
    INDICATOR_SNAPSHOTS,
    PRICE_ADJUSTMENTS,
    SENTIMENT_DAILY,
    TREND_HISTORY,
    TREND_SEGMENTS,
    Column,
    Table,
)
from pipelines.catalog.adjustments import adjusted
from pipelines.catalog.sql import quote_identifier

BATCH_BYTES = 1 << 20
"""About how many bytes of rows an export reads and encodes at a time (a Parquet row group): with
each send awaited (the server's back-pressure), a stalled client holds this, its encoding and one
chunk in the worker, whatever the file's size (decisions.md, Bulk export)."""
CHUNK_BYTES = 64 * 1024
"""The largest piece handed to the server at once: a send blocks once the client stops reading."""
MIN_BATCH_ROWS = 1024
_COLUMN_BYTES = {"list": 64, "string": 32}
"""What a row's column takes in memory, about (a number or date: 8)."""


@dataclass(frozen=True)
class Dataset:
    """A warehouse table offered whole: its URL name, the date column `from`/`to` filter (the
    row's day, or the day a row that spans days starts) and the column `symbols` filters."""

    name: str
    table: Table
    date_column: str = "date"
    symbols_column: str = "symbol"
    """`symbol`, or briefs' `symbols` list (a brief matches when it names any of them)."""
    adjustable: bool = False
    """Bars that the `adjustment` parameter adjusts for corporate actions (daily prices)."""


DATASETS: dict[str, Dataset] = {
    dataset.name: dataset
    for dataset in (
        Dataset("daily-prices", DAILY_PRICES, adjustable=True),
        Dataset("indicator-snapshots", INDICATOR_SNAPSHOTS),
        Dataset("trend-history", TREND_HISTORY),
        Dataset("trend-segments", TREND_SEGMENTS, date_column="started_on"),
        Dataset("backtest-trades", BACKTEST_TRADES, date_column="start_date"),
        Dataset("backtest-summaries", BACKTEST_SUMMARIES, date_column="start_date"),
        Dataset("briefs", BRIEFS, symbols_column="symbols"),
        Dataset("sentiment-daily", SENTIMENT_DAILY),
        Dataset("corporate-actions", CORPORATE_ACTIONS),
    )
}
"""decisions.md, Bulk export: every dataset, by the name its URL segment carries."""


class _Writer(Protocol):
    def write_batch(self, batch: pa.RecordBatch) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Format:
    """A file format: the `format` value, the file's extension and media type, its writer."""

    name: str
    extension: str
    media_type: str
    writer: Callable[[io.RawIOBase, pa.Schema], _Writer]
    lists_as_json: bool = False
    """CSV has no list type: briefs' `symbols` and `impacted_coins` go out as JSON arrays; and its
    text cells are read by spreadsheets: those that would be formulas are quoted (`_select`)."""


def _parquet(sink: io.RawIOBase, schema: pa.Schema) -> _Writer:
    return pq.ParquetWriter(sink, schema, compression="zstd")


def _arrow(sink: io.RawIOBase, schema: pa.Schema) -> _Writer:
    writer: _Writer = pa_ipc.new_stream(sink, schema)
    return writer


def _csv(sink: io.RawIOBase, schema: pa.Schema) -> _Writer:
    return pa_csv.CSVWriter(sink, schema)


FORMATS: dict[str, Format] = {
    fmt.name: fmt
    for fmt in (
        Format("parquet", "parquet", "application/vnd.apache.parquet", _parquet),
        Format("arrow", "arrows", "application/vnd.apache.arrow.stream", _arrow),
        Format("csv", "csv", "text/csv", _csv, lists_as_json=True),
    )
}
"""`format` values: Parquet (the default), the Arrow IPC stream format, CSV with a header row."""
DEFAULT_FORMAT = "parquet"


@dataclass(frozen=True)
class Selection:
    """The rows of one export: a market, an inclusive day range, symbols (empty: all)."""

    market: str
    start: date | None = None
    end: date | None = None
    symbols: tuple[str, ...] = ()
    adjustment: str = "raw"
    """An adjustable dataset's `adjustment` (`split`, `all` or `raw`); `raw` for the others."""

    def where(self, dataset: Dataset) -> tuple[str, list[object]]:
        """The WHERE clause over `dataset`'s table and its parameters."""
        day = quote_identifier(dataset.date_column)
        clauses = ["market = ?"]
        params: list[object] = [self.market]
        if self.start is not None:
            clauses.append(f"{day} >= ?")
            params.append(self.start)
        if self.end is not None:
            clauses.append(f"{day} <= ?")
            params.append(self.end)
        if self.symbols:
            clauses.append(_symbols_clause(dataset))
            params.append(list(self.symbols))
        return " AND ".join(clauses), params


def _symbols_clause(dataset: Dataset) -> str:
    column = quote_identifier(dataset.symbols_column)
    listed = dict.fromkeys(c.name for c in dataset.table.columns if _is_list(c))
    if dataset.symbols_column in listed:
        return f"list_has_any({column}, ?)"
    return f"list_contains(?, {column})"


def _is_list(column: Column) -> bool:
    return column.dtype.is_nested()


def count_sql(dataset: Dataset, selection: Selection) -> tuple[str, list[object]]:
    where, params = selection.where(dataset)
    return f"SELECT count(*) AS n FROM {quote_identifier(dataset.table.name)} WHERE {where}", params


def export_sql(dataset: Dataset, selection: Selection, fmt: Format) -> tuple[str, list[object]]:
    """Every catalog column of the table, in the catalog's order and types, for `selection`.

    No ORDER BY: rows come in the warehouse's stored order (each file sorted by the table's key),
    so DuckDB streams them without a sort holding the whole result. Adjusted bars are read as
    traded and adjusted batch by batch (`_adjusting`): a join in the SQL would give up that order.
    """
    columns = ", ".join(_select(column, fmt) for column in dataset.table.columns)
    where, params = selection.where(dataset)
    table = quote_identifier(dataset.table.name)
    return f"SELECT {columns} FROM {table} WHERE {where}", params


FORMULA_STARTS = "('=', '+', '-', '@', chr(9), chr(13))"
"""decisions.md, Bulk export: a CSV text cell starting with one of these is written with a leading
`'`, so a spreadsheet shows it as text instead of running it (formula injection through feed text)."""
QUOTE = "''''"
"""A single quote as a DuckDB string literal."""


def _select(column: Column, fmt: Format) -> str:
    name = quote_identifier(column.name)
    if not fmt.lists_as_json:
        return name
    if _is_list(column):
        return f"to_json({name}) AS {name}"  # starts with '[': never a formula
    if column.dtype == pl.String:
        quoted = f"CASE WHEN left({name}, 1) IN {FORMULA_STARTS} THEN {QUOTE} || {name}"
        return f"{quoted} ELSE {name} END AS {name}"
    return name


def filename(market: str, dataset: Dataset, version: int, fmt: Format) -> str:
    """decisions.md: `<market>-<dataset>-<version>.<ext>`."""
    return f"{market}-{dataset.name}-{version}.{fmt.extension}"


class _Chunks(io.RawIOBase):
    """A write-only file that keeps what the writer wrote until `take` hands it on."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        chunk = bytes(data)  # type: ignore[call-overload]
        self._parts.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def take(self) -> bytes:
        chunk, self._parts = b"".join(self._parts), []
        return chunk


def batch_rows(table: Table) -> int:
    """Rows of `table` in about `BATCH_BYTES`."""
    width = sum(_column_bytes(column) for column in table.columns)
    return max(MIN_BATCH_ROWS, BATCH_BYTES // max(width, 1))


def _column_bytes(column: Column) -> int:
    if _is_list(column):
        return _COLUMN_BYTES["list"]
    return _COLUMN_BYTES["string"] if column.dtype == pl.String else 8


def encoded(
    snapshot: WarehouseSnapshot,
    dataset: Dataset,
    selection: Selection,
    fmt: Format,
    rows: int | None = None,
) -> Iterator[bytes]:
    """The file, a batch of `rows` (default `batch_rows`) at a time, in pieces of at most
    `CHUNK_BYTES`: an export holds one batch and its encoding, never the file.

    Blocking (DuckDB and the writers): a `Stream` of it calls each step in a worker thread.
    """
    sql, params = export_sql(dataset, selection, fmt)
    batches = snapshot.record_batches(sql, params, batch_rows=rows or batch_rows(dataset.table))
    adjust = _adjusting(snapshot, dataset, selection)
    sink = _Chunks()
    writer = fmt.writer(sink, batches.schema)
    for batch in batches:
        writer.write_batch(adjust(batch))
        yield from _pieces(sink.take())
    writer.close()
    yield from _pieces(sink.take()) or [b""]


def _adjusting(
    snapshot: WarehouseSnapshot, dataset: Dataset, selection: Selection
) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """What each batch of the export goes through: for adjusted bars, `adjusted` with the market's
    adjustment rows (read once: a few per symbol), the very numbers of `adjusted_bars_sql`;
    otherwise nothing."""
    if not dataset.adjustable or selection.adjustment == "raw":
        return lambda batch: batch
    sql = f"SELECT * FROM {quote_identifier(PRICE_ADJUSTMENTS.name)} WHERE market = ?"
    factors = snapshot.query(sql, [selection.market])
    if factors.is_empty():
        return lambda batch: batch

    def adjust(batch: pa.RecordBatch) -> pa.RecordBatch:
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        table = adjusted(frame, factors, selection.adjustment).to_arrow()
        return (
            table.cast(batch.schema).combine_chunks().to_batches()[0] if table.num_rows else batch
        )

    return adjust


def _pieces(chunk: bytes) -> list[bytes]:
    view = memoryview(chunk)
    return [bytes(view[i : i + CHUNK_BYTES]) for i in range(0, len(chunk), CHUNK_BYTES)]
