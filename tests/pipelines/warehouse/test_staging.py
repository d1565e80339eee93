"""A run's transaction: staged files are invisible until the run commits, then every table lands in one version."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.catalog import (
    INSTRUMENTS,
    PRICE_REJECTS,
    Manifest,
    PartitionFile,
    read_manifest,
    read_partitions,
)
from pipelines.warehouse import views
from pipelines.warehouse.commits import CommitConflictError, TableWrite, changes_nothing
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.store import STAGING_TTL, Warehouse
from pipelines.warehouse.tables import stage_market_file
from tests.pipelines.warehouse.conftest import ONLY_CURRENT, instruments_frame


def rejects_frame(market: str, *reasons: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "market": [market] * len(reasons),
            "source": ["test"] * len(reasons),
            "location": [f"line {i}" for i in range(len(reasons))],
            "record": ["x"] * len(reasons),
            "reason": list(reasons),
        }
    )


def stage_instruments(tx: RunTransaction, market: str, *symbols: str) -> None:
    entry = tx.write_file(INSTRUMENTS, market, instruments_frame(market, *symbols))
    tx.stage(INSTRUMENTS.name, market, {market: entry})


def test_staged_files_are_invisible_to_readers_until_the_run_commits(warehouse: Warehouse) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    before = read_manifest(warehouse.root)
    tx = RunTransaction(warehouse, "run-1", "raw_instruments")
    stage_instruments(tx, "crypto", "BTC", "ETH")
    assert read_manifest(warehouse.root) == before
    assert warehouse.read(INSTRUMENTS)["symbol"].to_list() == ["BTC"]
    RunTransaction(warehouse, "run-1", "daily_publish").commit()
    assert warehouse.read(INSTRUMENTS)["symbol"].to_list() == ["BTC", "ETH"]


def test_a_later_step_reads_what_an_earlier_step_of_the_run_staged(warehouse: Warehouse) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    stage_instruments(RunTransaction(warehouse, "run-1", "first"), "crypto", "SOL")
    later = RunTransaction(warehouse, "run-1", "second")
    staged = later.partitions(INSTRUMENTS.name, "crypto")
    assert pl.read_parquet(warehouse.root / staged["crypto"].path)["symbol"].to_list() == ["SOL"]
    other_run = RunTransaction(warehouse, "run-2", "second")
    committed = other_run.partitions(INSTRUMENTS.name, "crypto")
    assert pl.read_parquet(warehouse.root / committed["crypto"].path)["symbol"].to_list() == ["BTC"]


def test_every_table_of_a_run_lands_in_one_manifest_version(warehouse: Warehouse) -> None:
    first = RunTransaction(warehouse, "run-1", "instruments")
    stage_instruments(first, "crypto", "BTC")
    stage_instruments(first, "forex", "EURUSD")
    second = RunTransaction(warehouse, "run-1", "rejects")
    entry = second.write_file(PRICE_REJECTS, "crypto", rejects_frame("crypto", "bad"))
    second.stage(PRICE_REJECTS.name, "crypto", {"crypto": entry})
    published = RunTransaction(warehouse, "run-1", "publish").commit()
    manifest = read_manifest(warehouse.root)
    assert manifest is not None
    assert manifest.version == published.version
    assert manifest.markets(INSTRUMENTS.name) == ["crypto", "forex"]
    assert manifest.markets(PRICE_REJECTS.name) == ["crypto"]
    assert not (warehouse.root / "_staging" / "run-1").exists()


def test_a_retried_step_starts_over_instead_of_reading_its_own_earlier_attempt(
    warehouse: Warehouse,
) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    stage_instruments(RunTransaction(warehouse, "run-1", "step"), "crypto", "HALF")
    retry = RunTransaction(warehouse, "run-1", "step")
    seen = retry.partitions(INSTRUMENTS.name, "crypto")
    assert pl.read_parquet(warehouse.root / seen["crypto"].path)["symbol"].to_list() == ["BTC"]
    stage_instruments(retry, "crypto", "BTC", "ETH")
    RunTransaction(warehouse, "run-1", "publish").commit()
    assert warehouse.read(INSTRUMENTS)["symbol"].to_list() == ["BTC", "ETH"]


def symbols_of(warehouse: Warehouse, tx: RunTransaction, market: str) -> list[str]:
    (entry,) = tx.partitions(INSTRUMENTS.name, market).values()
    return pl.read_parquet(warehouse.root / entry.path)["symbol"].to_list()


def test_a_step_run_again_while_its_first_attempt_runs_hides_no_table_the_first_staged(
    warehouse: Warehouse,
) -> None:
    """A step delivered again (its first attempt finished while the broker was down, so it could
    not be acknowledged) runs while a later step already reads the first attempt's tables: until
    the second attempt has staged a table again, the first attempt's stays what the run reads
    and commits, and a table the second has staged is read from it."""
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "OLD"))
    first = RunTransaction(warehouse, "run-1", "news_ingestion")
    second = RunTransaction(warehouse, "run-1", "news_ingestion")  # started before `first` ended
    stage_instruments(first, "crypto", "BTC")
    stage_instruments(first, "forex", "EURUSD")
    stage_instruments(second, "crypto", "BTC", "ETH")  # forex not staged again yet
    reader = RunTransaction(warehouse, "run-1", "briefs")
    assert symbols_of(warehouse, reader, "forex") == ["EURUSD"]  # not the committed OLD
    assert symbols_of(warehouse, reader, "crypto") == ["BTC", "ETH"]
    RunTransaction(warehouse, "run-1", "publish").commit()
    assert warehouse.read(INSTRUMENTS)["symbol"].to_list() == ["BTC", "ETH", "EURUSD"]


def test_a_mapped_step_run_again_keeps_the_result_an_attempt_recorded(
    warehouse: Warehouse,
) -> None:
    """The shard results a run's stage step reads: an attempt of a shard step that has not
    recorded its result yet hides neither the earlier attempt's result nor another shard's."""
    done = RunTransaction(warehouse, "run-1", "trends_shard[crypto_s0of2]")
    done.set_result({"rows": 3})
    RunTransaction(warehouse, "run-1", "trends_shard[crypto_s1of2]").set_result({"rows": 4})
    again = RunTransaction(warehouse, "run-1", "trends_shard[crypto_s0of2]")
    again.write_file(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))  # no result yet
    stage = RunTransaction(warehouse, "run-1", "trends_stage")
    assert stage.results("trends_shard[") == {
        "trends_shard[crypto_s0of2]": {"rows": 3},
        "trends_shard[crypto_s1of2]": {"rows": 4},
    }
    again.set_result({"rows": 5})
    assert stage.results("trends_shard[")["trends_shard[crypto_s0of2]"] == {"rows": 5}


def test_two_steps_staging_the_same_partition_are_refused(warehouse: Warehouse) -> None:
    stage_instruments(RunTransaction(warehouse, "run-1", "one"), "crypto", "BTC")
    with pytest.raises(ValueError, match="already staged by another step"):
        stage_instruments(RunTransaction(warehouse, "run-1", "two"), "crypto", "ETH")


def test_a_run_based_on_partitions_another_run_replaced_cannot_commit(warehouse: Warehouse) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    slow = RunTransaction(warehouse, "slow", "step")
    fast = RunTransaction(warehouse, "fast", "step")
    stage_instruments(fast, "crypto", "FAST")
    stage_instruments(slow, "crypto", "SLOW")
    RunTransaction(warehouse, "fast", "publish").commit()
    before = read_manifest(warehouse.root)
    with pytest.raises(CommitConflictError, match="instruments/crypto"):
        RunTransaction(warehouse, "slow", "publish").commit()
    assert read_manifest(warehouse.root) == before
    assert warehouse.read(INSTRUMENTS)["symbol"].to_list() == ["FAST"]


@pytest.mark.parametrize("news_first", [True, False])
def test_runs_writing_disjoint_tables_both_land_whichever_commits_first(
    warehouse: Warehouse, news_first: bool
) -> None:
    daily = RunTransaction(warehouse, "daily", "step")
    news = RunTransaction(warehouse, "news", "step")
    stage_instruments(daily, "crypto", "BTC")
    entry = news.write_file(PRICE_REJECTS, "crypto", rejects_frame("crypto", "late"))
    news.stage(PRICE_REJECTS.name, "crypto", {"crypto": entry})
    for run in ("news", "daily") if news_first else ("daily", "news"):
        RunTransaction(warehouse, run, "publish").commit()
    assert warehouse.read(INSTRUMENTS)["symbol"].to_list() == ["BTC"]
    assert warehouse.read(PRICE_REJECTS)["reason"].to_list() == ["late"]


def test_runs_of_different_markets_of_one_table_both_land(warehouse: Warehouse) -> None:
    crypto = RunTransaction(warehouse, "crypto-run", "step")
    forex = RunTransaction(warehouse, "forex-run", "step")
    stage_instruments(crypto, "crypto", "BTC")
    stage_instruments(forex, "forex", "EURUSD")
    RunTransaction(warehouse, "forex-run", "publish").commit()
    RunTransaction(warehouse, "crypto-run", "publish").commit()
    assert warehouse.read(INSTRUMENTS)["symbol"].sort().to_list() == ["BTC", "EURUSD"]


def test_a_market_split_into_several_files_reads_as_one_partition(warehouse: Warehouse) -> None:
    tx = RunTransaction(warehouse, "run", "step")
    files = {
        f"crypto/s{i}": tx.write_file(INSTRUMENTS, f"crypto/s{i}", instruments_frame("crypto", s))
        for i, s in enumerate(["BTC", "ETH", "SOL"])
    }
    tx.stage(INSTRUMENTS.name, "crypto", files)
    RunTransaction(warehouse, "run", "publish").commit()
    assert read_partitions(warehouse.storage, INSTRUMENTS, ["crypto"])["symbol"].to_list() == [
        "BTC",
        "ETH",
        "SOL",
    ]
    manifest = read_manifest(warehouse.root)
    assert manifest is not None
    assert sorted(manifest.partitions(INSTRUMENTS.name, "crypto")) == list(files)


def test_a_commit_replaces_every_file_of_the_market_it_writes(warehouse: Warehouse) -> None:
    tx = RunTransaction(warehouse, "first", "step")
    tx.stage(
        INSTRUMENTS.name,
        "crypto",
        {
            key: tx.write_file(INSTRUMENTS, key, instruments_frame("crypto", s))
            for key, s in [("crypto/s0", "BTC"), ("crypto/s1", "ETH")]
        },
    )
    RunTransaction(warehouse, "first", "publish").commit()
    stage_instruments(RunTransaction(warehouse, "second", "step"), "crypto", "ONE")
    RunTransaction(warehouse, "second", "publish").commit()
    assert warehouse.read(INSTRUMENTS)["symbol"].to_list() == ["ONE"]


def test_the_garbage_collector_keeps_what_a_live_run_staged(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse", gc_grace=timedelta(0))
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "EURUSD"))
    tx = RunTransaction(warehouse, "long-run", "step")
    stage_instruments(tx, "crypto", "BTC")
    staged = warehouse.root / tx.partitions(INSTRUMENTS.name, "crypto")["crypto"].path
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "USDJPY"))
    warehouse.expire(ONLY_CURRENT)
    assert staged.exists()
    RunTransaction(warehouse, "long-run", "publish").commit()
    assert warehouse.read(INSTRUMENTS, ["crypto"])["symbol"].to_list() == ["BTC"]


def test_a_file_written_and_not_yet_staged_survives_another_runs_collection(
    tmp_path: Path,
) -> None:
    """A step may compute for longer than the grace between writing a shard's file and staging
    the market: the file is in its staging record from the moment it is written."""
    warehouse = Warehouse(tmp_path / "warehouse", gc_grace=timedelta(0))
    tx = RunTransaction(warehouse, "slow-step", "step")
    entry = tx.write_file(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "EURUSD"))
    warehouse.expire(ONLY_CURRENT)
    assert (warehouse.root / entry.path).exists()
    tx.stage(INSTRUMENTS.name, "crypto", {"crypto": entry})
    RunTransaction(warehouse, "slow-step", "publish").commit()
    assert warehouse.read(INSTRUMENTS, ["crypto"])["symbol"].to_list() == ["BTC"]


def test_a_file_a_step_wrote_and_never_staged_is_collected_once_the_run_is_over(
    tmp_path: Path,
) -> None:
    warehouse = Warehouse(tmp_path / "warehouse", gc_grace=timedelta(0))
    tx = RunTransaction(warehouse, "run", "step")
    unused = tx.write_file(INSTRUMENTS, "crypto", instruments_frame("crypto", "OLD"))
    stage_instruments(tx, "crypto", "BTC")
    RunTransaction(warehouse, "run", "publish").commit()
    warehouse.expire(ONLY_CURRENT)
    assert not (warehouse.root / unused.path).exists()
    assert warehouse.read(INSTRUMENTS, ["crypto"])["symbol"].to_list() == ["BTC"]


def test_a_dead_runs_staging_and_files_are_collected(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse", gc_grace=timedelta(0))
    tx = RunTransaction(warehouse, "dead-run", "step")
    stage_instruments(tx, "crypto", "BTC")
    staged = warehouse.root / tx.partitions(INSTRUMENTS.name, "crypto")["crypto"].path
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "EURUSD"))
    assert staged.exists()
    later = staged.stat().st_mtime + STAGING_TTL.total_seconds() + 1
    warehouse.expire(ONLY_CURRENT, now=later)
    assert not staged.exists()
    assert not (warehouse.root / "_staging" / "dead-run").exists()


def test_a_reader_polling_during_commits_sees_each_runs_tables_together(
    warehouse: Warehouse,
) -> None:
    """Each run writes instruments and price_rejects naming its own number; a reader loading the
    manifest meanwhile must never see one table of run k beside the other of run k-1."""
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            manifest = read_manifest(warehouse.root)
            if manifest and INSTRUMENTS.name in manifest.tables:
                symbols = read_partitions(warehouse.storage, INSTRUMENTS, ["crypto"], manifest)
                reasons = read_partitions(warehouse.storage, PRICE_REJECTS, ["crypto"], manifest)
                seen.append((symbols["symbol"][0], reasons["reason"][0]))

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for k in range(25):
            tx = RunTransaction(warehouse, f"run-{k}", "step")
            stage_instruments(tx, "crypto", f"R{k}")
            entry = tx.write_file(PRICE_REJECTS, "crypto", rejects_frame("crypto", f"R{k}"))
            tx.stage(PRICE_REJECTS.name, "crypto", {"crypto": entry})
            tx.commit()
    finally:
        done.set()
        reader.join()
    assert seen, "the reader never saw a version"
    assert all(symbol == reason for symbol, reason in seen), [p for p in seen if p[0] != p[1]]


def test_a_write_keyed_outside_its_market_is_refused() -> None:
    with pytest.raises(ValueError, match="not partitions of 'crypto'"):
        TableWrite("instruments", "crypto", {"forex/s0": None})  # type: ignore[dict-item]


def test_a_step_reads_the_results_the_run_s_other_steps_recorded(warehouse: Warehouse) -> None:
    RunTransaction(warehouse, "run-1", "trends_shard[crypto_s0of2]").set_result({"rows": 3})
    RunTransaction(warehouse, "run-1", "trends_shard[crypto_s1of2]").set_result({"rows": 4})
    RunTransaction(warehouse, "run-1", "indicators_shard[crypto_s0of2]").set_result({"rows": 9})
    RunTransaction(warehouse, "run-2", "trends_shard[forex_s0of1]").set_result({"rows": 1})
    stage = RunTransaction(warehouse, "run-1", "trends_stage")
    assert stage.results("trends_shard[") == {
        "trends_shard[crypto_s0of2]": {"rows": 3},
        "trends_shard[crypto_s1of2]": {"rows": 4},
    }


def test_a_retried_step_s_recorded_result_is_replaced_not_added(warehouse: Warehouse) -> None:
    RunTransaction(warehouse, "run-1", "trends_shard[crypto_s0of1]").set_result({"try": 1})
    RunTransaction(warehouse, "run-1", "trends_shard[crypto_s0of1]").set_result({"try": 2})
    stage = RunTransaction(warehouse, "run-1", "trends_stage")
    assert stage.results("trends_shard[") == {"trends_shard[crypto_s0of1]": {"try": 2}}


def test_a_result_does_not_stage_anything(warehouse: Warehouse) -> None:
    """A shard's step records what it did; only the step that stages its market makes it part of
    the run's commit."""
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    before = read_manifest(warehouse.root)
    RunTransaction(warehouse, "run-1", "shard").set_result({"files": {}})
    published = RunTransaction(warehouse, "run-1", "publish").commit()
    after = read_manifest(warehouse.root)
    assert before is not None
    assert after is not None
    assert after.partitions(INSTRUMENTS.name, "crypto") == before.partitions(
        INSTRUMENTS.name, "crypto"
    )
    assert published.version == after.version


