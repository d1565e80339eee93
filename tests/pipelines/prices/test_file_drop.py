"""The file-drop connector on real files in tmp_path: day files, per-symbol files, Parquet, bad input."""

from __future__ import annotations

import os
from datetime import date, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.corporate_actions.validate import validate_actions
from pipelines.embedded_market import write_embedded_prices
from pipelines.instruments.validate import validate_instruments
from pipelines.prices.sources import file_drop
from pipelines.prices.sources.base import BAR_FIELDS, SourceError
from pipelines.prices.sources.file_drop import FileDropSource
from pipelines.prices.validate import validate_bars

HEADER = "date,open,high,low,close,volume\n"


def drop(root: Path, files: dict[str, bytes | str]) -> FileDropSource:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body.encode() if isinstance(body, str) else body)
    return FileDropSource(root)


def reasons(source: FileDropSource, market: str = "stocks") -> dict[str, str]:
    _, rejects = validate_bars(source.daily_bars(market, [], None), market, {"AAPL"}, "fd")
    return dict(zip(rejects["location"], rejects["reason"], strict=True))


def test_csv_per_symbol_reads_every_line_with_its_location(tmp_path: Path) -> None:
    body = HEADER + "2024-01-02,1,2,0.5,1.5,10\r\n2024-01-03,1,2,0.5,1.5,\n\n"
    source = drop(tmp_path, {"prices/stocks/AAPL.csv": body})
    rows = source.daily_bars("stocks", ["AAPL"], None).rows
    assert rows["location"].to_list() == ["line 2", "line 3"]
    assert rows["record"].to_list() == ["2024-01-02,1,2,0.5,1.5,10", "2024-01-03,1,2,0.5,1.5,"]
    assert rows["symbol"].unique().to_list() == ["AAPL"]
    assert rows["source"].item(0) == str(tmp_path / "prices/stocks/AAPL.csv")


def test_parquet_per_market_is_read_like_csv(tmp_path: Path) -> None:
    (tmp_path / "prices/stocks").mkdir(parents=True)
    pl.DataFrame(
        {
            "symbol": ["aapl", "AAPL"],
            "date": [date(2024, 1, 2), date(2024, 1, 3)],
            "open": [1.0, 1.0],
            "high": [2.0, 0.5],
            "low": [0.5, 0.5],
            "close": [1.5, 1.5],
            "volume": [10.0, None],
        }
    ).write_parquet(tmp_path / "prices/stocks/part-0.parquet")
    source = FileDropSource(tmp_path)
    clean, rejects = validate_bars(source.daily_bars("stocks", [], None), "stocks", {"AAPL"}, "fd")
    assert clean["date"].to_list() == [date(2024, 1, 2)]
    assert rejects.select("location", "record").row(0) == (
        "row 2",
        "AAPL,2024-01-03,1.0,0.5,0.5,1.5,",
    )
    assert rejects["reason"].item() == "high is below max(open, close)"


def test_parquet_without_the_bar_columns_is_rejected_whole(tmp_path: Path) -> None:
    (tmp_path / "prices/stocks").mkdir(parents=True)
    pl.DataFrame({"symbol": ["AAPL"], "px": [1.0]}).write_parquet(
        tmp_path / "prices/stocks/x.parquet"
    )
    assert "lacks columns" in reasons(FileDropSource(tmp_path))["file"]


def test_corrupt_parquet_is_rejected_whole(tmp_path: Path) -> None:
    source = drop(tmp_path, {"prices/stocks/x.parquet": b"PAR1 not really"})
    assert reasons(source)["file"].startswith("not a readable Parquet file")


def test_wrong_header_rejects_the_file_naming_the_header(tmp_path: Path) -> None:
    source = drop(tmp_path, {"prices/stocks/AAPL.csv": "Date;Open;Close\n2024-01-02;1;2\n"})
    assert reasons(source) == {
        "line 1": "header is 'Date;Open;Close', expected 'date,open,high,low,close,volume'; file not read"
    }


