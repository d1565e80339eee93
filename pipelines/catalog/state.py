"""Internal tables the pipeline carries between runs: what it has read, and each domain's per-symbol state.

They live in the warehouse beside the data tables and are committed with them (a run's state and
its tables become visible together), but no reader serves them: they are not in `TABLES`, the API
and the DuckDB views never see them. docs/pipeline.md says what each domain keeps.
"""

from __future__ import annotations

import polars as pl

from pipelines.catalog.schema import Column, Table

STATE_COLUMNS: tuple[Column, ...] = (
    Column("market", pl.String(), "market of the instrument"),
    Column("symbol", pl.String(), "canonical upper-case symbol"),
    Column("code_version", pl.String(), "hash of the domain's code the state was computed with"),
    Column(
        "history_id", pl.Int64(), "price_state.history_id of the bars the state was computed from"
    ),
    Column("last_date", pl.Date(), "the last bar the state includes"),
    Column("bars", pl.Int64(), "bars the state includes"),
)
"""What every domain's state row starts with: enough to decide the symbol's mode in the next run."""

PRICE_STATE = Table(
    name="price_state",
    description="Per symbol: the stored history's span and an id that changes whenever a stored bar does.",
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("first_date", pl.Date(), "first stored bar"),
        Column("last_date", pl.Date(), "last stored bar"),
        Column("bars", pl.Int64(), "stored bars"),
        Column(
            "history_id",
            pl.Int64(),
            "random id, new whenever the symbol's stored bars change other than by appending days "
            "(a revision, a first load): a domain whose state names another id recomputes in full",
        ),
    ),
    key=("market", "symbol"),
)


def files_read(name: str, what: str) -> Table:
    """Source files a connector has read: a later run reads only files that are new or changed."""
    return Table(
        name=name,
        description=f"{what} files read so far, with the size and modification time seen then.",
        columns=(
            Column("market", pl.String(), "market the file belongs to"),
            Column("path", pl.String(), "the file's path"),
            Column("size", pl.Int64(), "size in bytes when read"),
            Column("mtime_ns", pl.Int64(), "modification time when read, ns since the epoch"),
        ),
        key=("market", "path"),
    )


PRICE_FILES = files_read("price_files", "Price")
NEWS_FILES = files_read("news_files", "News feed")

STATE_TABLES: dict[str, Table] = {t.name: t for t in (PRICE_STATE, PRICE_FILES, NEWS_FILES)}
"""Every internal table by name (domain states register here as they are defined)."""
