"""End to end: `mi serve` runs the app factory under a real server process on a loopback port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from api.settings import ApiSettings
from tests.api.conftest import Publish


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_ready(base: str, server: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, "mi serve exited before it was ready"
        try:
            httpx.get(f"{base}/api/v1/ping", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    pytest.fail(f"mi serve not ready within {timeout}s")


@pytest.mark.slow
def test_mi_serve_serves_ping_and_status_and_stops_cleanly(
    publish: Publish, settings: ApiSettings, tmp_path: Path
) -> None:
    publish(1, [1.0, 2.0])
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("mi")), "serve", "--port", str(port), "--workers", "1"],
        env={**os.environ, "MI_DATA_DIR": str(settings.data_dir)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until_ready(base, server)
        assert httpx.get(f"{base}/api/v1/ping").json() == {"text": "pong"}
        status = httpx.get(f"{base}/api/v1/status").json()
        assert status["status"] == "ok"
        assert status["checks"]["warehouse"]["status"] == "ok"
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        log.close()
    assert f"on {base}" in (tmp_path / "serve.log").read_text()


@pytest.mark.slow
def test_a_key_from_mi_keys_create_is_metered_by_the_real_server(
    publish: Publish, settings: ApiSettings, tmp_path: Path
) -> None:
    """Ping is free without a key, costs 1 token with one, and an unknown key is refused."""
    publish(1, [1.0, 2.0])
    env = {**os.environ, "MI_DATA_DIR": str(settings.data_dir)}
    mi = str(Path(sys.executable).with_name("mi"))
    created = subprocess.run(
        [mi, "keys", "create", "--plan", "sandbox", "--name", "e2e"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    key = created.stdout.strip().splitlines()[-1]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with (tmp_path / "serve.log").open("wb") as log:
        server = subprocess.Popen(
            [mi, "serve", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            wait_until_ready(base, server)
            free = httpx.get(f"{base}/api/v1/ping")
            assert "x-tokens-cost" not in free.headers
            paid = httpx.get(f"{base}/api/v1/ping", headers={"Authorization": f"Bearer {key}"})
            assert paid.status_code == 200
            assert paid.headers["x-tokens-cost"] == "1"
            assert paid.headers["x-tokens-remaining"] == "2999"
            assert paid.headers["x-tokens-remaining-today"] == "999"
            unknown = httpx.get(f"{base}/api/v1/ping", headers={"Authorization": "Bearer nope"})
            assert unknown.status_code == 401
            assert unknown.json() == {"success": False, "message": "unauthorized"}
            status = httpx.get(f"{base}/api/v1/status").json()
            assert status["checks"]["metering"]["status"] == "ok"
        finally:
            server.terminate()
            server.wait(timeout=20)


@pytest.mark.parametrize(
    "content",
    ["plans = [", "[plans.sandbox]\nmonthly_budget = 'x'\n"],
    ids=["malformed-toml", "invalid-values"],
)
def test_mi_serve_refuses_a_bad_metering_config_once_before_starting(
    tmp_path: Path, content: str
) -> None:
    """A bad `MI_METERING_CONFIG` is one clear error from `mi serve` itself (exit 2, no
    traceback), before any worker starts, not a failure repeated in every worker."""
    config = tmp_path / "metering.toml"
    config.write_text(content)
    env = {**os.environ, "MI_DATA_DIR": str(tmp_path), "MI_METERING_CONFIG": str(config)}
    port = free_port()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "mi"), "serve", "--port", str(port)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "Error: metering configuration:" in done.stderr
    assert "Traceback" not in done.stderr
    assert "Serving the Market Intelligence API" not in done.stdout


def test_mi_serve_without_metering_refuses_an_address_beyond_loopback(tmp_path: Path) -> None:
    """decisions.md, Operations: MI_METERING_URL=off (benchmarks only) serves only on loopback."""
    env = {**os.environ, "MI_DATA_DIR": str(tmp_path), "MI_METERING_URL": "off"}
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "mi"),
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "MI_METERING_URL=off serves without authentication" in done.stderr
    assert "Serving the Market Intelligence API" not in done.stdout


@pytest.mark.slow
def test_mi_serve_without_metering_warns_that_every_route_is_free(
    publish: Publish, settings: ApiSettings, tmp_path: Path
) -> None:
    publish(1, [1.0, 2.0])
    env = {**os.environ, "MI_DATA_DIR": str(settings.data_dir), "MI_METERING_URL": "off"}
    port = free_port()
    with (tmp_path / "serve.log").open("wb") as log:
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("mi")), "serve", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until_ready(f"http://127.0.0.1:{port}", server)
        finally:
            server.terminate()
            server.wait(timeout=20)
    said = (tmp_path / "serve.log").read_text()
    assert "WARNING: MI_METERING_URL=off: no authentication and no metering" in said


def test_the_metering_ledger_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    """docs/deployment.md: the SQLite ledger holds every key's hash and spending; `mi keys
    create` makes it 0600, and a file an older release made 0644 is tightened on open."""
    env = {**os.environ, "MI_DATA_DIR": str(tmp_path)}
    env.pop("MI_METERING_URL", None)
    mi = str(Path(sys.executable).with_name("mi"))
    subprocess.run(
        [mi, "keys", "create", "--plan", "sandbox"],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    ledger = tmp_path / "metering.sqlite3"
    assert ledger.stat().st_mode & 0o777 == 0o600
    ledger.chmod(0o644)
    subprocess.run([mi, "keys", "list"], env=env, check=True, capture_output=True, timeout=60)
    assert ledger.stat().st_mode & 0o777 == 0o600
