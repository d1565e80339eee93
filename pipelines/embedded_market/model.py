"""The price model: a regime-switching factor GARCH-t with jumps, stepped one day at a time from ANCHOR.

Every simulated day draws its random numbers from `default_rng([seed, market, day ordinal])` and
updates a carried state (`SimState`), so the bar of a given (instrument, day) never depends on the
end date or on how many calls it took to get there: advancing the last day steps the stored state
and appends bars, and history stays untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta

import numba
import numpy as np

from pipelines.catalog import WEEKDAY_MARKETS
from pipelines.embedded_market.universe import Universe

ANCHOR = date(2013, 1, 1)
"""First simulated day, for every market, every history start and every end date."""
HISTORY_START = date(2022, 1, 1)
"""First day of the written history by default: a fixed day, so advancing the end never drops a bar."""

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
PER_UNIT_VOLUME = ("crypto", "stocks")
"""Markets whose volume is counted in units of the instrument (a turnover divided by the close)."""


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


def trading_days(start: date, end: date, weekdays_only: bool) -> list[date]:
    """Every calendar day from start to end inclusive, or only Monday to Friday."""
    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    return [d for d in days if d.weekday() < 5] if weekdays_only else days


def last_trading_day(day: date, weekdays_only: bool) -> date:
    """`day`, or the Friday before it when it is a weekend day of a weekday market."""
    if weekdays_only and day.weekday() >= 5:
        return day - timedelta(days=day.weekday() - 4)
    return day


def next_trading_day(day: date, weekdays_only: bool) -> date:
    """`day`, or the Monday after it when it is a weekend day of a weekday market."""
    if weekdays_only and day.weekday() >= 5:
        return day + timedelta(days=7 - day.weekday())
    return day


@dataclass
class SimState:
    """Running state of one market's simulation after `day` (arrays over the universe)."""

    day: date
    """Last simulated day; the day before ANCHOR before the first step."""
    x: np.ndarray
    """Log close."""
    h: np.ndarray
    """Idiosyncratic GARCH variance (unit unconditional)."""
    regime: np.ndarray
    log_volume: np.ndarray
    """Slow AR(1) component of log volume."""
    factor: np.ndarray
    """Market factor: GARCH variance, regime, cumulative level in volatility units (shape 3)."""

    @classmethod
    def initial(cls, universe: Universe) -> SimState:
        n = len(universe)
        return cls(
            day=ANCHOR - timedelta(days=1),
            x=np.log(universe.price),
            h=np.ones(n),
            regime=np.zeros(n, dtype=np.int64),
            log_volume=np.zeros(n),
            factor=np.array([1.0, float(SIDEWAYS), 0.0]),
        )

    def copy(self) -> SimState:
        return SimState(
            self.day,
            self.x.copy(),
            self.h.copy(),
            self.regime.copy(),
            self.log_volume.copy(),
            self.factor.copy(),
        )


# Rows of the day buffer the kernel fills.
OPEN, HIGH, LOW, CLOSE, VOLUME, RETURN, _PREVIOUS, _SIGMA = range(8)


@dataclass(frozen=True)
class Day:
    """One simulated trading day of one market (views into the stepper's buffer: copy to keep)."""

    day: date
    bars: np.ndarray
    """Rows OPEN, HIGH, LOW, CLOSE (prices) and VOLUME (units, integral) when the bar was kept;
    RETURN (close-to-close log return) and CLOSE when it was kept or recorded."""


class Stepper:
    """Advances one market's `SimState` a trading day at a time (the state is updated in place)."""

    def __init__(self, universe: Universe, seed: int, market_index: int, state: SimState) -> None:
        dyn = DYNAMICS[universe.market]
        self.universe = universe
        self.seed = seed
        self.market_index = market_index
        self.state = state
        self.weekdays_only = universe.market in WEEKDAY_MARKETS
        vol = universe.vol / dyn.vol_scale()
        self._constants = (
            np.log(universe.price),
            vol,
            universe.rho * universe.sign,
            np.sqrt(1 - universe.rho**2),
            universe.volume_base,
            1.0 / np.array(dyn.duration),
            np.array([0.0, dyn.trend, -dyn.trend]),
            np.array(dyn.regime_vol),
            np.array(
                [
                    dyn.df,
                    np.sqrt((dyn.df - 2) / dyn.df),
                    dyn.alpha,
                    dyn.beta,
                    dyn.jump_prob,
                    dyn.jump_size,
                    dyn.steer,
                    dyn.kappa,
                    dyn.gap,
                    dyn.range_scale,
                    dyn.volume_beta,
                    SIDEWAYS_WEIGHT,
                    1.0 if universe.market in PER_UNIT_VOLUME else 0.0,
                ]
            ),
        )
        self._buffer = np.zeros((8, len(universe)))

    def step(self, day: date, keep_bar: bool, record: bool = True) -> Day:
        """Simulate `day` (the next trading day after the state's); intraday draws only if kept.

        The bar's open, high, low and volume draw after every state draw of the day, so whether a
        bar is kept never changes the state: the history does not depend on where it starts.
        Without `record` (and without a kept bar) the day's return and close are not filled in.
        """
        rng = np.random.default_rng([self.seed, self.market_index, day.toordinal()])
        s = self.state
        _advance(
            rng,
            s.x,
            s.h,
            s.regime,
            s.log_volume,
            s.factor,
            *self._constants,
            keep_bar,
            record or keep_bar,
            self._buffer,
        )
        s.day = day
        return Day(day, self._buffer)

    def days_through(self, end: date) -> Iterator[date]:
        """The trading days after the state's day, through `end`."""
        first = self.state.day + timedelta(days=1)
        return iter(trading_days(first, end, self.weekdays_only))


