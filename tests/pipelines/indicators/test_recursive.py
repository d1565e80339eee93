"""The recursive state: equal to the numpy oracle and TA-Lib, independent of how the bars are chunked, stored losslessly."""

from __future__ import annotations

import math
from pathlib import Path

import numba
import numpy as np
import polars as pl
import pytest
import talib
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from pipelines.indicators import recursive
from pipelines.indicators.all_periods import latest_all_periods
from pipelines.indicators.panel import Panels, to_panels
from pipelines.indicators.recursive import (
    ALL_PERIODS,
    GRIDS,
    SCALARS,
    STATE_SCHEMA,
    RecursiveState,
    advance,
    advance_capturing,
    concat,
    empty,
    from_frame,
    latest,
    state_schema,
    to_frame,
)
from tests.pipelines.indicators import kernels
from tests.pipelines.indicators.numpy_recursions import recursive as numpy_recursive
from tests.pipelines.indicators.oracle import CASES, Arrays, assert_matches, bars_frame, random_walk

Flat = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]
"""close, high, low, volume of several symbols, one after the other."""

LENGTHS = (1, 2, 13, 14, 15, 25, 26, 33, 34, 35, 364, 365, 366, 729, 730, 731, 1600)
"""History lengths either side of the seeds: RSI(14), MACD (26, 34), EMA(365), ADX(365)."""

SAMPLED_PERIODS = sorted(
    {2, 3, 14, 30, 200, 365, *(int(p) for p in np.random.default_rng(5).integers(4, 365, 4))}
)

TALIB_CASES = {
    "ema": "ema",
    "rsi": "rsi",
    "atr": "atr",
    "adx": "adx",
    "macd.macd_line": "macd_line",
    "macd.signal_line": "macd_signal",
    "macd.histogram": "macd_histogram",
    "obv": "obv",
}
"""Oracle case -> key of `latest`."""

ROW_FIELDS = ("symbol", "bars", *SCALARS, *GRIDS)


def _constant(days: int, price: float, volume: float) -> Arrays:
    ones = np.ones(days)
    return {
        "open": price * ones,
        "high": price * ones,
        "low": price * ones,
        "close": price * ones,
        "volume": volume * ones,
    }


def _universe() -> dict[str, Arrays]:
    out = {f"L{days}": random_walk(days, days, start=10.0 + days) for days in LENGTHS}
    out["FLAT"] = _constant(400, 5.0, 1_000.0)
    out["FLAT_NO_VOLUME"] = _constant(40, 7.0, 0.0)
    no_volume = random_walk(99, 300)
    no_volume["volume"] = np.zeros(300)
    out["NO_VOLUME"] = no_volume
    # Flat, then moving: DX undefined during the ADX seed, defined after.
    flat_then = random_walk(98, 500)
    for key in ("open", "high", "low", "close"):
        flat_then[key][:60] = 20.0
    out["FLAT_THEN_MOVING"] = flat_then
    return out


@pytest.fixture(scope="module")
def universe() -> dict[str, Arrays]:
    return _universe()


def _flat(histories: list[Arrays]) -> tuple[Flat, NDArray[np.int64]]:
    """The histories' bars one symbol after the other, and the offsets delimiting them."""
    columns = tuple(
        np.concatenate([np.asarray(a[name], dtype=np.float64) for a in histories] or [np.empty(0)])
        for name in ("close", "high", "low", "volume")
    )
    offsets = np.concatenate([[0], np.cumsum([len(a["close"]) for a in histories])]).astype(
        np.int64
    )
    return (columns[0], columns[1], columns[2], columns[3]), offsets


def _from_empty(histories: list[Arrays], periods: NDArray[np.int64] | list[int]) -> RecursiveState:
    bars, offsets = _flat(histories)
    names = [f"S{i}" for i in range(len(histories))]
    return advance(empty(names, periods), *bars, offsets)


def _panels(universe: dict[str, Arrays]) -> Panels:
    return to_panels(pl.concat([bars_frame(a, symbol) for symbol, a in universe.items()]))


