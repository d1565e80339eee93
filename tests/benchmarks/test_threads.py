"""benchmarks.threads: a server's CPU time by thread, over its whole process tree, from /proc."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from benchmarks import threads

pytestmark = pytest.mark.skipif(not threads.available(), reason="needs Linux /proc")

# A parent that starts a child which burns CPU on a second thread, which then stays alive.
_TREE = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", '''
import threading, time
def burn():
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    print("done", flush=True)
    time.sleep(30)  # alive when measured: an exited thread leaves /proc/<pid>/task
threading.Thread(target=burn).start()
'''], stdout=sys.stdout)
child.wait()
"""


def test_thread_times_cover_the_workers_a_server_starts() -> None:
    """A server's workers are its child processes: their threads are counted, each by name."""
    parent = subprocess.Popen([sys.executable, "-c", _TREE], stdout=subprocess.PIPE, text=True)
    try:
        before = threads.thread_times(parent.pid)
        assert parent.stdout is not None
        assert parent.stdout.readline().strip() == "done"
        time.sleep(0.05)
        spent = threads.thread_times(parent.pid).minus(before)
        assert len(threads.process_tree(parent.pid)) == 2
        burner = max(spent, key=lambda thread: spent[thread])
        pid, tid = burner.split()[0].split("/")
        assert pid != str(parent.pid)
        assert tid != pid
        assert spent[burner] >= 0.2
        busiest, total = threads.per_request_us(spent, requests=1000)
        assert busiest == pytest.approx(spent[burner] / 1000 * 1e6)
        assert total >= busiest
    finally:
        for pid in reversed(threads.process_tree(parent.pid)):
            subprocess.run(["kill", str(pid)], check=False)
        parent.wait(timeout=10)
        if parent.stdout is not None:
            parent.stdout.close()


def test_per_request_is_zero_without_requests() -> None:
    assert threads.per_request_us({"1/1 x": 1.0}, requests=0) == (0.0, 0.0)
