"""A carried-state domain in Dagster: a plan step, one step per shard, a stage step; the tables equal one process's run."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from pipelines.catalog import TREND_HISTORY, TREND_SEGMENTS
from pipelines.incremental.assets import mapping_key
from pipelines.incremental.runner import (
    ShardOutcome,
    market_shards,
    run_market,
    run_shard,
    stage_market,
)
from pipelines.prices.update import Request, update_market
from pipelines.trends.assets import build_trends
from pipelines.trends.update import TRENDS
from pipelines.warehouse.shards import Shard
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.store import Warehouse
from tests.pipelines.synthetic import FIRST_DAY, Vendor, materialize_daily, walks

SYMBOLS = ["AAA", "BBB", "CCC", "DDD", "EEE", "FFF"]
DAYS = 400
LAST = FIRST_DAY + timedelta(days=DAYS - 1)


def sharded_prices(warehouse: Warehouse, market: str) -> list[Shard]:
    """The market's prices committed in shards of at most two symbols."""
    tx = RunTransaction(warehouse, f"prices-{market}", "prices")
    source = Vendor(walks(SYMBOLS, DAYS), market)
    update_market(tx, source, Request(market, SYMBOLS, LAST, shard_symbols=2))
    tx.commit()
    return market_shards(RunTransaction(warehouse, "read", "read"), market)


def test_a_domain_runs_one_step_per_shard_between_its_plan_and_its_stage(tmp_path: Path) -> None:
    warehouse = Warehouse(root=tmp_path / "warehouse")
    shards = sharded_prices(warehouse, "crypto") + sharded_prices(warehouse, "stocks")
    result = materialize_daily(warehouse, [build_trends()], LAST, ["crypto", "stocks"])
    steps = {e.step_key for e in result.all_events if e.is_step_success}
    assert len(shards) > 2  # several shards in each market
    assert {f"trends.trends_shard[{mapping_key(s)}]" for s in shards} <= steps
    assert {"trends.trends_plan", "trends.trends_stage"} <= steps
    assert all(e.passed for e in result.get_asset_check_evaluations())


def test_the_shard_steps_write_the_tables_one_process_writes(tmp_path: Path) -> None:
    """The same prices run through Dagster's shard steps and through `run_market` in one process
    give the same trend tables."""
    stepped, direct = Warehouse(root=tmp_path / "a"), Warehouse(root=tmp_path / "b")
    for warehouse in (stepped, direct):
        sharded_prices(warehouse, "crypto")
    materialize_daily(stepped, [build_trends()], LAST, ["crypto"])
    tx = RunTransaction(direct, "direct", "trends")
    run_market(tx, "crypto", TRENDS)
    RunTransaction(direct, "direct", "publish").commit()
    for table in (TREND_HISTORY, TREND_SEGMENTS):
        a = stepped.read(table).drop("last_updated", strict=False).sort(table.key)
        b = direct.read(table).drop("last_updated", strict=False).sort(table.key)
        assert a.equals(b), table.name


def test_a_stage_refuses_a_market_whose_shard_recorded_nothing(tmp_path: Path) -> None:
    """A shard step that never recorded its outcome (its record lost) fails the stage step, never
    a market staged without that shard's symbols."""
    warehouse = Warehouse(root=tmp_path / "warehouse")
    first, *_ = sharded_prices(warehouse, "crypto")
    tx = RunTransaction(warehouse, "run-1", f"trends_shard[{mapping_key(first)}]")
    tx.set_result(run_shard(tx, first, TRENDS).to_json())
    stage = RunTransaction(warehouse, "run-1", "trends_stage")
    outcomes = [ShardOutcome.from_json(r) for r in stage.results("trends_shard[").values()]
    with pytest.raises(RuntimeError, match="no outcome recorded for shards"):
        stage_market(stage, "crypto", TRENDS, outcomes)
