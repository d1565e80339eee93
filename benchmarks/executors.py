"""The pipeline section's executors: one full materialization run in process, by the multiprocess
executor, and on one and two Celery workers (`mi workers`), at the same size.

Every run records to its own fresh PostgreSQL database (the Celery executor needs a shared
instance, so the others use one too) and writes a local warehouse in its own data dir, so that only
the executor differs. Celery runs go through the machine's RabbitMQ, on a virtual host of their own,
and their workers run on this machine. A run's time is `mi materialize`'s wall time; the workers
are started, and ready, before it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from benchmarks.figures import Figure
from benchmarks.pipeline import Run, materialize_run
from benchmarks.servers import BIN
from benchmarks.services import await_worker, fresh_database, virtual_host


@dataclass(frozen=True)
class Setup:
    """An executor and how many steps it runs at a time."""

    executor: str
    workers: int
    """Celery workers started for the run (0: none)."""

    @property
    def parallelism(self) -> int:
        return max(self.workers, 2 if self.executor == "multiprocess" else 1)

    @property
    def label(self) -> str:
        if self.executor == "celery":
            return f"celery, {self.workers} worker{'s' if self.workers > 1 else ''}"
        return "in process" if self.executor == "in_process" else "multiprocess, 2 at a time"


SETUPS = (
    Setup("in_process", 0),
    Setup("celery", 1),
    Setup("multiprocess", 0),
    Setup("celery", 2),
)
"""Each Celery setup follows the one it is compared with (the same parallelism)."""


@contextmanager
def _workers(count: int, env: Mapping[str, str], logs: Path) -> Iterator[None]:
    """`count` `mi workers` processes, ready before the context's body runs, stopped after."""
    started = []
    try:
        for i in range(count):
            log = logs / f"worker-{i}.log"
            with log.open("wb") as out:
                started.append(
                    (
                        subprocess.Popen(
                            [str(BIN / "mi"), "workers", "-n", f"bench{i}@%h"],
                            env=dict(env),
                            stdout=out,
                            stderr=subprocess.STDOUT,
                            start_new_session=True,
                        ),
                        log,
                    )
                )
        for process, log in started:
            await_worker(process, log)
        yield
    finally:
        for process, _ in started:
            os.killpg(process.pid, signal.SIGTERM)
        for process, _ in started:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def executor_run(scratch: Path, setup: Setup, instruments: int, end_date: date, log: Path) -> Run:
    """One full materialization of `instruments` with `setup`, in a fresh data dir and database."""
    data_dir = scratch / f"executors-{setup.executor}-{setup.workers}"
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        with fresh_database("mi_bench") as postgres, virtual_host("mi-bench") as vhost:
            settings = {
                "MI_DAGSTER_POSTGRES_URL": postgres,
                "MI_EXECUTOR": setup.executor,
                "MI_CELERY_BROKER_URL": f"pyamqp://guest:guest@127.0.0.1:5672/{vhost}",
            }
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("MI_")},
                **settings,
                "MI_DATA_DIR": str(data_dir),
                "MI_INSTRUMENTS": str(instruments),
                "MI_END_DATE": end_date.isoformat(),
            }
            with _workers(setup.workers, env, data_dir):
                return materialize_run(data_dir, instruments, end_date, log, settings=settings)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def executor_figures(scratch: Path, instruments: int, end_date: date, log: Path) -> list[Figure]:
    """Wall time of each setup; a Celery setup against the setup of the same parallelism before
    it (its overhead as a ratio)."""
    figures: list[Figure] = []
    baseline: dict[int, tuple[Setup, Run]] = {}
    for setup in SETUPS:
        run = executor_run(scratch, setup, instruments, end_date, log)
        print(f"  {instruments:,} instruments, {setup.label}: {run.seconds:.1f} s", flush=True)
        before = baseline.get(setup.parallelism)
        compared = before if setup.executor == "celery" and before is not None else None
        figures.append(
            Figure(
                "pipeline",
                f"full materialization, {instruments:,} instruments, {setup.label}",
                "s",
                round(run.seconds, 1),
                round(compared[1].seconds, 1) if compared else None,
                compared[0].label if compared else "",
                details={**run.details(), "executor": setup.executor, "workers": setup.workers},
            )
        )
        baseline.setdefault(setup.parallelism, (setup, run))
    return figures
