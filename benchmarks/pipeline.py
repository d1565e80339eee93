"""The pipeline section: `mi materialize` of a scaled embedded market, wall time and peak memory.

Each run is `mi materialize` in its own process (`MI_DATA_DIR=<scratch>/<N>`, `MI_INSTRUMENTS=N`,
a fixed `MI_END_DATE`), so its time includes start-up, imports and every Dagster run it starts;
its peak memory is the `ru_maxrss` that `wait4` reports for it (the largest process of its tree:
steps run inside it with the default in-process executor). The step times come from the command's
own lines (`[daily] <step> done in Xs`, `[news] ...`), so the slowest stage shows in the details.

Into the data dir of one full run, incremental runs follow as the schedules start them: the
daily job for one more day (`MI_END_DATE` + 1), the daily job for that day again (nothing new: the
floor under every daily run, the process and Dagster's own work), then a news refresh a week on,
when about a hundred articles are new, and that refresh again (nothing new: the news job's floor).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from benchmarks.day_floor import DayIO, current_manifest, day_io
from benchmarks.figures import Figure, Goal
from benchmarks.servers import BIN

END_DATE = date(2026, 3, 2)
"""A Monday: the next day is a trading day in every market, so the incremental run adds a bar."""
SIZES = (100, 1000, 5000, 50000)
INCREMENTAL_SIZE = 5000
EXECUTORS_SIZE = 5000
"""Instruments of the executors' comparison (benchmarks/executors.py)."""
NEWS_DAYS = 7
"""Days of news the refresh finds new (about a hundred articles at 5,000 instruments)."""
RUN_TIMEOUT = 3600
STEP_LINE = re.compile(r"^\[(?P<run>[\w-]+)\] (?P<step>\S+) done in (?P<seconds>[\d.]+)s", re.M)
ENRICHED = re.compile(r"^\[news\]\s+briefs: briefs \w+: (?P<count>\d+) enriched", re.M)
"""The news refresh's count of new articles per market."""
FULL_GOALS: dict[int, tuple[Goal | None, Goal | None]] = {
    5000: (Goal("project", "<", 60.0), Goal("project", "<", 2048.0)),
    50000: (None, Goal("project", "<", 4096.0)),
}
"""Goals of the full materialization by size: (wall seconds, peak RSS MiB)."""
DAILY_GOAL = Goal("ratio", "<=", 0.10)
"""One new day costs at most a tenth of the full run."""
NEWS_GOAL = Goal("project", "<", 5.0)
"""A news refresh of about a hundred new articles, in seconds."""
UNSET = (
    "MI_SOURCES",
    "MI_WAREHOUSE_URL",
    "MI_DAGSTER_POSTGRES_URL",
    "MI_S3_ENDPOINT_URL",
    "MI_EXECUTOR",
    "MI_CELERY_BROKER_URL",
    "MI_CELERY_BACKEND_URL",
)
"""Settings a developer's shell may hold that would send the runs elsewhere than the scratch dir."""


@dataclass(frozen=True)
class Run:
    """One `mi materialize`: its wall time, peak RSS, each step's seconds (`run/step`) and the
    articles its news refresh found new."""

    instruments: int
    end_date: date
    seconds: float
    peak_rss_mib: float
    steps: dict[str, float] = field(default_factory=dict)
    new_articles: int = 0

    def by_step(self) -> dict[str, float]:
        """Each step's seconds summed over the runs (a first load runs the daily job twice)."""
        totals: dict[str, float] = {}
        for key, seconds in self.steps.items():
            step = key.split("/", 1)[1]
            totals[step] = totals.get(step, 0.0) + seconds
        ordered = sorted(totals.items(), key=lambda item: -item[1])
        return {step: round(seconds, 1) for step, seconds in ordered}

    def details(self) -> dict[str, Any]:
        return {
            "instruments": self.instruments,
            "end_date": self.end_date.isoformat(),
            "seconds": round(self.seconds, 1),
            "peak_rss_mib": round(self.peak_rss_mib),
            "steps_by_name": self.by_step(),
            "steps": self.steps,
            "new_articles": self.new_articles,
        }


def parse_steps(output: str) -> dict[str, float]:
    """`run/step` -> seconds, from `mi materialize`'s `[run] step done in Xs` lines (a step run
    twice, as the daily job's steps are on a first load, sums its runs)."""
    steps: dict[str, float] = {}
    for m in STEP_LINE.finditer(output):
        key = f"{m['run']}/{m['step']}"
        steps[key] = round(steps.get(key, 0.0) + float(m["seconds"]), 3)
    return steps


def parse_new_articles(output: str) -> int:
    """Articles the run's news refresh enriched (new to the warehouse), over the markets."""
    return sum(int(m["count"]) for m in ENRICHED.finditer(output))


