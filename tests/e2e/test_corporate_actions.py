"""decisions.md, Corporate actions, through real `mi materialize` runs over a file drop and a real
`mi serve`: a split reported on its day recomputes that stock in full, so that a sequence of
daily runs equals one full run of the last day; the analytics are computed on the split-adjusted
series (TA-Lib on it equals the served indicators); the routes serve each adjustment and answer
422 for an unknown `adjustment` or `fill`.

The drop: SPLT trades at half its price from its 2-for-1 split on the third run's day (reported
that day), REVS did a 1-for-10 reverse split long ago, DIVS pays dividends (one reported a day
late, for an ex-date weeks before), FLAT has no action, and GONE, rising calmly into its end,
trades for the last time on the second run's day and is delisted (acquired) on the third's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import duckdb
import httpx
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.catalog import MARKETS, TABLES
from tests.e2e.test_incremental_equals_full import table
from tests.pipelines.indicators.oracle import CASES, PANEL_COLUMNS, assert_matches
from tests.served import ServedApi, serving

pytestmark = pytest.mark.slow

MI = str(Path(sys.executable).with_name("mi"))
FIRST_RUN = date(2026, 3, 2)  # a Monday: every run's day is a weekday
RUNS = [FIRST_RUN + timedelta(days=n) for n in range(4)]
SPLIT_DAY = RUNS[2]
HISTORY = [d for d in (FIRST_RUN - timedelta(days=n) for n in range(560, 0, -1)) if d.weekday() < 5]
DAYS = HISTORY + RUNS
REVERSE_DAY = HISTORY[200]
DIVIDENDS = [HISTORY[100], HISTORY[163], HISTORY[226], HISTORY[289], HISTORY[352]]
LATE_DIVIDEND = HISTORY[-20]
"""Reported with the fourth run (a source that reports an old ex-date late)."""
OTHERS = {"crypto": "BTC", "forex": "EURUSD", "commodities": "GOLD"}
LOGO = "https://assets.example.com/logo.png"
STOCKS = ("DIVS", "FLAT", "REVS", "SPLT", "GONE")
LAST_BAR = {"GONE": RUNS[1]}
DELISTED_ON = RUNS[2]


def walk(seed: int, start: float) -> np.ndarray:
    """A daily random walk of closes, 2% a day, for every day of the drop; GONE's last 40 bars a
    calm rise (so that a strategy holds a trade into its delisting)."""
    rng = np.random.default_rng(seed)
    steps = rng.normal(0.0003, 0.02, len(DAYS))
    if seed == STOCKS.index("GONE"):
        last = DAYS.index(LAST_BAR["GONE"])
        steps[last - 39 : last + 1] = rng.normal(0.006, 0.006, 40)
    return start * np.exp(np.cumsum(steps))


def traded(symbol: str, closes: np.ndarray) -> np.ndarray:
    """The closes as traded: before SPLT's split (2 shares for 1) twice the adjusted price, before
    REVS's reverse split (1 for 10) a tenth of it."""
    days = np.array(DAYS)
    if symbol == "SPLT":
        return np.where(days < SPLIT_DAY, closes * 2.0, closes)
    if symbol == "REVS":
        return np.where(days < REVERSE_DAY, closes / 10.0, closes)
    return closes


def bar_lines(day_index: int) -> list[str]:
    lines = ["symbol,date,open,high,low,close,volume"]
    for seed, symbol in enumerate(STOCKS):
        if DAYS[day_index] > LAST_BAR.get(symbol, DAYS[-1]):
            continue
        closes = traded(symbol, walk(seed, 50.0 + 10 * seed))
        c = closes[day_index]
        o = closes[day_index - 1] if day_index else c
        volume = 1_000_000 * (1 + seed) * (c / closes[-1]) ** -1
        lines.append(
            f"{symbol},{DAYS[day_index]},{o:.6f},{max(o, c) * 1.01:.6f},"
            f"{min(o, c) * 0.99:.6f},{c:.6f},{volume:.0f}"
        )
    return lines


