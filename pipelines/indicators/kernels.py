"""Window reductions on (bars x symbols) panels, every symbol at once (the trend method's sums).

A panel holds one column per symbol, aligned on each symbol's FIRST bar (row 0) and NaN-padded
after its last. NaN marks "no value". The per-period TA-Lib kernels built on these reductions are
a test oracle now (`tests/pipelines/indicators/kernels.py`); the pipeline's indicators are
`all_periods.py` and `recursive.py`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Panel = NDArray[np.float64]
"""(bars, symbols) float64 array, column j = symbol j from its first bar, NaN after its last."""

SHIFT_WINDOW_LIMIT = 4
"""Windows up to this many bars use direct shifted reductions; longer ones the block method."""


def nan_panel(like: Panel) -> Panel:
    return np.full(like.shape, np.nan)


def _blocks(x: Panel, n: int, fill: float) -> NDArray[np.float64]:
    """x padded to whole blocks of n rows, reshaped (blocks, n, symbols)."""
    rows, width = x.shape
    count = -(-rows // n)
    padded = np.full((count * n, width), fill)
    padded[:rows] = x
    return padded.reshape(count, n, width)


def block_window(x: Panel, n: int, op: np.ufunc, fill: float) -> Panel:
    """Window reduction by blocks of n rows (van Herk / Gil-Werman): O(rows) for any n.

    A window ending at offset i of block b is block b's prefix up to i combined with block
    b-1's suffix from i+1. Each partial covers at most n values, so a sum carries no residue
    from values that left the window long ago (a running sum does, after a spike).
    """
    blocks = _blocks(x, n, fill)
    prefix = blocks.copy()
    suffix = blocks.copy()
    for i in range(1, n):
        op(prefix[:, i], prefix[:, i - 1], out=prefix[:, i])
        op(suffix[:, n - 1 - i], suffix[:, n - i], out=suffix[:, n - 1 - i])
    op(prefix[1:, : n - 1], suffix[:-1, 1:], out=prefix[1:, : n - 1])
    out: Panel = prefix.reshape(-1, x.shape[1])[: x.shape[0]].copy()
    out[: n - 1] = np.nan
    return out


def shift_window(x: Panel, n: int, op: np.ufunc) -> Panel:
    """Window reduction by n shifted copies: cheapest for short windows."""
    out = nan_panel(x)
    rows = x.shape[0]
    if rows < n:
        return out
    acc = x[n - 1 :].copy()
    for k in range(1, n):
        op(acc, x[n - 1 - k : rows - k], out=acc)
    out[n - 1 :] = acc
    return out


def rolling_sum(x: Panel, n: int) -> Panel:
    """Sum of the last n rows, each window summed afresh (no residue of values that left it);
    NaN before row n-1 and wherever the window holds a NaN."""
    if n <= SHIFT_WINDOW_LIMIT:
        return shift_window(x, n, np.add)
    return block_window(x, n, np.add, 0.0)
