"""A first load killed right after its first manifest commit leaves a DuckDB file an analyst can
open: the database of views exists for every version a reader can see (issue 53)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipelines.catalog import read_manifest

pytestmark = pytest.mark.slow

KILLED_AFTER_THE_FIRST_MANIFEST = """
import os, signal, sys
from pipelines.warehouse import store

written = store.write_manifest

def write_then_die(root, manifest):
    written(root, manifest)
    os.kill(os.getpid(), signal.SIGKILL)  # after the manifest names the version, nothing more

store.write_manifest = write_then_die
from mi.cli import main
sys.argv = ["mi", "materialize", "--job", "daily", "--market", "crypto"]
main()
"""


def test_a_first_load_killed_after_its_first_commit_leaves_a_warehouse_file_that_opens(
    tmp_path: Path,
) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("MI_")}
    env |= {"MI_DATA_DIR": str(tmp_path), "MI_INSTRUMENTS": "8", "MI_END_DATE": "2026-03-02"}
    done = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_THE_FIRST_MANIFEST],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == -signal.SIGKILL, done.stdout[-2000:] + done.stderr[-2000:]
    manifest = read_manifest(tmp_path / "warehouse")
    assert manifest is not None  # the first version is committed
    database = tmp_path / "warehouse.duckdb"
    assert database.exists()
    with duckdb.connect(str(database), read_only=True) as analyst:
        tables = {
            row[0]
            for row in analyst.sql("SELECT table_name FROM information_schema.tables").fetchall()
        }
        assert {"daily_prices", "instruments", "backtest_summaries"} <= tables
        analyst.sql("SELECT count(*) FROM daily_prices").fetchall()  # every view answers
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