def materialize_run(
    data_dir: Path,
    instruments: int,
    end_date: date,
    log: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = RUN_TIMEOUT,
    args: Sequence[str] = (),
    settings: Mapping[str, str] | None = None,
) -> Run:
    """`mi materialize [args]` of `instruments` up to `end_date` into `data_dir`, timed and
    measured; `settings` (MI_* variables) are added after the shell's are cleared."""
    base = {k: v for k, v in (os.environ if env is None else env).items() if k not in UNSET}
    run_env = {
        **base,
        **(settings or {}),
        "MI_DATA_DIR": str(data_dir),
        "MI_INSTRUMENTS": str(instruments),
        "MI_END_DATE": end_date.isoformat(),
    }
    job = f"-{args[args.index('--job') + 1]}" if "--job" in args else ""
    output = log.with_name(f"{log.stem}-{instruments}-{end_date.isoformat()}{job}.log")
    repeat = 2
    while output.exists():  # the same run again (a day with nothing new) keeps its own log
        output = output.with_name(
            f"{log.stem}-{instruments}-{end_date.isoformat()}{job}-{repeat}.log"
        )
        repeat += 1
    with output.open("wb") as out:
        start = time.perf_counter()
        process = subprocess.Popen(
            [str(BIN / "mi"), "materialize", *args],
            env=run_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        status, usage = _wait(process, timeout)
        seconds = time.perf_counter() - start
    text = output.read_text(errors="replace")
    with log.open("a") as combined:
        combined.write(text)
    if status != 0:
        tail = "\n".join(text.splitlines()[-30:])
        raise RuntimeError(f"mi materialize ({instruments} instruments) exited {status}:\n{tail}")
    rss = usage.ru_maxrss / 1024
    return Run(instruments, end_date, seconds, rss, parse_steps(text), parse_new_articles(text))


def _wait(process: subprocess.Popen[bytes], timeout: float) -> tuple[int, Any]:
    """Reap the process with wait4 (its own rusage, not every child's); kill its group on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return process.returncode, usage
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            raise TimeoutError(f"mi materialize did not finish within {timeout:.0f} s")
        time.sleep(0.05)


def scale_figures(runs: Sequence[Run]) -> list[Figure]:
    """Wall time and peak RSS per size, each against the smallest size (the growth as a ratio)."""
    smallest = min(runs, key=lambda r: r.instruments)
    anchor = f"{smallest.instruments:,} instruments"
    figures: list[Figure] = []
    for run in sorted(runs, key=lambda r: r.instruments):
        first = run is smallest
        label = f"{run.instruments:,} instruments"
        seconds_goal, memory_goal = FULL_GOALS.get(run.instruments, (None, None))
        figures += [
            Figure(
                "pipeline",
                f"full materialization, {label}",
                "s",
                round(run.seconds, 1),
                None if first else round(smallest.seconds, 1),
                "" if first else anchor,
                seconds_goal,
                details=run.details(),
            ),
            Figure(
                "pipeline",
                f"full materialization peak RSS, {label}",
                "MiB",
                round(run.peak_rss_mib),
                None if first else round(smallest.peak_rss_mib),
                "" if first else anchor,
                memory_goal,
            ),
        ]
    largest = max(runs, key=lambda r: r.instruments)
    steps = largest.by_step()
    if steps:
        step, seconds = next(iter(steps.items()))
        figures.append(
            Figure(
                "pipeline",
                f"slowest step ({step}), {largest.instruments:,} instruments",
                "s",
                seconds,
                round(largest.seconds, 1),
                "whole run",
                details={"steps": steps},
            )
        )
    return figures


def incremental_figures(
    full: Run,
    daily: Run,
    news: Run | None = None,
    again: Run | None = None,
    news_again: Run | None = None,
    day_files: DayIO | None = None,
) -> list[Figure]:
    """The daily job's run of one more day against the full run it follows (same data dir), its
    peak memory, the same day run again with nothing new (`again`: the floor of a daily run, as a
    share of the full run too), with the day's file I/O alone (`day_files`) the floor of a new day
    (`benchmarks/day_floor.py`), the news refresh (absolute: its goal is seconds, not a share) and
    the same refresh again with nothing new (`news_again`: its floor, the process and Dagster)."""
    label = f"{daily.instruments:,} instruments"
    figures = [
        Figure(
            "pipeline",
            f"incremental daily run (one new day), {label}",
            "s",
            round(daily.seconds, 1),
            round(full.seconds, 1),
            "full run",
            DAILY_GOAL,
            details={**daily.details(), "full_run": full.details()},
        ),
        Figure(
            "pipeline",
            f"incremental daily run peak RSS, {label}",
            "MiB",
            round(daily.peak_rss_mib),
            round(full.peak_rss_mib),
            "full run",
        ),
    ]
    if again is not None:
        figures.append(
            Figure(
                "pipeline",
                f"daily run with nothing new (the same day again), {label}",
                "s",
                round(again.seconds, 1),
                round(full.seconds, 1),
                "full run",
                details=again.details(),
            )
        )
    if again is not None and day_files is not None:
        floor = again.seconds + day_files.seconds
        figures.append(
            Figure(
                "pipeline",
                f"a new day's floor (nothing new + the day's file I/O alone), {label}",
                "s",
                round(floor, 1),
                round(full.seconds, 1),
                "full run",
                details={"nothing_new_seconds": round(again.seconds, 1), **day_files.details()},
            )
        )
    if news is not None:
        figures.append(
            Figure(
                "pipeline",
                f"news refresh ({news.new_articles} new articles), {label}",
                "s",
                round(news.seconds, 1),
                goal=NEWS_GOAL,
                details=news.details(),
            )
        )
    if news_again is not None:
        figures.append(
            Figure(
                "pipeline",
                f"news refresh with nothing new (the same refresh again), {label}",
                "s",
                round(news_again.seconds, 1),
                details=news_again.details(),
            )
        )
    return figures


def plot_scale(runs: Sequence[Run], path: Path, note: str = "", daily: Run | None = None) -> bool:
    """Wall time and peak RSS against instruments, two panels, as a PNG; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ordered = sorted(runs, key=lambda r: r.instruments)
    sizes = [r.instruments for r in ordered]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    left.plot(sizes, [r.seconds for r in ordered], "o-", label="full materialization")
    slowest = next(iter(ordered[-1].by_step()), None) if ordered[-1].steps else None
    if slowest:
        times = [r.by_step().get(slowest, 0.0) for r in ordered]
        left.plot(sizes, times, "s--", label=f"{slowest} (slowest step)")
    if daily is not None:
        left.plot([daily.instruments], [daily.seconds], "D", label="incremental (one new day)")
    left.set(xlabel="instruments (4 markets)", ylabel="wall time (s)", title="Wall time")
    right.plot(sizes, [r.peak_rss_mib for r in ordered], "o-", color="tab:red")
    right.set(xlabel="instruments (4 markets)", ylabel="peak RSS (MiB)", title="Peak memory")
    for axis in (left, right):
        axis.set_xscale("log")
        axis.set_xticks(sizes, [f"{n:,}" for n in sizes])
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle(f"mi materialize, scaled embedded market{note}", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def pipeline_section(
    scratch: Path,
    out: Path,
    sizes: Sequence[int] = SIZES,
    incremental: int | None = INCREMENTAL_SIZE,
    end_date: date = END_DATE,
    executors: int | None = EXECUTORS_SIZE,
) -> list[Figure]:
    """Full runs at every size (smallest first), the incremental day and news refresh, the plot
    `out/scale.png`, and the executors compared at `executors` instruments."""
    log = scratch / "pipeline.log"
    runs: list[Run] = []
    full: Run | None = None
    daily: Run | None = None
    news: Run | None = None
    again: Run | None = None
    news_again: Run | None = None
    day_files: DayIO | None = None
    for size in sorted(set(sizes) | ({incremental} if incremental else set())):
        data_dir = scratch / f"pipeline-{size}"
        try:
            run = materialize_run(data_dir, size, end_date, log)
            print(f"  {size:,} instruments: {run.seconds:.1f} s, {run.peak_rss_mib:.0f} MiB; "
                  f"slowest steps {list(run.by_step().items())[:3]}", flush=True)  # fmt: skip
            if size in sizes:
                runs.append(run)
            if size == incremental:
                full = run
                before = current_manifest(data_dir / "warehouse")
                daily = materialize_run(
                    data_dir, size, end_date + timedelta(days=1), log, args=("--job", "daily")
                )
                print(f"  {size:,} instruments, one more day: {daily.seconds:.1f} s, "
                      f"{daily.peak_rss_mib:.0f} MiB", flush=True)  # fmt: skip
                day_files = day_io(data_dir / "warehouse", before)
                print(f"  {size:,} instruments, the day's file I/O alone: "
                      f"{day_files.seconds:.2f} s", flush=True)  # fmt: skip
                again = materialize_run(
                    data_dir, size, end_date + timedelta(days=1), log, args=("--job", "daily")
                )
                print(f"  {size:,} instruments, the same day again (nothing new): "
                      f"{again.seconds:.1f} s", flush=True)  # fmt: skip
                week_on = end_date + timedelta(days=NEWS_DAYS)
                news = materialize_run(data_dir, size, week_on, log, args=("--job", "news"))
                print(f"  {size:,} instruments, news refresh: {news.seconds:.1f} s for "
                      f"{news.new_articles} new articles", flush=True)  # fmt: skip
                news_again = materialize_run(data_dir, size, week_on, log, args=("--job", "news"))
                print(f"  {size:,} instruments, the same news refresh again (nothing new): "
                      f"{news_again.seconds:.1f} s", flush=True)  # fmt: skip
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
    figures = scale_figures(runs) if runs else []
    if full is not None and daily is not None:
        figures += incremental_figures(full, daily, news, again, news_again, day_files)
    if runs:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        note = f" ({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load {load})"
        path = out / "scale.png"
        if plot_scale(runs, path, note, daily):
            print(f"  plot: {path}", flush=True)
        else:
            print("  matplotlib not installed (a dev dependency): no plot", flush=True)
    if executors:
        from benchmarks.executors import executor_figures  # PostgreSQL, RabbitMQ and Celery

        figures += executor_figures(scratch, executors, end_date, log)
    return figures
