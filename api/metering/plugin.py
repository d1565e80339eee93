"""Litestar wiring: `MeteringPlugin` adds authentication and metering, closes the store, and
names its status check."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.middleware import DefineMiddleware
from litestar.plugins import InitPluginProtocol

from api.auth import AuthenticationMiddleware
from api.health import PingCheck
from api.metering.backends import open_store
from api.metering.config import MeteringConfig, config_from_env
from api.metering.middleware import MeteringMiddleware
from api.metering.store import MeteringStore, store_url_from_env

METERING_OFF = "off"
"""`MI_METERING_URL=off`: serve without the metering plugin (benchmarks' metering-off baseline)."""
METERING_OFF_WARNING = (
    "MI_METERING_URL=off: no authentication and no metering; every route is free to anyone who "
    "can connect (for benchmarks, on loopback only)"
)


def metering_enabled(env: Mapping[str, str]) -> bool:
    return env.get("MI_METERING_URL") != METERING_OFF


class MeteringPlugin(InitPluginProtocol):
    """Wraps every route with authentication, then metering; closes the store on shutdown."""

    def __init__(self, store: MeteringStore, config: MeteringConfig) -> None:
        self.store = store
        self.config = config

    @classmethod
    def from_env(cls, env: Mapping[str, str], data_dir: Path) -> MeteringPlugin:
        """`MI_METERING_URL` (default SQLite under `data_dir`), `MI_METERING_CONFIG` (TOML path)."""
        config = config_from_env(env)
        return cls(open_store(store_url_from_env(env, data_dir), config), config)

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.middleware += [
            DefineMiddleware(AuthenticationMiddleware, store=self.store),
            DefineMiddleware(MeteringMiddleware, store=self.store, config=self.config),
        ]
        app_config.lifespan.append(self._lifespan)
        return app_config

    @asynccontextmanager
    async def _lifespan(self, _: Litestar) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await self.store.close()

    @property
    def health_check(self) -> PingCheck:
        """`/api/v1/status` entry `metering`: critical, since metered routes fail closed without it."""
        return PingCheck("metering", self.store.ping)