def test_empty_file_is_rejected(tmp_path: Path) -> None:
    source = drop(tmp_path, {"prices/stocks/AAPL.csv": ""})
    assert reasons(source) == {"file": "file is empty"}


def test_non_utf8_bytes_reject_only_their_line(tmp_path: Path) -> None:
    body = HEADER.encode() + b"2024-01-02,1,2,0.5,1.5,10\n2024-01-03,1\xff,2,0.5,1.5,10\n"
    source = drop(tmp_path, {"prices/stocks/AAPL.csv": body})
    assert reasons(source) == {"line 3": "line is not valid UTF-8"}


def test_garbage_lines_are_rejected_with_the_field_count(tmp_path: Path) -> None:
    body = HEADER + "<html>oops</html>\n2024-01-02,1,2,0.5,1.5,10,7\n2024-01-03,1,2,0.5,1.5,1\n"
    source = drop(tmp_path, {"prices/stocks/AAPL.csv": body})
    assert reasons(source) == {
        "line 2": "expected 6 fields, found 1",
        "line 3": "expected 6 fields, found 7",
    }


def test_since_keeps_later_and_unparseable_dates(tmp_path: Path) -> None:
    body = HEADER + "2024-01-02,1,2,0.5,1.5,1\n2024-01-04,1,2,0.5,1.5,1\nsoon,1,2,0.5,1.5,1\n"
    source = drop(tmp_path, {"prices/stocks/AAPL.csv": body})
    rows = source.daily_bars("stocks", [], date(2024, 1, 3)).rows
    assert rows["date"].to_list() == ["2024-01-04", "soon"]


def test_missing_price_folder_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="does not exist"):
        FileDropSource(tmp_path).daily_bars("stocks", [], None)


def test_instrument_list_reads_quoted_names_and_rejects_bad_rows(tmp_path: Path) -> None:
    body = 'symbol,name,logo\nTSLA,"Tesla, Inc.",https://l/t.png\nONLY,two\nX\xff,Bad,\n'
    source = drop(tmp_path, {"instruments/stocks.csv": body.encode("latin-1")})
    clean, rejects = validate_instruments(source.instruments("stocks"), "stocks", "fd")
    assert clean["name"].to_list() == ["Tesla, Inc."]
    assert dict(zip(rejects["location"], rejects["reason"], strict=True)) == {
        "line 3": "expected 3 fields, found 2",
        "line 4": "line is not valid UTF-8",
    }


def test_instrument_list_with_wrong_header_is_rejected_whole(tmp_path: Path) -> None:
    source = drop(tmp_path, {"instruments/stocks.csv": "ticker,title\nAAPL,Apple\n"})
    clean, rejects = validate_instruments(source.instruments("stocks"), "stocks", "fd")
    assert clean.is_empty()
    assert rejects["reason"].item().startswith("header is 'ticker,title'")


def test_empty_instrument_list_is_rejected(tmp_path: Path) -> None:
    source = drop(tmp_path, {"instruments/stocks.csv": b""})
    _, rejects = validate_instruments(source.instruments("stocks"), "stocks", "fd")
    assert rejects["reason"].to_list() == ["file is empty"]


def test_missing_instrument_list_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"stocks\.csv does not exist"):
        FileDropSource(tmp_path).instruments("stocks")


def test_the_actions_file_reads_every_line_and_rejects_the_unreadable(tmp_path: Path) -> None:
    body = (
        "symbol,date,kind,ratio,amount,reason\n"
        'AAPL,2020-08-31,split,4,,"4-for-1, after the close"\n'
        "AAPL,2024-02-09,dividend,,0.24,\n"
        "AAPL,2024-02-09\n"
    )
    source = drop(tmp_path, {"actions/stocks.csv": body})
    clean, rejects = validate_actions(source.corporate_actions("stocks"), "stocks", {"AAPL"}, "fd")
    assert clean.select("kind", "ratio", "amount", "reason").rows() == [
        ("split", 4.0, None, "4-for-1, after the close"),
        ("dividend", None, 0.24, None),
    ]
    assert dict(zip(rejects["location"], rejects["reason"], strict=True)) == {
        "line 4": "expected 6 fields, found 2"
    }


