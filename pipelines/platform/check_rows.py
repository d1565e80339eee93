"""How an asset check shows the rows that break it: a Markdown table in the check's metadata."""

from __future__ import annotations

import polars as pl

SHOWN_ROWS = 20
"""Offending rows carried in a check's metadata (enough to diagnose, small enough to render)."""
CELL_CHARS = 200
"""A longer value is cut (a reject's raw record can be a whole line of a file)."""


def markdown(frame: pl.DataFrame, rows: int = SHOWN_ROWS) -> str:
    """The first `rows` rows as a Markdown table (Dagster renders it in the check's metadata).

    Written out here rather than by Polars' own table formatting: `pl.Config` sets and restores
    process environment variables, and a step renders its checks while other steps' threads run
    Polars queries that read them; that crashed a run (a segmentation fault)."""
    if frame.is_empty():
        return "(none)"
    shown = frame.head(rows)
    header = "| " + " | ".join(_cell(name) for name in shown.columns) + " |"
    rule = "|" + "---|" * shown.width
    lines = ["| " + " | ".join(_cell(value) for value in row) + " |" for row in shown.rows()]
    return "\n".join([header, rule, *lines])


def _cell(value: object) -> str:
    text = "null" if value is None else str(value)
    if len(text) > CELL_CHARS:
        text = text[: CELL_CHARS - 1] + "…"
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
