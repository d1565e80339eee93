"""File-drop connector: instrument lists and OHLCV files (day files, CSV per symbol, Parquet)."""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import date, time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from pipelines.prices.sources.base import (
    ACTION_FIELDS,
    BAR_FIELDS,
    INSTRUMENT_FIELDS,
    INVALID_UTF8,
    RAW_ACTIONS_SCHEMA,
    RAW_BARS_SCHEMA,
    RAW_INSTRUMENTS_SCHEMA,
    UNREADABLE_SCHEMA,
    PriceSource,
    RawActions,
    RawBars,
    RawInstruments,
    SourceError,
    unreadable,
)
from pipelines.prices.sources.listing import FileBounds, SourceFile, stat_files

PRICE_HEADER = ("date", "open", "high", "low", "close", "volume")
"""Header of a per-symbol file `prices/<market>/<SYMBOL>.csv` (the symbol is the file's stem)."""
DAY_HEADER = BAR_FIELDS
"""Header of a day file `prices/<market>/days/<YYYY-MM-DD>.csv`: every symbol's bar of that day."""
DAYS = "days"
_DAY_NAME = re.compile(r"\d{4}-\d{2}-\d{2}")
BATCH_BYTES = 16 * 2**20
"""Bytes of files `bar_batches` reads at a time (its memory is a few times this)."""
KEY = "key"
"""Where a bar line is in its reading: `file << 32 | number`, the number of `line N` (CSV, the
header is line 1) or `row N` (Parquet); keys ascend in read order."""
_LINE_BITS = 32

__all__ = [
    "BATCH_BYTES",
    "DAY_HEADER",
    "KEY",
    "PRICE_HEADER",
    "BarLines",
    "FileDropSource",
    "SourceFile",
]


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

    `listing` and `read_bars` (or `bar_batches`, a batch of files at a time) let a caller read
    only the files that are new or changed since it last read them; `daily_bars` reads every
    price file of the market.
    """

    def __init__(
        self,
        root: Path,
        name: str = "file_drop",
        max_file_mb: int | None = None,
        max_rows: int | None = None,
    ) -> None:
        self.root = root
        self.name = name
        self.bounds = FileBounds.of(max_file_mb, max_rows)

    def instruments(self, market: str) -> RawInstruments:
        path = self.root / "instruments" / f"{market}.csv"
        if not path.is_file():
            raise SourceError(f"instrument list {path} does not exist")
        return read_instruments_csv(path, self.bounds)

    def corporate_actions(self, market: str) -> RawActions:
        """The rows of `actions/<market>.csv`; a market without that file has no actions."""
        path = self.root / "actions" / f"{market}.csv"
        if not path.is_file():
            return RawActions()
        rows, bad = _read_fields_csv(path, ACTION_FIELDS, RAW_ACTIONS_SCHEMA, self.bounds)
        return RawActions(rows, bad)

    def listing(self, market: str) -> list[SourceFile]:
        """Every price file of the market (day files, per-symbol CSVs, Parquet), by path."""
        folder = self._folder(market)
        paths = [*folder.glob("*.csv"), *(folder / DAYS).glob("*.csv"), *folder.glob("*.parquet")]
        return sorted(stat_files((p for p in paths if _listed(p)), self.root), key=lambda f: f.path)

    def read_bars(self, market: str, paths: Sequence[str]) -> RawBars:
        """Bar rows of exactly these files (paths as `listing` gives them).

        Rows come per-symbol CSVs first, then day files, then Parquet files, each kind in path
        order and each file's lines in order; a file that cannot be read is one unreadable record.
        """
        batches = list(self.bar_batches(market, paths, batch_bytes=None))
        return batches[0].raw() if batches else RawBars.concat([])

    def bar_batches(
        self, market: str, paths: Sequence[str], batch_bytes: int | None = BATCH_BYTES
    ) -> Iterator[BarLines]:
        """The lines of `read_bars(market, paths)` in the same order, about `batch_bytes` of files
        at a time (None: in one batch); a line's source, location and record are given on demand.

        No (symbol, date) is in two batches, so that duplicates can be found batch by batch: a day
        file holds one day, a per-symbol file one symbol; files that could share a bar (day and
        per-symbol files together, Parquet files, two files of one symbol) are one batch.
        """
        reading = Reading(_in_read_order(self._folder(market), paths), self.bounds)
        for group in _batches(reading.files, batch_bytes):
            yield _read_batch(reading, group)

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


def read_instruments_csv(path: Path, bounds: FileBounds | None = None) -> RawInstruments:
    """Instrument rows of one `symbol,name,logo` CSV; quoted fields may hold commas. A file larger
    than `bounds` allow is rejected whole, unread."""
    rows, bad = _read_fields_csv(path, INSTRUMENT_FIELDS, RAW_INSTRUMENTS_SCHEMA, bounds)
    return RawInstruments(rows, bad)


def _read_fields_csv(
    path: Path, names: tuple[str, ...], schema: pl.Schema, bounds: FileBounds | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows, unreadable records) of a CSV whose header is `names`, every field a string; quoted
    fields may hold commas. A file too large for `bounds`, empty or with another header is one
    unreadable record; so is each line that is not UTF-8 or has another number of fields."""
    refused = (bounds or FileBounds()).size_refused(path)
    if refused is not None:
        return schema.to_frame(), _whole_file(path, "file", "", refused)
    lines = read_lines(path)
    if not any(line.strip() for line in lines):
        return schema.to_frame(), _whole_file(path, "file", "", "file is empty")
    if _split_header(lines[0]) != names:
        reason = f"header is {lines[0]!r}, expected {','.join(names)!r}; file not read"
        return schema.to_frame(), _whole_file(path, "line 1", lines[0], reason)
    rows, bad = [], []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        where = {"source": str(path), "location": f"line {number}", "record": line}
        fields = next(csv.reader([line]))
        if INVALID_UTF8 in line:
            bad.append(where | {"reason": "line is not valid UTF-8"})
        elif len(fields) != len(names):
            bad.append(where | {"reason": f"expected {len(names)} fields, found {len(fields)}"})
        else:
            rows.append(dict(zip(names, fields, strict=True)) | where)
    return pl.DataFrame(rows, schema=schema), unreadable(bad)