def test_a_market_without_an_actions_file_has_no_actions(tmp_path: Path) -> None:
    raw = FileDropSource(tmp_path).corporate_actions("stocks")
    assert raw.rows.is_empty()
    assert raw.unreadable.is_empty()


def test_an_actions_file_with_another_header_is_rejected_whole(tmp_path: Path) -> None:
    source = drop(tmp_path, {"actions/stocks.csv": "symbol,date,type\nAAPL,2020-08-31,split\n"})
    clean, rejects = validate_actions(source.corporate_actions("stocks"), "stocks", {"AAPL"}, "fd")
    assert clean.is_empty()
    assert rejects["reason"].item() == (
        "header is 'symbol,date,type', expected 'symbol,date,kind,ratio,amount,reason'; "
        "file not read"
    )


# --- day files: prices/<market>/days/<YYYY-MM-DD>.csv -------------------------------------------

DAY = "symbol,date,open,high,low,close,volume\n"


def day_reasons(source: FileDropSource, known: set[str] | None = None) -> dict[str, str]:
    raw = source.daily_bars("stocks", [], None)
    _, rejects = validate_bars(raw, "stocks", known or {"AAPL", "MSFT"}, "fd")
    return {
        f"{Path(s).name} {loc}": reason
        for s, loc, reason in rejects.select("source", "location", "reason").iter_rows()
    }


def test_day_file_reads_every_line_with_its_location_and_record(tmp_path: Path) -> None:
    body = DAY + "AAPL,2024-01-02,1,2,0.5,1.5,10\r\n\nMSFT,2024-01-02,3,4,2.5,3.5,\n"
    source = drop(tmp_path, {"prices/stocks/days/2024-01-02.csv": body})
    rows = source.daily_bars("stocks", [], None).rows
    assert rows["location"].to_list() == ["line 2", "line 4"]
    assert rows["record"].to_list() == [
        "AAPL,2024-01-02,1,2,0.5,1.5,10",
        "MSFT,2024-01-02,3,4,2.5,3.5,",
    ]
    assert rows["symbol"].to_list() == ["AAPL", "MSFT"]
    assert rows["volume"].to_list() == ["10", ""]
    assert set(rows["source"]) == {str(tmp_path / "prices/stocks/days/2024-01-02.csv")}


def test_bad_lines_of_a_day_file_are_rejected_like_those_of_a_per_symbol_file(
    tmp_path: Path,
) -> None:
    body = (
        DAY.encode()
        + b"AAPL,2024-01-02,1,2,0.5,1.5,10\n"
        + b"<html>oops</html>\n"
        + b"MSFT,2024-01-02,1,2,0.5,1.5,10,7\n"
        + b"MSFT,2024-01-02,1\xff,2,0.5,1.5,10\n"
        + b"MSFT,2024-01-02,3,4,2.5,3.5,1\n"
    )
    source = drop(tmp_path, {"prices/stocks/days/2024-01-02.csv": body})
    assert day_reasons(source) == {
        "2024-01-02.csv line 3": "expected 7 fields, found 1",
        "2024-01-02.csv line 4": "expected 7 fields, found 8",
        "2024-01-02.csv line 5": "line is not valid UTF-8",
    }


def test_a_day_file_with_a_wrong_header_or_no_content_is_rejected_whole(tmp_path: Path) -> None:
    source = drop(
        tmp_path,
        {
            "prices/stocks/days/2024-01-02.csv": "date,open,high,low,close,volume\n2024-01-02,1,2,0.5,1.5,10\n",
            "prices/stocks/days/2024-01-03.csv": "\n\n",
            "prices/stocks/days/2024-01-04.csv": DAY,  # a day without bars: nothing, no reject
        },
    )
    assert day_reasons(source) == {
        "2024-01-02.csv line 1": "header is 'date,open,high,low,close,volume', expected "
        "'symbol,date,open,high,low,close,volume'; file not read",
        "2024-01-03.csv file": "file is empty",
    }


