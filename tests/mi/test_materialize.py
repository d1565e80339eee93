"""`mi materialize`: a run per job for the chosen markets, progress per step, checks summarised, exit status."""

from __future__ import annotations

import gc
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mi.cli import main
from mi.commands import pipeline
from mi.commands.pipeline import (
    CheckTally,
    _step_role,
    _summary,
    load_definitions,
    open_instance,
)
from pipelines.catalog import INSTRUMENTS, read_manifest
from pipelines.warehouse.store import Warehouse

TOY = "tests.mi.toy_definitions"


def _materialize(data_dir: Path, *args: str, **env: str) -> Result:
    return CliRunner().invoke(
        main, ["materialize", "-m", TOY, *args], env={"MI_DATA_DIR": str(data_dir), **env}
    )


@pytest.mark.slow
def test_materialize_writes_the_warehouse_and_reports_each_step(tmp_path: Path) -> None:
    result = _materialize(tmp_path, "--market", "crypto", "--day", "2026-03-02")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "[daily] toy_instruments started" in lines
    assert any(
        line.startswith("[daily] toy_instruments done in")
        and line.endswith("instruments 2 rows, instrument_rejects 1 rows")
        for line in lines
    )
    assert any(line.startswith("[daily] daily_publish done in") for line in lines)
    assert "checks: 1 passed, 1 warned, 0 failed" in lines
    manifest = read_manifest(tmp_path / "warehouse")
    assert manifest is not None
    assert sorted(manifest.tables["instruments"]) == ["crypto"]
    assert Warehouse(tmp_path / "warehouse").read(INSTRUMENTS).height == 2
    assert (tmp_path / "warehouse.duckdb").exists()
    assert (tmp_path / "dagster" / "storage").is_dir()


@pytest.mark.slow
def test_a_failed_step_exits_non_zero_and_commits_nothing_of_its_run(tmp_path: Path) -> None:
    result = _materialize(tmp_path, "--market", "crypto,forex", TOY_FAIL_MARKET="forex")
    assert result.exit_code == 1, result.output
    assert "[daily] toy_instruments FAILED" in result.output
    assert "toy source for forex is down" in result.output
    assert result.output.splitlines()[-1].startswith("FAILED in")
    manifest = read_manifest(tmp_path / "warehouse")
    assert (
        manifest is None or "instruments" not in manifest.tables
    )  # crypto's rows were staged only


@pytest.mark.slow
def test_an_error_check_exits_non_zero(tmp_path: Path) -> None:
    result = _materialize(tmp_path, "--market", "crypto", TOY_DUPLICATE="1")
    assert result.exit_code == 1, result.output
    assert "  ERROR instruments:symbols_unique [daily]" in result.output.splitlines()


@pytest.mark.slow
def test_runs_go_with_the_startup_heap_frozen_and_the_command_unfreezes_it(tmp_path: Path) -> None:
    # Full collections skip what the command built before its runs; a process that goes on after
    # the command (this test's) collects those objects again.
    during = tmp_path / "freeze_count"
    result = _materialize(tmp_path, "--market", "crypto", TOY_FREEZE_COUNT=str(during))
    assert result.exit_code == 0, result.output
    frozen, collecting = during.read_text().split()
    assert int(frozen) > 10_000
    assert collecting == "True"  # the runs' own garbage is collected as it comes
    assert gc.get_freeze_count() == 0


