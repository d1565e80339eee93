"""A process's startup heap, kept out of the garbage collector's full collections.

What a process builds before its work (the modules it imported, an API worker's routes and
warehouse snapshot, a pipeline command's Dagster definitions) lives as long as the process; in
the permanent generation a full collection no longer walks it, only what the work made since.
Frozen objects are still freed by reference counting; only a reference cycle among them waits
until they are unfrozen. Used by the API's workers (`frozen_startup_heap`) and by `mi
materialize` (`frozen_heap`, docs/pipeline.md).

While that heap is being built (a command's imports and definitions), `collection_paused` holds
automatic collections off: each one would walk the growing heap for garbage that is not there.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the pipeline command uses `frozen_heap` without the web stack
    from litestar import Litestar


@contextmanager
def collection_paused() -> Iterator[None]:
    """No automatic collection during the block (imports, building definitions): what it makes
    lives as long as the process, and the collections a module's import set off walked every
    module imported before it. Reference counting still frees what the block drops; a cycle it
    drops waits for the next collection after the block (or, frozen with the rest by
    `frozen_heap(collect=False)`, for the end of the frozen block)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def frozen_heap(collect: bool = True) -> Iterator[None]:
    """Freeze what the process has built so far for the block's duration, then unfreeze it, so
    that a process that goes on collects those objects as before.

    `collect` first frees the garbage (a full collection), since a frozen object is never
    collected as part of a cycle. Without it, a heap built under `collection_paused` is frozen as
    it is, its few dropped cycles with it until the block ends: after `mi materialize`'s start-up
    a few thousand small objects, against the collections that would have walked the heap."""
    if collect:
        gc.collect()
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