def actions(run: int) -> str:
    """The actions file as the source reports it on the run's day."""
    rows = ["symbol,date,kind,ratio,amount,reason", f"REVS,{REVERSE_DAY},split,0.1,,1-for-10"]
    rows += [f"DIVS,{day},dividend,,0.35,quarterly" for day in DIVIDENDS]
    if RUNS[run] >= SPLIT_DAY:
        rows.append(f"SPLT,{SPLIT_DAY},split,2,,2-for-1")
    if run >= 3:
        rows.append(f"DIVS,{LATE_DIVIDEND},dividend,,0.40,special")
    if RUNS[run] >= DELISTED_ON:
        rows.append(f"GONE,{DELISTED_ON},delisting,,,acquired")
    return "\n".join(rows) + "\n"


def write_drop(root: Path) -> None:
    (root / "instruments").mkdir(parents=True)
    names = "\n".join(f"{s},{s} Inc,{LOGO}" for s in STOCKS)
    (root / "instruments" / "stocks.csv").write_text(f"symbol,name,logo\n{names}\n")
    folder = root / "prices" / "stocks" / "days"
    folder.mkdir(parents=True)
    for n, day in enumerate(DAYS):
        (folder / f"{day}.csv").write_text("\n".join(bar_lines(n)) + "\n")
    for market, symbol in OTHERS.items():
        (root / "instruments" / f"{market}.csv").write_text(
            f"symbol,name,logo\n{symbol},{symbol},{LOGO}\n"
        )
        (root / "prices" / market).mkdir(parents=True)
        bars = "\n".join(f"{d},100,101,99,100,10" for d in DAYS)
        header = "date,open,high,low,close,volume"
        (root / "prices" / market / f"{symbol}.csv").write_text(f"{header}\n{bars}\n")
    (root / "actions").mkdir()


SOURCES = "\n".join(f'[markets.{m}]\nkind = "file_drop"\nroot = "drop"\n' for m in MARKETS)


@dataclass(frozen=True)
class Runs:
    incremental: Path
    full: Path


