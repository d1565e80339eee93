"""The raw-layer assets of the daily job materialized for one day over a tiny file drop in tmp_path."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, cast

import dagster as dg
import polars as pl
import pytest
from dagster._core.definitions.assets.graph.asset_graph import AssetGraph

from pipelines.catalog import DAILY_PRICES, INSTRUMENT_REJECTS, INSTRUMENTS, PRICE_REJECTS
from pipelines.instruments.assets import build_instruments
from pipelines.instruments.definitions import build_defs as instruments_defs
from pipelines.platform.runs import RunOptions
from pipelines.platform.settings import PipelineSettings
from pipelines.prices.assets import build_daily_prices, price_check_results
from pipelines.prices.definitions import build_defs
from pipelines.prices.sources.config import load_sources
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.store import Warehouse
from tests.pipelines.synthetic import materialize_daily

HEADER = "date,open,high,low,close,volume\n"
INSTRUMENT_LIST = (
    "symbol,name,logo\nAAPL,Apple Inc.,https://l/aapl.png\nMSFT,Microsoft,https://l/msft.png\n"
)
# 2024-01-01 is a Monday; 01-06 and 01-07 are a weekend.
AAPL = HEADER + "".join(f"2024-01-0{d},10,12,9,11,100\n" for d in (1, 2, 3, 4, 5, 8))
MSFT = HEADER + "2024-01-04,20,22,19,21,5\n2024-01-05,20,22,19,21,\n2024-01-05,1,1,1,1,1\nbad\n"


def write_drop(root: Path, files: dict[str, str]) -> None:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")


def settings_for(tmp_path: Path, end: date = date(2024, 1, 9)) -> PipelineSettings:
    return PipelineSettings(data_dir=tmp_path, sources_config=None, seed=1, end_date=end)


def materialize(settings: PipelineSettings, market: str = "stocks") -> dg.ExecuteInProcessResult:
    """The instruments and prices steps of the day `settings.end_date`, then the run's commit."""
    assert settings.end_date is not None
    return materialize_daily(
        Warehouse(settings.warehouse_dir),
        [build_instruments(embedded=False), build_daily_prices(embedded=False)],
        settings.end_date,
        [market],
        {"price_sources": load_sources(settings)},
    )


def graph_of(defs: dg.Definitions, settings: PipelineSettings) -> AssetGraph:
    """The domain's asset graph with the resources the root supplies to every domain."""
    root = dg.Definitions(
        resources={
            "warehouse": WarehouseResource(warehouse_dir=str(settings.warehouse_dir)),
            "run_options": RunOptions(),
        }
    )
    return dg.Definitions.merge(defs, root).resolve_asset_graph()


def stored(settings: PipelineSettings) -> Warehouse:
    return Warehouse(settings.warehouse_dir)


