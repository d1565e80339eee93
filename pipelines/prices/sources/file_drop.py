"""File-drop connector: instrument lists and OHLCV files (CSV per symbol, Parquet per market)."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import polars as pl

from pipelines.prices.sources.base import (
    BAR_FIELDS,
    INSTRUMENT_FIELDS,
    RAW_BARS_SCHEMA,
    RAW_INSTRUMENTS_SCHEMA,
    PriceSource,
    RawBars,
    RawInstruments,
    SourceError,
    unreadable,
)

PRICE_HEADER = ("date", "open", "high", "low", "close", "volume")
INVALID_UTF8 = "\ufffd"


def read_lines(path: Path) -> list[str]:
    """The file's lines, decoded as UTF-8 with bad bytes replaced (so they can be rejected per line)."""
    text = path.read_bytes().decode("utf-8", errors="replace").removeprefix("\ufeff")
    return [line.rstrip("\r") for line in text.split("\n")]


def _split_header(line: str) -> tuple[str, ...]:
    return tuple(field.strip().lower() for field in line.split(","))


def _whole_file(path: Path, location: str, record: str, reason: str) -> pl.DataFrame:
    return unreadable(
        [{"source": str(path), "location": location, "record": record, "reason": reason}]
    )


class FileDropSource(PriceSource):
    """Reads the layout of docs/file-drop.md under `root`; every read is a full re-read (cheap)."""

    def __init__(self, root: Path, name: str = "file_drop") -> None:
        self.root = root
        self.name = name

    def instruments(self, market: str) -> RawInstruments:
        path = self.root / "instruments" / f"{market}.csv"
        if not path.is_file():
            raise SourceError(f"instrument list {path} does not exist")
        return read_instruments_csv(path)

    def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
        """Every price file of the market: unknown symbols are read too, so they can be rejected."""
        folder = self.root / "prices" / market
        if not folder.is_dir():
            raise SourceError(f"price folder {folder} does not exist")
        parts = [read_price_csvs(sorted(folder.glob("*.csv")))]
        parts += [read_price_parquet(path) for path in sorted(folder.glob("*.parquet"))]
        bars = RawBars.concat(parts)
        if since is None:
            return bars
        parsed = pl.col("date").str.to_date("%Y-%m-%d", strict=False)
        return RawBars(bars.rows.filter(parsed.is_null() | (parsed >= since)), bars.unreadable)


def read_instruments_csv(path: Path) -> RawInstruments:
    """Instrument rows of one `symbol,name,logo` CSV; quoted fields may hold commas."""
    lines = read_lines(path)
    if not any(line.strip() for line in lines):
        return RawInstruments(
            RAW_INSTRUMENTS_SCHEMA.to_frame(), _whole_file(path, "file", "", "file is empty")
        )
    if _split_header(lines[0]) != INSTRUMENT_FIELDS:
        reason = f"header is {lines[0]!r}, expected 'symbol,name,logo'; file not read"
        return RawInstruments(
            RAW_INSTRUMENTS_SCHEMA.to_frame(), _whole_file(path, "line 1", lines[0], reason)
        )
    rows, bad = [], []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        where = {"source": str(path), "location": f"line {number}", "record": line}
        fields = next(csv.reader([line]))
        if INVALID_UTF8 in line:
            bad.append(where | {"reason": "line is not valid UTF-8"})
        elif len(fields) != len(INSTRUMENT_FIELDS):
            bad.append(where | {"reason": f"expected 3 fields, found {len(fields)}"})
        else:
            rows.append(dict(zip(INSTRUMENT_FIELDS, fields, strict=True)) | where)
    return RawInstruments(pl.DataFrame(rows, schema=RAW_INSTRUMENTS_SCHEMA), unreadable(bad))


def read_price_csvs(paths: Sequence[Path]) -> RawBars:
    """Bar rows of many `<SYMBOL>.csv` files, split and checked in one vectorized pass."""
    frames, bad = [], []
    for path in paths:
        lines = read_lines(path)
        if not any(line.strip() for line in lines):
            bad.append(_whole_file(path, "file", "", "file is empty"))
        elif _split_header(lines[0]) != PRICE_HEADER:
            reason = f"header is {lines[0]!r}, expected '{','.join(PRICE_HEADER)}'; file not read"
            bad.append(_whole_file(path, "line 1", lines[0], reason))
        else:
            frames.append(
                pl.DataFrame({"record": lines[1:]}).with_columns(
                    source=pl.lit(str(path)),
                    symbol=pl.lit(path.stem),
                    location=pl.format("line {}", pl.int_range(2, len(lines) + 1)),
                )
            )
    if not frames:
        return RawBars(RAW_BARS_SCHEMA.to_frame(), pl.concat([unreadable([]), *bad]))
    lines_frame = pl.concat(frames).filter(pl.col("record").str.strip_chars() != "")
    rows, garbage = split_csv_lines(lines_frame, PRICE_HEADER)
    return RawBars(rows.select(RAW_BARS_SCHEMA.names()), pl.concat([unreadable([]), *bad, garbage]))


def split_csv_lines(
    lines: pl.DataFrame, fields: Sequence[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split `record` on commas into `fields`; lines of another width or with bad bytes are unreadable."""
    parts = pl.col("record").str.split(",")
    width = parts.list.len()
    reason = (
        pl.when(pl.col("record").str.contains(INVALID_UTF8, literal=True))
        .then(pl.lit("line is not valid UTF-8"))
        .when(width != len(fields))
        .then(pl.format(f"expected {len(fields)} fields, found {{}}", width))
    )
    checked = lines.with_columns(reason=reason)
    good = checked.filter(pl.col("reason").is_null())
    split = good.with_columns(
        parts.list.to_struct(fields=list(fields)).struct.unnest()
    ).with_columns(pl.col(list(fields)).str.strip_chars().str.strip_chars('"'))
    garbage = checked.filter(pl.col("reason").is_not_null()).select(
        "source", "location", "record", "reason"
    )
    return split, garbage


def read_price_parquet(path: Path) -> RawBars:
    """Bar rows of one Parquet file with columns `symbol,date,open,high,low,close,volume`."""
    try:
        frame = pl.read_parquet(path)
    except Exception as error:  # any unreadable file is a reject, never a crash
        reason = f"not a readable Parquet file: {type(error).__name__}"
        return RawBars(RAW_BARS_SCHEMA.to_frame(), _whole_file(path, "file", "", reason))
    missing = [c for c in BAR_FIELDS if c not in frame.columns]
    if missing:
        reason = f"Parquet file lacks columns {missing}; file not read"
        return RawBars(
            RAW_BARS_SCHEMA.to_frame(), _whole_file(path, "file", ",".join(frame.columns), reason)
        )
    text = frame.select(pl.col(c).cast(pl.String) for c in BAR_FIELDS)
    rows = text.with_columns(
        source=pl.lit(str(path)),
        location=pl.format("row {}", pl.int_range(1, frame.height + 1)),
        record=pl.concat_str([pl.col(c).fill_null("") for c in BAR_FIELDS], separator=","),
    )
    return RawBars(rows.select(RAW_BARS_SCHEMA.names()))