def assert_same_state(ours: RecursiveState, expected: RecursiveState) -> None:
    """Every field equal (NaN equal to NaN), same dtypes and shapes."""
    np.testing.assert_array_equal(ours.periods, expected.periods)
    for name in ROW_FIELDS:
        a, b = getattr(ours, name), getattr(expected, name)
        assert a.dtype.kind == b.dtype.kind, name
        assert a.shape == b.shape, name
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name


@pytest.fixture(scope="module")
def full_state(universe: dict[str, Arrays]) -> RecursiveState:
    return _from_empty(list(universe.values()), ALL_PERIODS)


@pytest.fixture(scope="module")
def oracle_grids(universe: dict[str, Arrays]) -> dict[str, np.ndarray]:
    """The numpy oracle's EMA, RSI, ATR and ADX of every period, (symbols, periods)."""
    return numpy_recursive(_panels(universe), len(ALL_PERIODS))


def test_latest_from_empty_is_bit_identical_to_the_numpy_oracle(
    universe: dict[str, Arrays], full_state: RecursiveState, oracle_grids: dict[str, np.ndarray]
) -> None:
    p = _panels(universe)
    ours = latest(full_state)
    expected = dict(oracle_grids)
    last = (p.lengths - 1, np.arange(len(p.lengths)))
    line, signal, histogram = kernels.macd(p.close)
    expected |= {
        "macd_line": line[last],
        "macd_signal": signal[last],
        "macd_histogram": histogram[last],
        "obv": kernels.obv(p.close, p.volume)[last],
    }
    assert set(ours) == set(expected)
    for name, grid in expected.items():
        np.testing.assert_array_equal(ours[name], grid, err_msg=name, strict=True)


def test_the_production_grid_takes_the_recursive_members_from_the_state(
    universe: dict[str, Arrays], full_state: RecursiveState
) -> None:
    grids = latest_all_periods(_panels(universe))
    for name, values in latest(full_state).items():
        expected = values if values.ndim == 2 else np.repeat(values[:, None], len(ALL_PERIODS), 1)
        np.testing.assert_array_equal(grids[name], expected, err_msg=name)


def _talib_last(arrays: Arrays, period: int) -> dict[str, np.ndarray]:
    return {
        TALIB_CASES[case.name]: case.talib(arrays, period)[-1:]
        for case in CASES
        if case.name in TALIB_CASES
    }


def _scales(arrays: Arrays) -> dict[str, float]:
    return {TALIB_CASES[c.name]: c.scale(arrays) for c in CASES if c.name in TALIB_CASES}


@pytest.mark.parametrize("period", SAMPLED_PERIODS)
def test_latest_from_empty_equals_talib_on_sampled_periods(
    universe: dict[str, Arrays], full_state: RecursiveState, period: int
) -> None:
    ours = latest(full_state)
    column = int(np.searchsorted(ALL_PERIODS, period))
    for row, (symbol, arrays) in enumerate(universe.items()):
        scales = _scales(arrays)
        for name, reference in _talib_last(arrays, period).items():
            values = ours[name][row]
            value = values[column : column + 1] if values.ndim else values[None]
            assert_matches(value, reference, scales[name], f"{symbol} {name} n={period}")


@pytest.mark.parametrize("period", SAMPLED_PERIODS)
def test_the_numpy_oracle_equals_talib_on_sampled_periods(
    universe: dict[str, Arrays], oracle_grids: dict[str, np.ndarray], period: int
) -> None:
    grids = oracle_grids
    column = period - int(ALL_PERIODS[0])
    for row, (symbol, arrays) in enumerate(universe.items()):
        scales = _scales(arrays)
        for name, reference in _talib_last(arrays, period).items():
            if name in grids:
                ours = grids[name][row, column : column + 1]
                assert_matches(ours, reference, scales[name], f"oracle {symbol} {name} n={period}")


def test_a_symbol_without_bars_has_no_value_and_does_not_disturb_its_neighbours(
    universe: dict[str, Arrays],
) -> None:
    histories = [universe["L1600"], _constant(0, 1.0, 1.0), universe["L365"]]
    both = latest(_from_empty(histories, [2, 14, 200]))
    alone = latest(_from_empty([universe["L1600"], universe["L365"]], [2, 14, 200]))
    for name, values in both.items():
        assert np.isnan(values[1]).all(), name
        np.testing.assert_array_equal(values[[0, 2]], alone[name], err_msg=name)


