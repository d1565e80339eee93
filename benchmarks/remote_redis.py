"""A Redis on another host, as a deployment has it: a redis-server in its own network namespace,
joined to this machine by a veth pair, behind a relay in that namespace that holds every chunk it
forwards for half of `ADDED_RTT_MS`, so each round trip to it costs `ADDED_RTT_MS` more than the
hop itself (the veth pair and the relay's own reading and sending, as a network's stacks and
switches cost their own time).

The relay stands in for `tc netem`, which this project's machines lack (their kernel has no
`sch_netem`): each direction of a connection is a thread that reads with the kernel's arrival
time of the data (`SO_TIMESTAMPNS`) and sends it on when due, with the timer slack cut to 1 ns
so a 0.1 ms sleep lasts about that. `measured_rtt_ms` gives the round trip it makes, which the
section reports beside its rows.

The metering section loads the Redis store against it: on loopback a round trip is so cheap that
the client's own parsing looks large; at a real network's distance it is the round trip that
counts. Needs root (or CAP_NET_ADMIN), `ip` and `redis-server`; without them the rows are left
out, saying why.
"""

from __future__ import annotations

import ctypes
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress

ADDED_RTT_MS = 0.2
"""Round trip added by the relay: half of it on each direction."""
PORT = 6390
"""The relay's port, on the namespace's side of the pair."""
REDIS_PORT = 6379
"""The redis-server's, on the namespace's own loopback."""


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


def unavailable() -> str | None:
    """Why a remote Redis cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    missing = [tool for tool in ("ip", "redis-server") if shutil.which(tool) is None]
    return f"missing {', '.join(missing)}" if missing else None


@contextmanager
def remote_redis() -> Iterator[str]:
    """A fresh, empty redis-server (no persistence) behind the relay: its URL."""
    tag = uuid.uuid4().hex[:6]
    namespace, outside, inside = f"mi-redis-{tag}", f"mir{tag}h", f"mir{tag}n"
    # 10.254.x: apart from the test suite's hosts (10.16 to 10.250, tests/netns.py).
    subnet = random.randint(0, 255)
    machine, host = f"10.254.{subnet}.1", f"10.254.{subnet}.2"
    there = ("ip", "netns", "exec", namespace)
    processes: list[subprocess.Popen[bytes]] = []
    _run("ip", "netns", "add", namespace)
    try:
        _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        _run("ip", "link", "set", inside, "netns", namespace)
        _run("ip", "addr", "add", f"{machine}/30", "dev", outside)
        _run("ip", "link", "set", outside, "up")
        within = ("ip", "-n", namespace)
        _run(*within, "addr", "add", f"{host}/30", "dev", inside)
        _run(*within, "link", "set", inside, "up")
        _run(*within, "link", "set", "lo", "up")
        hold = str(ADDED_RTT_MS / 2 / 1000)
        processes.append(_start([*there, "redis-server", "--bind", "127.0.0.1", "--port",
                                 str(REDIS_PORT), "--save", "", "--appendonly", "no"]))  # fmt: skip
        processes.append(_start([*there, sys.executable, "-m", "benchmarks.remote_redis", host,
                                 str(PORT), str(REDIS_PORT), hold]))  # fmt: skip
        _wait_ready(host)
        yield f"redis://{host}:{PORT}/0"
    finally:
        for process in processes:
            _stop(process)
        # Deleting the namespace deletes its end of the pair, and so the pair.
        with suppress(subprocess.CalledProcessError):
            _run("ip", "netns", "delete", namespace)


def _start(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


def _wait_ready(host: str, timeout: float = 10.0) -> None:
    import redis

    client = redis.Redis(host=host, port=PORT, socket_timeout=1)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                if client.ping():
                    return
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.05)
    finally:
        client.close()


def measured_rtt_ms(url: str, pings: int = 200) -> float:
    """The median PING round trip to `url` through redis-py, in ms (the link's delay included)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.ping()
        times = []
        for _ in range(pings):
            started = time.perf_counter()
            client.ping()
            times.append((time.perf_counter() - started) * 1000)
    finally:
        client.close()
    return sorted(times)[len(times) // 2]


_SO_TIMESTAMPNS = 35
"""Linux: each read carries the kernel's arrival time of its data (a `timespec`, realtime)."""
_TIMESPEC = struct.Struct("@qq")


def _forward(source: socket.socket, target: socket.socket, delay: float) -> None:
    """Everything `source` sends, sent on to `target` `delay` seconds after the kernel received
    it: one thread a direction, no handoff between threads."""
    source.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    with suppress(OSError):
        while True:
            data, ancillary, _, _ = source.recvmsg(65536, socket.CMSG_SPACE(_TIMESPEC.size))
            if not data:
                break
            arrived = time.time()
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
                    seconds, nanoseconds = _TIMESPEC.unpack(value[: _TIMESPEC.size])
                    arrived = seconds + nanoseconds / 1e9
            wait = arrived + delay - time.time()
            if wait > 0:
                time.sleep(wait)
            target.sendall(data)
    with suppress(OSError):
        target.shutdown(socket.SHUT_WR)


def relay(address: str, port: int, upstream: int, delay: float) -> None:
    """Accept on `address:port`; join each connection to 127.0.0.1:`upstream`, each direction
    held `delay` seconds."""
    ctypes.CDLL(None).prctl(29, 1)  # PR_SET_TIMERSLACK: 1 ns, so short sleeps end on time
    sys.setswitchinterval(0.0001)  # a due writer waits for no busy thread's 5 ms slice
    listener = socket.create_server((address, port))
    while True:
        client, _ = listener.accept()
        server = socket.create_connection(("127.0.0.1", upstream))
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for source, target in ((client, server), (server, client)):
            threading.Thread(target=_forward, args=(source, target, delay), daemon=True).start()


if __name__ == "__main__":
    relay(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
