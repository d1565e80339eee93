"""The versions section reads each worker's switch from the reader's own log line."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from api.warehouse import DuckDBWarehouseReader
from benchmarks.versions import Switch, switches
from pipelines.catalog import DAILY_PRICES
from pipelines.warehouse.store import Warehouse
from tests.api.conftest import price_frame


def test_a_switch_is_read_from_the_line_the_reader_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    commit = warehouse.write(DAILY_PRICES, "crypto", price_frame([1.0, 2.0]))
    reader = DuckDBWarehouseReader(warehouse.root)
    with caplog.at_level(logging.INFO, logger="api.warehouse"):
        reader.refresh()
    log = tmp_path / "serve.log"
    log.write_text("noise\n" + caplog.text + "\nmore noise\n")
    load = reader.last_load
    assert load is not None
    assert switches(log, commit.version) == [
        Switch(commit.version, pytest.approx(load.seconds, abs=1e-3), 0, 0)  # type: ignore[arg-type]
    ]
    assert switches(log, commit.version + 1) == []
    reader.close()