def test_periods_need_not_be_consecutive_each_column_is_its_own_period(
    universe: dict[str, Arrays],
) -> None:
    periods = [10, 14, 20, 30, 50]
    histories = [universe["L1600"], universe["L35"]]
    sparse = latest(_from_empty(histories, periods))
    dense = latest(_from_empty(histories, ALL_PERIODS))
    columns = np.searchsorted(ALL_PERIODS, periods)
    for name in ("ema", "rsi", "atr", "adx"):
        np.testing.assert_array_equal(sparse[name], dense[name][:, columns], err_msg=name)


def test_advance_leaves_its_input_state_unchanged(universe: dict[str, Arrays]) -> None:
    start = _from_empty([universe["L364"]], [2, 30])
    before = start.copy()
    bars, offsets = _flat([universe["L35"]])
    after = advance(start, *bars, offsets)
    assert_same_state(start, before)
    assert after.bars[0] == 364 + 35


def test_advance_rejects_offsets_that_do_not_delimit_the_bars() -> None:
    state = empty(["A", "B"], [2, 3])
    bars = np.ones(5)
    with pytest.raises(ValueError, match="offsets"):
        advance(state, bars, bars, bars, bars, np.array([0, 5]))
    with pytest.raises(ValueError, match="offsets"):
        advance(state, bars, bars, bars, bars, np.array([0, 3, 4]))
    with pytest.raises(ValueError, match="non-decreasing"):
        advance(state, bars, bars, bars, bars, np.array([0, 6, 5]))
    with pytest.raises(ValueError, match="sorted"):
        empty(["A"], [14, 2])
    with pytest.raises(ValueError, match="sorted"):
        empty(["A"], [1, 2])


# --- chunking: the state does not depend on how the bars arrive -------------------------------


def _history(seed: int, days: int, kind: str) -> Arrays:
    """A walk, the same walk on a coarse tick (ties, repeated closes) or a flat line."""
    if kind == "flat":
        return _constant(days, 3.0, float(seed % 2) * 100.0)
    arrays = random_walk(seed, days, start=10.0)
    if kind == "ticks":
        ticked = {k: np.round(v * 2.0) / 2.0 for k, v in arrays.items() if k != "volume"}
        ticked["high"] = np.maximum.reduce([ticked["high"], ticked["open"], ticked["close"]])
        ticked["low"] = np.minimum.reduce([ticked["low"], ticked["open"], ticked["close"]])
        arrays = {**ticked, "volume": np.round(arrays["volume"] / 500_000.0) * 1_000.0}
    return arrays


@st.composite
def chunked_histories(
    draw: st.DrawFn,
) -> tuple[list[int], list[Arrays], list[list[int]]]:
    """Periods, one history per symbol, and per symbol the cut points of the days it arrives in.

    Cut points may repeat (a day without bars for that symbol) and differ between symbols (so
    each day starts every symbol at a different bar count).
    """
    periods = sorted(draw(st.sets(st.integers(2, 45), min_size=1, max_size=6)))
    days = draw(st.integers(1, 5))
    histories: list[Arrays] = []
    cuts: list[list[int]] = []
    for _ in range(draw(st.integers(1, 4))):
        length = draw(st.integers(0, 100))
        kind = draw(st.sampled_from(["walk", "ticks", "flat"]))
        histories.append(_history(draw(st.integers(0, 2**16)), length, kind))
        inner = sorted(draw(st.lists(st.integers(0, length), min_size=days - 1, max_size=days - 1)))
        cuts.append([0, *inner, length])
    return periods, histories, cuts


def _day(histories: list[Arrays], cuts: list[list[int]], day: int) -> list[Arrays]:
    return [
        {k: v[c[day] : c[day + 1]] for k, v in a.items()}
        for a, c in zip(histories, cuts, strict=True)
    ]


