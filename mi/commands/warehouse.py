"""`mi sql`: query the warehouse read-only through its DuckDB views, or list its tables."""

from __future__ import annotations

from pathlib import Path

import click
import duckdb
import polars as pl

from mi.errors import Failure
from pipelines.catalog import TABLES, Manifest, S3Location, WarehouseStorage
from pipelines.catalog.sql import duckdb_type
from pipelines.catalog.versions import parse_as_of, read_record, retained_log, version_for
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


def past_manifest(storage: WarehouseStorage, manifest: Manifest, as_of: str) -> Manifest:
    """The served tables of the retained version `as_of` names (a version id or an RFC 3339
    instant: the version current then, as the API's `as_of` answers)."""
    try:
        target = parse_as_of(as_of)
    except ValueError:
        raise click.BadParameter(
            "expected an RFC 3339 instant (2026-03-02T14:00:00Z) or a data version id",
            param_hint="--as-of",
        ) from None
    found = version_for(manifest, target)
    record = read_record(storage, found.version) if found is not None else None
    if record is None:
        oldest = retained_log(manifest)[0].published
        raise NoWarehouseError(f"no retained version answers {as_of}; the oldest was published {oldest}")  # fmt: skip
    return record.manifest


def query(sql: str, as_of: str | None = None) -> pl.DataFrame:
    """Run `sql` on a read-only connection, after bringing the views up to the current manifest;
    with `as_of`, on in-memory views of that retained version."""
    settings = load_settings()
    storage = settings.warehouse
    manifest = storage.read_manifest()
    if manifest is None:  # nothing materialized here: say so, and create nothing
        raise NoWarehouseError(
            f"no warehouse at {storage.url}: run `mi materialize` first, or set MI_DATA_DIR "
            "(or MI_WAREHOUSE_URL) to where one is"
        )
    if as_of is not None:
        past = past_manifest(storage, manifest, as_of)
        with duckdb.connect(":memory:") as con:
            if isinstance(storage, S3Location):
                views.apply_object_views(con, storage, past)
            else:
                views.apply_views(con, settings.warehouse_dir, past)
            relation = con.sql(sql)
            return relation.pl() if relation is not None else pl.DataFrame()
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
@click.option(
    "--as-of",
    "as_of",
    metavar="INSTANT|VERSION",
    help="Query a retained past version: an RFC 3339 instant (the version current then) or a "
    "data version id, as the API's as_of takes them.",
)
@click.option(
    "--views-file",
    type=click.Path(dir_okay=False, writable=True),
    help="With --as-of: write a DuckDB file holding that version's views (open it read-only with "
    "duckdb, or ATTACH it) instead of running a query.",
)
def sql(
    sql: str | None,
    output: str,
    max_rows: int,
    tables: bool,
    as_of: str | None,
    views_file: str | None,
) -> None:
    """Run a read-only SQL query against the warehouse views (one per table).

    Example: mi sql "select market, count(*) from daily_prices group by all"
    """
    if views_file is not None:
        write_views_file(Path(views_file), as_of)
        return
    if tables:
        click.echo(describe_tables())
        return
    if not sql:
        raise click.UsageError("give a query, or --tables to list the tables")
    try:
        frame = query(sql, as_of)
    except (duckdb.Error, NoWarehouseError) as error:
        raise click.ClickException(str(error)) from error
    except views.ViewsLockedError as error:
        raise Failure(str(error)) from error
    click.echo(render(frame, output, max_rows))


def write_views_file(path: Path, as_of: str | None) -> None:
    """A DuckDB file whose views read one retained version's files (local warehouses only)."""
    if as_of is None:
        raise click.UsageError(
            "--views-file needs --as-of (the current views are warehouse.duckdb)"
        )
    settings = load_settings()
    storage = settings.warehouse
    if isinstance(storage, S3Location):
        raise click.UsageError(
            "--views-file needs a local warehouse; on object storage use --as-of"
        )
    manifest = storage.read_manifest()
    if manifest is None:
        raise click.ClickException(f"no warehouse at {storage.url}: run `mi materialize` first")
    try:
        past = past_manifest(storage, manifest, as_of)
    except NoWarehouseError as error:
        raise click.ClickException(str(error)) from error
    path.unlink(missing_ok=True)
    views.create_views_file(path, settings.warehouse_dir, past)
    click.echo(f"{path}: the views of data version {past.version} ({past.updated_at})")