def test_a_row_dated_another_day_than_its_file_is_rejected(tmp_path: Path) -> None:
    """A day file holds its day's bars; a row of another day is not read (an unparseable date is
    left to the validation, which says so)."""
    body = (
        DAY
        + "AAPL,2024-01-02,1,2,0.5,1.5,10\n"
        + "MSFT,2024-01-03,1,2,0.5,1.5,10\n"
        + "MSFT,2024-01-32,1,2,0.5,1.5,10\n"
        + "MSFT, 2024-01-02 ,1,2,0.5,1.5,10\n"
    )
    source = drop(tmp_path, {"prices/stocks/days/2024-01-02.csv": body})
    raw = source.daily_bars("stocks", [], None)
    clean, _ = validate_bars(raw, "stocks", {"AAPL", "MSFT"}, "fd")
    assert clean.select("symbol", "date").rows() == [
        ("AAPL", date(2024, 1, 2)),
        ("MSFT", date(2024, 1, 2)),
    ]
    assert day_reasons(source) == {
        "2024-01-02.csv line 3": "date 2024-01-03 is not the file's day 2024-01-02",
        "2024-01-02.csv line 4": "unparseable date 2024-01-32",
    }


def test_a_file_in_the_days_folder_not_named_after_a_day_is_rejected_whole(tmp_path: Path) -> None:
    source = drop(
        tmp_path, {"prices/stocks/days/latest.csv": DAY + "AAPL,2024-01-02,1,2,0.5,1.5,1\n"}
    )
    assert day_reasons(source) == {
        "latest.csv file": "file name is not a day (YYYY-MM-DD.csv); file not read"
    }


def test_quoted_and_padded_fields_of_a_day_file_are_trimmed(tmp_path: Path) -> None:
    body = DAY + '"AAPL", 2024-01-02 ,1,2,0.5,1.5,\t10\n'
    source = drop(tmp_path, {"prices/stocks/days/2024-01-02.csv": body})
    row = source.daily_bars("stocks", [], None).rows.row(0, named=True)
    assert (row["symbol"], row["date"], row["volume"]) == ("AAPL", "2024-01-02", "10")
    assert row["record"] == '"AAPL", 2024-01-02 ,1,2,0.5,1.5,\t10'


def test_rows_keep_the_file_order_when_some_files_are_read_line_by_line(tmp_path: Path) -> None:
    source = drop(
        tmp_path,
        {
            "prices/stocks/days/2024-01-02.csv": DAY + '"AAPL",2024-01-02,1,2,0.5,1.5,1\n',
            "prices/stocks/days/2024-01-03.csv": DAY + "AAPL,2024-01-03,1,2,0.5,1.5,1\n",
            "prices/stocks/days/2024-01-04.csv": DAY + "AAPL, 2024-01-04,1,2,0.5,1.5,1\n",
        },
    )
    rows = source.daily_bars("stocks", [], None).rows
    assert rows["date"].str.strip_chars().to_list() == ["2024-01-02", "2024-01-03", "2024-01-04"]


def _reading(tmp_path: Path, names: list[str]) -> file_drop.Reading:
    paths = [str(tmp_path / "prices/stocks/days" / name) for name in names]
    return file_drop.Reading(file_drop._in_read_order(tmp_path / "prices/stocks", paths))


