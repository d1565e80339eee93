"""The file-drop connector on real files in tmp_path, including bad input files."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl
import pytest

from pipelines.instruments.validate import validate_instruments
from pipelines.prices.sources.base import SourceError
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
