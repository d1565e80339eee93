"""The pipeline section: `mi materialize` of a scaled embedded market, wall time and peak memory.

Each run is `mi materialize` in its own process (`MI_DATA_DIR=<scratch>/<N>`, `MI_INSTRUMENTS=N`,
a fixed `MI_END_DATE`), so its time includes start-up, imports and every Dagster run of the four
markets; its peak memory is the `ru_maxrss` that `wait4` reports for it (the largest process of
its tree: steps run inside it with the default in-process executor). The step times come from the
command's own lines (`[market] <step> done in Xs`), so the slowest stage shows in the details.
The incremental run materializes one more day (`MI_END_DATE` + 1) into the data dir of a full run.
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

from benchmarks.figures import Figure
from benchmarks.servers import BIN

END_DATE = date(2026, 3, 2)
"""A Monday: the next day is a trading day in every market, so the incremental run adds a bar."""
SIZES = (100, 1000, 5000)
INCREMENTAL_SIZE = 1000
RUN_TIMEOUT = 1200
STEP_LINE = re.compile(r"^\[(?P<market>[\w-]+)\] (?P<step>\S+) done in (?P<seconds>[\d.]+)s", re.M)
UNSET = ("MI_SOURCES", "MI_WAREHOUSE_URL", "MI_DAGSTER_POSTGRES_URL", "MI_S3_ENDPOINT_URL")
"""Settings a developer's shell may hold that would send the runs elsewhere than the scratch dir."""


@dataclass(frozen=True)
class Run:
    """One `mi materialize`: its wall time, peak RSS and each step's seconds (`market/step`)."""

    instruments: int
    end_date: date
    seconds: float
    peak_rss_mib: float
    steps: dict[str, float] = field(default_factory=dict)

    def by_step(self) -> dict[str, float]:
        """Each step's seconds summed over the markets, slowest first."""
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
        }


def parse_steps(output: str) -> dict[str, float]:
    """`market/step` -> seconds, from `mi materialize`'s `[market] step done in Xs` lines."""
    return {f"{m['market']}/{m['step']}": float(m["seconds"]) for m in STEP_LINE.finditer(output)}


def materialize_run(
    data_dir: Path,
    instruments: int,
    end_date: date,
    log: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = RUN_TIMEOUT,
) -> Run:
    """`mi materialize` of `instruments` up to `end_date` into `data_dir`, timed and measured."""
    base = {k: v for k, v in (os.environ if env is None else env).items() if k not in UNSET}
    run_env = {
        **base,
        "MI_DATA_DIR": str(data_dir),
        "MI_INSTRUMENTS": str(instruments),
        "MI_END_DATE": end_date.isoformat(),
    }
    output = log.with_name(f"{log.stem}-{instruments}-{end_date.isoformat()}.log")
    with output.open("wb") as out:
        start = time.perf_counter()
        process = subprocess.Popen(
            [str(BIN / "mi"), "materialize"],
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
    return Run(instruments, end_date, seconds, usage.ru_maxrss / 1024, parse_steps(text))


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
        figures += [
            Figure("pipeline", f"full materialization, {label}", "s", round(run.seconds, 1),
                   None if first else round(smallest.seconds, 1), "" if first else anchor,
                   details=run.details()),
            Figure("pipeline", f"full materialization peak RSS, {label}", "MiB",
                   round(run.peak_rss_mib), None if first else round(smallest.peak_rss_mib),
                   "" if first else anchor),
        ]  # fmt: skip
    largest = max(runs, key=lambda r: r.instruments)
    steps = largest.by_step()
    if steps:
        step, seconds = next(iter(steps.items()))
        figures.append(
            Figure("pipeline", f"slowest step ({step}, 4 markets), {largest.instruments:,} instruments",
                   "s", seconds, round(largest.seconds, 1), "whole run", details={"steps": steps})
        )  # fmt: skip
    return figures


def incremental_figure(full: Run, daily: Run) -> Figure:
    """The run of one more day against the full run it follows (same data dir)."""
    return Figure(
        "pipeline",
        f"incremental daily run (one new day), {daily.instruments:,} instruments",
        "s",
        round(daily.seconds, 1),
        round(full.seconds, 1),
        "full run",
        details={**daily.details(), "full_run": full.details()},
    )


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
        left.plot(sizes, times, "s--", label=f"{slowest} (4 markets)")
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
) -> list[Figure]:
    """Full runs at every size (smallest first), the incremental day, the plot `out/scale.png`."""
    log = scratch / "pipeline.log"
    runs: list[Run] = []
    full: Run | None = None
    daily: Run | None = None
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
                daily = materialize_run(data_dir, size, end_date + timedelta(days=1), log)
                print(f"  {size:,} instruments, one more day: {daily.seconds:.1f} s", flush=True)
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
    figures = scale_figures(runs) if runs else []
    if full is not None and daily is not None:
        figures.append(incremental_figure(full, daily))
    if runs:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        note = f" ({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load {load})"
        path = out / "scale.png"
        if plot_scale(runs, path, note, daily):
            print(f"  plot: {path}", flush=True)
        else:
            print("  matplotlib not installed (a dev dependency): no plot", flush=True)
    return figures
