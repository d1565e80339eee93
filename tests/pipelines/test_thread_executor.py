"""The threads executor: ready steps side by side in threads of the run's process, in Dagster's order."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.retries import RetryMode

from mi.commands.pipeline import open_instance
from pipelines.settings import load_settings
from pipelines.thread_executor import NAME, ThreadExecutor, execute_in_threads, thread_executor

WAIT = 20.0
"""Seconds a step waits for its neighbour before the test calls the steps serial."""


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    """The instance `mi materialize` opens: real SQLite files on the pooled event log."""
    with open_instance(load_settings({"MI_DATA_DIR": str(tmp_path)})) as opened:
        yield opened


def _run(
    job: dg.JobDefinition, instance: dg.DagsterInstance, listener: object = None
) -> tuple[bool, str]:
    run_id = str(uuid.uuid4())
    if listener is not None:
        instance.add_event_listener(run_id, listener)  # type: ignore[arg-type]
    return execute_in_threads(job, instance, {}, run_id, {}), run_id


def _steps(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType) -> set[str]:
    return {
        e.dagster_event.step_key or ""
        for e in instance.all_logs(run_id, of_type=kind)
        if e.dagster_event is not None
    }


def _waiting_pair(executor_def: dg.ExecutorDefinition | None) -> dg.JobDefinition:
    """Two steps that each wait for the other to start: they finish only side by side."""
    both = threading.Barrier(2, timeout=WAIT)

    @dg.op
    def left() -> None:
        both.wait()

    @dg.op
    def right() -> None:
        both.wait()

    @dg.job(executor_def=executor_def)
    def side_by_side() -> None:
        left()
        right()

    return side_by_side


def test_independent_steps_run_at_the_same_time(instance: dg.DagsterInstance) -> None:
    succeeded, run_id = _run(_waiting_pair(thread_executor), instance)
    assert succeeded
    assert _steps(instance, run_id, dg.DagsterEventType.STEP_SUCCESS) == {"left", "right"}


def test_max_concurrent_bounds_the_steps_in_flight(instance: dg.DagsterInstance) -> None:
    lock, in_flight, most = threading.Lock(), [0], [0]

    def busy() -> None:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.05)
        with lock:
            in_flight[0] -= 1

    ops = [dg.op(name=f"step_{i}")(busy) for i in range(6)]

    @dg.job(executor_def=thread_executor.configured({"max_concurrent": 2}))
    def six() -> None:
        for op in ops:
            op()

    succeeded, _ = _run(six, instance)
    assert succeeded
    assert most[0] == 2


def test_a_fan_out_runs_every_mapped_step_and_its_collector_after_them(
    instance: dg.DagsterInstance,
) -> None:
    """The mapped steps exist only once the plan step's outputs are handled: the run must not end
    (nothing in flight, nothing pending) between the plan step's last event and its end."""

    @dg.op(out=dg.DynamicOut(int))
    def plan() -> Iterator[dg.DynamicOutput[int]]:
        for n in range(5):
            yield dg.DynamicOutput(n, mapping_key=f"shard_{n}")

    @dg.op
    def square(n: int) -> int:
        return n * n

    @dg.op
    def total(squares: list[int]) -> int:
        assert sorted(squares) == [0, 1, 4, 9, 16]
        return sum(squares)

    @dg.job(executor_def=thread_executor)
    def fan_out() -> None:
        total(plan().map(square).collect())

    succeeded, run_id = _run(fan_out, instance)
    assert succeeded
    done = _steps(instance, run_id, dg.DagsterEventType.STEP_SUCCESS)
    assert done == {"plan", "total", *(f"square[shard_{n}]" for n in range(5))}


def test_a_failed_step_skips_what_follows_it_and_fails_the_run(
    instance: dg.DagsterInstance,
) -> None:
    @dg.op
    def broken() -> int:
        raise ValueError("a bad shard")

    @dg.op
    def after(value: int) -> int:
        return value

    @dg.op
    def beside() -> int:
        return 1

    @dg.job(executor_def=thread_executor)
    def partly() -> None:
        after(broken())
        beside()

    succeeded, run_id = _run(partly, instance)
    assert not succeeded
    assert _steps(instance, run_id, dg.DagsterEventType.STEP_FAILURE) == {"broken"}
    assert _steps(instance, run_id, dg.DagsterEventType.STEP_SUCCESS) == {"beside"}
    assert "after" not in _steps(instance, run_id, dg.DagsterEventType.STEP_START)


def test_a_step_that_asks_for_a_retry_runs_again(instance: dg.DagsterInstance) -> None:
    attempts = [0]

    @dg.op
    def flaky() -> int:
        attempts[0] += 1
        if attempts[0] == 1:
            raise dg.RetryRequested(max_retries=1)
        return attempts[0]

    @dg.job(executor_def=thread_executor)
    def retried() -> None:
        flaky()

    succeeded, _ = _run(retried, instance)
    assert succeeded
    assert attempts[0] == 2


def test_listeners_get_every_event_of_steps_in_threads(instance: dg.DagsterInstance) -> None:
    """What `mi materialize` prints comes from a listener the worker threads call."""
    seen: list[tuple[str, str]] = []
    guard = threading.Lock()

    def listen(entry: dg.EventLogEntry) -> None:
        event = entry.dagster_event
        if event is not None and event.is_step_success and event.step_key:
            with guard:
                seen.append((event.step_key, threading.current_thread().name))

    @dg.op
    def one() -> None: ...

    @dg.op
    def two() -> None: ...

    @dg.job(executor_def=thread_executor)
    def pair() -> None:
        one()
        two()

    succeeded, _ = _run(pair, instance, listen)
    assert succeeded
    assert sorted(step for step, _ in seen) == ["one", "two"]
    assert all(thread.startswith("dagster-step") for _, thread in seen)


def test_a_job_on_the_serial_executor_also_runs_in_threads_when_asked(
    instance: dg.DagsterInstance,
) -> None:
    default_executor = _waiting_pair(None)
    assert default_executor.executor_def.name != NAME
    succeeded, _ = _run(default_executor, instance)
    assert succeeded


def test_at_least_one_step_at_a_time() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ThreadExecutor(0, RetryMode.ENABLED)