@numba.njit(cache=True, nogil=True)
def _next_regime(
    rng: np.random.Generator,
    current: int,
    p_switch: np.ndarray,
    deviation: float,
    sideways_weight: float,
) -> int:
    """Switch with probability 1/duration of the current regime, away from it, up rather than down
    the further the price sits below its level (the second uniform is drawn only on a switch)."""
    if rng.random() >= p_switch[current]:
        return current
    up = 1.0 / (1.0 + np.exp(min(30.0, max(-30.0, deviation))))
    weights = np.array([sideways_weight, up, 1.0 - up])
    weights[current] = 0.0
    total = weights.sum()
    u = rng.random()
    first = weights[0] / total
    second = (weights[0] + weights[1]) / total
    return min(int(u > first) + int(u > second), 2)


@numba.njit(cache=True, nogil=True)
def _jump(rng: np.random.Generator, probability: float, smallest: float) -> float:
    """A jump of +-(smallest + 2 Exp(1)), down with probability 0.55 (sign and size drawn only then)."""
    if rng.random() >= probability:
        return 0.0
    sign = -1.0 if rng.random() < 0.55 else 1.0
    return sign * (smallest + 2.0 * rng.standard_exponential())


@numba.njit(nogil=True, cache=True)
def _advance(
    rng: np.random.Generator,
    x: np.ndarray,
    h: np.ndarray,
    regime: np.ndarray,
    log_volume: np.ndarray,
    factor: np.ndarray,
    x_star: np.ndarray,
    vol: np.ndarray,
    load: np.ndarray,
    idio: np.ndarray,
    volume_base: np.ndarray,
    p_switch: np.ndarray,
    drift: np.ndarray,
    gvol: np.ndarray,
    par: np.ndarray,
    keep_bar: bool,
    record: bool,
    out: np.ndarray,
) -> None:
    """One day of the model: the state in place, the day's bar (if kept) and return into `out`."""
    df, tscale, alpha, beta = par[0], par[1], par[2], par[3]
    jump_prob, jump_size, steer, kappa = par[4], par[5], par[6], par[7]
    gap, range_scale, volume_beta, sideways_weight, per_unit = (
        par[8],
        par[9],
        par[10],
        par[11],
        par[12],
    )
    n = x.shape[0]
    # market factor: its draws come first, so the instruments' draws follow in a fixed order
    hm, rm, level_m = factor[0], int(factor[1]), factor[2]
    rm = _next_regime(rng, rm, p_switch, level_m / steer, sideways_weight)
    jm = _jump(rng, jump_prob, jump_size)
    em = np.sqrt(hm) * rng.standard_t(df) * tscale + jm
    f = gvol[rm] * (drift[rm] + em)
    for i in range(n):
        deviation = (x[i] - x_star[i]) / (vol[i] * steer)
        r = _next_regime(rng, regime[i], p_switch, deviation, sideways_weight)
        regime[i] = r
        jump = _jump(rng, jump_prob, jump_size)
        e = np.sqrt(h[i]) * rng.standard_t(df) * tscale + jump
        own = gvol[r] * (drift[r] + e)
        sigma = vol[i] * np.sqrt((load[i] * gvol[rm]) ** 2 * hm + (idio[i] * gvol[r]) ** 2 * h[i])
        ret = vol[i] * (load[i] * f + idio[i] * own) - kappa * (x[i] - x_star[i])
        out[_PREVIOUS, i] = x[i]
        out[_SIGMA, i] = sigma
        out[RETURN, i] = ret
        x[i] += ret
        if record:
            out[CLOSE, i] = np.exp(x[i])
        h[i] = min(1.0 - alpha - beta + alpha * e * e + beta * h[i], 30.0)
        log_volume[i] = 0.97 * log_volume[i] + 0.06 * rng.standard_normal()
    factor[0] = min(1.0 - alpha - beta + alpha * em * em + beta * hm, 30.0)
    factor[1] = rm
    factor[2] = level_m + f
    if not keep_bar:
        return
    for i in range(n):  # intraday draws: they feed no state
        k0 = rng.standard_normal() if gap > 0.0 else 0.0
        k1 = rng.standard_normal()
        k2 = rng.standard_normal()
        k3 = rng.standard_normal()
        previous, close, sigma, ret = out[_PREVIOUS, i], x[i], out[_SIGMA, i], out[RETURN, i]
        opening = previous + gap * sigma * k0
        out[OPEN, i] = np.exp(opening)
        out[HIGH, i] = np.exp(max(opening, close) + range_scale * sigma * abs(k1))
        out[LOW, i] = np.exp(min(opening, close) - range_scale * sigma * abs(k2))
        shock = abs(ret) / vol[i]
        level = volume_beta * shock + 0.5 * np.log(sigma / vol[i]) + log_volume[i] + 0.2 * k3
        volume = volume_base[i] * np.exp(level - 0.5)
        if per_unit > 0.0:
            volume = volume / out[CLOSE, i]  # quote-currency turnover -> units of the instrument
        out[VOLUME, i] = max(np.rint(volume), 1.0)