def test_a_step_opening_its_transaction_reads_no_mapped_step_s_record(
    warehouse: Warehouse,
) -> None:
    """A run's shard steps are many: the other steps skip their records (unreadable here, so a
    read would fail), and only a results reader opens them."""
    RunTransaction(warehouse, "run-1", "trends_shard[crypto_s0of1]").set_result({"rows": 1})
    folder = warehouse.root / "_staging" / "run-1"
    (folder / "trends_shard[crypto_s1of2].json").write_text("not json")
    tx = RunTransaction(warehouse, "run-1", "indicators")
    stage_instruments(tx, "crypto", "BTC")
    (folder / "trends_shard[crypto_s1of2].json").unlink()
    stage = RunTransaction(warehouse, "run-1", "trends_stage")
    assert stage.results("trends_shard[") == {"trends_shard[crypto_s0of1]": {"rows": 1}}


def test_a_mapped_step_cannot_stage_a_table(warehouse: Warehouse) -> None:
    with pytest.raises(ValueError, match="never stages"):
        stage_instruments(RunTransaction(warehouse, "run-1", "x_shard[crypto_s0of1]"), "crypto")


def test_a_run_that_stages_only_the_current_files_publishes_no_version(
    warehouse: Warehouse,
) -> None:
    """A run that found nothing new: the version (and every ETag the API makes from it) stands,
    the manifest file is not rewritten, and the DuckDB views stay on that version."""
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    before = read_manifest(warehouse.root)
    assert before is not None
    tx = RunTransaction(warehouse, "run-1", "raw_instruments")
    tx.stage(INSTRUMENTS.name, "crypto", tx.partitions(INSTRUMENTS.name, "crypto"))
    published = RunTransaction(warehouse, "run-1", "daily_publish").commit()
    assert (published.version, published.published) == (before.version, False)
    assert read_manifest(warehouse.root) == before
    assert views.views_version(warehouse.duckdb_path) == (
        before.version,
        str(warehouse.root.resolve()),
    )  # type: ignore[arg-type]


