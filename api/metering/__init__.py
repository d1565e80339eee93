"""Metering: API keys, plans, token costs, rate and connection limits, and the ledger."""

from api.metering.backends import open_store
from api.metering.config import MeteringConfig, load_config, request_cost
from api.metering.middleware import MeteringMiddleware, charge_rows, report_points
from api.metering.model import Account, Balance, MeteringUnavailableError
from api.metering.store import (
    MeteringStore,
    default_store_url,
    store_url_from_env,
)

__all__ = [
    "Account",
    "Balance",
    "MeteringConfig",
    "MeteringMiddleware",
    "MeteringStore",
    "MeteringUnavailableError",
    "charge_rows",
    "default_store_url",
    "load_config",
    "open_store",
    "report_points",
    "request_cost",
    "store_url_from_env",
]
