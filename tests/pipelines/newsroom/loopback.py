"""A real chat-completions HTTP server on a free 127.0.0.1 port replaying recorded responses."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).parent / "recorded"


@dataclass(frozen=True)
class Reply:
    """A recorded response: status and a file under recorded/, served after `delay` seconds."""

    fixture: str
    status: int = 200
    delay: float = 0.0


@dataclass
class Server:
    """Replies are served in turn, the last one repeatedly; requests are kept as received."""

    base_url: str
    replies: list[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)

    def next_reply(self) -> Reply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


@contextmanager
def serve(replies: list[Reply]) -> Iterator[Server]:
    state = Server("", list(replies))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            payload = json.loads(self.rfile.read(length))
            state.requests.append(
                {"path": self.path, "auth": self.headers.get("Authorization"), "json": payload}
            )
            reply = state.next_reply()
            time.sleep(reply.delay)
            body = (RECORDED / reply.fixture).read_bytes()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                return

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
