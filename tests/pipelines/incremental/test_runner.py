"""A domain's run: shard by shard, each shard's outcome a small JSON record, the market staged from them."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

from pipelines.catalog import PartitionFile
from pipelines.incremental.assets import mapping_key, shard_of
from pipelines.incremental.runner import DomainRun, ShardOutcome
from pipelines.warehouse.shards import Shard


def outcome(shard: Shard, kept: bool = False, found: int = 0) -> ShardOutcome:
    offending = pl.DataFrame(
        {"symbol": ["BTC"] * found, "date": [date(2026, 3, 2)] * found, "value": [1.5] * found},
        schema={"symbol": pl.String, "date": pl.Date, "value": pl.Float64},
    )
    files = {
        "trend_history": {
            f"{shard.key}/2026-03": PartitionFile("t/a.parquet", 10, "2026-03-02T00:00:00Z")
        }
    }
    return ShardOutcome(
        shard,
        files,
        counts={"append": 3, "unchanged": 1},
        kept=kept,
        rows={} if kept else {"trend_history": 3},
        found={} if kept else {("trend_history", "dates_ascending"): found},
        offending={} if kept else {("trend_history", "dates_ascending"): offending},
    )


def test_a_shard_outcome_survives_its_json_record_with_its_offending_rows_typed() -> None:
    original = outcome(Shard("crypto", 1, 2), found=2)
    back = ShardOutcome.from_json(original.to_json())
    assert back.shard == original.shard
    assert back.files == original.files
    assert (back.counts, back.kept, back.rows, back.found) == (
        original.counts,
        original.kept,
        original.rows,
        original.found,
    )
    key = ("trend_history", "dates_ascending")
    assert back.offending[key].equals(original.offending[key])
    assert back.offending[key].schema == original.offending[key].schema


def test_a_market_counts_its_shards_kept_and_written_and_their_offending_rows() -> None:
    run = DomainRun("crypto")
    run.add(outcome(Shard("crypto", 0, 2), found=1))
    run.add(outcome(Shard("crypto", 1, 2), found=2))
    run.add(outcome(Shard("crypto", 1, 2), kept=True))
    key = ("trend_history", "dates_ascending")
    assert (run.shards_written, run.shards_kept) == (2, 1)
    assert run.counts["append"] == 9
    assert run.rows == {"trend_history": 6}
    assert run.offending_count[key] == 3
    assert run.offending[key].height == 3


@pytest.mark.parametrize("shard", [Shard("crypto", 0, 1), Shard("commodities", 13, 16)])
def test_a_shard_s_mapping_key_names_it_back(shard: Shard) -> None:
    assert mapping_key(shard).replace("_", "").isalnum()
    assert shard_of(mapping_key(shard)) == shard


def test_a_mapping_key_that_names_no_shard_is_refused() -> None:
    with pytest.raises(ValueError, match="not a shard"):
        shard_of("crypto")


def test_a_recorded_outcome_naming_no_shard_is_refused() -> None:
    raw = outcome(Shard("crypto", 0, 1)).to_json() | {"shard": "crypto"}
    with pytest.raises(ValueError, match="not a shard key"):
        ShardOutcome.from_json(raw)