_SYMBOL_FILE, _DAY_FILE, _PARQUET_FILE = range(3)
"""Kinds of price file, in the order a reading gives their lines."""
_WHOLE_FILE, _BAD_LINE, _OTHER_DAY, _NOT_A_DAY = range(4)
"""Kinds of unreadable record, in the order a reading gives those of one kind of file."""


@dataclass(frozen=True)
class _File:
    ordinal: int
    """Position in the reading (the high bits of its lines' keys)."""
    path: Path
    kind: int


class Reading:
    """The files of one reading, in read order: a line's key names its file by position."""

    def __init__(self, files: Sequence[_File], bounds: FileBounds | None = None) -> None:
        self.files = tuple(files)
        self.bounds = bounds or FileBounds()
        self._sources = pl.Series([str(f.path) for f in self.files], dtype=pl.String)
        self._units = pl.Series(
            ["row" if f.kind == _PARQUET_FILE else "line" for f in self.files], dtype=pl.String
        )
        self._days = pl.Series([f.kind == _DAY_FILE for f in self.files], dtype=pl.Boolean)

    def provenance(self, rows: pl.DataFrame) -> pl.DataFrame:
        """`source`, `location` and `record` of lines of this reading (`BarLines.rows`)."""
        ordinal = rows[KEY] // (1 << _LINE_BITS)
        number = (rows[KEY] % (1 << _LINE_BITS)).cast(pl.String)
        # A line read in one pass holds no quote or blank: it is its fields joined by commas.
        joined = (
            pl.when(pl.col("_day"))
            .then(pl.concat_str(DAY_HEADER, separator=","))
            .otherwise(pl.concat_str(PRICE_HEADER, separator=","))
        )
        return rows.with_columns(_day=self._days.gather(ordinal)).select(
            source=self._sources.gather(ordinal),
            location=self._units.gather(ordinal) + " " + number,
            record=pl.coalesce("record", joined),
        )


