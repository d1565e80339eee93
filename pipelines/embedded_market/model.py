"""The price model: a regime-switching factor GARCH-t with jumps, simulated from a fixed anchor date.

Every simulated day draws its random numbers from `default_rng([seed, market, day ordinal])`, and
the simulation always starts at `ANCHOR`, so the bar of a given (instrument, day) never depends on
the end date: advancing `as_of` appends bars and leaves history untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np

from pipelines.embedded_market.universe import Universe

ANCHOR = date(2013, 1, 1)
"""First simulated day, for every market and every end date."""

SIDEWAYS, UP, DOWN = 0, 1, 2


@dataclass(frozen=True)
class Dynamics:
    """Parameters of one market's return process (volatility units unless stated)."""

    trend: float
    """Daily drift of an up (+) or down (-) regime, in units of the instrument's volatility."""
    gap: float
    """Open-to-previous-close gap, in units of the day's volatility (0: trades around the clock)."""
    alpha: float = 0.07
    beta: float = 0.90
    df: float = 5.0
    """Degrees of freedom of the Student-t innovations."""
    duration: tuple[float, float, float] = (90.0, 130.0, 75.0)
    """Mean length in bars of sideways, up and down regimes."""
    regime_vol: tuple[float, float, float] = (0.8, 0.95, 1.3)
    jump_prob: float = 0.003
    """Daily probability of an idiosyncratic jump (and of a market-wide one)."""
    jump_size: float = 4.0
    """Smallest jump in volatility units; sizes are this plus an exponential with mean 2."""
    kappa: float = 1 / 600
    """Daily pull of log price towards its level (a soft guard; the regimes do most of it)."""
    steer: float = 8.0
    """Deviation from the level, in volatility units, at which a new regime is e^-1 as likely to
    push further away as to come back (keeps levels realistic over a decade without killing trends)."""
    range_scale: float = 0.55
    volume_beta: float = 0.35
    """Log-volume added per volatility unit of absolute return."""

    def vol_scale(self) -> float:
        """Divisor that makes the unconditional daily volatility equal the instrument's target.

        Regimes scale volatility by `regime_vol` with their stationary probabilities; jumps add
        `p E[J^2]` to the unit variance of the GARCH-t shocks and, fed back through the GARCH
        recursion, `alpha p E[J^2] / (1 - alpha - beta)` more.
        """
        stationary = _stationary(np.array(self.duration))
        jump_square = self.jump_size**2 + 4.0 * self.jump_size + 8.0  # E[(s + 2 Exp(1))^2]
        regime_var = float(stationary @ np.array(self.regime_vol) ** 2)
        persistence = (1.0 - self.beta) / (1.0 - self.alpha - self.beta)
        return float(np.sqrt(regime_var * (1.0 + self.jump_prob * jump_square * persistence)))


DYNAMICS: dict[str, Dynamics] = {
    "crypto": Dynamics(trend=0.12, gap=0.0, kappa=1 / 300),
    "forex": Dynamics(trend=0.06, gap=0.08, jump_prob=0.0015, kappa=1 / 300),
    "commodities": Dynamics(trend=0.08, gap=0.25, kappa=1 / 400),
    "stocks": Dynamics(trend=0.08, gap=0.30, kappa=1 / 400),
}

SIDEWAYS_WEIGHT = 0.8
"""On a regime switch, weight of sideways against up + down = 1 (the current regime is excluded)."""


def _stationary(duration: np.ndarray) -> np.ndarray:
    """Stationary distribution of the regime chain (left eigenvector of its transition matrix)."""
    leave = 1.0 / duration
    matrix = np.diag(1.0 - leave)
    for i in range(3):
        weights = _switch_weights(np.array([i]), np.zeros(1))[0]
        matrix[i] += leave[i] * weights
    values, vectors = np.linalg.eig(matrix.T)
    v = np.real(vectors[:, np.argmin(np.abs(values - 1.0))])
    return np.asarray(v / v.sum())


