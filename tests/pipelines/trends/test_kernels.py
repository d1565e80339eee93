"""The compiled trend kernels: the same labels as the numpy loop, and the same bits per row as the block method."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.trends import method
from tests.pipelines.trends.numpy_label import numpy_labels


def _signals(seed: int, rows: int, width: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.normal(0.0, 0.4, (rows, width)), axis=0) / 3.0


def test_compiled_labels_equal_the_numpy_loop() -> None:
    signal = _signals(1, 900, 40)
    lengths = np.full(40, 900)
    expected = method._start_in_first_trend(numpy_labels(signal), lengths)
    assert np.array_equal(method.label(signal, lengths), expected)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 299), max_size=6))
def test_labelling_in_pieces_equals_labelling_at_once(seed: int, cuts: list[int]) -> None:
    signal = _signals(seed, 300, 1)[:, 0]
    whole = np.zeros(300, np.int8)
    method.advance(signal, whole, 0, method.new_machine())
    pieces = np.zeros(300, np.int8)
    machine = method.new_machine()
    for start, end in zip([0, *sorted(set(cuts))], [*sorted(set(cuts)), 300], strict=True):
        method.advance(signal[:end], pieces[:end], start, machine)
    assert np.array_equal(pieces, whole)


@pytest.mark.parametrize(
    "n", [method.ATR_WINDOW, method.SHORT_WINDOW, method.MID_WINDOW, method.LONG_WINDOW]
)
def test_a_rows_window_mean_has_the_bits_of_the_block_method(n: int) -> None:
    rng = np.random.default_rng(n)
    x = 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.03, 1000)))
    block = method.average(x[:, None], n)[:, 0]
    for row in [0, 1, n - 2, n - 1, n, 2 * n - 1, 2 * n, 517, 999]:
        first = max(0, row - 2 * n + 1) if row >= n - 1 else 0
        assert method.window_mean_at(x[first:], first, row, n) == block[row], row
