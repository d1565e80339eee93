"""The machine's services, for runs that need their own share of them: a fresh PostgreSQL database,
a RabbitMQ virtual host, `mi workers` processes ready to take steps. Used by the executors'
benchmark and by the tests of the Celery executor."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg2

POSTGRES = "postgresql://postgres@127.0.0.1:5432"
"""The machine's PostgreSQL (trust auth)."""


@contextmanager
def fresh_database(prefix: str = "mi_test") -> Iterator[str]:
    """The URL of a new database `<prefix>_<random>`, dropped (connections and all) afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = psycopg2.connect(f"{POSTGRES}/postgres")
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
        yield f"{POSTGRES}/{name}"
        with admin.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.close()


def rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True, timeout=120)


@contextmanager
def virtual_host(prefix: str = "mi-test") -> Iterator[str]:
    """A RabbitMQ virtual host of its own (guest may use it): its steps reach no one else's
    workers. Deleted afterwards."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    rabbitmqctl("add_vhost", name)
    try:
        rabbitmqctl("set_permissions", "-p", name, "guest", ".*", ".*", ".*")
        yield name
    finally:
        rabbitmqctl("delete_vhost", name)


def await_worker(process: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    """Wait until the `mi workers` process writing `log` is ready to take steps."""
    deadline = time.monotonic() + timeout
    while b" ready." not in log.read_bytes():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"mi workers did not start:\n{log.read_text()}")
        time.sleep(0.2)
