"""The incremental pipeline's rule, on the embedded market: after a sequence of daily runs every
catalog table equals what one full run of the last day writes (floats within 1e-9 relative;
run-time stamps left out). Issue 53 found a backtest summary that drifted: this is the guard that
makes any future table that drifts fail CI, not a customer.

200 instruments from 2026-02-26 over five days is the size and the span measured to reproduce the
drift of issue 53 (a 2-year window of PEPE whose start reached its first entry on the last day);
50 and 100 instruments over the same days did not.
"""

from __future__ import annotations

import subprocess
from datetime import date, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.catalog import TABLES
from tests.api.metering.conftest import MI
from tests.served import clean_env

pytestmark = pytest.mark.slow

INSTRUMENTS = "200"
FIRST = date(2026, 2, 26)
DAYS = 5
RUN_STAMPS = {"written_at", "last_updated", "computed_at", "updated_at", "generated_at"}
"""Columns that say when a run wrote a row, not what the row is."""


def materialize(data_dir: Path, day: date) -> None:
    env = clean_env(
        data_dir,
        MI_INSTRUMENTS=INSTRUMENTS,
        MI_END_DATE=day.isoformat(),
        MI_NOW=f"{day.isoformat()}T23:00:00+00:00",
    )
    done = subprocess.run([MI, "materialize"], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def table(data_dir: Path, name: str) -> pl.DataFrame:
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as warehouse:
        frame = warehouse.sql(f'SELECT * FROM "{name}"').pl()
    frame = frame.drop([c for c in frame.columns if c in RUN_STAMPS])
    # a reject names the file it came from, under each run's own data directory
    here = str(data_dir)
    frame = frame.with_columns(
        pl.col(c).str.replace_all(here, "<data>", literal=True)
        for c, t in frame.schema.items()
        if t == pl.String
    )
    keys = [c for c, t in frame.schema.items() if not t.is_float() and not t.is_nested()]
    return frame.sort(keys, nulls_last=True)


def test_daily_runs_equal_one_full_run_of_the_last_day(tmp_path: Path) -> None:
    incremental, full = tmp_path / "incremental", tmp_path / "full"
    for n in range(DAYS + 1):
        materialize(incremental, FIRST + timedelta(days=n))
    last = FIRST + timedelta(days=DAYS)
    materialize(full, last)
    for name in sorted(TABLES):
        (
            assert_frame_equal(
                table(incremental, name),
                table(full, name),
                rel_tol=1e-9,
                abs_tol=0.0,
                check_exact=False,
                check_row_order=True,
            ),
            name,
        )
