"""The labelling loop as it was written with numpy across symbols: an oracle for the compiled one."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from pipelines.trends.method import CONFIRM_BARS, States, wanted


def numpy_labels(signal: NDArray[np.float64]) -> States:
    """Hysteresis and backdated confirmation over (bars, symbols), without the warm-up rule."""
    rows, width = signal.shape
    labels = np.zeros((rows, width), np.int8)
    state = np.zeros(width, np.int8)
    pending = np.zeros(width, np.int8)
    run = np.zeros(width, np.int64)
    for t in range(rows):
        want = wanted(state, signal[t])
        changed = want != state
        continuing = changed & (want == pending)
        run = np.where(continuing, run + 1, np.where(changed, 1, 0))
        pending = np.where(changed, want, state)
        for j in np.flatnonzero(run >= CONFIRM_BARS):
            labels[t - CONFIRM_BARS + 1 : t, j] = want[j]
            state[j] = want[j]
            run[j] = 0
        labels[t] = state
    return labels
