"""The product as an API client meets it: `mi serve` over a materialized embedded market.

Used by the tests of the clients (the Python SDK, the MCP server): they talk to a real server
process on a loopback port, through `mi keys create` keys, never to a mock.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.api.metering.conftest import MI, mi_keys_create, mi_serve

END_DATE = "2026-03-02"
NOW = "2026-03-02T12:00:00+00:00"
INSTRUMENTS = "8"
"""Eight instruments over the four markets: BTC, ETH, BNB; EURUSD; GOLD; AAPL, MSFT, NVDA."""


def clean_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment without any MI_* of the caller's (a developer's MI_SOURCES or S3 warehouse
    must not leak into a test), pointed at `data_dir`."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MI_")}
    return {**env, "MI_DATA_DIR": str(data_dir), **extra}


def materialize_embedded_market(data_dir: Path) -> None:
    """Every market of a small embedded market up to END_DATE, news read as of NOW."""
    env = clean_env(data_dir, MI_INSTRUMENTS=INSTRUMENTS, MI_END_DATE=END_DATE, MI_NOW=NOW)
    done = subprocess.run([MI, "materialize"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@dataclass
class ServedApi:
    """A running `mi serve`: its base URL and the environment its keys are created in."""

    base: str
    env: dict[str, str]

    def new_key(self, plan: str = "internal") -> str:
        return mi_keys_create(self.env, plan)


@contextmanager
def serving(env: Mapping[str, str], log: Path) -> Iterator[ServedApi]:
    """`mi serve` (one granian worker) with `env`; stopped, whole process group, on exit."""
    with mi_serve(env, log, workers=1) as server:
        yield ServedApi(server.base, dict(env))