def _switch_weights(regime: np.ndarray, deviation: np.ndarray) -> np.ndarray:
    """Probabilities of the next regime on a switch, shape (n, 3): away from the current one, and
    up rather than down the further the price sits below its level (deviation in steer units)."""
    up = 1.0 / (1.0 + np.exp(np.clip(deviation, -30, 30)))
    weights = np.stack([np.full_like(up, SIDEWAYS_WEIGHT), up, 1.0 - up], axis=1)
    weights[np.arange(len(regime)), regime] = 0.0
    return weights / weights.sum(axis=1, keepdims=True)


def _next_regime(
    regime: np.ndarray, u: np.ndarray, p_switch: np.ndarray, deviation: np.ndarray
) -> np.ndarray:
    """Switch with probability 1/duration of the current regime; `u` holds two uniforms per row."""
    cumulative = np.cumsum(_switch_weights(regime, deviation), axis=1)
    picked = np.minimum((u[1][:, None] > cumulative).sum(axis=1), 2)
    return np.where(u[0] < p_switch[regime], picked, regime)


@dataclass(frozen=True)
class Bars:
    """Simulated daily bars over the window: arrays of shape (days, instruments)."""

    days: list[date]
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    returns: np.ndarray
    """Close-to-close log returns (before rounding)."""
    regimes: np.ndarray
    """Each instrument's own regime per day: 0 sideways, 1 up, 2 down."""


def trading_days(start: date, end: date, weekdays_only: bool) -> list[date]:
    """Every calendar day from start to end inclusive, or only Monday to Friday."""
    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    return [d for d in days if d.weekday() < 5] if weekdays_only else days


@dataclass
class _State:
    """Running state of the simulation, carried from the anchor to the last day."""

    x: np.ndarray  # log close
    h: np.ndarray  # idiosyncratic GARCH variance (unit unconditional)
    regime: np.ndarray
    hm: float  # market-factor GARCH variance
    regime_m: np.ndarray  # shape (1,)
    level_m: float  # cumulative market factor, volatility units
    log_volume: np.ndarray  # slow AR(1) component of log volume


def simulate(
    universe: Universe, seed: int, market_index: int, days: list[date], start: date
) -> Bars:
    """Simulate from ANCHOR through days[-1] and keep the bars dated `start` or later."""
    dyn = DYNAMICS[universe.market]
    n = len(universe)
    x_star = np.log(universe.price)
    vol = universe.vol / dyn.vol_scale()
    state = _State(
        x=x_star.copy(),
        h=np.ones(n),
        regime=np.zeros(n, dtype=np.int64),
        hm=1.0,
        regime_m=np.array([SIDEWAYS]),
        level_m=0.0,
        log_volume=np.zeros(n),
    )
    p_switch = 1.0 / np.array(dyn.duration)
    drift = np.array([0.0, dyn.trend, -dyn.trend])
    gvol = np.array(dyn.regime_vol)
    tscale = np.sqrt((dyn.df - 2) / dyn.df)
    idio = np.sqrt(1 - universe.rho**2)
    load = universe.rho * universe.sign
    rows: list[np.ndarray] = []
    regimes: list[np.ndarray] = []
    for day in days:
        rng = np.random.default_rng([seed, market_index, day.toordinal()])
        # market factor: scalar draws first, so per-instrument draws follow in a fixed order
        um = rng.random(4)
        zm = rng.standard_t(dyn.df) * tscale
        jm = _jump(um[2], um[3], rng.standard_exponential(), dyn)
        deviation_m = np.array([state.level_m / dyn.steer])
        state.regime_m = _next_regime(state.regime_m, um[:2, None], p_switch, deviation_m)
        rm = int(state.regime_m[0])
        em = np.sqrt(state.hm) * zm + jm
        factor = gvol[rm] * (drift[rm] + em)
        state.level_m += factor
        # instruments
        u = rng.random((4, n))
        z = rng.standard_t(dyn.df, size=n) * tscale
        jumps = _jumps(u[2], u[3], rng.standard_exponential(n), dyn)
        deviation = (state.x - x_star) / (vol * dyn.steer)
        state.regime = _next_regime(state.regime, u[:2], p_switch, deviation)
        e = np.sqrt(state.h) * z + jumps
        own = gvol[state.regime] * (drift[state.regime] + e)
        sigma = vol * np.sqrt(
            (load * gvol[rm]) ** 2 * state.hm + (idio * gvol[state.regime]) ** 2 * state.h
        )
        ret = vol * (load * factor + idio * own) - dyn.kappa * (state.x - x_star)
        prev_close = state.x
        state.x = state.x + ret
        state.h = np.minimum(1 - dyn.alpha - dyn.beta + dyn.alpha * e**2 + dyn.beta * state.h, 30.0)
        state.hm = min(1 - dyn.alpha - dyn.beta + dyn.alpha * em**2 + dyn.beta * state.hm, 30.0)
        state.log_volume = 0.97 * state.log_volume + 0.06 * rng.standard_normal(n)
        if day >= start:
            # intraday draws only on kept days: they feed no state, so history stays stable
            rows.append(_bar(rng, prev_close, ret, sigma, state.log_volume, vol, dyn))
            regimes.append(state.regime.astype(np.int8))
    return _stack(rows, regimes, [d for d in days if d >= start], universe)


