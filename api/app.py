"""The composition root: `create_app(settings)` assembles the Litestar app and holds no logic."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

from litestar import Litestar, Router
from litestar.datastructures import State
from litestar.di import Provide
from litestar.logging import LoggingConfig
from litestar.openapi import OpenAPIConfig
from litestar.plugins import InitPluginProtocol

from api.dependencies import SERVING_STATE, Serving, constant, snapshot_provider
from api.docs_page import assets_router, swagger_page
from api.errors import EXCEPTION_HANDLERS, schema_not_found_as_json
from api.health import Health, HealthCheck, MaterializationCheck, WarehouseCheck
from api.heap import frozen_startup_heap
from api.metering.config import MeteringConfig
from api.metering.plugin import METERING_OFF_WARNING, MeteringPlugin, metering_enabled
from api.openapi import ToolsOpenAPIPlugin
from api.request_limits import RequestLimits
from api.routes import V2_CONTROLLERS
from api.routes.common import prepare_snapshot
from api.routes.llms import LlmsController
from api.routes.system import SystemController
from api.routes.versions import VersionsController
from api.settings import ApiSettings, load_settings
from api.warehouse import DuckDBWarehouseReader, WarehouseReader
from api.warehouse.files import FileCache
from pipelines.catalog import LocalStorage


def create_app(
    settings: ApiSettings,
    *,
    reader: WarehouseReader | None = None,
    health_checks: Sequence[HealthCheck] = (),
    plugins: Sequence[InitPluginProtocol] = (),
    metering: MeteringConfig | None = None,
) -> Litestar:
    """The API for `settings`.

    `health_checks` adds a `/api/v1/status` check per extra datastore; `plugins` (Litestar init
    plugins) add cross-cutting concerns with their own middleware and lifespan, e.g. metering;
    `metering` is the configuration the OpenAPI document states the bearer scheme and costs from.
    """
    reader = reader or _warehouse_reader(settings)
    health = Health(
        checks=(
            WarehouseCheck(reader),
            MaterializationCheck(reader, settings.materialization_max_age),
            *health_checks,
        ),
        version=settings.version,
        timeout_seconds=settings.check_timeout_seconds,
    )

    def reader_lifespan(_: Litestar) -> AbstractAsyncContextManager[None]:
        return reader.running()

    return Litestar(
        route_handlers=[
            SystemController,
            VersionsController,
            *V2_CONTROLLERS,
            LlmsController,
            assets_router(),
        ],
        dependencies={
            "settings": constant(settings),
            "health": constant(health),
            "snapshot": Provide(snapshot_provider(reader), sync_to_thread=False),
        },
        state=State({SERVING_STATE: Serving(reader, settings)}),
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[reader_lifespan, frozen_startup_heap],  # frozen once the snapshot is loaded
        openapi_config=_openapi_config(settings, metering),
        logging_config=_logging_config(),
        plugins=list(plugins),
        debug=False,
    )


def _warehouse_reader(settings: ApiSettings) -> DuckDBWarehouseReader:
    storage = settings.warehouse
    files = (
        None  # read in place
        if isinstance(storage, LocalStorage)
        else FileCache(storage, settings.cache_dir, settings.warehouse_cache_bytes)
    )
    return DuckDBWarehouseReader(
        storage,
        poll_interval=settings.manifest_poll_seconds,
        files=files,
        prepare=prepare_snapshot,
    )


def _openapi_config(settings: ApiSettings, metering: MeteringConfig | None) -> OpenAPIConfig:
    return OpenAPIConfig(
        title="Market Intelligence API",
        version=settings.version,
        description="Read-only market intelligence: prices, indicators, trends, news, backtests.",
        render_plugins=[swagger_page(), ToolsOpenAPIPlugin(metering)],
        openapi_router=Router(
            "/schema",
            route_handlers=[],
            include_in_schema=False,
            after_request=schema_not_found_as_json,
        ),
    )


def _logging_config() -> LoggingConfig:
    # Leave the root logger to the server (and to pytest's caplog); errors.py logs faults itself.
    return LoggingConfig(
        configure_root_logger=False,
        log_exceptions="never",
        loggers={"api": {"level": "INFO", "handlers": ["queue_listener"], "propagate": True}},
    )


def asgi_app() -> RequestLimits:
    """The app factory ASGI servers call in each worker process: settings come from its environment.

    The served app is `create_app`'s behind `RequestLimits`, a bare ASGI layer before Litestar's
    routing (as a Litestar middleware the same check cost a tenth of a cached request)."""
    env = os.environ
    settings = load_settings(env)
    if not metering_enabled(env):  # MI_METERING_URL=off: no auth, no metering (benchmark baseline)
        logging.getLogger("api").warning(METERING_OFF_WARNING)
        return RequestLimits(create_app(settings))
    metering = MeteringPlugin.from_env(env, settings.data_dir)
    return RequestLimits(
        create_app(
            settings,
            plugins=[metering],
            health_checks=[metering.health_check],
            metering=metering.config,
        )
    )