@settings(max_examples=200, deadline=None)
@given(case=chunked_histories())
def test_advancing_in_any_chunks_gives_the_state_of_advancing_all_bars_at_once(
    case: tuple[list[int], list[Arrays], list[list[int]]],
) -> None:
    periods, histories, cuts = case
    state = empty([f"S{i}" for i in range(len(histories))], periods)
    for day in range(len(cuts[0]) - 1):
        bars, offsets = _flat(_day(histories, cuts, day))
        state = advance(state, *bars, offsets)
    assert_same_state(state, _from_empty(histories, periods))


@settings(max_examples=100, deadline=None)
@given(case=chunked_histories())
def test_per_bar_capture_in_chunks_equals_the_capture_of_one_run(
    case: tuple[list[int], list[Arrays], list[list[int]]],
) -> None:
    periods, histories, cuts = case
    bars, offsets = _flat(histories)
    whole, expected = advance_capturing(empty([""] * len(histories), periods), *bars, offsets)
    state = empty([""] * len(histories), periods)
    captured: dict[str, list[np.ndarray]] = {name: [] for name in recursive.CAPTURED}
    rows: list[np.ndarray] = []
    for day in range(len(cuts[0]) - 1):
        day_bars, day_offsets = _flat(_day(histories, cuts, day))
        state, values = advance_capturing(state, *day_bars, day_offsets)
        for name, grid in values.items():
            captured[name].append(grid)
        rows += [
            np.arange(offsets[s] + c[day], offsets[s] + c[day + 1]) for s, c in enumerate(cuts)
        ]
    order = np.concatenate([np.empty(0, dtype=np.int64), *rows])
    for name, parts in captured.items():
        ours = np.concatenate(parts)
        np.testing.assert_array_equal(ours, expected[name][order], err_msg=name)
    assert_same_state(state, whole)


def test_advancing_some_rows_and_merging_equals_advancing_all_with_no_bars_for_the_rest(
    universe: dict[str, Arrays],
) -> None:
    histories = [universe[k] for k in ("L1600", "L35", "L366", "FLAT", "L14")]
    start = _from_empty([{k: v[:-10] for k, v in a.items()} for a in histories], [2, 14, 30])
    tails = [{k: v[-10:] for k, v in a.items()} for a in histories]
    touched = np.array([3, 0, 2])
    untouched = np.array([1, 4])
    bars, offsets = _flat([tails[i] for i in touched])
    merged = concat([advance(start.take(touched), *bars, offsets), start.take(untouched)])
    restored = merged.take(np.argsort(np.concatenate([touched, untouched])))
    no_bars = [
        tails[i] if i in touched else {k: v[:0] for k, v in tails[i].items()} for i in range(5)
    ]
    bars, offsets = _flat(no_bars)
    assert_same_state(restored, advance(start, *bars, offsets))
    assert list(restored.symbol) == ["S0", "S1", "S2", "S3", "S4"]


# --- storage ---------------------------------------------------------------------------------


def _assert_same_bits(ours: RecursiveState, expected: RecursiveState) -> None:
    """Bit for bit: float fields compared as their 64-bit patterns (NaN payloads, -0.0)."""
    assert_same_state(ours, expected)
    for name in (*SCALARS, *GRIDS):
        np.testing.assert_array_equal(
            getattr(ours, name).view(np.uint64), getattr(expected, name).view(np.uint64), name
        )


def test_the_state_round_trips_through_its_frame_bit_identically(
    full_state: RecursiveState,
) -> None:
    frame = to_frame(full_state)
    assert frame.schema == STATE_SCHEMA
    assert frame.height == len(full_state)
    _assert_same_bits(from_frame(frame, ALL_PERIODS), full_state)


def test_the_state_round_trips_through_parquet_bit_identically(
    full_state: RecursiveState, universe: dict[str, Arrays], tmp_path: Path
) -> None:
    path = tmp_path / "state.parquet"
    to_frame(full_state).write_parquet(path)
    back = from_frame(pl.read_parquet(path), ALL_PERIODS)
    _assert_same_bits(back, full_state)
    # The state read back (polars-owned, possibly read-only memory) continues like the original.
    bars, offsets = _flat([{k: v[-5:] for k, v in a.items()} for a in universe.values()])
    assert_same_state(advance(back, *bars, offsets), advance(full_state, *bars, offsets))


