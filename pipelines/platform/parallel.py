"""Pure per-item Python work (feed parsing, article sentiment) spread over the machine's cores.

A first load parses tens of thousands of articles and scores each one: pure-Python work that holds
the GIL, so threads do not help and worker processes do. A small batch (the 15-minute news
refresh) stays in the calling process: starting workers would cost more than it saves.

Workers are started by a fork server (`forkserver`), never by forking the step's process: a fork
of a process whose Polars and Dagster threads may hold locks can deadlock the child. The server
starts once per process; a worker forked from it runs the program's main module again (`mi.cli`
imports its subcommands lazily, so that costs milliseconds) and then its chunk.

A step run by `mi workers` runs in a thread of the worker's process (Celery's threads pool), so it
starts workers as an in-process run does. A step in a daemonic process (Celery's prefork pool, for
one) may not start processes of its own: there the work stays in the step's process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

WORKERS_ENV = "MI_WORKERS"
"""Most worker processes a step starts (default: the CPUs this process may run on; 1: none)."""
MIN_CHUNK = 2_000
"""Fewest items worth a worker: below twice this a batch is processed in the calling process."""


def workers(env: Mapping[str, str] = os.environ) -> int:
    """How many processes per-item work may use: `MI_WORKERS`, else the CPUs available."""
    configured = env.get(WORKERS_ENV)
    if not configured:
        return len(os.sched_getaffinity(0))
    if not configured.isdigit() or int(configured) < 1:
        raise ValueError(f"{WORKERS_ENV} must be a whole number of at least 1, not {configured!r}")
    return int(configured)


def map_chunks(
    work: Callable[[Sequence[T]], list[R]],
    items: Sequence[T],
    min_chunk: int = MIN_CHUNK,
    processes: int | None = None,
) -> list[R]:
    """`work(items)`, computed as consecutive chunks in worker processes when the batch is big.

    `work` must map a chunk to one result per item, in order, and be picklable (a module-level
    function, a `functools.partial` of one, or a bound method of a picklable object); the results
    are the same, in the same order, however many processes compute them.
    """
    count = min(processes or workers(), len(items) // max(1, min_chunk))
    if count <= 1 or multiprocessing.current_process().daemon:
        return work(items)
    size = -(-len(items) // count)
    chunks = [items[start : start + size] for start in range(0, len(items), size)]
    context = multiprocessing.get_context("forkserver")
    # The server imports the work's module once; every worker forks from it with it imported.
    context.set_forkserver_preload([_module_of(work)])
    with ProcessPoolExecutor(max_workers=len(chunks), mp_context=context) as pool:
        parts = list(pool.map(work, chunks))
    out = [result for part in parts for result in part]
    if len(out) != len(items):
        raise ValueError(f"{work!r} returned {len(out)} results for {len(items)} items")
    return out


def _module_of(work: Callable[..., object]) -> str:
    """The module that defines `work` (a function, a partial of one, or a bound method)."""
    target = getattr(work, "func", work)
    owner = getattr(target, "__self__", None)
    return type(owner).__module__ if owner is not None else str(target.__module__)
