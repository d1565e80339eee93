"""`mi sql`: query the warehouse read-only through its DuckDB views, or list its tables."""

from __future__ import annotations

import click
import duckdb
import polars as pl

from mi.errors import Failure
from pipelines.catalog import TABLES, S3Location
from pipelines.catalog.sql import duckdb_type
from pipelines.platform.settings import load_settings
from pipelines.warehouse import views
from pipelines.warehouse.store import Warehouse


class NoWarehouseError(LookupError):
    """The configured warehouse has no manifest: nothing was ever materialized there."""


def describe_tables() -> str:
    """Every catalog table with its description and columns (name, type, nullability, meaning)."""
    blocks = []
    for table in TABLES.values():
        lines = [f"{table.name}: {table.description}", f"  key: {', '.join(table.key)}"]
        width = max(len(c.name) for c in table.columns)
        for c in table.columns:
            kind = duckdb_type(c.dtype) + (" NULL" if c.nullable else "")
            lines.append(f"  {c.name:<{width}}  {kind:<16} {c.description}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render(frame: pl.DataFrame, output: str, max_rows: int) -> str:
    """The result as a table (polars' layout), CSV, or JSON (one object per row)."""
    if output == "csv":
        return frame.write_csv().rstrip("\n")
    if output == "json":
        return frame.write_json()
    with pl.Config(tbl_rows=max_rows, tbl_cols=-1, tbl_width_chars=200, fmt_str_lengths=60):
        return repr(frame)


def query(sql: str) -> pl.DataFrame:
    """Run `sql` on a read-only connection, after bringing the views up to the current manifest."""
    settings = load_settings()
    storage = settings.warehouse
    manifest = storage.read_manifest()
    if manifest is None:  # nothing materialized here: say so, and create nothing
        raise NoWarehouseError(
            f"no warehouse at {storage.url}: run `mi materialize` first, or set MI_DATA_DIR "
            "(or MI_WAREHOUSE_URL) to where one is"
        )
    if isinstance(storage, S3Location):  # object storage: in-memory views over its objects
        with duckdb.connect(":memory:") as con:
            views.apply_object_views(con, storage, manifest)
            relation = con.sql(sql)
            return relation.pl() if relation is not None else pl.DataFrame()
    warehouse = Warehouse(settings.warehouse_dir, settings.duckdb_path)
    warehouse.ensure_views()
    with views.connect(settings.duckdb_path) as con:
        relation = con.sql(sql)
        return relation.pl() if relation is not None else pl.DataFrame()


@click.command()
@click.argument("sql", required=False)
@click.option(
    "--format",
    "output",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
@click.option("--max-rows", default=50, show_default=True, help="Rows shown in table format.")
@click.option("--tables", is_flag=True, help="List the tables and their columns instead.")
def sql(sql: str | None, output: str, max_rows: int, tables: bool) -> None:
    """Run a read-only SQL query against the warehouse views (one per table).

    Example: mi sql "select market, count(*) from daily_prices group by all"
    """
    if tables:
        click.echo(describe_tables())
        return
    if not sql:
        raise click.UsageError("give a query, or --tables to list the tables")
    try:
        frame = query(sql)
    except (duckdb.Error, NoWarehouseError) as error:
        raise click.ClickException(str(error)) from error
    except views.ViewsLockedError as error:
        raise Failure(str(error)) from error
    click.echo(render(frame, output, max_rows))
