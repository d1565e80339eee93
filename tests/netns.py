"""Hosts for tests: network namespaces joined to this machine by veth pairs, and TCP relays that
make this machine's services (bound to 127.0.0.1) reachable at the machine's side of the pairs.

A process started in a namespace has its own network stack: its 127.0.0.1 is its own, and it
reaches the broker, PostgreSQL and the object store only over its veth pair, as a process on
another host would over the network. (It still shares this machine's file system.)
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Host:
    """A network namespace with one veth pair to the machine."""

    namespace: str
    address: str
    """Its side of the pair."""
    gateway: str
    """The machine's side of the pair."""

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside the namespace."""
        return ["ip", "netns", "exec", self.namespace, *argv]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@contextmanager
def hosts(count: int) -> Iterator[list[Host]]:
    """`count` namespaces, host i at 10.S.i.2 with the machine at 10.S.i.1 (S random), each with a
    default route through its pair, so every host reaches every machine-side address.

    Skips the test, saying why, where namespaces cannot be made (not root, no CAP_NET_ADMIN).
    """
    tag, subnet = uuid.uuid4().hex[:6], random.randint(16, 250)
    made: list[Host] = []
    try:
        for i in range(count):
            host = Host(f"mi-{tag}-{i}", f"10.{subnet}.{i}.2", f"10.{subnet}.{i}.1")
            try:
                _ip("netns", "add", host.namespace)
            except (OSError, subprocess.CalledProcessError) as error:
                detail = getattr(error, "stderr", "") or str(error)
                pytest.skip(f"network namespaces cannot be made here: {detail.strip()}")
            made.append(host)
            outside, inside = f"mi{tag}h{i}", f"mi{tag}n{i}"
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", host.namespace)
            _ip("addr", "add", f"{host.gateway}/24", "dev", outside)
            _ip("link", "set", outside, "up")
            within = ("-n", host.namespace)
            _ip(*within, "addr", "add", f"{host.address}/24", "dev", inside)
            _ip(*within, "link", "set", inside, "up")
            _ip(*within, "link", "set", "lo", "up")
            _ip(*within, "route", "add", "default", "via", host.gateway)
        yield made
    finally:
        for host in made:  # deleting a namespace deletes its end of the pair, and so the pair
            with suppress(subprocess.CalledProcessError):
                _ip("netns", "delete", host.namespace)


@contextmanager
def relays(address: str, ports: Mapping[int, int]) -> Iterator[None]:
    """For each `listen: target` of `ports`, a relay accepting on `address:listen` and forwarding
    each connection to 127.0.0.1:target, for as long as the context lasts."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    servers: list[asyncio.Server] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with suppress(ConnectionError, OSError):
            writer.close()

    def relay_to(target: int):  # type: ignore[no-untyped-def]
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                upstream_reader, upstream_writer = await asyncio.open_connection(
                    "127.0.0.1", target
                )
            except OSError:
                writer.close()
                return
            await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

        return accept

    async def serve() -> None:
        for listen, target in ports.items():
            servers.append(await asyncio.start_server(relay_to(target), address, listen))
        started.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop).result(timeout=10)
    started.wait(10)
    try:
        yield
    finally:

        async def close() -> None:
            for server in servers:
                server.close()
                await server.wait_closed()
            piping = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in piping:
                task.cancel()
            await asyncio.gather(*piping, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


@contextmanager
def offline() -> Iterator[Host]:
    """A namespace with nothing but its loopback: what runs in it reaches no other host at all
    (no internet, no CDN), only what runs in it too. Its `address` and `gateway` are 127.0.0.1.

    Skips the test, saying why, where namespaces cannot be made (not root, no CAP_NET_ADMIN).
    """
    host = Host(f"mi-off-{uuid.uuid4().hex[:6]}", "127.0.0.1", "127.0.0.1")
    try:
        _ip("netns", "add", host.namespace)
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        pytest.skip(f"network namespaces cannot be made here: {detail.strip()}")
    try:
        _ip("-n", host.namespace, "link", "set", "lo", "up")
        yield host
    finally:
        with suppress(subprocess.CalledProcessError):
            _ip("netns", "delete", host.namespace)