def checks_by_name(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


@pytest.fixture
def clean_stocks(tmp_path: Path) -> PipelineSettings:
    settings = settings_for(tmp_path)
    write_drop(
        settings.embedded_dir,
        {
            "instruments/stocks.csv": INSTRUMENT_LIST,
            "prices/stocks/AAPL.csv": AAPL,
            "prices/stocks/MSFT.csv": HEADER + "2024-01-08,20,22,19,21,5\n",
        },
    )
    return settings


@pytest.fixture
def dirty_stocks(tmp_path: Path) -> PipelineSettings:
    settings = settings_for(tmp_path)
    write_drop(
        settings.embedded_dir,
        {
            "instruments/stocks.csv": INSTRUMENT_LIST + "MSFT,Microsoft again,\n",
            "prices/stocks/AAPL.csv": AAPL.replace("2024-01-03", "2024-01-06"),
            "prices/stocks/MSFT.csv": MSFT,
            "prices/stocks/TSLA.csv": HEADER + "2024-01-04,20,22,19,21,5\n",
        },
    )
    return settings


def test_materialize_writes_conforming_outputs_and_passing_checks(
    clean_stocks: PipelineSettings,
) -> None:
    result = materialize(clean_stocks)
    instruments = stored(clean_stocks).read(INSTRUMENTS)
    prices = stored(clean_stocks).read(DAILY_PRICES)
    rejects = stored(clean_stocks).read(PRICE_REJECTS)
    assert instruments.schema == INSTRUMENTS.schema
    assert instruments["symbol"].to_list() == ["AAPL", "MSFT"]
    assert prices.schema == DAILY_PRICES.schema
    assert prices.height == 7
    assert set(prices["market"]) == {"stocks"}
    assert rejects.schema == PRICE_REJECTS.schema
    assert rejects.is_empty()
    assert {name: e.passed for name, e in checks_by_name(result).items()} == {
        "unique_symbol": True,
        "no_rejects": True,
        "unique_symbol_date": True,
        "positive_prices": True,
        "high_at_least_open_close": True,
        "low_at_most_open_close": True,
        "no_missing_trading_days": True,
        "fresh": True,
        "moves_explained": True,
        "dividends_priced": True,
    }


def test_materialize_attaches_row_counts_rejects_and_newest_date(
    clean_stocks: PipelineSettings,
) -> None:
    result = materialize(clean_stocks)
    [event] = [
        m
        for m in result.asset_materializations_for_node("raw_daily_prices")
        if m.asset_key == dg.AssetKey("daily_prices")
    ]
    assert event.partition is None  # no partitions: the run brought the table through its day
    assert event.metadata["through"].value == "2024-01-09"
    assert event.metadata["dagster/row_count"].value == 7
    assert event.metadata["mi/rows_written"].value == 7
    assert event.metadata["newest_date"].value == "2024-01-08"
    stocks = cast(dict[str, Any], event.metadata["markets"].value)["stocks"]
    assert (stocks["reloaded"], stocks["appended"], stocks["shards"]) == (2, 0, 1)
    [rejects] = [
        m
        for m in result.asset_materializations_for_node("raw_daily_prices")
        if m.asset_key == dg.AssetKey("price_rejects")
    ]
    assert rejects.metadata["dagster/row_count"].value == 0


def test_bad_rows_land_in_rejects_and_the_rejects_checks_warn(
    dirty_stocks: PipelineSettings,
) -> None:
    result = materialize(dirty_stocks)
    rejects = stored(dirty_stocks).read(PRICE_REJECTS)
    reasons = sorted(rejects["reason"])
    assert len(reasons) == 4
    assert reasons[0].startswith("2024-01-06 is a weekend day")
    assert reasons[1].startswith("duplicate (symbol, date)")
    assert reasons[2] == "expected 6 fields, found 1"
    assert reasons[3].startswith("unknown symbol TSLA")
    instrument_rejects = stored(dirty_stocks).read(INSTRUMENT_REJECTS)
    assert instrument_rejects["reason"].item() == "duplicate symbol: kept the row at line 3"
    evaluations = [e for e in result.get_asset_check_evaluations() if e.check_name == "no_rejects"]
    assert [e.passed for e in evaluations] == [False, False]
    assert {e.severity for e in evaluations} == {dg.AssetCheckSeverity.WARN}
    price_rejects_check = next(
        e for e in evaluations if e.asset_key == dg.AssetKey("price_rejects")
    )
    assert "| unknown symbol TSLA" in str(price_rejects_check.metadata["reasons"].value)


def test_a_gap_inside_a_series_fails_the_missing_days_check_as_a_warning(
    dirty_stocks: PipelineSettings,
) -> None:
    check = checks_by_name(materialize(dirty_stocks))["no_missing_trading_days"]
    assert not check.passed
    assert check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["offending_count"].value == 1
    assert "2024-01-03" in str(check.metadata["offending_rows"].value)


def test_stale_series_fail_the_freshness_check(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, end=date(2024, 2, 1))
    write_drop(
        settings.embedded_dir,
        {"instruments/stocks.csv": INSTRUMENT_LIST, "prices/stocks/AAPL.csv": AAPL},
    )
    check = checks_by_name(materialize(settings))["fresh"]
    assert not check.passed
    assert check.severity == dg.AssetCheckSeverity.ERROR
    assert "AAPL" in str(check.metadata["stale_symbols"].value)


def test_a_listed_symbol_without_any_bar_fails_the_freshness_check(tmp_path: Path) -> None:
    # MSFT's only line is unreadable: one reject and no bar, which is not "fresh".
    settings = settings_for(tmp_path)
    write_drop(
        settings.embedded_dir,
        {
            "instruments/stocks.csv": INSTRUMENT_LIST,
            "prices/stocks/AAPL.csv": AAPL,
            "prices/stocks/MSFT.csv": HEADER + "<html>maintenance</html>\n",
        },
    )
    check = checks_by_name(materialize(settings))["fresh"]
    assert not check.passed
    assert check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["symbols_without_bars"].value == 1
    assert "MSFT" in str(check.metadata["stale_symbols"].value)
    assert "AAPL" not in str(check.metadata["stale_symbols"].value)


def test_freshness_fails_for_listed_symbols_missing_from_the_stored_spans() -> None:
    states = {"stocks": pl.DataFrame({"symbol": ["A"], "last_date": [date(2024, 1, 2)]})}
    listed = {"stocks": ["A", "B"]}
    [fresh] = [
        r
        for r in price_check_results([], states, date(2024, 1, 2), {"stocks": 4}, listed)
        if r.check_name == "fresh"
    ]
    assert not fresh.passed
    assert fresh.severity == dg.AssetCheckSeverity.ERROR
    assert "| B " in str(fresh.metadata["stale_symbols"].value)


def raw_defs(settings: PipelineSettings) -> dg.Definitions:
    """The raw layer: the prices and instruments domains together, as the pipeline has them."""
    return dg.Definitions.merge(build_defs(settings), instruments_defs(settings))


def test_embedded_mode_depends_on_the_embedded_market_prices(
    clean_stocks: PipelineSettings,
) -> None:
    graph = graph_of(raw_defs(clean_stocks), clean_stocks)
    for key in ("instruments", "daily_prices"):
        parents = graph.get(dg.AssetKey(key)).parent_keys
        assert dg.AssetKey("embedded_market_prices") in parents


def test_definitions_expose_the_raw_assets_checks_and_resource(
    clean_stocks: PipelineSettings,
) -> None:
    defs = raw_defs(clean_stocks)
    graph = graph_of(defs, clean_stocks)
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {
        "instruments",
        "instrument_rejects",
        "daily_prices",
        "price_rejects",
        "price_adjustments",
    } <= keys
    assert len(graph.asset_check_keys) == 11
    assert "price_sources" in (defs.resources or {})


def test_crafted_bad_stored_bars_fail_the_checks(tmp_path: Path) -> None:
    prices = pl.DataFrame(
        {
            "market": "stocks",
            "symbol": ["A", "A", "B"],
            "date": [date(2024, 1, 2), date(2024, 1, 2), date(2024, 1, 2)],
            "open": [1.0, 1.0, -1.0],
            "high": [0.5, 2.0, 2.0],
            "low": [0.5, 1.5, 0.5],
            "close": [1.0, 1.0, 1.0],
        }
    )
    states = {"stocks": pl.DataFrame({"symbol": ["A", "B"], "last_date": [date(2024, 1, 2)] * 2})}
    checked = price_check_results([prices], states, date(2024, 1, 2), {"stocks": 4})
    results = {r.check_name: r.passed for r in checked}
    assert results == {
        "unique_symbol_date": False,
        "positive_prices": False,
        "high_at_least_open_close": False,
        "low_at_most_open_close": False,
        "no_missing_trading_days": True,
        "fresh": True,
    }