def test_an_empty_state_and_a_few_periods_round_trip_too(tmp_path: Path) -> None:
    for state in (empty([], [2, 3]), empty(["A", "B"], [10, 14, 20, 30, 50])):
        path = tmp_path / "state.parquet"
        to_frame(state).write_parquet(path)
        frame = pl.read_parquet(path)
        assert frame.schema == state_schema(len(state.periods))
        _assert_same_bits(from_frame(frame, state.periods), state)


def test_a_frame_of_other_periods_is_refused(full_state: RecursiveState) -> None:
    with pytest.raises(ValueError, match="columns"):
        from_frame(to_frame(full_state), [2, 3])


# --- per-bar capture -------------------------------------------------------------------------


CAPTURED_PERIODS = [2, 10, 14, 20, 30, 50]


def test_per_bar_capture_equals_the_kernel_series_of_each_period(
    universe: dict[str, Arrays],
) -> None:
    names = ["L1600", "L35", "L13", "FLAT", "FLAT_THEN_MOVING"]
    histories = [universe[k] for k in names]
    bars, offsets = _flat(histories)
    _, captured = advance_capturing(empty(names, CAPTURED_PERIODS), *bars, offsets)
    for s, arrays in enumerate(histories):
        h, lo, c = (arrays[k][:, None] for k in ("high", "low", "close"))
        rows = slice(offsets[s], offsets[s + 1])
        for j, n in enumerate(CAPTURED_PERIODS):
            label = f"{names[s]} n={n}"
            ema, rsi = kernels.ema(c, n)[:, 0], kernels.rsi(c, n)[:, 0]
            np.testing.assert_array_equal(captured["ema"][rows, j], ema, err_msg=f"ema {label}")
            np.testing.assert_array_equal(captured["rsi"][rows, j], rsi, err_msg=f"rsi {label}")
            # The kernel's DX goes through DI+ and DI- (ours: the TR cancels): equal to rounding.
            adx = kernels.adx(h, lo, c, n)[:, 0]
            ours = captured["adx"][rows, j]
            np.testing.assert_array_equal(np.isnan(ours), np.isnan(adx), err_msg=f"adx {label}")
            np.testing.assert_allclose(ours, adx, rtol=1e-12, atol=1e-12, err_msg=f"adx {label}")


def test_per_bar_capture_from_carried_state_continues_the_series(
    universe: dict[str, Arrays],
) -> None:
    arrays = universe["L1600"]
    start = _from_empty([{k: v[:1000] for k, v in arrays.items()}], CAPTURED_PERIODS)
    bars, offsets = _flat([{k: v[1000:] for k, v in arrays.items()}])
    _, tail = advance_capturing(start, *bars, offsets)
    _, whole = advance_capturing(
        empty(["S0"], CAPTURED_PERIODS), *_flat([arrays])[0], np.array([0, 1600])
    )
    for name in recursive.CAPTURED:
        np.testing.assert_array_equal(tail[name], whole[name][1000:], err_msg=name)
    talib_rsi = talib.RSI(arrays["close"], 14)[1000:]
    assert_matches(tail["rsi"][:, CAPTURED_PERIODS.index(14)], talib_rsi, 100.0, "rsi(14) tail")


# --- divisions by n without a divider ---------------------------------------------------------


@numba.njit(error_model="numpy")
def _quotient_mismatches(periods: NDArray[np.int64], samples: int, seed: int) -> int:
    """Dividends for which `_quotient` is not the division, over random and hard cases: every
    binade of the usable range, quotients next to a midpoint between two doubles, exact ones."""
    np.random.seed(seed)
    bad = 0
    for i in range(periods.size):
        n = float(periods[i])
        z = 1.0 / n
        for _ in range(samples):
            q = math.ldexp(1.0 + np.random.random(), np.random.randint(-955, 990))
            half_ulp = (np.nextafter(q, np.inf) - q) / 2.0
            # n (q + ulp / 2) rounded: a / n lies next to the midpoint above q.
            near = recursive._fma(n, q, n * half_ulp)
            dividends = (
                near,
                np.nextafter(near, -np.inf),
                np.nextafter(near, np.inf),
                n * q,
                np.nextafter(n * q, np.inf),
                -near,
                math.ldexp(1.0 + np.random.random(), np.random.randint(-960, 1000)),
            )
            for a in dividends:
                if recursive._quotient(a, n, z) != a / n:
                    bad += 1
        if recursive._quotient(0.0, n, z) != 0.0:
            bad += 1
    return bad


