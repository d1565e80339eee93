"""File-drop connector: instrument lists and OHLCV files (day files, CSV per symbol, Parquet)."""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
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
from pipelines.prices.sources.listing import SourceFile, stat_files

PRICE_HEADER = ("date", "open", "high", "low", "close", "volume")
"""Header of a per-symbol file `prices/<market>/<SYMBOL>.csv` (the symbol is the file's stem)."""
DAY_HEADER = BAR_FIELDS
"""Header of a day file `prices/<market>/days/<YYYY-MM-DD>.csv`: every symbol's bar of that day."""
DAYS = "days"
INVALID_UTF8 = "\ufffd"
_DAY_NAME = re.compile(r"\d{4}-\d{2}-\d{2}")

__all__ = ["DAY_HEADER", "PRICE_HEADER", "FileDropSource", "SourceFile"]


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
    """Reads the layout of docs/file-drop.md under `root`.

    `listing` and `read_bars` let a caller read only the files that are new or changed since it
    last read them; `daily_bars` reads every price file of the market.
    """

    def __init__(self, root: Path, name: str = "file_drop") -> None:
        self.root = root
        self.name = name

    def instruments(self, market: str) -> RawInstruments:
        path = self.root / "instruments" / f"{market}.csv"
        if not path.is_file():
            raise SourceError(f"instrument list {path} does not exist")
        return read_instruments_csv(path)

    def listing(self, market: str) -> list[SourceFile]:
        """Every price file of the market (day files, per-symbol CSVs, Parquet), by path."""
        folder = self._folder(market)
        paths = [*folder.glob("*.csv"), *(folder / DAYS).glob("*.csv"), *folder.glob("*.parquet")]
        return sorted(stat_files(p for p in paths if _listed(p)), key=lambda f: f.path)

    def read_bars(self, market: str, paths: Sequence[str]) -> RawBars:
        """Bar rows of exactly these files (paths as `listing` gives them).

        Rows come per-symbol CSVs first, then day files, then Parquet files, each kind in path
        order and each file's lines in order; a file that cannot be read is one unreadable record.
        """
        folder = self._folder(market)
        kinds: dict[str, list[Path]] = {"symbol": [], "day": [], "parquet": []}
        for text in sorted(set(paths)):
            path = Path(text)
            if path.suffix == ".parquet":
                kinds["parquet"].append(path)
            elif path.parent.name == DAYS and path.parent.parent == folder:
                kinds["day"].append(path)
            else:
                kinds["symbol"].append(path)
        parts = [read_price_csvs(kinds["symbol"]), read_day_files(kinds["day"])]
        parts += [read_price_parquet(path) for path in kinds["parquet"]]
        return RawBars.concat(parts)

    def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
        """Every price file of the market: unknown symbols are read too, so they can be rejected."""
        bars = self.read_bars(market, [f.path for f in self.listing(market)])
        if since is None:
            return bars
        parsed = pl.col("date").str.to_date("%Y-%m-%d", strict=False)
        return RawBars(bars.rows.filter(parsed.is_null() | (parsed >= since)), bars.unreadable)

    def _folder(self, market: str) -> Path:
        folder = self.root / "prices" / market
        if not folder.is_dir():
            raise SourceError(f"price folder {folder} does not exist")
        return folder


def _listed(path: Path) -> bool:
    """A file to read: not hidden (a writer's temporary file), not a folder."""
    return not path.name.startswith(".") and path.is_file()


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
    """Bar rows of many `<SYMBOL>.csv` files (the symbol is the file stem)."""
    return _read_csv_files(paths, PRICE_HEADER, day_files=False)


def read_day_files(paths: Sequence[Path]) -> RawBars:
    """Bar rows of many day files `<YYYY-MM-DD>.csv` (header `symbol,date,open,high,low,close,volume`).

    A row dated another day than its file's name is unreadable (`date D is not the file's day`):
    a day file holds that day's bars, and a reader tracking files by name relies on it. A row
    whose date does not parse is left to the validation (`unparseable date`).
    """
    named = [p for p in paths if _DAY_NAME.fullmatch(p.stem)]
    bad = [
        _whole_file(p, "file", "", "file name is not a day (YYYY-MM-DD.csv); file not read")
        for p in paths
        if not _DAY_NAME.fullmatch(p.stem)
    ]
    bars = _read_csv_files(named, DAY_HEADER, day_files=True)
    if not bad:
        return bars
    return RawBars(bars.rows, pl.concat([bars.unreadable, *bad]))


