"""The corporate actions step materialized with the raw layer over a file drop in tmp_path."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from pipelines.catalog import (
    CORPORATE_ACTION_REJECTS,
    CORPORATE_ACTIONS,
    PRICE_ADJUSTMENTS,
    PRICE_DAYS,
)
from pipelines.corporate_actions.assets import build_corporate_actions
from pipelines.instruments.assets import build_instruments
from pipelines.prices.assets import build_daily_prices
from pipelines.prices.sources.config import load_sources
from pipelines.warehouse.store import Warehouse
from tests.pipelines.prices.test_assets import HEADER, INSTRUMENT_LIST, settings_for, write_drop
from tests.pipelines.synthetic import materialize_daily

# 2024-01-01 is a Monday. AAPL splits 4-for-1 on the 3rd; MSFT halves on the 4th with no action.
AAPL = HEADER + "".join(
    f"2024-01-0{d},{c},{c * 1.1},{c * 0.9},{c},100\n"
    for d, c in ((1, 400.0), (2, 404.0), (3, 101.0), (4, 102.0), (5, 103.0))
)
MSFT = HEADER + "".join(
    f"2024-01-0{d},{c},{c * 1.1},{c * 0.9},{c},5\n"
    for d, c in ((1, 20.0), (2, 21.0), (3, 21.0), (4, 10.0), (5, 10.5))
)
ACTIONS = (
    "symbol,date,kind,ratio,amount,reason\n"
    "AAPL,2024-01-03,split,4,,\n"
    "MSFT,2024-01-02,dividend,,0.2,\n"
    "NOPE,2024-01-02,dividend,,0.2,\n"
)


def run(tmp_path: Path, actions: str) -> tuple[dg.ExecuteInProcessResult, Warehouse]:
    settings = settings_for(tmp_path, date(2024, 1, 5))
    write_drop(
        settings.embedded_dir,
        {
            "instruments/stocks.csv": INSTRUMENT_LIST,
            "prices/stocks/AAPL.csv": AAPL,
            "prices/stocks/MSFT.csv": MSFT,
            "actions/stocks.csv": actions,
        },
    )
    warehouse = Warehouse(settings.warehouse_dir)
    assets = [
        build_instruments(embedded=False),
        build_corporate_actions(embedded=False),
        build_daily_prices(embedded=False),
    ]
    assert settings.end_date is not None
    result = materialize_daily(
        warehouse, assets, settings.end_date, ["stocks"], {"price_sources": load_sources(settings)}
    )
    return result, warehouse


def checks(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    """Each check by `asset.check` (several assets have a `no_rejects`)."""
    return {
        f"{e.asset_key.to_user_string()}.{e.check_name}": e
        for e in result.get_asset_check_evaluations()
    }


def test_actions_are_stored_and_a_bad_row_goes_to_the_rejects(tmp_path: Path) -> None:
    result, warehouse = run(tmp_path, ACTIONS)
    assert result.success
    stored = warehouse.read(CORPORATE_ACTIONS, ["stocks"])
    assert stored.select("symbol", "date", "kind").rows() == [
        ("AAPL", date(2024, 1, 3), "split"),
        ("MSFT", date(2024, 1, 2), "dividend"),
    ]
    rejects = warehouse.read(CORPORATE_ACTION_REJECTS, ["stocks"])
    assert rejects["reason"].to_list() == [
        "unknown symbol NOPE (not in the stocks instrument list)"
    ]
    found = checks(result)
    assert found["corporate_actions.unique_action"].passed
    assert not found["corporate_action_rejects.no_rejects"].passed


def test_a_large_move_without_an_action_warns_and_data_status_names_its_day(
    tmp_path: Path,
) -> None:
    result, warehouse = run(tmp_path, ACTIONS)
    moves = checks(result)["daily_prices.moves_explained"]
    assert not moves.passed
    assert moves.severity == dg.AssetCheckSeverity.WARN
    assert moves.metadata["offending_count"].value == 1
    days = warehouse.read(PRICE_DAYS, ["stocks"]).select("date", "warnings").rows()
    flagged = {day for day, warnings in days if "daily_prices.moves_explained" in warnings}
    assert flagged == {date(2024, 1, 4)}  # MSFT halved; AAPL's -75% is its split


def test_an_action_reported_later_explains_the_move_on_the_next_run(tmp_path: Path) -> None:
    run(tmp_path, ACTIONS)
    result, warehouse = run(tmp_path, ACTIONS + "MSFT,2024-01-04,split,2,,\n")
    assert checks(result)["daily_prices.moves_explained"].passed
    days = warehouse.read(PRICE_DAYS, ["stocks"])["warnings"].to_list()
    assert not any("daily_prices.moves_explained" in w for w in days)


def test_the_run_derives_the_adjustment_factors_from_the_actions_and_the_bars(
    tmp_path: Path,
) -> None:
    """AAPL's 4-for-1 split adjusts its first two bars; MSFT's 0.2 on a close of 20 is a factor
    of 0.99 on its first bar; the unknown symbol's row went to the rejects and adjusts nothing."""
    result, warehouse = run(tmp_path, ACTIONS)
    factors = warehouse.read(PRICE_ADJUSTMENTS, ["stocks"])
    assert factors.select(
        "symbol", "date", "bars_from", "split_ratio", "dividend_factor", "dividend"
    ).rows() == [
        ("AAPL", date(2024, 1, 3), date(2024, 1, 1), 4.0, 1.0, 0.0),
        ("MSFT", date(2024, 1, 2), date(2024, 1, 1), 1.0, pytest.approx(0.99), 0.2),
    ]
    assert checks(result)["daily_prices.dividends_priced"].passed


def test_a_dividend_above_the_close_before_it_warns_and_adjusts_nothing(tmp_path: Path) -> None:
    result, warehouse = run(
        tmp_path, "symbol,date,kind,ratio,amount,reason\nMSFT,2024-01-03,dividend,,25,\n"
    )
    priced = checks(result)["daily_prices.dividends_priced"]
    assert not priced.passed
    assert priced.severity == dg.AssetCheckSeverity.WARN
    factors = warehouse.read(PRICE_ADJUSTMENTS, ["stocks"])
    assert factors.select("dividend_factor", "dividend").rows() == [(1.0, 0.0)]
    days = warehouse.read(PRICE_DAYS, ["stocks"]).select("date", "warnings").rows()
    flagged = {day for day, warnings in days if "daily_prices.dividends_priced" in warnings}
    assert flagged == {date(2024, 1, 3)}  # data-status names the ex-date
