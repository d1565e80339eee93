"""The anchor app: bare Litestar, a constant small JSON document and a constant price-history body.

Served by `python -m benchmarks.bare_app --port P --workers N`, through `mi serve`'s own server
functions, so the anchor runs under exactly the production server configuration.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any

from litestar import Litestar, Response, get

PRICE_BODY_ENV = "MI_BENCH_PRICE_BODY"
"""A file holding the body of the real full price history (written by the api benchmark)."""

FACTORY = "benchmarks.bare_app:create_app"
SMALL = {"symbols": ["BTC", "ETH", "SOL"], "success": True}


def create_app() -> Litestar:
    """`/small` returns a constant dict (encoded per request); `/prices` constant bytes."""
    path = os.environ.get(PRICE_BODY_ENV)
    body = Path(path).read_bytes() if path else b"[]"

    @get("/small", sync_to_thread=False)
    def small() -> dict[str, object]:
        return SMALL

    @get("/prices", sync_to_thread=False)
    def prices() -> Response[bytes]:
        return Response(body, media_type="application/json")

    return Litestar(route_handlers=[small, prices], debug=False)


def main() -> None:
    serve_factory(FACTORY)


def serve_factory(factory: str) -> None:
    """Serve the app factory `module:function` with `mi serve`'s server code and arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--server", default="granian")
    args = parser.parse_args()
    importlib.import_module("mi.commands.serve")
    serve: Any = sys.modules["mi.commands.serve"]  # the module: `mi.commands.serve` is the command

    serve.APP_FACTORY = factory  # the server functions read it when called: same config, our app
    serve.SERVERS[args.server](args.host, args.port, args.workers)


if __name__ == "__main__":
    main()