def _jump(u_occurs: float, u_sign: float, size: float, dyn: Dynamics) -> float:
    if u_occurs >= dyn.jump_prob:
        return 0.0
    return (-1.0 if u_sign < 0.55 else 1.0) * (dyn.jump_size + 2.0 * size)


def _jumps(u_occurs: np.ndarray, u_sign: np.ndarray, size: np.ndarray, dyn: Dynamics) -> np.ndarray:
    magnitude = np.where(u_sign < 0.55, -1.0, 1.0) * (dyn.jump_size + 2.0 * size)
    return np.where(u_occurs < dyn.jump_prob, magnitude, 0.0)


def _bar(
    rng: np.random.Generator,
    prev_close: np.ndarray,
    ret: np.ndarray,
    sigma: np.ndarray,
    log_volume: np.ndarray,
    vol: np.ndarray,
    dyn: Dynamics,
) -> np.ndarray:
    """One day's (open, high, low, close, volume, return) in log prices, stacked as rows."""
    k = rng.standard_normal((4, len(vol)))
    close = prev_close + ret
    opening = prev_close + dyn.gap * sigma * k[0]
    high = np.maximum(opening, close) + dyn.range_scale * sigma * np.abs(k[1])
    low = np.minimum(opening, close) - dyn.range_scale * sigma * np.abs(k[2])
    shock = np.abs(ret) / vol
    volume = dyn.volume_beta * shock + 0.5 * np.log(sigma / vol) + log_volume + 0.2 * k[3]
    return np.stack([opening, high, low, close, volume, ret])


def _stack(
    rows: list[np.ndarray], regimes: list[np.ndarray], days: list[date], universe: Universe
) -> Bars:
    if not rows:
        raise ValueError("the window holds no trading day")
    cube = np.stack(rows)  # (days, 6, instruments)
    prices = np.exp(cube[:, :4, :])
    volume = universe.volume_base * np.exp(cube[:, 4, :] - 0.5)
    if universe.market in ("crypto", "stocks"):
        volume = volume / prices[:, 3, :]  # quote-currency turnover -> units of the instrument
    return Bars(
        days=days,
        open=prices[:, 0, :],
        high=prices[:, 1, :],
        low=prices[:, 2, :],
        close=prices[:, 3, :],
        volume=np.maximum(np.round(volume), 1.0),
        returns=cube[:, 5, :],
        regimes=np.stack(regimes),
    )
