"""The DuckDB views: every catalog table queryable, over exactly the manifest's current files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.catalog import INSTRUMENTS, RAW_NEWS, TABLES, Column, Table, read_manifest
from pipelines.catalog.sql import duckdb_type, view_sql
from pipelines.warehouse import views
from pipelines.warehouse.store import Warehouse
from tests.pipelines.warehouse.conftest import instruments_frame


def _query(path: Path, sql: str) -> list[tuple[object, ...]]:
    with views.connect(path) as con:
        return con.execute(sql).fetchall()


def test_views_return_exactly_the_manifests_current_rows(warehouse: Warehouse) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "ETH", "SOL"))
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "EURUSD"))
    assert warehouse.duckdb_path is not None
    rows = _query(warehouse.duckdb_path, "select market, symbol from instruments order by all")
    assert rows == [("crypto", "ETH"), ("crypto", "SOL"), ("forex", "EURUSD")]


def test_unwritten_tables_are_empty_typed_views(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    views.refresh_views(path, tmp_path / "warehouse", None)
    for table in TABLES.values():
        assert _query(path, f"select count(*) from {table.name}") == [(0,)]
    described = _query(path, "select column_name, column_type from (describe raw_news)")
    assert [name for name, _ in described] == RAW_NEWS.column_names
    assert dict(described)["published_at"] == "TIMESTAMP WITH TIME ZONE"


def test_view_types_match_the_written_files(warehouse: Warehouse) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    assert warehouse.duckdb_path is not None
    with views.connect(warehouse.duckdb_path) as con:
        frame = con.sql("select * from instruments").pl()
    assert frame.schema == INSTRUMENTS.schema


def test_views_carry_the_catalog_descriptions(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    views.refresh_views(path, tmp_path / "warehouse", None)
    [(comment,)] = _query(path, "select comment from duckdb_views() where view_name='instruments'")
    assert comment == INSTRUMENTS.description
    column_comments = dict(
        _query(
            path, "select column_name, comment from duckdb_columns() where table_name='instruments'"
        )
    )
    assert column_comments == {c.name: c.description for c in INSTRUMENTS.columns}


def test_the_meta_view_names_the_manifest_version(warehouse: Warehouse) -> None:
    commit = warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    assert warehouse.duckdb_path is not None
    assert views.views_version(warehouse.duckdb_path) == (commit.version, str(warehouse.root))


def test_a_write_still_commits_while_a_reader_holds_the_database(warehouse: Warehouse) -> None:
    # Another process holds a read-only connection longer than the writer waits for the file.
    assert warehouse.duckdb_path is not None
    views.refresh_views(warehouse.duckdb_path, warehouse.root, None)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True);"
            " print('held', flush=True); time.sleep(5)",
            str(warehouse.duckdb_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        impatient = Warehouse(warehouse.root, warehouse.duckdb_path, views_timeout=0.2)
        commit = impatient.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert not commit.views_refreshed
    manifest = read_manifest(warehouse.root)
    assert manifest is not None
    assert manifest.version == commit.version


def test_a_corrupt_database_is_not_mistaken_for_a_lock(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    path.write_bytes(b"not a database" * 1000)
    with pytest.raises(duckdb.Error) as raised:
        views.refresh_views(path, tmp_path, None, timeout=0.1)
    assert not isinstance(raised.value, views.ViewsLockedError)


def test_list_columns_are_exposed_as_duckdb_lists(tmp_path: Path) -> None:
    tagged = Table(
        name="tagged",
        description="a table with a list column",
        columns=(
            Column("market", pl.String(), "market"),
            Column("symbols", pl.List(pl.String()), "symbols named", nullable=True),
        ),
        key=("market",),
    )
    path = tmp_path / "tagged.parquet"
    frame = pl.DataFrame({"market": ["crypto", "crypto"], "symbols": [["BTC", "ETH"], None]})
    tagged.conform(frame).write_parquet(path)
    con = duckdb.connect()
    con.execute(view_sql(tagged, [str(path)]))
    assert con.sql("select symbols from tagged").fetchall() == [(["BTC", "ETH"],), (None,)]


def test_every_catalog_column_has_a_duckdb_type() -> None:
    for table in TABLES.values():
        for column in table.columns:
            assert duckdb_type(column.dtype), f"{table.name}.{column.name}"


DUCKDB_CLI = str(Path(sys.executable).with_name("duckdb"))
"""The DuckDB CLI an analyst gets from PyPI (`pip install duckdb-cli`, a dev dependency here),
older than the duckdb package the pipeline writes with."""


def _storage_version(path: Path) -> str:
    with duckdb.connect(str(path), read_only=True) as con:
        row = con.execute(
            "SELECT tags['storage_version'] FROM duckdb_databases() "
            "WHERE database_name = current_database()"
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_the_registrys_duckdb_cli_opens_the_views_file(warehouse: Warehouse) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC", "ETH"))
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "EURUSD"))
    assert warehouse.duckdb_path is not None
    done = subprocess.run(
        [
            DUCKDB_CLI,
            "-readonly",
            "-csv",
            str(warehouse.duckdb_path),
            "select symbol from instruments order by 1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["symbol", "BTC", "ETH", "EURUSD"]
    assert _storage_version(warehouse.duckdb_path) == f"{views.STORAGE_VERSION}+"


def test_a_file_in_a_newer_format_is_rebuilt_in_the_readable_one(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    duckdb.connect(str(path)).close()  # what an earlier release wrote: the package's own format
    assert _storage_version(path) != f"{views.STORAGE_VERSION}+"
    warehouse = Warehouse(tmp_path / "warehouse", path)
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    assert _storage_version(path) == f"{views.STORAGE_VERSION}+"
    with views.connect(path) as con:
        assert con.sql("select symbol from instruments").fetchall() == [("BTC",)]
