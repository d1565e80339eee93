"""Fixtures for the webhooks tests: a real HTTPS receiver on loopback (trustme CA), a fake clock."""

from __future__ import annotations

import base64
import contextlib
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import standardwebhooks
import trustme

from pipelines.webhooks import signing
from pipelines.webhooks.config import (
    DeliveryPolicy,
    Subscription,
    WebhooksConfig,
)
from pipelines.webhooks.delivery import Worker
from pipelines.webhooks.outbox import Outbox

SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()
"""The secret the receiver verifies with (Standard Webhooks: `whsec_` + base64 of 32 bytes)."""
OTHER_SECRET = "whsec_" + base64.b64encode(bytes(range(32, 64))).decode()
START = 1_800_000_000.0
HUGE_BYTES = 300 * 1024 * 1024
RECEIVER_NAME = "receiver.test"
"""A name only the tests' resolver knows (the receiver's certificate holds it)."""
LOCAL_HOSTS = ("127.0.0.1",)
"""The `allowed_hosts` that let deliveries reach the receiver on loopback (refused otherwise)."""


class FakeClock:
    """Time that moves only when the worker sleeps (or a test advances it); it starts at the wall
    clock's now, because the receiver's library refuses signatures more than 5 minutes old."""

    def __init__(self, start: float) -> None:
        self.t = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds

    def advance(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class Received:
    event_id: str
    body: bytes
    headers: dict[str, str]
    signature_ok: bool
    at: float = field(default_factory=time.monotonic)
    """When the request arrived (the receiver's clock)."""
    path: str = "/hooks"


@dataclass
class Receiver:
    """A customer's HTTPS endpoint: answers from `script` in order (then 200) and records requests.

    A script entry is a status code, a (status, headers) pair, "hang" (never answer until the
    test ends), "huge" (200 with a body of `HUGE_BYTES`, sent as fast as it is read) or "drip"
    (the status line, then a header byte every 50 ms for 10 s). Signatures are checked with the
    `standardwebhooks` package, as a customer's receiver would; a request that fails the check is
    answered 401. A POST to a path ending in /slow always drips.
    """

    url: str
    script: list[object] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_action(self) -> object:
        with self.lock:
            return self.script.pop(0) if self.script else 200

    def accepted_ids(self) -> list[str]:
        return [r.event_id for r in self.received]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {name.lower(): value for name, value in self.headers.items()}
            try:
                standardwebhooks.Webhook(SECRET).verify(body, headers)
                ok = True
            except standardwebhooks.WebhookVerificationError:
                ok = False
            action = "drip" if self.path.endswith("/slow") else receiver.next_action()
            if action == "hang":
                receiver.release.wait(10)
                return
            if action in ("huge", "drip"):
                with receiver.lock:
                    event_id = headers.get(signing.ID_HEADER, "")
                    receiver.received.append(Received(event_id, body, headers, ok, path=self.path))
                with contextlib.suppress(OSError):
                    (self._huge if action == "huge" else self._drip)()
                return
            status, extra = action if isinstance(action, tuple) else (action, {})
            if status < 300 and ok:
                with receiver.lock:
                    receiver.received.append(
                        Received(headers.get(signing.ID_HEADER, ""), body, headers, ok)
                    )
            self.send_response(status if ok else 401)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def _huge(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(HUGE_BYTES))
            self.end_headers()
            chunk = b"x" * 65_536
            for _ in range(HUGE_BYTES // len(chunk)):
                self.wfile.write(chunk)

        def _drip(self) -> None:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            self.wfile.flush()
            for _ in range(200):
                if receiver.release.wait(0.05):
                    return
                self.wfile.write(b"X")
                self.wfile.flush()

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> Path:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=time.time())


@pytest.fixture
def receiver(ca: trustme.CA) -> Iterator[Receiver]:
    """A live HTTPS server on 127.0.0.1 with a certificate from the test CA."""
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost", RECEIVER_NAME).configure_cert(server_context)
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server.socket = server_context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    recv = Receiver(url=f"https://127.0.0.1:{port}/hooks")
    server.RequestHandlerClass = _handler(recv)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield recv
    recv.release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


def subscription(url: str, **overrides: object) -> Subscription:
    values: dict[str, object] = {
        "id": "acme",
        "customer": "Acme",
        "url": url,
        "secret": SECRET,
        "events": ("*",),
        "timeout_seconds": 0.5,
        "rate_limit_per_second": 1000.0,
    }
    values.update(overrides)
    return Subscription(**values)  # type: ignore[arg-type]


def make_config(ca_file: Path, *subs: Subscription, **policy: object) -> WebhooksConfig:
    values: dict[str, object] = {
        "max_attempts": 4,
        "backoff_base_seconds": 2.0,
        "backoff_max_seconds": 60.0,
        "ca_file": str(ca_file),
        "allowed_hosts": LOCAL_HOSTS,
    }
    values.update(policy)
    return WebhooksConfig(subscriptions=subs, delivery=DeliveryPolicy(**values))  # type: ignore[arg-type]


@pytest.fixture
def outbox(tmp_path: Path) -> Iterator[Outbox]:
    box = Outbox(tmp_path / "outbox.sqlite")
    yield box
    box.close()


@pytest.fixture
def make_worker(outbox: Outbox, clock: FakeClock) -> Iterator[Callable[[WebhooksConfig], Worker]]:
    workers: list[Worker] = []

    def make(config: WebhooksConfig, box: Outbox | None = None) -> Worker:
        worker = Worker(outbox=box or outbox, config=config, clock=clock)
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.close()
