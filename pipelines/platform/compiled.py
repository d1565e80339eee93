"""Arrays as the pipeline's numba kernels read them: one array type per argument, whatever the data.

numba compiles a kernel once per distinct argument type, and an array's type includes its layout
(C-contiguous or not) and whether it is writable. Polars hands out a read-only view when a column
converts without a copy (one chunk, no nulls) and a writable copy otherwise; a column of a 2-D
array is contiguous only when the array has one column. Left alone, one call site compiles a
second and a third specialization of a kernel on data that happens to differ (a shard of one
symbol, a column with a null): seconds of compiling inside a production run, after `make install`
compiled and cached what the common data needs, and a write into numba's on-disk cache while other
processes may be compiling and loading the same kernel (numba's cache has open reports of crashes
when processes generate it concurrently: numba issues 4807 and 10128).

So every array a kernel only reads goes through `kernel_input`: C-contiguous (copied only when it
is not) and read-only (a view, never a copy). An array a kernel writes is one the caller allocated
(C-contiguous, writable). `tests/pipelines/platform/test_compiled.py` runs the domains on data of every
shape we know to vary and checks that no kernel compiles a second specialization.

Every kernel is compiled with `nogil=True`: shard steps run side by side in threads of one process
(a worker of `mi workers`, Celery's threads pool), and a kernel that held the GIL for its whole run (a backtest replay,
every period's windowed indicators) stopped the other step's Python between its Polars calls. The
same test module holds every kernel of the pipeline to it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray


def kernel_input(values: ArrayLike, dtype: DTypeLike) -> NDArray[Any]:
    """`values` as a C-contiguous, read-only array of `dtype` (a view when it already is one)."""
    array = np.ascontiguousarray(values, dtype=dtype)
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array