def test_the_quotient_is_the_division_for_every_period_and_usable_dividend() -> None:
    assert _quotient_mismatches(ALL_PERIODS, 3_000, 11) == 0


@numba.njit(error_model="numpy")
def _quotients_wrong_below_the_usable_range(periods: NDArray[np.int64]) -> int:
    """Subnormal quotients of tiny dividends, which `_quotient` may round twice."""
    wrong = 0
    for i in range(periods.size):
        n = float(periods[i])
        for k in range(1, 2_000):
            a = k * 5e-324
            if recursive._quotient(a, n, 1.0 / n) != a / n:
                wrong += 1
    return wrong


def _scaled(arrays: Arrays, factor: float) -> Arrays:
    return {k: v * factor if k != "volume" else v for k, v in arrays.items()}


def _unusable_universe() -> dict[str, Arrays]:
    """Histories whose state leaves the range the kernel's quick divisions are exact on."""
    walk = random_walk(21, 1_200)
    flat_tail = _scaled(random_walk(22, 1_500), 1e-200)
    for key in ("open", "high", "low", "close"):
        # 1,300 bars without a move: the short periods' averages decay into subnormals.
        flat_tail[key][200:] = flat_tail[key][199]
    return {
        # Gains and ranges near the smallest normal double: subnormal averages.
        "TINY": _scaled(walk, 1e-308),
        "HUGE": _scaled(walk, 1e280),
        "FLAT_TAIL": flat_tail,
        "ZERO_START": {k: np.where(np.arange(1_200) < 500, 1.0, v) for k, v in walk.items()},
        "NORMAL": walk,
    }


def test_a_state_outside_the_usable_range_divides_and_equals_the_oracle() -> None:
    assert _quotients_wrong_below_the_usable_range(ALL_PERIODS) > 0  # the range matters
    universe = _unusable_universe()
    ours = latest(_from_empty(list(universe.values()), ALL_PERIODS))
    expected = numpy_recursive(_panels(universe), len(ALL_PERIODS))
    for name, grid in expected.items():
        np.testing.assert_array_equal(ours[name], grid, err_msg=name, strict=True)


@pytest.mark.parametrize(
    "kind", ["walk", "ticks", "flat", "flat_then_moving", "tiny", "huge", "zero_start"]
)
def test_the_quick_and_mature_steps_equal_dividing_on_every_bar(kind: str) -> None:
    """One call from bar 300 takes the quick steps, past bar 2 x 365 the fused mature one, the
    divisions where the state is not usable: the bits of dividing on every bar."""
    unusable = _unusable_universe()
    histories = {
        "walk": _history(31, 1_000, "walk"),
        "ticks": _history(32, 1_000, "ticks"),
        "flat": _history(33, 800, "flat"),
        "flat_then_moving": _universe()["FLAT_THEN_MOVING"],
        "tiny": unusable["TINY"],
        "huge": unusable["HUGE"],
        "zero_start": unusable["ZERO_START"],
    }
    arrays = histories[kind]
    start = _from_empty([{k: v[:300] for k, v in arrays.items()}], ALL_PERIODS)
    bars, offsets = _flat([{k: v[300:] for k, v in arrays.items()}])
    _assert_same_bits(advance(start, *bars, offsets), advance(start, *bars, offsets, quick=False))


def test_dividing_on_every_bar_gives_the_same_state_from_empty(universe: dict[str, Arrays]) -> None:
    ours = latest(_from_empty(list(universe.values()), ALL_PERIODS))
    bars, offsets = _flat(list(universe.values()))
    names = [f"S{i}" for i in range(len(universe))]
    divided = latest(advance(empty(names, ALL_PERIODS), *bars, offsets, quick=False))
    for name, values in ours.items():
        np.testing.assert_array_equal(divided[name], values, err_msg=name, strict=True)
