"""The Dagster executors a run can use (`MI_EXECUTOR`), and the Celery app that runs steps on workers.

With `MI_EXECUTOR=celery` a run's orchestrator (`mi materialize`, or a run worker of the daemon)
sends each step to RabbitMQ as a task of dagster-celery; `mi workers` processes, on this host or
others, take the tasks, run the step against the run's Dagster instance (PostgreSQL) and the shared
warehouse (object storage), and put the step's events in the result backend (Redis).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import dagster as dg

from pipelines.platform.settings import PipelineSettings

if TYPE_CHECKING:
    from celery import Celery

CELERY_QUEUE = "dagster"
"""The queue dagster-celery routes every step to (its `make_app`), the one `mi workers` consumes."""
CELERY_CONFIG: dict[str, Any] = {
    # A step is acknowledged only once it has finished: a worker lost in the middle of one (killed,
    # out of memory, its host gone) leaves the task on the queue, and another worker runs it again.
    # A step's files are new, uniquely named objects and each attempt keeps a staging record of its
    # own, so a second attempt never meets half of the first, nor hides a table of the first from
    # a step reading it; nothing is visible before the publish step.
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    # One step at a time per worker process: a step's memory is a shard's, never two.
    "worker_prefetch_multiplier": 1,
    # Celery's advice with late acks (and its next default): on a lost broker connection a
    # running step is cancelled where the pool can; one that finishes anyway cannot be
    # acknowledged, and is delivered again once the broker is back (docs/deployment.md).
    "worker_cancel_long_running_tasks_on_connection_loss": True,
    "broker_connection_retry_on_startup": True,
    # A run's connection to the broker is used once per step sent: a pooled one closed by the
    # broker in between (a restart) fails the next send ("Server unexpectedly closed
    # connection"). Without a pool each send opens its own, to the broker as it is then.
    "broker_pool_limit": 0,
    "result_expires": 86_400,
}
"""Celery settings of both sides (the executor's and the workers'), beyond dagster-celery's own."""
RESULT_POLL_SECONDS = 0.1
"""How often the run looks for finished steps. dagster-celery sleeps a fixed second between looks
(`core_execution_loop.TICK_SECONDS`, no setting), so every step of a chain (a domain's plan, its
shard steps, its stage) waited up to a second after its predecessor finished. A look is one Redis
read per step in flight."""


def executor_def(settings: PipelineSettings) -> dg.ExecutorDefinition:
    """The executor `MI_EXECUTOR` names. Dagster's in-process executor by default, one step at a
    time in the run's process: on 2 cores a process per step (multiprocess) costs more than the
    steps, in its start and the imports of the definitions (docs/pipeline.md, "Executors")."""
    name = settings.executor
    if name == "multiprocess":
        return dg.multiprocess_executor.configured({"max_concurrent": 2})
    if name == "celery":
        from celery.exceptions import DuplicateTaskNameWarning
        from dagster_celery import celery_executor, core_execution_loop

        # Typed int by inference from its literal; it is only ever passed to time.sleep.
        core_execution_loop.TICK_SECONDS = RESULT_POLL_SECONDS  # type: ignore[assignment]

        # dagster-celery registers its step task again for every step it sends: the same task.
        warnings.filterwarnings("ignore", category=DuplicateTaskNameWarning)
        return celery_executor.configured(celery_executor_config(settings))
    if name == "k8s":
        from dagster_k8s import k8s_job_executor  # not locked: docs/deployment.md

        return k8s_job_executor
    return dg.in_process_executor


def celery_executor_config(settings: PipelineSettings) -> dict[str, Any]:
    """dagster-celery's executor config: the broker, the result backend and `CELERY_CONFIG`."""
    return {
        "broker": settings.celery_broker_url,
        "backend": settings.celery_backend_url,
        "config_source": dict(CELERY_CONFIG),
    }


def celery_app(settings: PipelineSettings) -> Celery:
    """The Celery app of a worker: dagster-celery's, with its step task, configured as the
    executor that sends the steps is."""
    from dagster_celery.executor import CeleryExecutor
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task

    config = celery_executor_config(settings)
    executor = CeleryExecutor.for_cli(**config)
    app = make_app(executor.app_args())
    create_task(app)
    return app