@dataclass(frozen=True)
class _Body:
    """A CSV file's lines after the header: `raw[start:]`, UTF-8."""

    index: int
    """Position of the file among those read (rows keep this order)."""
    path: Path
    raw: bytes
    start: int
    plain: bool
    """No quote, blank or tab, and no byte the line reader splits on: the fast reader applies."""
    recoded: bool
    """The file held bytes that are not UTF-8 (replaced by U+FFFD, so their lines are rejected)."""

    def chunks(self) -> list[bytes | memoryview]:
        """The lines as pieces of one buffer (no copy), ending with a newline."""
        if self.start >= len(self.raw):
            return []
        body = memoryview(self.raw)[self.start :]
        return [body] if self.raw.endswith(b"\n") else [body, b"\n"]

    def lines(self) -> int:
        if self.start >= len(self.raw):
            return 0
        return self.raw.count(b"\n", self.start) + (not self.raw.endswith(b"\n"))


_BOM = b"\xef\xbb\xbf"
_RAW_SEPARATOR = "\x1f"
"""Separator of the raw-line read: files holding it are read the slow way instead."""
_LINE_BITS = 32
"""A line's key is `file << 32 | line`."""


def _read_csv_files(paths: Sequence[Path], header: Sequence[str], day_files: bool) -> RawBars:
    """Rows of many CSV files with `header`: every line with its source, location and record.

    Files of plain comma-separated values (the usual case) are read by polars' CSV reader from
    one buffer holding all of them, once as raw lines and once as fields; files with quotes, blanks
    or tabs are split line by line and their fields trimmed of blanks and quotes.
    """
    bodies, bad = _bodies(paths, tuple(header))
    plain = [b for b in bodies if b.plain]
    other = [b for b in bodies if not b.plain]
    frames = []
    if plain:
        frame = _read_plain(plain, header, day_files)
        if frame is None:  # the two readings did not line up: read them the slow way
            other = bodies
        else:
            frames.append(frame)
    if other:
        frames.append(_read_slow(other, header, day_files))
    if not frames:
        return RawBars(RAW_BARS_SCHEMA.to_frame(), pl.concat([unreadable([]), *bad]))
    lines = pl.concat(frames, how="diagonal_relaxed")
    if len(frames) > 1:
        lines = lines.sort("key", maintain_order=True)
    rows, garbage = _check_lines(lines, header)
    if day_files:
        rows, elsewhere = _same_day(rows)
        garbage = pl.concat([garbage, elsewhere])
    return RawBars(rows.select(RAW_BARS_SCHEMA.names()), pl.concat([unreadable([]), *bad, garbage]))


def _bodies(
    paths: Sequence[Path], header: tuple[str, ...]
) -> tuple[list[_Body], list[pl.DataFrame]]:
    """Each readable file's lines after a correct header; whole-file rejects for the others."""
    bodies, bad = [], []
    expected = ",".join(header)
    for index, path in enumerate(paths):
        try:
            raw = path.read_bytes()
        except OSError as error:
            reason = f"file cannot be read: {type(error).__name__}"
            bad.append(_whole_file(path, "file", "", reason))
            continue
        raw = raw.removeprefix(_BOM)
        recoded = not raw.isascii()
        if recoded:
            text = raw.decode("utf-8", errors="replace")
            recoded = INVALID_UTF8 in text
            raw = text.encode()
        if not raw or raw.isspace():
            bad.append(_whole_file(path, "file", "", "file is empty"))
            continue
        end = raw.find(b"\n")
        first = (raw if end < 0 else raw[:end]).decode().rstrip("\r")
        if _split_header(first) != header:
            reason = f"header is {first!r}, expected '{expected}'; file not read"
            bad.append(_whole_file(path, "line 1", first, reason))
            continue
        start = len(raw) if end < 0 else end + 1
        plain = all(raw.find(c, start) < 0 for c in (b'"', b" ", b"\t", b"\x1f"))
        plain = plain and raw.count(b"\r", start) == raw.count(b"\r\n", start)  # no lone CR
        bodies.append(_Body(index, path, raw, start, plain, recoded))
    return bodies, bad


