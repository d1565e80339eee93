"""Rule: `/schema` renders every route with no network: its assets are the API's own, pinned.

The last test opens the page in headless Chromium against a real `mi serve`, both in a network
namespace that has nothing but its loopback, and keeps a screenshot (`$MI_TEST_ARTIFACTS`, default
`.artifacts/` in the checkout)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from api.docs_page import ASSETS, ASSETS_PATH, SHA256
from tests.api.metering.conftest import MI, stop_group
from tests.netns import Host, offline
from tests.served import clean_env

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def test_the_vendored_assets_are_the_pinned_release_with_their_licence() -> None:
    for name, digest in SHA256.items():
        assert hashlib.sha256((ASSETS / name).read_bytes()).hexdigest() == digest, name
    assert "Apache License" in (ASSETS / "LICENSE").read_text()
    assert (ASSETS / "NOTICE").read_text().startswith("swagger-ui")


def test_the_page_loads_nothing_from_another_origin(client: TestClient[Litestar]) -> None:
    page = client.get("/schema").text
    loaded = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page)
    assert loaded, page[:500]
    assert all(url.startswith(("/", "data:")) for url in loaded), loaded
    for url in (u for u in loaded if u.startswith(ASSETS_PATH)):
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert "max-age=31536000" in asset.headers["cache-control"]


def _in(host: Host, *argv: str, **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        host.command(argv), capture_output=True, text=True, check=False, **options
    )  # type: ignore[call-overload, no-any-return]


def _wait_until_served(host: Host, url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    probe = f"import urllib.request; urllib.request.urlopen({url!r}, timeout=2)"
    deadline = time.monotonic() + 60
    while _in(host, sys.executable, "-c", probe).returncode != 0:
        assert server.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.3)


@pytest.mark.slow
def test_offline_the_page_lists_every_route_in_a_real_browser(
    embedded_market: Path, client: TestClient[Litestar], tmp_path: Path
) -> None:
    assert Path(CHROMIUM).exists(), "Chromium is not installed: `make browser` installs it"
    paths = set(client.get("/schema/openapi.json").json()["paths"])
    base, log = "http://127.0.0.1:8000", tmp_path / "serve.log"
    with offline() as host, log.open("ab") as out:
        assert (
            _in(
                host,
                sys.executable,
                "-c",
                "import socket; socket.create_connection(('1.1.1.1', 443), 2)",
            ).returncode
            != 0
        )
        server = subprocess.Popen(
            host.command([MI, "serve", "--port", "8000"]),
            env=clean_env(embedded_market),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _wait_until_served(host, f"{base}/api/v1/status", server, log)
            browse = [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--virtual-time-budget=20000",
            ]
            shown = _in(host, *browse, "--dump-dom", f"{base}/schema", timeout=120)
            shot = (
                Path(os.environ.get("MI_TEST_ARTIFACTS") or REPO / ".artifacts")
                / "schema-offline.png"
            )
            shot.parent.mkdir(parents=True, exist_ok=True)
            _in(
                host,
                *browse,
                "--window-size=1280,2400",
                f"--screenshot={shot}",
                f"{base}/schema",
                timeout=120,
            )
        finally:
            stop_group(server)
    listed = set(re.findall(r'data-path="([^"]+)"', shown.stdout))
    assert listed == paths, (sorted(paths - listed), shown.stderr[-2000:])
    assert "Market Intelligence API" in shown.stdout
    assert shot.stat().st_size > 10_000