def test_a_run_that_changes_one_file_publishes_a_new_version(warehouse: Warehouse) -> None:
    warehouse.write(INSTRUMENTS, "crypto", instruments_frame("crypto", "BTC"))
    warehouse.write(INSTRUMENTS, "forex", instruments_frame("forex", "EURUSD"))
    before = read_manifest(warehouse.root)
    assert before is not None
    tx = RunTransaction(warehouse, "run-1", "raw_instruments")
    tx.stage(INSTRUMENTS.name, "crypto", tx.partitions(INSTRUMENTS.name, "crypto"))
    stage_instruments(tx, "forex", "EURUSD")  # the same rows in a new file: a change of file
    published = RunTransaction(warehouse, "run-1", "daily_publish").commit()
    assert published.published
    assert published.version > before.version


def test_changes_nothing_compares_every_write_with_the_current_partitions() -> None:
    entry = PartitionFile(path="instruments/market=crypto/a.parquet", rows=1, written_at="t")
    other = PartitionFile(path="instruments/market=crypto/b.parquet", rows=1, written_at="t")
    manifest = Manifest(version=7, updated_at="t", tables={"instruments": {"crypto": entry}})
    assert changes_nothing(manifest, [TableWrite("instruments", "crypto", {"crypto": entry})])
    assert changes_nothing(manifest, [])
    assert not changes_nothing(manifest, [TableWrite("instruments", "crypto", {"crypto": other})])
    assert not changes_nothing(manifest, [TableWrite("instruments", "crypto", {})])  # removed
    assert not changes_nothing(manifest, [TableWrite("instruments", "forex", {"forex": entry})])
    assert not changes_nothing(None, [])


def test_a_market_file_with_the_same_rows_is_the_stored_file_and_other_rows_a_new_one(
    warehouse: Warehouse,
) -> None:
    warehouse.write(PRICE_REJECTS, "crypto", rejects_frame("crypto", "bad close"))
    stored = read_manifest(warehouse.root).partitions(PRICE_REJECTS.name, "crypto")  # type: ignore[union-attr]  # fmt: skip
    same = RunTransaction(warehouse, "run-1", "raw_daily_prices")
    stage_market_file(same, PRICE_REJECTS, "crypto", rejects_frame("crypto", "bad close"))
    assert same.partitions(PRICE_REJECTS.name, "crypto") == stored
    assert not RunTransaction(warehouse, "run-1", "daily_publish").commit().published
    more = RunTransaction(warehouse, "run-2", "raw_daily_prices")
    stage_market_file(
        more, PRICE_REJECTS, "crypto", rejects_frame("crypto", "bad close", "bad day")
    )
    assert more.partitions(PRICE_REJECTS.name, "crypto") != stored
    assert RunTransaction(warehouse, "run-2", "daily_publish").commit().published
    assert warehouse.read(PRICE_REJECTS)["reason"].to_list() == ["bad close", "bad day"]