def test_the_one_pass_reading_and_the_line_by_line_reading_agree(tmp_path: Path) -> None:
    """Plain files go through polars' CSV reader, fields only (the record of such a line is its
    fields joined by commas); the line-by-line reading gives the same lines."""
    lines = [
        "AAPL,2024-01-02,1,2,0.5,1.5,10",
        "MSFT,2024-01-02,3,4,2.5,3.5,",
        "GOOG,2024-01-02,,,,,\x0b7",
        "IBM,2024-01-02,1,2,0.5,1.5,1e3",
    ]
    drop(tmp_path, {"prices/stocks/days/2024-01-02.csv": DAY + "\r\n".join(lines) + "\r\n"})
    reading = _reading(tmp_path, ["2024-01-02.csv"])
    bodies, _ = file_drop._bodies(reading.files, file_drop.DAY_HEADER, reading.bounds)
    assert [b.one_pass for b in bodies] == [True]
    fast, refused = file_drop._read_fast(bodies, file_drop.DAY_HEADER, file_drop._DAY_FILE)
    assert refused == []
    slow_lines = file_drop._read_slow(bodies, file_drop.DAY_HEADER, file_drop._DAY_FILE)
    slow, garbage = file_drop._check_lines(slow_lines, file_drop.DAY_HEADER, file_drop._DAY_FILE)
    columns = [*file_drop.DAY_HEADER, file_drop.KEY]
    assert fast.select(columns).rows() == slow.select(columns).rows()
    assert garbage.is_empty()
    assert reading.provenance(fast)["record"].to_list() == lines
    assert reading.provenance(fast)["location"].to_list() == [
        "line 2",
        "line 3",
        "line 4",
        "line 5",
    ]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("MSFT,2024-01-02,1,2,0.5,1.5,10,7", "expected 7 fields, found 8"),  # polars refuses it
        ("MSFT,2024-01-02,1,2,0.5", "expected 7 fields, found 5"),  # read short, commas differ
        ("MSFT", "expected 7 fields, found 1"),
        ("MSFT,2024-01-03,1,2,0.5,1.5,10", "date 2024-01-03 is not the file's day 2024-01-02"),
    ],
)
def test_a_bad_line_among_good_ones_sends_its_file_to_the_line_reader(
    tmp_path: Path, bad: str, reason: str
) -> None:
    """Only the file holding it is read line by line; its good lines and every other file's are
    the same as ever, and the bad line is rejected where it is."""
    good = [f"S{k},2024-01-02,1,2,0.5,1.5,{k}" for k in range(5)]
    files: dict[str, bytes | str] = {
        "prices/stocks/days/2024-01-01.csv": DAY + "A,2024-01-01,1,2,0.5,1.5,1\n",
        "prices/stocks/days/2024-01-02.csv": DAY + "\n".join([*good[:2], bad, *good[2:]]) + "\n",
        "prices/stocks/days/2024-01-03.csv": DAY + "A,2024-01-03,1,2,0.5,1.5,1\n",
    }
    source = drop(tmp_path, files)
    reading = _reading(tmp_path, ["2024-01-01.csv", "2024-01-02.csv", "2024-01-03.csv"])
    bodies, _ = file_drop._bodies(reading.files, file_drop.DAY_HEADER, reading.bounds)
    _, refused = file_drop._read_fast(bodies, file_drop.DAY_HEADER, file_drop._DAY_FILE)
    assert [b.file.path.name for b in refused] == ["2024-01-02.csv"]
    raw = source.daily_bars("stocks", [], None)
    assert raw.rows.filter(pl.col("source").str.ends_with("02.csv"))["record"].to_list() == good
    assert raw.rows.filter(pl.col("source").str.ends_with("02.csv"))["location"].to_list() == [
        "line 2",
        "line 3",
        "line 5",
        "line 6",
        "line 7",
    ]
    assert raw.rows.height == 7
    assert raw.unreadable.select("location", "record", "reason").rows() == [("line 4", bad, reason)]