@pytest.mark.slow
def test_the_startup_heap_is_built_with_collections_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Collections during the start-up only walked the growing heap (0.3 s of a daily run's): the
    # definitions and the instance are built with them paused, and collections resume for the
    # runs (the test above) and after the command.
    seen: dict[str, bool] = {}

    def noting(name: str, build: Callable[..., Any]) -> Callable[..., Any]:
        def built(*args: Any) -> Any:
            seen[name] = gc.isenabled()
            return build(*args)

        return built

    monkeypatch.setattr(pipeline, "load_definitions", noting("definitions", load_definitions))
    monkeypatch.setattr(pipeline, "open_instance", noting("instance", open_instance))
    assert gc.isenabled()
    result = _materialize(tmp_path, "--market", "crypto")
    assert result.exit_code == 0, result.output
    assert seen == {"definitions": False, "instance": False}
    assert gc.isenabled()


@pytest.mark.slow
def test_a_long_step_prints_a_line_every_ten_seconds_with_its_last_progress(
    tmp_path: Path,
) -> None:
    """Rule: a step that runs long says so at least every 10 s, with what it last reported."""
    result = _materialize(tmp_path, "--market", "crypto", TOY_SLEEP="11.5")
    assert result.exit_code == 0, result.output
    beats = [line for line in result.output.splitlines() if "still running" in line]
    assert len(beats) == 1, result.output
    assert re.fullmatch(r"\[daily\]   toy_instruments still running \(1[01]s\): read 2 symbols", beats[0])  # fmt: skip


def test_an_unknown_market_is_refused_before_running(tmp_path: Path) -> None:
    result = _materialize(tmp_path, "--market", "bonds")
    assert result.exit_code == 2
    assert "unknown markets ['bonds']" in result.output
    assert not (tmp_path / "dagster").exists()


def test_an_unknown_asset_is_refused_naming_the_available_ones(tmp_path: Path) -> None:
    result = _materialize(tmp_path, "--select", "prices")
    assert result.exit_code == 2
    assert "unknown assets ['prices']" in result.output
    assert "instrument_rejects, instruments" in result.output


def test_summary_counts_checks_and_fails_on_error_checks() -> None:
    tally = CheckTally(passed=3, warned=["a:w [crypto]"], failed=["a:e [forex]"])
    assert _summary(tally, [], 1.0) == [
        "checks: 3 passed, 1 warned, 1 failed",
        "  WARN  a:w [crypto]",
        "  ERROR a:e [forex]",
        "FAILED in 1.0s",
    ]
    assert _summary(CheckTally(passed=1, warned=["w"]), [], 2.0)[-1] == "done in 2.0s"


@pytest.mark.slow
def test_selecting_one_output_of_a_multi_asset_runs_the_whole_step(tmp_path: Path) -> None:
    result = _materialize(tmp_path, "--market", "stocks", "--select", "instrument_rejects")
    assert result.exit_code == 0, result.output
    assert "instruments 2 rows, instrument_rejects 1 rows" in result.output
    assert "[news]" not in result.output  # no asset of the news refresh was named


def test_an_unknown_job_is_refused(tmp_path: Path) -> None:
    result = _materialize(tmp_path, "--job", "weekly")
    assert result.exit_code == 2


def test_a_step_key_names_its_domain_and_its_role() -> None:
    assert _step_role("trends.trends_plan") == ("trends", "plan")
    assert _step_role("trends.trends_shard[crypto_s0of2]") == ("trends", "shard[crypto_s0of2]")
    assert _step_role("trends.trends_stage") == ("trends", "stage")
    assert _step_role("raw_daily_prices") == ("raw_daily_prices", "")
    assert _step_role("graph.other_op") == ("graph.other_op", "")


@pytest.mark.slow
def test_a_carried_state_domain_reports_each_shard_and_its_total(tmp_path: Path) -> None:
    """The embedded market's daily run: a line per shard step, one per domain when it is staged."""
    result = CliRunner().invoke(
        main,
        ["materialize", "--job", "daily", "--market", "crypto"],
        env={"MI_DATA_DIR": str(tmp_path), "MI_INSTRUMENTS": "20", "MI_END_DATE": "2026-03-02"},
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "[daily] trends started" in lines
    assert any(line.startswith("[daily]   trends crypto/s0of1 done in") for line in lines)
    assert any(
        line.startswith("[daily] trends done in") and "trend_history" in line for line in lines
    )
    assert not any("trends_plan" in line or "trends_stage" in line for line in lines)
