"""CPU time of a server's threads over one load run, from `/proc` (Linux): where a request's time
goes on the worker, not only how many requests a second came back.

A server worker runs Python on one event-loop thread; when that thread is the busiest, its CPU
time per request is the cost a metered request adds or saves, free of the load generator's and
the other threads' share of the machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ThreadTimes:
    """CPU seconds (user + system) of every thread of a process tree, by `pid/tid name`."""

    seconds: dict[str, float]

    def minus(self, before: ThreadTimes) -> dict[str, float]:
        """CPU seconds each thread spent since `before` (threads started since count from 0)."""
        return {
            thread: spent - before.seconds.get(thread, 0.0)
            for thread, spent in self.seconds.items()
        }


def available() -> bool:
    return (PROC / "self" / "task").is_dir()


def process_tree(root: int) -> list[int]:
    """`root` and every process descended from it (a server's workers), from `/proc/*/stat`."""
    parents: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(entry / "stat")
        if fields is not None:
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(parents.get(pid, []))
    return tree


def thread_times(root: int) -> ThreadTimes:
    """The CPU seconds of every thread of `root`'s process tree now."""
    seconds: dict[str, float] = {}
    for pid in process_tree(root):
        try:
            tasks = list((PROC / str(pid) / "task").iterdir())
        except OSError:  # the process exited meanwhile
            continue
        for task in tasks:
            fields = _stat_fields(task / "stat")
            if fields is None:
                continue
            try:
                name = (task / "comm").read_text().strip()
            except OSError:  # the thread exited meanwhile
                continue
            ticks = int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14 and 15)
            seconds[f"{pid}/{task.name} {name}"] = ticks / _TICKS_PER_SECOND
    return ThreadTimes(seconds)


def per_request_us(spent: dict[str, float], requests: int) -> tuple[float, float]:
    """(the busiest thread's, all threads') CPU µs a request."""
    if requests <= 0 or not spent:
        return 0.0, 0.0
    return max(spent.values()) / requests * 1e6, sum(spent.values()) / requests * 1e6


def _stat_fields(path: Path) -> list[str] | None:
    """The fields of a `stat` file after the command name (which may hold spaces): index 0 is the
    state, 1 the parent pid, 11 and 12 utime and stime."""
    try:
        text = path.read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def rss_mib(pid: int) -> float:
    """A process's resident memory now, MiB (0 when /proc does not say)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
