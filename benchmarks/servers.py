"""The processes a load benchmark needs: a materialized data dir, a key, a served app on loopback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def mi(args: Sequence[str], env: Mapping[str, str], timeout: float = 900) -> str:
    """Run the `mi` command line; its stdout."""
    done = subprocess.run(
        [str(BIN / "mi"), *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"mi {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def materialize(data_dir: Path, env: Mapping[str, str]) -> None:
    """`mi materialize` of the embedded market into `data_dir` (about a minute on 2 cores)."""
    mi(["materialize"], {**env, "MI_DATA_DIR": str(data_dir)})


def create_key(env: Mapping[str, str], plan: str = "internal") -> str:
    """A new key in the store `env` names (MI_METERING_URL or the data dir's SQLite)."""
    return mi(["keys", "create", "--plan", plan, "--name", "bench"], env).strip().splitlines()[-1]


@dataclass(frozen=True)
class Server:
    """A server process listening on `base` (http://127.0.0.1:port)."""

    process: subprocess.Popen[bytes]
    base: str


def _wait_ready(server: Server, path: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited with {server.process.returncode} before answering")
        try:
            if httpx.get(server.base + path, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{server.base}{path} did not answer within {timeout} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGINT)  # its own session: the server and its workers only
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


@contextmanager
def serving(
    command: Sequence[str], env: Mapping[str, str], port: int, ready_path: str, log: Path
) -> Iterator[Server]:
    """Start `command` (which must listen on `port`), wait until `ready_path` answers, stop it after."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            list(command), env=dict(env), stdout=out, stderr=out, start_new_session=True
        )
    server = Server(process, f"http://{HOST}:{port}")
    try:
        _wait_ready(server, ready_path, timeout=60)
        yield server
    finally:
        _stop(process)


def mi_serve_command(port: int, workers: int, server: str) -> list[str]:
    """The production command: `mi serve` (granian by default)."""
    workers_and_server = ["--workers", str(workers), "--server", server]
    return [str(BIN / "mi"), "serve", "--host", HOST, "--port", str(port), *workers_and_server]


def waiting_store_command(port: int, workers: int, server: str) -> list[str]:
    """The metering ceiling: benchmarks.waiting_store_app under the same server code path."""
    workers_and_server = ["--workers", str(workers), "--server", server]
    module = "benchmarks.waiting_store_app"
    return [sys.executable, "-m", module, "--port", str(port), *workers_and_server]


def bare_command(port: int, workers: int, server: str) -> list[str]:
    """The anchor: benchmarks.bare_app under the same server code path and worker count."""
    workers_and_server = ["--workers", str(workers), "--server", server]
    return [sys.executable, "-m", "benchmarks.bare_app", "--port", str(port), *workers_and_server]
