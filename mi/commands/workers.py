"""`mi workers`: a Celery worker that runs the pipeline's steps for runs with MI_EXECUTOR=celery."""

from __future__ import annotations

import os
import socket

import click

from pipelines.platform.executors import CELERY_QUEUE, celery_app
from pipelines.platform.settings import load_settings


@click.command()
@click.option(
    "-c",
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Steps run at a time, each in a thread of the worker (a step's memory is a shard's).",
)
@click.option(
    "-n",
    "--name",
    default=None,
    help="The worker's name in the Dagster UI and the broker (default: mi-<pid>@<host>).",
)
@click.option(
    "--loglevel",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]),
    default="INFO",
    show_default=True,
)
def workers(concurrency: int, name: str | None, loglevel: str) -> None:
    """Run the steps of MI_EXECUTOR=celery runs: take them from the broker (MI_CELERY_BROKER_URL),
    run each against the run's Dagster instance (MI_DAGSTER_POSTGRES_URL) and warehouse
    (MI_WAREHOUSE_URL), put their events in the result backend (MI_CELERY_BACKEND_URL).

    Start one or more on any host with the same MI_* settings as the run; stop with Ctrl-C (a
    step in progress is finished first) or SIGTERM. A worker killed in the middle of a step
    leaves it on the queue, and another worker runs it again.
    """
    settings = load_settings()
    node = name or f"mi-{os.getpid()}@{socket.gethostname()}"
    app = celery_app(settings)
    app.worker_main(
        [
            "worker",
            # Threads, not Celery's prefork pool: a step in a pool process (daemonic) may not start
            # processes, so the news steps' parsing and scoring would run on one core; in a thread
            # of the worker they spread over the host's cores as in process (pipelines/platform/parallel.py).
            "--pool=threads",
            f"--concurrency={concurrency}",
            f"--loglevel={loglevel}",
            f"--hostname={node}",
            f"--queues={CELERY_QUEUE}",
            "--prefetch-multiplier=1",
        ]
    )
