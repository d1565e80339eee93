"""Stylized facts of real daily returns, measured on the default embedded market's files."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.embedded_market.model import DOWN, UP, simulate, trading_days
from pipelines.embedded_market.universe import build_universe
from tests.pipelines.embedded_market.conftest import Panel

BANDS = {
    "crypto": (0.03, 0.05),
    "forex": (0.003, 0.008),
    "commodities": (0.01, 0.025),
    "stocks": (0.01, 0.03),
}
"""Typical daily volatility of returns per market, from the embedded-market guide."""


def _acf(x: np.ndarray, lag: int) -> np.ndarray:
    """Sample autocorrelation at `lag` of every column."""
    centred = x - x.mean(axis=0)
    return (centred[lag:] * centred[:-lag]).sum(axis=0) / (centred**2).sum(axis=0)


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1])


@pytest.mark.parametrize("market", ["forex", "commodities", "stocks"])
def test_median_daily_volatility_lies_in_the_guide_band_and_none_far_outside(
    panels: dict[str, Panel], market: str
) -> None:
    low, high = BANDS[market]
    vol = panels[market].returns.std(axis=0)
    assert low <= np.median(vol) <= high
    assert vol.min() >= 0.75 * low
    assert vol.max() <= 1.5 * high


def test_large_coins_have_3_to_5_percent_daily_volatility_and_small_caps_more(
    panels: dict[str, Panel],
) -> None:
    vol = panels["crypto"].returns.std(axis=0)
    assert 0.03 <= np.median(vol[:10]) <= 0.05
    assert np.median(vol[25:]) > np.median(vol[:10])
    assert vol.min() >= 0.025
    assert vol.max() <= 0.09


def test_energy_is_more_volatile_than_metals(panels: dict[str, Panel]) -> None:
    panel = panels["commodities"]
    vol = dict(zip(panel.symbols, panel.returns.std(axis=0), strict=True))
    energy = np.mean([vol[s] for s in ("WTI", "BRENT", "NATGAS")])
    metals = np.mean([vol[s] for s in ("GOLD", "SILVER", "PLATINUM", "COPPER")])
    assert energy > metals


@pytest.mark.parametrize("market", ["crypto", "forex", "commodities", "stocks"])
def test_returns_have_heavy_tails(panels: dict[str, Panel], market: str) -> None:
    r = panels[market].returns
    z = (r - r.mean(axis=0)) / r.std(axis=0)
    excess_kurtosis = (z**4).mean(axis=0) - 3.0
    assert np.median(excess_kurtosis) > 2.0
    assert (excess_kurtosis > 0.5).all()


@pytest.mark.parametrize("market", ["crypto", "forex", "commodities", "stocks"])
def test_absolute_returns_cluster_and_decay_while_returns_do_not_autocorrelate(
    panels: dict[str, Panel], market: str
) -> None:
    r = panels[market].returns
    abs_acf = np.array([np.median(_acf(np.abs(r), lag)) for lag in range(1, 61)])
    assert (abs_acf[:10] > 0.03).all()  # lags 1..10
    assert abs_acf[:10].mean() > 2.0 * abs_acf[39:60].mean()  # decays over weeks
    # near zero: within 3 standard errors (1/sqrt(n) ~ 0.026 for 1,500 bars) lag by lag, and on average
    ret_acf = np.array([np.median(_acf(r, lag)) for lag in range(1, 11)])
    assert np.abs(ret_acf).max() < 3 / np.sqrt(len(r))
    assert abs(ret_acf.mean()) < 0.03


def test_coins_co_move_with_bitcoin(panels: dict[str, Panel]) -> None:
    r = panels["crypto"].returns
    correlations = [_corr(r[:, 0], r[:, i]) for i in range(1, r.shape[1])]
    assert panels["crypto"].symbols[0] == "BTC"
    assert 0.5 <= np.median(correlations) <= 0.8


def test_stocks_correlate_with_the_equal_weight_market(panels: dict[str, Panel]) -> None:
    r = panels["stocks"].returns
    market = r.mean(axis=1)
    correlations = [_corr(market, r[:, i]) for i in range(r.shape[1])]
    assert 0.3 <= np.median(correlations) <= 0.6


@pytest.mark.parametrize("market", ["crypto", "forex", "commodities", "stocks"])
def test_ohlc_is_consistent_and_positive(panels: dict[str, Panel], market: str) -> None:
    p = panels[market]
    assert (p.low > 0).all()
    assert (p.low <= np.minimum(p.open, p.close)).all()
    assert (p.high >= np.maximum(p.open, p.close)).all()


@pytest.mark.parametrize("market", ["crypto", "forex", "commodities", "stocks"])
def test_intraday_range_grows_with_the_size_of_the_move(
    panels: dict[str, Panel], market: str
) -> None:
    p = panels[market]
    log_range = np.log(p.high / p.low)[1:]
    moves = np.abs(p.returns)
    correlations = [_corr(log_range[:, i], moves[:, i]) for i in range(moves.shape[1])]
    assert np.median(correlations) > 0.5


@pytest.mark.parametrize("market", ["crypto", "forex", "commodities", "stocks"])
def test_volume_rises_with_absolute_returns(panels: dict[str, Panel], market: str) -> None:
    p = panels[market]
    log_volume = np.log(p.volume[1:])
    moves = np.abs(p.returns)
    correlations = [_corr(log_volume[:, i], moves[:, i]) for i in range(moves.shape[1])]
    assert np.median(correlations) > 0.2


def test_largest_coins_trade_billions_a_day_in_quote_terms(panels: dict[str, Panel]) -> None:
    p = panels["crypto"]
    turnover = np.median(p.volume * p.close, axis=0)
    assert turnover[0] > 5e9
    assert turnover[1] > 1e9
    assert np.median(turnover) < turnover[0] / 10


@pytest.mark.parametrize(
    ("market", "symbol", "low", "high"),
    [
        ("crypto", "BTC", 8_000, 250_000),
        ("crypto", "ETH", 300, 15_000),
        ("crypto", "SHIB", 5e-7, 5e-4),
        ("forex", "EURUSD", 0.90, 1.30),
        ("forex", "USDJPY", 115, 195),
        ("commodities", "GOLD", 1_200, 3_500),
        ("commodities", "WTI", 30, 180),
    ],
)
def test_price_levels_are_realistic(
    panels: dict[str, Panel], market: str, symbol: str, low: float, high: float
) -> None:
    p = panels[market]
    close = p.close[:, p.symbols.index(symbol)]
    assert low <= close.min()
    assert close.max() <= high


def test_stock_prices_stay_between_a_few_dollars_and_a_few_thousand(
    panels: dict[str, Panel],
) -> None:
    close = panels["stocks"].close
    assert close.min() >= 3
    assert close.max() <= 3_000
    assert 10 <= np.median(close) <= 600


def test_regimes_last_weeks_and_drift_up_in_up_regimes_and_down_in_down_regimes() -> None:
    """Measured on the kernel, which exposes the regime path the files do not show."""
    from datetime import date

    from pipelines.embedded_market.model import ANCHOR

    universe = build_universe("crypto")
    bars = simulate(
        universe, 3, 0, trading_days(ANCHOR, date(2025, 12, 31), False), date(2020, 1, 1)
    )
    regimes, r = bars.regimes, bars.returns
    switches = (np.diff(regimes, axis=0) != 0).sum()
    assert regimes.size / max(1, switches) > 40  # mean run of a regime, in bars
    assert r[regimes == UP].mean() > 0.002 > -0.002 > r[regimes == DOWN].mean()
    assert np.abs(r).max() > 0.2  # occasional crashes and squeezes