@dataclass(frozen=True)
class BarLines:
    """The bar lines of a batch of files, fields as text, with where each came from as a key."""

    rows: pl.DataFrame
    """`BAR_FIELDS` as read, `KEY` (ascending), and `record`: the raw line, or null where it is the
    fields joined by commas."""
    unreadable: pl.DataFrame
    """`UNREADABLE_SCHEMA` plus `rank` and `KEY`, which order them as `read_bars` does."""
    reading: Reading

    def provenance(self, rows: pl.DataFrame) -> pl.DataFrame:
        """`source`, `location` and `record` of some of `rows`."""
        return self.reading.provenance(rows)

    @staticmethod
    def no_unreadable() -> pl.DataFrame:
        """An empty `unreadable` frame."""
        return _no_unreadable()

    def raw(self) -> RawBars:
        """Every line with its provenance (what `read_bars` returns)."""
        rows = pl.concat(
            [self.rows.select(BAR_FIELDS), self.provenance(self.rows)], how="horizontal"
        )
        unreadable = self.unreadable.sort("rank", KEY, maintain_order=True)
        return RawBars(rows, unreadable.select(UNREADABLE_SCHEMA.names()))


def _in_read_order(folder: Path, paths: Sequence[str]) -> list[_File]:
    """Per-symbol CSVs, then day files, then Parquet files, each kind in path order."""
    kinds = []
    for text in sorted(set(paths)):
        path = Path(text)
        if path.suffix == ".parquet":
            kinds.append((_PARQUET_FILE, path))
        elif path.parent.name == DAYS and path.parent.parent == folder:
            kinds.append((_DAY_FILE, path))
        else:
            kinds.append((_SYMBOL_FILE, path))
    kinds.sort(key=lambda kind_path: kind_path[0])  # stable: path order within a kind
    return [_File(k, path, kind) for k, (kind, path) in enumerate(kinds)]


def _batches(files: Sequence[_File], batch_bytes: int | None) -> list[list[_File]]:
    """Consecutive files of about `batch_bytes`, or all of them when they may share a bar."""
    if not files:
        return []
    if batch_bytes is None or _may_share_bars(files):
        return [list(files)]
    batches: list[list[_File]] = [[]]
    size = 0
    for file in files:
        if size >= batch_bytes:
            batches.append([])
            size = 0
        batches[-1].append(file)
        with suppress(OSError):  # reading it will say what is wrong
            size += os.stat(file.path).st_size
    return batches


def _may_share_bars(files: Sequence[_File]) -> bool:
    """Whether two of the files may hold a bar of the same (symbol, date).

    Valid lines of a day file are of its day, and of a per-symbol file of its symbol (compared
    here more loosely than the validation does, so that no pair is missed).
    """
    kinds = {f.kind for f in files}
    if kinds == {_DAY_FILE}:
        names = [f.path.stem for f in files]
    elif kinds == {_SYMBOL_FILE}:
        names = [f.path.stem.strip().upper().casefold() for f in files]
    else:
        return len(files) > 1
    return len(set(names)) < len(names)


def _read_batch(reading: Reading, files: Sequence[_File]) -> BarLines:
    rows, unreadable = [], []
    for kind, header in ((_SYMBOL_FILE, PRICE_HEADER), (_DAY_FILE, DAY_HEADER)):
        of_kind = [f for f in files if f.kind == kind]
        named = [f for f in of_kind if kind != _DAY_FILE or _DAY_NAME.fullmatch(f.path.stem)]
        if named:
            lines, bad = _read_csv_files(reading, named, header, kind)
            rows.append(lines)
            unreadable.append(bad)
        reason = "file name is not a day (YYYY-MM-DD.csv); file not read"
        if len(named) < len(of_kind):
            unreadable += [
                _whole(f, "file", "", reason, _NOT_A_DAY)
                for f in of_kind
                if not _DAY_NAME.fullmatch(f.path.stem)
            ]
    for file in files:
        if file.kind == _PARQUET_FILE:
            lines, bad = _read_parquet(file, reading.bounds)
            rows.append(lines)
            unreadable.append(bad)
    return BarLines(_stack(rows), pl.concat([_no_unreadable(), *unreadable]), reading)


