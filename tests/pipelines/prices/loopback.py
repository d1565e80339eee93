"""A real HTTP server on a free 127.0.0.1 port replaying recorded responses, for connector tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "recorded"


@dataclass(frozen=True)
class Reply:
    """One recorded response: status, body (a file under tests/fixtures/recorded or bytes), headers."""

    status: int = 200
    fixture: str = ""
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = "application/json"

    def payload(self) -> bytes:
        return (RECORDED / self.fixture).read_bytes() if self.fixture else self.body


@dataclass(frozen=True)
class Request:
    path: str
    query: dict[str, str]


Matcher = Callable[[Request], bool]


@dataclass
class Loopback:
    """Routes are tried in order; a route's replies are served in turn, the last one repeatedly."""

    base_url: str
    routes: list[tuple[Matcher, list[Reply]]]
    requests: list[Request] = field(default_factory=list)

    def reply_for(self, request: Request) -> Reply:
        self.requests.append(request)
        for matches, replies in self.routes:
            if matches(request):
                return replies.pop(0) if len(replies) > 1 else replies[0]
        return Reply(404, body=b"no recorded response", content_type="text/plain")


def route(path: str, **query: str) -> Matcher:
    """Match a path and the given query parameters (others are ignored)."""
    return lambda r: r.path == path and all(r.query.get(k) == v for k, v in query.items())


@contextmanager
def serve(routes: list[tuple[Matcher, list[Reply]]]) -> Iterator[Loopback]:
    """Start the server in a thread for the duration of the block."""
    state = Loopback("", routes)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            reply = state.reply_for(Request(parts.path, query))
            body = reply.payload()
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