def _read_plain(bodies: list[_Body], header: Sequence[str], day_files: bool) -> pl.DataFrame | None:
    """Lines and fields of plain files, read by polars from one buffer; None if the raw-line and
    the field reading disagree on the number of lines (not expected: then read them slowly)."""
    counts = np.array([b.lines() for b in bodies], dtype=np.int64)
    total = int(counts.sum())
    if total == 0:  # headers only
        return _lines_frame(pl.DataFrame())
    buffer = b"".join(chunk for b in bodies for chunk in b.chunks())
    records = pl.read_csv(
        buffer,
        has_header=False,
        separator=_RAW_SEPARATOR,
        quote_char=None,
        schema={"record": pl.String},
    )
    values = pl.read_csv(
        buffer,
        has_header=False,
        quote_char=None,
        schema=dict.fromkeys(header, pl.String),
        truncate_ragged_lines=True,
        missing_columns="insert",
        extra_columns="ignore",
        empty_string_is_null=False,
    )
    if records.height != total or values.height != total:
        return None
    index = np.array([b.index for b in bodies], dtype=np.int64)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    line = np.arange(total, dtype=np.int64) - first + 2  # the header is line 1
    body = np.repeat(np.arange(len(bodies)), counts)
    columns = {
        "key": pl.Series(np.repeat(index << _LINE_BITS, counts) + line),
        "source": pl.Series([str(b.path) for b in bodies]).gather(body),
        "recoded": pl.Series([b.recoded for b in bodies]).gather(body),
    }
    stems = pl.Series([b.path.stem for b in bodies]).gather(body)
    columns["day" if day_files else "symbol"] = stems
    frame = pl.concat([records, values], how="horizontal").with_columns(**columns)
    # A line has the header's width exactly when its fields and commas add up to its length (a
    # missing field is read as empty, extra fields are dropped): far cheaper than counting commas.
    length = pl.sum_horizontal(pl.col(list(header)).str.len_bytes()) + (len(header) - 1)
    frame = frame.with_columns(fits=pl.col("record").str.len_bytes() == length.fill_null(-1))
    if records["record"].has_nulls():  # blank lines (filtering copies every column: only if any)
        frame = frame.filter(pl.col("record").is_not_null())
    return _lines_frame(frame)


def _read_slow(bodies: list[_Body], header: Sequence[str], day_files: bool) -> pl.DataFrame:
    """Lines of files with quotes, blanks or tabs: split on commas, fields trimmed of both."""
    frames = []
    for body in bodies:
        text = b"".join(body.chunks()).decode()
        lines = [line.rstrip("\r") for line in text.split("\n")][:-1]
        frame = pl.DataFrame({"record": lines}, schema={"record": pl.String}).with_columns(
            key=(body.index << _LINE_BITS) + pl.int_range(2, len(lines) + 2, dtype=pl.Int64),
            source=pl.lit(str(body.path)),
            recoded=pl.lit(body.recoded),
        )
        stem = pl.lit(body.path.stem)
        frames.append(frame.with_columns(stem.alias("day" if day_files else "symbol")))
    lines_frame = pl.concat(frames).filter(pl.col("record").str.strip_chars() != "")
    parts = pl.col("record").str.split(",")
    split = lines_frame.with_columns(
        *(
            parts.list.get(k, null_on_oob=True).str.strip_chars().str.strip_chars('"').alias(name)
            for k, name in enumerate(header)
        ),
        fits=parts.list.len() == len(header),
    )
    return _lines_frame(split)


def _lines_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """The columns every reading gives (an empty reading has them too)."""
    schema: dict[str, pl.DataType] = {
        c: pl.String() for c in RAW_BARS_SCHEMA.names() if c != "location"
    }
    schema |= {"key": pl.Int64(), "recoded": pl.Boolean(), "fits": pl.Boolean(), "day": pl.String()}
    return pl.concat([pl.DataFrame(schema=schema), frame], how="diagonal_relaxed")


def _check_lines(lines: pl.DataFrame, header: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows with every field, and the unreadable lines (bad bytes, wrong number of fields)."""
    bad_bytes = pl.col("recoded") & pl.col("record").str.contains(INVALID_UTF8, literal=True)
    good = lines.select(pl.col("fits") & ~bad_bytes).to_series()
    if good.all():  # the usual case: no copy
        return lines.with_columns(location=_location()), unreadable([])
    rows = lines.filter(good)
    bad = lines.filter(~good)
    width = pl.col("record").str.count_matches(",", literal=True) + 1
    garbage = bad.filter(pl.col("record").str.strip_chars() != "").select(
        "source",
        location=_location(),
        record="record",
        reason=pl.when(bad_bytes)
        .then(pl.lit("line is not valid UTF-8"))
        .otherwise(pl.format(f"expected {len(header)} fields, found {{}}", width)),
    )
    return rows.with_columns(location=_location()), garbage


def _location() -> pl.Expr:
    return pl.format("line {}", pl.col("key") % (1 << _LINE_BITS))


def _same_day(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows dated their file's day (or not a date at all), and the others as unreadable."""
    day = pl.col("day")  # the file's stem
    differs = rows.filter(pl.col("date") != day)
    if differs.is_empty():
        return rows, unreadable([])
    parsed = pl.col("date").str.strip_chars().str.to_date("%Y-%m-%d", strict=False)
    elsewhere = differs.filter(parsed.is_not_null() & (parsed != day.str.to_date("%Y-%m-%d")))
    if elsewhere.is_empty():
        return rows, unreadable([])
    reason = pl.format("date {} is not the file's day {}", pl.col("date").str.strip_chars(), day)
    garbage = elsewhere.select("source", "location", "record", reason=reason)
    kept = rows.filter(~pl.col("key").is_in(elsewhere["key"].implode()))
    return kept, garbage


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