def materialize(root: Path, run: int) -> None:
    (root / "drop" / "actions" / "stocks.csv").write_text(actions(run))
    day = RUNS[run]
    env = {name: value for name, value in os.environ.items() if not name.startswith("MI_")}
    env |= {
        "MI_DATA_DIR": str(root / "data"),
        "MI_SOURCES": str(root / "sources.toml"),
        "MI_END_DATE": day.isoformat(),
        "MI_NOW": f"{day.isoformat()}T23:00:00+00:00",
    }
    done = subprocess.run([MI, "materialize"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def prepared(root: Path) -> Path:
    write_drop(root / "drop")
    (root / "sources.toml").write_text(SOURCES)
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    incremental = prepared(tmp_path_factory.mktemp("incremental"))
    for run in range(len(RUNS)):
        materialize(incremental, run)
    full = prepared(tmp_path_factory.mktemp("full"))
    materialize(full, len(RUNS) - 1)
    return Runs(incremental / "data", full / "data")


def query(data_dir: Path, sql: str) -> pl.DataFrame:
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as warehouse:
        return warehouse.sql(sql).pl()


def test_a_split_reported_on_its_day_leaves_every_table_equal_to_a_full_run(runs: Runs) -> None:
    for name in sorted(TABLES):
        (
            assert_frame_equal(
                table(runs.incremental, name),
                table(runs.full, name),
                rel_tol=1e-9,
                abs_tol=0.0,
                check_exact=False,
            ),
            name,
        )


def test_the_factors_undo_each_split_so_the_adjusted_series_is_the_walk(runs: Runs) -> None:
    for seed, symbol in enumerate(STOCKS):
        served = query(
            runs.full,
            f"SELECT close FROM daily_prices_split WHERE symbol = '{symbol}' ORDER BY date",
        )["close"].to_numpy()
        expected = walk(seed, 50.0 + 10 * seed)[: len(served)]
        np.testing.assert_allclose(served, expected, rtol=1e-6)
    moves = query(runs.full, "SELECT warnings FROM price_days WHERE market = 'stocks'")
    assert not any("moves_explained" in w for w in moves["warnings"].to_list())


@pytest.mark.parametrize("symbol", ["SPLT", "REVS", "DIVS"])
@pytest.mark.parametrize("period", [14, 50])
def test_talib_on_the_split_adjusted_series_equals_the_stored_indicators(
    runs: Runs, symbol: str, period: int
) -> None:
    bars = query(
        runs.full,
        f"SELECT open, high, low, close, volume FROM daily_prices_split "
        f"WHERE symbol = '{symbol}' ORDER BY date",
    )
    arrays = {c: bars[c].to_numpy() for c in bars.columns}
    stored = query(
        runs.full,
        f"SELECT * FROM indicator_snapshots WHERE symbol = '{symbol}' AND period = {period}",
    ).row(0, named=True)
    snapshot_columns = {**PANEL_COLUMNS, "macd.signal_line": "macd_signal"}
    for case in CASES:
        reference = case.talib(arrays, period)[-1:]
        ours = np.array([stored[snapshot_columns[case.name]]], dtype=np.float64)
        assert_matches(ours, reference, case.scale(arrays), f"{symbol} {case.name}({period})")


@pytest.fixture(scope="module")
def served(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApi]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("MI_")}
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with serving({**env, "MI_DATA_DIR": str(runs.full)}, log) as api:
        yield api


def get(api: ServedApi, path: str, **params: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {api.new_key('internal')}"}
    return httpx.get(api.base + path, params=params, headers=headers, timeout=30)


HISTORY_URL = "/api/v2/stocks/technical-analysis/get-price-history/SPLT"


def test_the_served_series_is_split_adjusted_unless_asked_raw(served: ServedApi) -> None:
    default = get(served, HISTORY_URL).json()["price_history"]
    raw = get(served, HISTORY_URL, adjustment="raw").json()["price_history"]
    total = get(served, HISTORY_URL, adjustment="all").json()["price_history"]
    before = [i for i, p in enumerate(raw) if p["date"] < SPLIT_DAY.isoformat()]
    assert before
    assert len(raw) == len(default) == len(total)
    for i in before:
        assert raw[i]["price"] == pytest.approx(default[i]["price"] * 2.0, rel=1e-9)
        assert default[i]["volume"] == pytest.approx(raw[i]["volume"] * 2.0, rel=1e-9)
    assert default[-1] == raw[-1] == total[-1]  # the latest bar as traded
    assert total == default  # SPLT pays no dividend


def test_corporate_actions_are_listed_oldest_first(served: ServedApi) -> None:
    body = get(served, "/api/v2/stocks/reference/get-corporate-actions/divs").json()
    dividends = [(a["date"], a["amount"]) for a in body["corporate_actions"]]
    expected = sorted([(d.isoformat(), 0.35) for d in DIVIDENDS] + [(str(LATE_DIVIDEND), 0.4)])
    assert dividends == expected


@pytest.mark.parametrize(
    ("path", "parameter", "value"),
    [
        (HISTORY_URL, "adjustment", "dividends"),
        ("/api/v2/stocks/bulk/daily-prices", "adjustment", "RAW"),
        ("/api/v2/crypto/trades/get-backtest-history/BTC/aggressive", "fill", "open"),
        ("/api/v2/crypto/trades/get-backtest-summary/BTC/aggressive", "fill", "next-open"),
    ],
)
def test_an_unknown_adjustment_or_fill_is_a_422_naming_it(
    served: ServedApi, path: str, parameter: str, value: str
) -> None:
    response = get(served, path, **{parameter: value})
    assert response.status_code == 422
    assert f"'{parameter}'" in response.json()["error"]


def test_a_backtest_credits_the_dividends_inside_each_trade_and_buy_and_hold_all(
    runs: Runs,
) -> None:
    """decisions.md: a trade's profit includes units x amount of every ex-date inside it, and
    `buy_and_hold_percentage` every dividend of its window."""
    paid = query(
        runs.full,
        "SELECT date, dividend FROM price_adjustments WHERE symbol = 'DIVS' AND dividend > 0",
    )
    assert paid.height == len(DIVIDENDS) + 1
    trades = query(
        runs.full,
        "SELECT * FROM backtest_trades WHERE symbol = 'DIVS' AND full_history ORDER BY start_date",
    )
    last_day = RUNS[-1]
    inside = [
        paid.filter((pl.col("date") > start) & (pl.col("date") <= (sold or last_day)))[
            "dividend"
        ].sum()
        for start, sold in trades.select("start_date", "sell_date").rows()
    ]
    assert any(inside), "a trade must hold over an ex-date"
    np.testing.assert_allclose(trades["dividends"], trades["units"] * np.array(inside), rtol=1e-12)
    summaries = query(
        runs.full, "SELECT * FROM backtest_summaries WHERE symbol = 'DIVS' AND full_history"
    )
    closes = query(
        runs.full, "SELECT close FROM daily_prices_split WHERE symbol = 'DIVS' ORDER BY date"
    )
    first, last = closes["close"][0], closes["close"][-1]
    expected = 100.0 * ((last + paid["dividend"].sum()) / first - 1.0)
    assert summaries["buy_and_hold_profit_percent"].to_list() == pytest.approx([expected] * 4)


def test_a_trade_open_at_the_delisting_closed_at_the_last_bar(runs: Runs) -> None:
    """decisions.md, Corporate actions: closed at the last bar's close, `delisted`; nothing stays
    open, and the current action is Stay."""
    trades = query(runs.full, "SELECT * FROM backtest_trades WHERE symbol = 'GONE'")
    assert trades.filter(pl.col("action") == "Buy").is_empty()
    delisted = trades.filter(pl.col("exit_reason") == "delisted")
    assert delisted.height > 0, "the steady rise must hold a trade to its last bar"
    assert set(delisted["sell_date"].to_list()) == {LAST_BAR["GONE"]}
    last_close = query(
        runs.full, "SELECT close FROM daily_prices WHERE symbol = 'GONE' ORDER BY date DESC LIMIT 1"
    ).item()
    assert set(delisted["last_price"].to_list()) == {last_close}
    actions = query(runs.full, "SELECT action, message FROM current_actions WHERE symbol = 'GONE'")
    assert set(actions["action"].to_list()) == {"Stay"}
    assert all("delisted" in m for m in actions["message"].to_list())
    picks = query(runs.full, "SELECT symbol FROM recommendations")
    assert "GONE" not in picks["symbol"].to_list()


def test_a_delisted_instrument_is_listed_only_with_include_delisted(served: ServedApi) -> None:
    listed = get(served, "/api/v2/stocks/instruments/list-symbols").json()["symbols"]
    everything = get(
        served, "/api/v2/stocks/instruments/list-symbols", include_delisted="true"
    ).json()["symbols"]
    assert listed == sorted(s for s in STOCKS if s != "GONE")
    assert everything == sorted(STOCKS)
    bad = get(served, "/api/v2/stocks/instruments/list-symbols", include_delisted="yes")
    assert bad.status_code == 422
    assert "'include_delisted'" in bad.json()["error"]


def test_a_delisted_instrument_is_served_up_to_its_last_bar(served: ServedApi) -> None:
    points = get(served, "/api/v2/stocks/technical-analysis/get-price-history/GONE").json()
    assert points["price_history"][-1]["date"] == LAST_BAR["GONE"].isoformat()
    card = get(served, "/api/v2/stocks/instruments/scorecard/GONE")
    assert card.status_code == 200, card.text
    assert card.json()["action"] == "Stay"