def test_lines_read_in_batches_are_those_read_at_once(tmp_path: Path) -> None:
    """Day files are read a few at a time; the lines, their provenance and the unreadable records
    come in the order of one reading of every file."""
    files: dict[str, bytes | str] = {}
    for day in range(1, 10):
        name = f"2024-01-{day:02d}"
        body = DAY + f"AAPL,{name},1,2,0.5,1.5,1\nMSFT,{name},1,2,0.5,1.5,\n"
        if day == 3:
            body += '"GOOG", 2024-01-03 ,1,2,0.5,1.5,1\nbroken\n'
        if day == 5:
            body = "nonsense\n"
        files[f"prices/stocks/days/{name}.csv"] = body
    files["prices/stocks/days/2024-01-06.csv"] = b""
    files["prices/stocks/days/latest.csv"] = DAY
    source = drop(tmp_path, files)
    paths = [f.path for f in source.listing("stocks")]
    batches = list(source.bar_batches("stocks", paths, batch_bytes=100))
    assert len(batches) > 3
    whole = source.read_bars("stocks", paths)
    rows = pl.concat([b.rows.select(BAR_FIELDS).hstack(b.provenance(b.rows)) for b in batches])
    assert rows.equals(whole.rows)
    unreadable = pl.concat([b.unreadable for b in batches]).sort("rank", "key")
    assert unreadable.select(whole.unreadable.columns).equals(whole.unreadable)
    assert whole.unreadable["reason"].to_list() == [
        "header is 'nonsense', expected 'symbol,date,open,high,low,close,volume'; file not read",
        "file is empty",
        "expected 7 fields, found 1",
        "file name is not a day (YYYY-MM-DD.csv); file not read",
    ]


def test_files_that_may_share_a_bar_are_one_batch(tmp_path: Path) -> None:
    """A per-symbol file and a day file, or two per-symbol files of one symbol, may hold the same
    (symbol, date): duplicates are found across them only if they are read together."""
    day = DAY + "AAPL,2024-01-02,1,2,0.5,1.5,1\n"
    mixed = drop(
        tmp_path / "mixed",
        {"prices/stocks/days/2024-01-02.csv": day, "prices/stocks/AAPL.csv": HEADER},
    )
    twins = drop(
        tmp_path / "twins",
        {"prices/stocks/AAPL.csv": HEADER, "prices/stocks/aapl.csv": HEADER},
    )
    apart = drop(
        tmp_path / "apart",
        {"prices/stocks/AAPL.csv": HEADER, "prices/stocks/MSFT.csv": HEADER},
    )
    for source, batches in ((mixed, 1), (twins, 1), (apart, 2)):
        paths = [f.path for f in source.listing("stocks")]
        assert len(list(source.bar_batches("stocks", paths, batch_bytes=1))) == batches