@dataclass(frozen=True)
class Moves:
    """What the newsroom needs of consecutive trading days: each day's return and close."""

    days: np.ndarray
    """Day ordinals, ascending (int64)."""
    returns: np.ndarray
    """Close-to-close log returns, shape (days, instruments)."""
    closes: np.ndarray

    @classmethod
    def empty(cls, n: int) -> Moves:
        return cls(np.zeros(0, dtype=np.int64), np.zeros((0, n)), np.zeros((0, n)))

    @classmethod
    def collect(
        cls, days: list[date], returns: list[np.ndarray], closes: list[np.ndarray], n: int
    ) -> Moves:
        if not days:
            return cls.empty(n)
        return cls(
            np.array([d.toordinal() for d in days], dtype=np.int64),
            np.stack(returns),
            np.stack(closes),
        )

    def since(self, first: date) -> Moves:
        """The days from `first` on."""
        keep = self.days >= first.toordinal()
        return Moves(self.days[keep], self.returns[keep], self.closes[keep])

    def then(self, later: Moves) -> Moves:
        """These days followed by `later`'s days after them."""
        later = later.since(date.fromordinal(int(self.days[-1]) + 1)) if len(self.days) else later
        return Moves(
            np.concatenate([self.days, later.days]),
            np.concatenate([self.returns, later.returns]),
            np.concatenate([self.closes, later.closes]),
        )

    def starts_by(self, first: date) -> bool:
        """Whether these days begin on `first` or earlier."""
        return bool(len(self.days) and self.days[0] <= first.toordinal())

    def covers(self, first: date, last: date) -> bool:
        """Whether these days run from `first` or earlier through `last` or later."""
        return self.starts_by(first) and bool(self.days[-1] >= last.toordinal())


@dataclass(frozen=True)
class Bars:
    """Simulated daily bars over a window: arrays of shape (days, instruments)."""

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


def simulate(
    universe: Universe, seed: int, market_index: int, days: list[date], start: date
) -> Bars:
    """Simulate from ANCHOR through days[-1] and keep the bars dated `start` or later.

    `days` are the market's trading days from ANCHOR (the kernel's own calendar; only the last one
    is used). For analysis and tests: the generator writes files day by day instead.
    """
    stepper = Stepper(universe, seed, market_index, SimState.initial(universe))
    rows: list[np.ndarray] = []
    regimes: list[np.ndarray] = []
    kept: list[date] = []
    for day in stepper.days_through(days[-1]):
        bar = stepper.step(day, keep_bar=day >= start)
        if day >= start:
            rows.append(bar.bars[:6].copy())
            regimes.append(stepper.state.regime.astype(np.int8))
            kept.append(day)
    if not rows:
        raise ValueError("the window holds no trading day")
    cube = np.stack(rows)
    return Bars(
        days=kept,
        open=cube[:, OPEN],
        high=cube[:, HIGH],
        low=cube[:, LOW],
        close=cube[:, CLOSE],
        volume=cube[:, VOLUME],
        returns=cube[:, RETURN],
        regimes=np.stack(regimes),
    )
