"""A Dagster executor that runs a run's ready steps in this process, several at a time, in threads.

Dagster's in-process executor runs one step at a time. A daily run's steps are mostly a domain's
shard steps (`pipelines/incremental/assets.py`), independent of each other, and much of their work
is Polars, which releases the GIL while it reads, computes and writes: two shard steps side by side
keep two cores busier than one (a day's shard steps at 5,000 instruments: 5.6 to 6.1 s one at a
time, 4.6 to 5.1 s two at a time), where Dagster's multiprocess executor pays a process start and
the imports of the definitions (2 s) per step. The numba kernels hold the GIL (no `nogil`): they are
a small part of a step, and releasing it measured the same. Memory grows by a shard per extra step
in flight.

The loop is Dagster's own (`inner_plan_execution_iterator`): the run's `ActiveExecution` decides
what is ready and takes every event, on this (the orchestrating) thread only; each step's event
sequence is produced on a worker thread, which writes the events to the instance as it goes, as
the in-process executor does. The instance's storages take events from several threads: SQLite
through Dagster's own lock per database, PostgreSQL through SQLAlchemy's pool.

An interrupt (Ctrl-C) reaches the orchestrating thread only: the run stops handing out steps and
waits for those in flight to end (a thread cannot be stopped from outside); their files stay
unstaged, as any failed run's do.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
from dagster._core.events import DagsterEvent, EngineEventData
from dagster._core.execution.api import ExecuteRunWithPlanIterable
from dagster._core.execution.compute_logs import create_compute_log_file_key
from dagster._core.execution.context.system import (
    PlanExecutionContext,
    PlanOrchestrationContext,
    StepExecutionContext,
)
from dagster._core.execution.context_creation_job import PlanExecutionContextManager
from dagster._core.execution.plan.execute_plan import _trigger_hook, dagster_event_sequence_for_step
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from dagster._core.execution.plan.plan import ExecutionPlan
from dagster._core.execution.plan.step import ExecutionStep
from dagster._core.execution.retries import RetryMode, get_retries_config
from dagster._core.executor.base import Executor
from dagster._core.executor.init import InitExecutorContext

NAME = "threads"
DEFAULT_MAX_CONCURRENT = os.cpu_count() or 1
"""Steps in flight at once: one per core (a step's kernels already use every core while the other
waits on a read or a write, so more would only add a shard's memory each)."""


@dataclass
class _Finished:
    """A worker's last word on a step: done, or the framework error that stopped it."""

    error: BaseException | None = None


@dataclass
class _InFlight:
    context: StepExecutionContext
    events: list[DagsterEvent] = field(default_factory=list)


class ThreadExecutor(Executor):
    """Steps in threads of this process, at most `max_concurrent` at a time."""

    def __init__(self, max_concurrent: int, retries: RetryMode) -> None:
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, not {max_concurrent}")
        self.max_concurrent = max_concurrent
        self._retries = retries

    @property
    def retries(self) -> RetryMode:
        return self._retries

    def execute(
        self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan
    ) -> Iterator[DagsterEvent]:
        keys = execution_plan.step_keys_to_execute
        yield DagsterEvent.engine_event(
            plan_context,
            f"Executing steps in threads of process {os.getpid()}, {self.max_concurrent} at a time",
            event_specific_data=EngineEventData.in_process(os.getpid(), keys),
        )
        yield from ExecuteRunWithPlanIterable(
            execution_plan=plan_context.execution_plan,
            iterator=self._iterator,
            execution_context_manager=PlanExecutionContextManager(
                job=plan_context.job,
                retry_mode=plan_context.retry_mode,
                execution_plan=plan_context.execution_plan,
                run_config=plan_context.run_config,
                dagster_run=plan_context.dagster_run,
                instance=plan_context.instance,
                raise_on_error=plan_context.raise_on_error,
                output_capture=plan_context.output_capture,
                step_dependency_config=self.step_dependency_config,
            ),
        )

    def _iterator(
        self, job_context: PlanExecutionContext, execution_plan: ExecutionPlan
    ) -> Iterator[DagsterEvent]:
        with InstanceConcurrencyContext(job_context.instance, job_context.dagster_run) as claims:
            yield from run_steps(job_context, execution_plan, claims, self.max_concurrent)


def run_steps(
    job_context: PlanExecutionContext,
    execution_plan: ExecutionPlan,
    claims: InstanceConcurrencyContext,
    max_concurrent: int,
) -> Iterator[DagsterEvent]:
    """Dagster's in-process plan loop, with up to `max_concurrent` steps in worker threads."""
    logs = job_context.instance.compute_log_manager
    step_keys = [step.key for step in execution_plan.get_steps_to_execute_in_topo_order()]
    reports: queue.Queue[tuple[str, DagsterEvent | _Finished]] = queue.Queue()
    in_flight: dict[str, _InFlight] = {}
    with (
        execution_plan.start(
            retry_mode=job_context.retry_mode,
            instance_concurrency_context=claims,
            step_dependency_config=job_context.step_dependency_config,
        ) as active,
        ExitStack() as capture,
        ThreadPoolExecutor(max_concurrent, thread_name_prefix="dagster-step") as pool,
    ):
        # The whole process's output is captured once, as the in-process executor does.
        log_key = logs.build_log_key_for_run(job_context.run_id, create_compute_log_file_key())
        log_context = capture.enter_context(logs.capture_logs(log_key))
        yield DagsterEvent.capture_logs(job_context, step_keys, log_key, log_context)
        # A step whose last event was taken is still in flight until its worker says it is done:
        # only then may the plan resolve what follows it (a dynamic fan-out's mapped steps).
        # A retry handed out before its first attempt's thread has ended waits for that end.
        held: dict[str, ExecutionStep] = {}

        def launch(step: ExecutionStep) -> None:
            context = job_context.for_step(step, active.get_known_state())
            in_flight[step.key] = _InFlight(context)
            pool.submit(_work, context, reports)

        while in_flight or not active.is_complete:
            yield from active.concurrency_event_iterator(job_context)
            while len(in_flight) + len(held) < max_concurrent and not active.is_complete:
                step = active.get_next_step()
                if step is None:
                    break
                if step.key in in_flight:
                    held[step.key] = step
                else:
                    launch(step)
            if not in_flight:
                active.sleep_til_ready()
                continue
            key, report = reports.get()
            step_run = in_flight[key]
            if isinstance(report, DagsterEvent):
                step_run.events.append(report)
                yield report
                active.handle_event(report)
                continue
            del in_flight[key]
            if report.error is not None:
                raise report.error
            if key in held:
                # That attempt ended asking for a retry, which is already handed out.
                launch(held.pop(key))
                continue
            active.verify_complete(job_context, key)
            for event in active.plan_events_iterator(job_context):
                step_run.events.append(event)
                yield event
            yield from _trigger_hook(step_run.context, step_run.events)
        capture.close()


def _work(
    context: StepExecutionContext, reports: queue.Queue[tuple[str, DagsterEvent | _Finished]]
) -> None:
    """One step's events, in order, then its end (with the error, if the framework raised one:
    a step's own errors are already events of its failure)."""
    key = context.step.key
    try:
        for event in dagster_event_sequence_for_step(context):
            reports.put((key, event))
    except BaseException as error:  # handed to the orchestrating thread, which raises it
        reports.put((key, _Finished(error)))
    else:
        reports.put((key, _Finished()))


@dg.executor(
    name=NAME,
    config_schema={
        "max_concurrent": dg.Field(
            int,
            default_value=DEFAULT_MAX_CONCURRENT,
            description="Steps run at once, each in a thread of the run's process.",
        ),
        "retries": get_retries_config(),
    },
)
def thread_executor(init_context: InitExecutorContext) -> ThreadExecutor:
    """A run's ready steps in threads of its process, `max_concurrent` at a time."""
    config = init_context.executor_config
    retries = RetryMode.from_config(config["retries"])  # type: ignore[arg-type]
    max_concurrent = config["max_concurrent"]
    if not isinstance(max_concurrent, int):  # the config schema's type, checked by Dagster
        raise TypeError(f"max_concurrent: {max_concurrent!r} is not an int")
    return ThreadExecutor(max_concurrent, retries or RetryMode.ENABLED)


def execute_in_threads(
    job: dg.JobDefinition,
    instance: dg.DagsterInstance,
    run_config: dict[str, Any],
    run_id: str,
    tags: dict[str, str],
) -> bool:
    """`job.execute_in_process`, with this module's executor instead of the serial one that
    `execute_in_process` always puts in place of the job's: a run of this process whose events
    reach the instance's listeners live (what `mi materialize` prints). True when it succeeded."""
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.execution.execute_in_process import core_execute_in_process, merge_run_tags

    executor = job.executor_def if job.executor_def.name == NAME else thread_executor
    ephemeral = job.as_ephemeral_job(resource_defs={}, input_values={}).with_executor_def(executor)
    result = core_execute_in_process(
        job=InMemoryJob(job_def=ephemeral),
        run_config=run_config,
        instance=instance,
        output_capturing_enabled=False,
        raise_on_error=False,
        run_tags=merge_run_tags(
            job_def=job,
            partition_key=None,  # the daily job is not partitioned (pipelines/daily.py)
            tags=tags,
            asset_selection=None,
            instance=instance,
            run_config=run_config,
        ),
        run_id=run_id,
    )
    return result.success
