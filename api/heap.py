"""A process's startup heap, kept out of the garbage collector's full collections.

What a process builds before its work (the modules it imported, an API worker's routes and
warehouse snapshot, a pipeline command's Dagster definitions) lives as long as the process; in
the permanent generation a full collection no longer walks it, only what the work made since.
Frozen objects are still freed by reference counting; only a reference cycle among them waits
until they are unfrozen. Used by the API's workers (`frozen_startup_heap`) and by `mi
materialize` (`frozen_heap`, docs/pipeline.md).
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the pipeline command uses `frozen_heap` without the web stack
    from litestar import Litestar


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Freeze what the process has built so far for the block's duration, then unfreeze it, so
    that a process that goes on collects those objects as before."""
    gc.collect()  # garbage first: a frozen object is never collected as part of a cycle
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@asynccontextmanager
async def frozen_startup_heap(_: Litestar) -> AsyncIterator[None]:
    """Freeze what the worker built before serving (routes, the warehouse snapshot, caches).

    Measured on the started app (about 92,000 tracked objects): a full collection took 61 ms,
    frozen under 0.1 ms; under load the p99 of the metered paths that allocate most fell from up
    to 51 ms to at most 6.5 ms.
    """
    with frozen_heap():
        yield
