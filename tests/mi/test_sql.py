"""`mi sql`: read-only queries over the warehouse views, in table, CSV or JSON, and the table list."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

from mi.cli import main
from pipelines.catalog import INSTRUMENTS, TABLES, read_manifest
from pipelines.warehouse.store import Warehouse
from tests.pipelines.warehouse.conftest import instruments_frame


def _sql(data_dir: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["sql", *args], env={"MI_DATA_DIR": str(data_dir)})


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data directory whose warehouse holds crypto BTC, ETH and forex EURUSD instruments."""
    warehouse = Warehouse(tmp_path / "warehouse", tmp_path / "warehouse.duckdb")
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC", "ETH"))
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "EURUSD"))
    return tmp_path


def test_a_query_prints_a_readable_table(data_dir: Path) -> None:
    result = _sql(data_dir, "select market, count(*) as n from instruments group by all order by 1")
    assert result.exit_code == 0, result.output
    assert "shape: (2, 2)" in result.output
    assert "│ crypto ┆ 2   │" in result.output


def test_csv_format_prints_a_header_and_rows(data_dir: Path) -> None:
    result = _sql(data_dir, "--format", "csv", "select symbol from instruments order by 1")
    assert result.output.splitlines() == ["symbol", "BTC", "ETH", "EURUSD"]


def test_json_format_prints_one_object_per_row(data_dir: Path) -> None:
    result = _sql(data_dir, "--format", "json", "select market, symbol from instruments order by 2")
    assert json.loads(result.output)[0] == {"market": "crypto", "symbol": "BTC"}


def test_every_table_is_queryable_once_anything_is_written(data_dir: Path) -> None:
    result = _sql(data_dir, "--format", "csv", "select count(*) as n from daily_prices")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["n", "0"]


def test_without_a_warehouse_it_says_so_and_creates_nothing(tmp_path: Path) -> None:
    result = _sql(tmp_path / "data", "select count(*) from daily_prices")
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"Error: no warehouse at {tmp_path / 'data' / 'warehouse'}: run `mi materialize` first, "
        "or set MI_DATA_DIR (or MI_WAREHOUSE_URL) to where one is"
    ]
    assert list(tmp_path.iterdir()) == []


def test_the_connection_is_read_only(data_dir: Path) -> None:
    result = _sql(data_dir, "create table t as select 1")
    assert result.exit_code == 2
    assert "read-only" in result.output


def test_a_bad_query_is_an_error_message_not_a_traceback(data_dir: Path) -> None:
    result = _sql(data_dir, "select * from nowhere")
    assert result.exit_code == 2
    assert "nowhere" in result.output
    assert "Traceback" not in result.output


def test_views_lagging_the_manifest_are_refreshed_before_querying(data_dir: Path) -> None:
    # A write whose view refresh was skipped (database locked) must not hide its rows from mi sql.
    Warehouse(data_dir / "warehouse").write(
        INSTRUMENTS, "stocks", instruments_frame("stocks", "AAPL")
    )
    result = _sql(data_dir, "--format", "csv", "select count(*) as n from instruments")
    assert result.output.splitlines() == ["n", "4"]


def test_tables_lists_every_table_and_column(tmp_path: Path) -> None:
    result = _sql(tmp_path, "--tables")
    assert result.exit_code == 0
    for table in TABLES.values():
        assert f"{table.name}: {table.description}" in result.output
        for column in table.columns:
            assert f"  {column.name} " in result.output


def test_as_of_queries_a_past_version_by_id_and_by_instant(data_dir: Path) -> None:
    """Rule: `mi sql --as-of` reads the retained version an id or instant names (as the API's
    `as_of` does), after later commits have replaced its files."""
    manifest = read_manifest(data_dir / "warehouse")
    assert manifest is not None
    first = manifest.log[0]  # crypto only
    Warehouse(data_dir / "warehouse").write(
        INSTRUMENTS, "crypto", instruments_frame("crypto", "SOL")
    )
    symbols = "select string_agg(symbol, ' ' order by symbol) as s from instruments"
    assert _sql(data_dir, "--format", "csv", symbols).output.splitlines() == ["s", "EURUSD SOL"]
    by_id = _sql(data_dir, "--format", "csv", "--as-of", str(first.version), symbols)
    assert by_id.output.splitlines() == ["s", "BTC ETH"], by_id.output  # no forex yet
    instant = first.published.replace("+00:00", "Z")
    by_instant = _sql(data_dir, "--format", "csv", "--as-of", instant, symbols)
    assert by_instant.output.splitlines() == ["s", "BTC ETH"]
    before = _sql(data_dir, "--as-of", "2001-01-01T00:00:00Z", symbols)
    assert before.exit_code == 2  # a user error, as a bad query is
    assert "oldest" in before.output
    malformed = _sql(data_dir, "--as-of", "yesterday", symbols)
    assert malformed.exit_code == 2
    assert "--as-of" in malformed.output


def test_views_file_holds_one_past_versions_views(data_dir: Path) -> None:
    manifest = read_manifest(data_dir / "warehouse")
    assert manifest is not None
    first = manifest.log[0]
    target = data_dir / "then.duckdb"
    made = _sql(data_dir, "--as-of", str(first.version), "--views-file", str(target))
    assert made.exit_code == 0, made.output
    with duckdb.connect(str(target), read_only=True) as con:
        assert con.sql("select symbol from instruments order by 1").fetchall() == [("BTC",), ("ETH",)]  # fmt: skip
