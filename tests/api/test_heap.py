"""api/heap.py: what a worker built before serving is frozen out of full collections while it
serves, and unfrozen when it shuts down; a heap is built with collections paused."""

from __future__ import annotations

import gc
import weakref

import pytest
from litestar import get
from litestar.testing import TestClient

from api.app import create_app
from api.heap import collection_paused, frozen_heap
from api.settings import ApiSettings


@get("/test/freeze-count", sync_to_thread=False)
def freeze_count() -> int:
    return gc.get_freeze_count()


def test_the_served_app_has_its_startup_heap_frozen_until_shutdown(settings: ApiSettings) -> None:
    app = create_app(settings)
    app.register(freeze_count)
    with TestClient(app) as client:
        frozen = client.get("/test/freeze-count").json()
    assert frozen > 1_000  # the app, its routes and every module loaded before it
    assert gc.get_freeze_count() == 0


class _Node:
    """An object that can sit in a reference cycle and be watched by a weak reference."""

    def __init__(self) -> None:
        self.me = self


@pytest.mark.parametrize("enabled", [True, False])
def test_collections_are_paused_in_the_block_and_restored_as_they_were(enabled: bool) -> None:
    before = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with collection_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), collection_paused():
            raise RuntimeError("a failed import")
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if before else gc.disable()


def test_a_heap_frozen_without_collecting_keeps_its_cycles_until_unfrozen() -> None:
    with collection_paused():
        watched = weakref.ref(_Node())  # a cycle dropped as soon as it is made
        with frozen_heap(collect=False):
            gc.collect()
            assert watched() is not None  # frozen with the heap, never walked
        gc.collect()
        assert watched() is None


def test_a_heap_frozen_after_collecting_frees_its_cycles_first() -> None:
    with collection_paused():
        watched = weakref.ref(_Node())
        with frozen_heap():
            assert watched() is None
