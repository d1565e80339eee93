"""api/heap.py: what a worker built before serving is frozen out of full collections while it
serves, and unfrozen when it shuts down."""

from __future__ import annotations

import gc

from litestar import get
from litestar.testing import TestClient

from api.app import create_app
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
