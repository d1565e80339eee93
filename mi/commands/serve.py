"""`mi serve`: run the API under a production ASGI server (granian or uvicorn)."""

from __future__ import annotations

import os
from collections.abc import Callable

import click

from api.settings import load_settings
from mi.commands.keys import metering_config
from pipelines.platform.outbound import is_loopback

APP_FACTORY = "api.app:asgi_app"
"""Called in every worker process, so each builds its settings from its own environment."""
HEADER_TIMEOUT_SECONDS = 10
"""A connection that has begun a request, or is idle between two, and has not sent a whole
request head within this is closed (docs/deployment.md: what the server cannot bound itself, a
connection that never sends a byte, the load balancer in front must)."""


def _granian(host: str, port: int, workers: int) -> None:
    from granian import Granian
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings

    Granian(
        APP_FACTORY,
        address=host,
        port=port,
        interface=Interfaces.ASGI,
        workers=workers,
        factory=True,
        # HTTP/1.1 only (the load balancer in front speaks it), no WebSockets: nothing that
        # would keep a connection open outside the header timeout.
        http=HTTPModes.http1,
        websockets=False,
        http1_settings=HTTP1Settings(header_read_timeout=HEADER_TIMEOUT_SECONDS * 1000),
        # A worker that dies (OOM, SIGKILL) is replaced instead of leaving the port unserved.
        respawn_failed_workers=True,
    ).serve()


def _uvicorn(host: str, port: int, workers: int) -> None:
    import uvicorn

    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        loop="uvloop",
        http="httptools",
        lifespan="on",
        access_log=False,
        timeout_keep_alive=HEADER_TIMEOUT_SECONDS,
    )


SERVERS: dict[str, Callable[[str, int, int], None]] = {"granian": _granian, "uvicorn": _uvicorn}


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--server", type=click.Choice(sorted(SERVERS)), default="granian", show_default=True)
def serve(host: str, port: int, workers: int, server: str) -> None:
    """Serve the API; settings come from MI_* environment variables (MI_DATA_DIR, MI_LIVE_MARKETS)."""
    try:  # fail here, once, on a bad environment rather than in every worker
        settings = load_settings()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    from api.metering.plugin import METERING_OFF_WARNING, metering_enabled  # only when serving

    if metering_enabled(os.environ):
        metering_config()  # each worker reads it again; a bad file stops the server here
    else:
        if not is_loopback(host):
            raise click.UsageError(
                f"MI_METERING_URL=off serves without authentication: it listens on loopback "
                f"only (--host 127.0.0.1 or ::1), not on {host}"
            )
        click.echo(f"WARNING: {METERING_OFF_WARNING}", err=True)
    base = f"http://{host}:{port}"
    click.echo(f"Serving the Market Intelligence API on {base} (docs {base}/schema)")
    click.echo(f"  data {settings.data_dir}, {server} with {workers} worker(s); Ctrl-C stops")
    SERVERS[server](host, port, workers)