# --- listing and reading what changed ---------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_listing_covers_day_files_per_symbol_files_and_parquet_files(tmp_path: Path) -> None:
    _write(tmp_path / "prices/stocks/days/2024-01-02.csv", DAY)
    _write(tmp_path / "prices/stocks/AAPL.csv", HEADER)
    pl.DataFrame({"symbol": ["AAPL"]}).write_parquet(tmp_path / "prices/stocks/part-0.parquet")
    _write(tmp_path / "prices/stocks/days/.2024-01-03.csv", DAY)  # a write in progress
    _write(tmp_path / "prices/forex/days/2024-01-02.csv", DAY)  # another market
    listing = FileDropSource(tmp_path).listing("stocks")
    assert [Path(f.path).relative_to(tmp_path).as_posix() for f in listing] == [
        "prices/stocks/AAPL.csv",
        "prices/stocks/days/2024-01-02.csv",
        "prices/stocks/part-0.parquet",
    ]
    stat = (tmp_path / "prices/stocks/AAPL.csv").stat()
    assert (listing[0].size, listing[0].mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    with pytest.raises(SourceError, match="does not exist"):
        FileDropSource(tmp_path).listing("crypto")


def test_listing_sees_a_rewritten_file_as_changed_and_an_untouched_one_as_unchanged(
    tmp_path: Path,
) -> None:
    days = tmp_path / "prices/stocks/days"
    for name in ("2024-01-02", "2024-01-03", "2024-01-04"):
        _write(days / f"{name}.csv", DAY + f"AAPL,{name},1,2,0.5,1.5,10\n")
    source = FileDropSource(tmp_path)
    before = {f.path: f for f in source.listing("stocks")}
    _write(days / "2024-01-02.csv", DAY + "AAPL,2024-01-02,1,2,0.5,1.5,11000\n")  # longer
    _write(days / "2024-01-03.csv", DAY + "AAPL,2024-01-03,1,2,0.5,1.5,99\n")  # same size
    stamp = before[str(days / "2024-01-03.csv")].mtime_ns + 1_000_000_000
    os.utime(days / "2024-01-03.csv", ns=(stamp, stamp))  # a coarse clock cannot hide it
    after = {f.path: f for f in source.listing("stocks")}
    changed = {Path(p).stem for p in after if after[p] != before.get(p)}
    assert changed == {"2024-01-02", "2024-01-03"}
    assert after[str(days / "2024-01-04.csv")] == before[str(days / "2024-01-04.csv")]


def test_read_bars_of_a_subset_reads_only_those_files(tmp_path: Path) -> None:
    days = tmp_path / "prices/stocks/days"
    for name in ("2024-01-02", "2024-01-03", "2024-01-04"):
        _write(
            days / f"{name}.csv", DAY + f"AAPL,{name},1,2,0.5,1.5,10\nMSFT,{name},1,2,0.5,1.5,1\n"
        )
    _write(days / "2024-01-05.csv", "broken\n")
    _write(tmp_path / "prices/stocks/AAPL.csv", HEADER + "2024-01-08,1,2,0.5,1.5,10\n")
    source = FileDropSource(tmp_path)
    wanted = [str(days / "2024-01-03.csv"), str(tmp_path / "prices/stocks/AAPL.csv")]
    raw = source.read_bars("stocks", wanted)
    assert set(raw.rows["source"]) == set(wanted)
    assert raw.rows.select("symbol", "date").rows() == [
        ("AAPL", "2024-01-08"),
        ("AAPL", "2024-01-03"),
        ("MSFT", "2024-01-03"),
    ]
    assert raw.unreadable.is_empty()  # the broken file was not asked for
    everything = source.daily_bars("stocks", [], None)
    assert everything.rows.height == 7
    assert everything.unreadable["source"].to_list() == [str(days / "2024-01-05.csv")]


def test_embedded_day_files_validate_to_their_bars_and_the_documented_defects(
    tmp_path: Path,
) -> None:
    manifest = write_embedded_prices(
        tmp_path, "stocks", seed=4, through=date(2026, 2, 20), instruments=7, start=date(2026, 1, 5)
    )
    source = FileDropSource(tmp_path)
    instruments, _ = validate_instruments(source.instruments("stocks"), "stocks", "fd")
    raw = source.read_bars("stocks", [f.path for f in source.listing("stocks")])
    clean, rejects = validate_bars(raw, "stocks", set(instruments["symbol"]), "fd")
    assert clean.height == manifest.bars
    assert {
        (Path(s).relative_to(tmp_path).as_posix(), loc)
        for s, loc in rejects.select("source", "location").iter_rows()
    } == {(d.path, d.location) for d in manifest.defects}


def _parquet_bars(path: Path, dates: pa.Array, names: tuple[str, ...] = BAR_FIELDS) -> None:
    """A vendor-style Parquet file of AAPL bars, one per date, with columns named `names`."""
    count = len(dates)
    columns = {
        "symbol": pa.array(["AAPL"] * count),
        "date": dates,
        **{c: pa.array([1.0] * count) for c in ("open", "high", "low", "close")},
        "volume": pa.array([10.0] * count),
    }
    table = pa.table(dict(zip(names, columns.values(), strict=True)))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("zone", [None, "UTC"])
def test_parquet_dates_stored_as_midnight_timestamps_are_read_as_days(
    tmp_path: Path, unit: str, zone: str | None
) -> None:
    midnights = [datetime(2018, 1, 2), datetime(2018, 1, 3)]
    stamps = pa.array(midnights, type=pa.timestamp(unit, tz=zone))
    _parquet_bars(tmp_path / "prices/stocks/vendor.parquet", stamps)
    raw = FileDropSource(tmp_path).daily_bars("stocks", [], None)
    clean, rejects = validate_bars(raw, "stocks", {"AAPL"}, "fd")
    assert rejects.is_empty()
    assert clean["date"].to_list() == [date(2018, 1, 2), date(2018, 1, 3)]


@pytest.mark.parametrize(
    "dates",
    [
        pa.array([date(2018, 1, 2)], type=pa.date32()),
        pa.array(["2018-01-02"], type=pa.string()),
    ],
    ids=["date", "iso-text"],
)
def test_parquet_dates_as_date_or_iso_text_are_read(tmp_path: Path, dates: pa.Array) -> None:
    _parquet_bars(tmp_path / "prices/stocks/vendor.parquet", dates)
    clean, rejects = validate_bars(
        FileDropSource(tmp_path).daily_bars("stocks", [], None), "stocks", {"AAPL"}, "fd"
    )
    assert rejects.is_empty()
    assert clean["date"].to_list() == [date(2018, 1, 2)]


def test_parquet_timestamp_that_is_not_midnight_is_rejected_saying_so(tmp_path: Path) -> None:
    stamps = pa.array(
        [datetime(2018, 1, 2), datetime(2018, 1, 3, 15, 30)], type=pa.timestamp("ms", tz="UTC")
    )
    _parquet_bars(tmp_path / "prices/stocks/vendor.parquet", stamps)
    raw = FileDropSource(tmp_path).daily_bars("stocks", [], None)
    clean, rejects = validate_bars(raw, "stocks", {"AAPL"}, "fd")
    assert clean["date"].to_list() == [date(2018, 1, 2)]
    assert rejects.select("location", "reason").row(0) == (
        "row 2",
        "date 2018-01-03 15:30:00.000+00:00 is a timestamp that is not midnight",
    )


def test_parquet_column_names_are_matched_in_any_case(tmp_path: Path) -> None:
    names = ("Symbol", "Date", "Open", "High", "Low", "Close", "Volume")
    _parquet_bars(
        tmp_path / "prices/stocks/vendor.parquet",
        pa.array([datetime(2018, 1, 2)], type=pa.timestamp("us")),
        names,
    )
    clean, rejects = validate_bars(
        FileDropSource(tmp_path).daily_bars("stocks", [], None), "stocks", {"AAPL"}, "fd"
    )
    assert rejects.is_empty()
    assert clean.select("symbol", "date", "volume").row(0) == ("AAPL", date(2018, 1, 2), 10.0)


def test_parquet_null_symbol_or_date_is_rejected_as_an_empty_field(tmp_path: Path) -> None:
    (tmp_path / "prices/stocks").mkdir(parents=True)
    pl.DataFrame(
        {
            "symbol": ["AAPL", None, "AAPL"],
            "date": [date(2024, 1, 2), date(2024, 1, 3), None],
            **{c: [1.0, 1.0, 1.0] for c in ("open", "high", "low", "close", "volume")},
        }
    ).write_parquet(tmp_path / "prices/stocks/part-0.parquet")
    raw = FileDropSource(tmp_path).daily_bars("stocks", [], None)
    clean, rejects = validate_bars(raw, "stocks", {"AAPL"}, "fd")
    assert clean["date"].to_list() == [date(2024, 1, 2)]
    assert dict(zip(rejects["location"], rejects["reason"], strict=True)) == {
        "row 2": "unknown symbol  (not in the stocks instrument list)",
        "row 3": "unparseable date ",
    }