def _stack(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Frames of lines (columns of `_no_lines`) in key order, as one."""
    if len(frames) == 1:
        return frames[0]
    return pl.concat([_no_lines(), *frames]).sort(KEY)


def _no_lines() -> pl.DataFrame:
    return pl.DataFrame(
        schema={**dict.fromkeys(BAR_FIELDS, pl.String), KEY: pl.Int64, "record": pl.String}
    )


def _no_unreadable() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            **dict.fromkeys(UNREADABLE_SCHEMA.names(), pl.String),
            "rank": pl.Int64,
            KEY: pl.Int64,
        }
    )


def _whole(file: _File, location: str, record: str, reason: str, order: int) -> pl.DataFrame:
    """An unreadable record standing for a whole file."""
    return pl.DataFrame(
        {
            "source": [str(file.path)],
            "location": [location],
            "record": [record],
            "reason": [reason],
            "rank": [file.kind * 4 + order],
            KEY: [file.ordinal << _LINE_BITS],
        },
        schema=_no_unreadable().schema,
    )


@dataclass(frozen=True)
class _Body:
    """A CSV file's lines after the header: `raw[start:]`, UTF-8."""

    file: _File
    raw: bytes
    start: int
    plain: bool
    """No quote, blank, tab, unit separator or lone CR: fields are read as they are (else they
    are trimmed of blanks and quotes)."""
    recoded: bool
    """The file held bytes that are not UTF-8 (replaced by U+FFFD, so their lines are rejected)."""

    @property
    def one_pass(self) -> bool:
        """Polars' CSV reader applies: plain, and every byte UTF-8."""
        return self.plain and not self.recoded

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


def _read_csv_files(
    reading: Reading, files: Sequence[_File], header: Sequence[str], kind: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Lines of CSV files with `header` (`BarLines.rows`), and their unreadable records.

    Files of plain comma-separated values (the usual case) are read by polars' CSV reader from
    one buffer holding all of them, fields only; the others (quotes, blanks, tabs, bytes that are
    not UTF-8, lines of another width, blank lines, day files with a line of another day) are
    split line by line, the fields of files with quotes, blanks or tabs trimmed of both.
    """
    bodies, bad = _bodies(files, tuple(header), reading.bounds)
    slow = [b for b in bodies if not b.one_pass]
    frames = []
    if len(slow) < len(bodies):
        fast, refused = _read_fast([b for b in bodies if b.one_pass], header, kind)
        frames.append(fast)
        slow = sorted([*slow, *refused], key=lambda b: b.file.ordinal)
    garbage = []
    if slow:
        rows, bad_lines = _check_lines(_read_slow(slow, header, kind), header, kind)
        if kind == _DAY_FILE:
            rows, elsewhere = _same_day(rows)
            bad_lines = pl.concat([bad_lines, elsewhere])
        frames.append(rows.select(_no_lines().columns))
        garbage.append(bad_lines)
    return _stack(frames), pl.concat([_no_unreadable(), *bad, *garbage])


def _bodies(
    files: Sequence[_File], header: tuple[str, ...], bounds: FileBounds
) -> tuple[list[_Body], list[pl.DataFrame]]:
    """Each readable file's lines after a correct header; whole-file rejects for the others (a
    file over `bounds` is not read at all)."""
    bodies, bad = [], []
    expected = ",".join(header)
    for file in files:
        refused = bounds.size_refused(file.path)
        if refused is not None:
            bad.append(_whole(file, "file", "", refused, _WHOLE_FILE))
            continue
        try:
            raw = file.path.read_bytes()
        except OSError as error:
            reason = f"file cannot be read: {type(error).__name__}"
            bad.append(_whole(file, "file", "", reason, _WHOLE_FILE))
            continue
        raw = raw.removeprefix(_BOM)
        recoded = not raw.isascii()
        if recoded:
            text = raw.decode("utf-8", errors="replace")
            recoded = INVALID_UTF8 in text
            raw = text.encode()
        if not raw or raw.isspace():
            bad.append(_whole(file, "file", "", "file is empty", _WHOLE_FILE))
            continue
        end = raw.find(b"\n")
        first = (raw if end < 0 else raw[:end]).decode().rstrip("\r")
        if _split_header(first) != header:
            reason = f"header is {first!r}, expected '{expected}'; file not read"
            bad.append(_whole(file, "line 1", first, reason, _WHOLE_FILE))
            continue
        start = len(raw) if end < 0 else end + 1
        plain = all(raw.find(c, start) < 0 for c in (b'"', b" ", b"\t", b"\x1f"))
        # A CR is part of a line ending only (a lone one would split a line for one reader only).
        crs = raw.find(b"\r", start) >= 0
        plain = plain and (not crs or raw.count(b"\r", start) == raw.count(b"\r\n", start))
        bodies.append(_Body(file, raw, start, plain, recoded))
    return bodies, bad


def _read_fast(
    bodies: list[_Body], header: Sequence[str], kind: int
) -> tuple[pl.DataFrame, list[_Body]]:
    """Lines of plain files read by polars from one buffer, fields only, and the files found to
    need reading line by line after all: a line of another width, a blank line, or (day files)
    a line of another day."""
    counts = np.array([b.lines() for b in bodies], dtype=np.int64)
    total = int(counts.sum())
    if total == 0:  # headers only
        return _no_lines(), []
    try:
        values = pl.read_csv(
            b"".join(chunk for b in bodies for chunk in b.chunks()),
            has_header=False,
            quote_char=None,
            schema=dict.fromkeys(header, pl.String),
        )
    except pl.exceptions.PolarsError:  # a line with more fields than the header: find its file
        if len(bodies) == 1:
            return _no_lines(), bodies
        half = len(bodies) // 2
        first, first_refused = _read_fast(bodies[:half], header, kind)
        second, second_refused = _read_fast(bodies[half:], header, kind)
        return pl.concat([first, second]), first_refused + second_refused
    if values.height != total:  # not expected: let the line reader decide
        return _no_lines(), bodies
    body = np.repeat(np.arange(len(bodies)), counts)
    line = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts) + 2
    ordinals = np.array([b.file.ordinal for b in bodies], dtype=np.int64)
    frame = values.with_columns(
        pl.Series(KEY, np.repeat(ordinals << _LINE_BITS, counts) + line),
        record=pl.lit(None, pl.String),
    )
    stems = pl.Series([b.file.path.stem for b in bodies], dtype=pl.String).gather(body)
    refused: set[int] = set()
    if sum(values.null_count().row(0)):
        # An empty field and a missing one both read as null: a file whose commas are not exactly
        # the header's on every line (no line has more: polars refuses those) has a short line
        # or a blank one.
        short = values.select(pl.any_horizontal(pl.all().is_null())).to_series()
        for k in np.unique(body[short.to_numpy()]).tolist():
            b = bodies[k]
            if b.raw.count(b",", b.start) != (len(header) - 1) * int(counts[k]):
                refused.add(k)
        frame = frame.with_columns(pl.col(header).fill_null(""))
    if kind == _DAY_FILE:
        differs = (frame["date"] != stems).to_numpy()
        refused |= set(np.unique(body[differs]).tolist())
    else:
        frame = frame.with_columns(symbol=stems)
    if refused:
        frame = frame.filter(~pl.Series(np.isin(body, list(refused))))
    return frame.select(_no_lines().columns), [bodies[k] for k in sorted(refused)]


def _read_slow(bodies: list[_Body], header: Sequence[str], kind: int) -> pl.DataFrame:
    """Lines split on commas one by one; fields of files that are not plain are trimmed of blanks
    and quotes (those of plain files are kept as they are, as the one-pass reader reads them)."""
    frames = []
    for body in bodies:
        text = b"".join(body.chunks()).decode()
        lines = [line.rstrip("\r") for line in text.split("\n")][:-1]
        frame = pl.DataFrame({"record": lines}, schema={"record": pl.String}).with_columns(
            (
                pl.int_range(2, len(lines) + 2, dtype=pl.Int64) + (body.file.ordinal << _LINE_BITS)
            ).alias(KEY),
            source=pl.lit(str(body.file.path)),
            recoded=pl.lit(body.recoded),
            plain=pl.lit(body.plain),
        )
        stem = pl.lit(body.file.path.stem)
        frames.append(frame.with_columns(stem.alias("day" if kind == _DAY_FILE else "symbol")))
    # One chunk: polars 2.1's `pl.format` can panic on a column holding an empty chunk.
    lines_frame = pl.concat(frames).filter(pl.col("record").str.strip_chars() != "").rechunk()
    parts = pl.col("record").str.split(",")
    field = [parts.list.get(k, null_on_oob=True) for k in range(len(header))]
    return lines_frame.with_columns(
        *(
            pl.when(pl.col("plain"))
            .then(value)
            .otherwise(value.str.strip_chars().str.strip_chars('"'))
            .alias(name)
            for value, name in zip(field, header, strict=True)
        ),
        fits=parts.list.len() == len(header),
    )


def _check_lines(
    lines: pl.DataFrame, header: Sequence[str], kind: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows with every field, and the unreadable lines (bad bytes, wrong number of fields)."""
    bad_bytes = pl.col("recoded") & pl.col("record").str.contains(INVALID_UTF8, literal=True)
    good = lines.select(pl.col("fits") & ~bad_bytes).to_series()
    if good.all():
        return lines, _no_unreadable()
    width = pl.col("record").str.count_matches(",", literal=True) + 1
    garbage = lines.filter(~good).select(
        "source",
        location=_location(),
        record="record",
        reason=pl.when(bad_bytes)
        .then(pl.lit("line is not valid UTF-8"))
        .otherwise(pl.format(f"expected {len(header)} fields, found {{}}", width)),
        rank=pl.lit(kind * 4 + _BAD_LINE, pl.Int64),
        key=KEY,
    )
    return lines.filter(good), garbage


def _location() -> pl.Expr:
    return pl.format("line {}", pl.col(KEY) % (1 << _LINE_BITS))


def _same_day(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows dated their file's day (or not a date at all), and the others as unreadable."""
    day = pl.col("day")  # the file's stem
    differs = rows.filter(pl.col("date") != day)
    if differs.is_empty():
        return rows, _no_unreadable()
    parsed = pl.col("date").str.strip_chars().str.to_date("%Y-%m-%d", strict=False)
    elsewhere = differs.filter(parsed.is_not_null() & (parsed != day.str.to_date("%Y-%m-%d")))
    if elsewhere.is_empty():
        return rows, _no_unreadable()
    reason = pl.format("date {} is not the file's day {}", pl.col("date").str.strip_chars(), day)
    garbage = elsewhere.select(
        "source",
        location=_location(),
        record="record",
        reason=reason,
        rank=pl.lit(_DAY_FILE * 4 + _OTHER_DAY, pl.Int64),
        key=KEY,
    )
    kept = rows.filter(~pl.col(KEY).is_in(elsewhere[KEY].implode()))
    return kept, garbage


def _read_parquet(file: _File, bounds: FileBounds) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`read_price_parquet` of one file of a reading, its rows keyed `row N`."""
    bars = read_price_parquet(file.path, bounds)
    number = pl.int_range(1, pl.len() + 1, dtype=pl.Int64)
    rows = bars.rows.select(
        *BAR_FIELDS, (number + (file.ordinal << _LINE_BITS)).alias(KEY), "record"
    )
    # A whole-file reject is keyed at the file, a rejected row (`row N`) at its row.
    row = pl.col("location").str.strip_prefix("row ").cast(pl.Int64, strict=False)
    bad = bars.unreadable.with_columns(
        rank=pl.when(row.is_null())
        .then(pl.lit(file.kind * 4 + _WHOLE_FILE, pl.Int64))
        .otherwise(pl.lit(file.kind * 4 + _BAD_LINE, pl.Int64)),
        key=row.fill_null(0) + (file.ordinal << _LINE_BITS),
    )
    return rows, bad


def read_price_parquet(path: Path, bounds: FileBounds | None = None) -> RawBars:
    """Bar rows of one Parquet file with columns `symbol,date,open,high,low,close,volume` (any
    case; others ignored).

    `date` may be a Date, a timestamp at midnight (any unit; in its time zone if it has one, UTC
    as vendors write it) or text; a timestamp at another time of day is rejected rather than cut
    to its day. A null field reads as an empty one, as in a CSV file. The file's size and its row
    count (from its metadata) are checked against `bounds` before anything is decoded; then only
    the bar columns are read, a row group at a time.
    """
    import pyarrow.parquet as pq  # only where a Parquet file is read (not every command's import)

    bounds = bounds or FileBounds()
    refused = bounds.size_refused(path)
    if refused is not None:
        return RawBars(RAW_BARS_SCHEMA.to_frame(), _whole_file(path, "file", "", refused))
    try:
        parquet = pq.ParquetFile(path)
        columns = parquet.schema_arrow.names
        rows = parquet.metadata.num_rows
    except Exception as error:  # any unreadable file is a reject, never a crash
        reason = f"not a readable Parquet file: {type(error).__name__}"
        return RawBars(RAW_BARS_SCHEMA.to_frame(), _whole_file(path, "file", "", reason))
    named = _bar_columns(columns)
    missing = [c for c in BAR_FIELDS if c not in named]
    if missing:
        reason = f"Parquet file lacks columns {missing}; file not read"
        return RawBars(
            RAW_BARS_SCHEMA.to_frame(), _whole_file(path, "file", ",".join(columns), reason)
        )
    refused = bounds.rows_refused(rows)
    if refused is not None:
        return RawBars(RAW_BARS_SCHEMA.to_frame(), _whole_file(path, "file", "", refused))
    try:
        frame = _row_groups(parquet, [named[c] for c in BAR_FIELDS])
        return _parquet_rows(frame.select(pl.col(named[c]).alias(c) for c in BAR_FIELDS), path)
    except Exception as error:  # a corrupt row group, a column polars cannot render as text
        reason = f"not a readable Parquet file: {type(error).__name__}"
        return RawBars(RAW_BARS_SCHEMA.to_frame(), _whole_file(path, "file", "", reason))


def _row_groups(parquet: Any, columns: list[str]) -> pl.DataFrame:
    """The `columns` of a `pyarrow.parquet.ParquetFile`, decoded a row group at a time."""
    groups: list[pl.DataFrame] = []
    for i in range(parquet.num_row_groups):
        group = pl.from_arrow(parquet.read_row_group(i, columns=columns))
        assert isinstance(group, pl.DataFrame)
        groups.append(group)
    if not groups:
        empty = pl.from_arrow(parquet.schema_arrow.empty_table().select(columns))
        assert isinstance(empty, pl.DataFrame)
        return empty
    return pl.concat(groups, how="vertical_relaxed")


def _bar_columns(columns: Sequence[str]) -> dict[str, str]:
    """Bar field -> the file's column for it: the exact name, else the first of any case."""
    named: dict[str, str] = {}
    for column in columns:
        field = column.strip().lower()
        if field in BAR_FIELDS and named.get(field) != field:
            named[field] = column if column == field or field not in named else named[field]
    return named


def _parquet_rows(frame: pl.DataFrame, path: Path) -> RawBars:
    """Rows of the bar columns as text; a timestamp not at midnight makes its row unreadable."""
    stamp = pl.col("date")
    if isinstance(frame.schema["date"], pl.Datetime):
        # Wall-clock time and day in the column's own time zone (UTC for vendors' files).
        off_midnight = stamp.is_not_null() & (stamp.dt.time() != time(0))
        day = stamp.dt.date().cast(pl.String)
    else:
        off_midnight, day = pl.lit(False), stamp.cast(pl.String)
    text = frame.select(pl.col(c).cast(pl.String).fill_null("") for c in BAR_FIELDS)
    read = pl.concat(
        [text, frame.select(_off=off_midnight, _day=day.fill_null(""))], how="horizontal"
    ).with_columns(
        source=pl.lit(str(path)),
        location=pl.format("row {}", pl.int_range(1, frame.height + 1)),
        record=pl.concat_str(list(BAR_FIELDS), separator=","),
    )
    rows = read.filter(~pl.col("_off")).with_columns(date="_day")
    if rows.height == read.height:
        return RawBars(rows.select(RAW_BARS_SCHEMA.names()))
    bad = read.filter(pl.col("_off")).select(
        "source",
        "location",
        "record",
        reason=pl.format("date {} is a timestamp that is not midnight", "date"),
    )
    return RawBars(rows.select(RAW_BARS_SCHEMA.names()), bad)
