"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import stamina

from tests.served import ServedApi, clean_env, materialize_embedded_market, serving


@pytest.fixture(autouse=True)
def retries_without_waits() -> Iterator[None]:
    """Retries make every attempt their policy allows but wait nothing between them (stamina's
    testing mode): only the tests of the waits themselves switch it off."""
    with stamina.set_testing(True, attempts=1_000, cap=True):
        yield


@pytest.fixture(scope="session")
def embedded_market(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding a materialized small embedded market (every market); read only."""
    data_dir = tmp_path_factory.mktemp("embedded-market")
    materialize_embedded_market(data_dir)
    return data_dir


@pytest.fixture(scope="session")
def served_api(
    embedded_market: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedApi]:
    """`mi serve` over the embedded market with the default metering configuration."""
    log = tmp_path_factory.mktemp("served") / "serve.log"
    with serving(clean_env(embedded_market), log) as served:
        yield served
