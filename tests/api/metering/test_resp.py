"""The RESP2 client of the metering hot path: the reply parser (whole, nested, and split at every
byte), replies matched to commands in order, one write per group, and failing closed."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from api.metering import resp
from api.metering.resp import (
    ProtocolError,
    Reply,
    ReplyError,
    RespPipeline,
    RespProtocol,
    Target,
    pack,
    parse_reply,
)

pytestmark = pytest.mark.anyio

# (wire bytes, parsed reply) of every RESP2 type; an error is compared by its message.
CASES: list[tuple[bytes, Reply]] = [
    (b"$5\r\nhello\r\n", "hello"),
    (b"$0\r\n\r\n", ""),
    (b"$-1\r\n", None),
    (b"$6\r\na\r\nb\r\n\r\n", "a\r\nb\r\n"),  # CRLF inside a bulk string is data
    ("$5\r\nnaïf\r\n".encode(), "naïf"),  # length in bytes, decoded as UTF-8
    (b"+OK\r\n", "OK"),
    (b"-ERR unknown command\r\n", ReplyError("ERR unknown command")),
    (b":0\r\n", 0),
    (b":-42\r\n", -42),
    (b":1234567890123\r\n", 1234567890123),
    (b"*0\r\n", []),
    (b"*-1\r\n", None),
    (b"*3\r\n:1\r\n$1\r\na\r\n$-1\r\n", [1, "a", None]),
    (
        b"*3\r\n*2\r\n+x\r\n*1\r\n:7\r\n*0\r\n-NOSCRIPT no script\r\n",
        [["x", [7]], [], ReplyError("NOSCRIPT no script")],
    ),
]
STREAM = b"".join(wire for wire, _ in CASES)
ENDS = list(itertools.accumulate(len(wire) for wire, _ in CASES))


def same(got: Reply, want: Reply) -> bool:
    """Equal replies; errors are equal by type and message (exceptions compare by identity)."""
    if isinstance(want, ReplyError):
        return isinstance(got, ReplyError) and str(got) == str(want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(same, got, want))
    return type(got) is type(want) and got == want


class FakeTransport(asyncio.Transport):
    """Records every write; `abort`/`close` end the connection as a socket transport would."""

    def __init__(self, protocol: RespProtocol) -> None:
        super().__init__()
        self.protocol = protocol
        self.writes: list[bytes] = []
        self.aborted = False
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def abort(self) -> None:
        self.aborted = True
        self.close()

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            self.protocol.loop.call_soon(self.protocol.connection_lost, None)

    def is_closing(self) -> bool:
        return self.closing


def connected(reply_timeout: float = 5.0) -> tuple[RespProtocol, FakeTransport]:
    protocol = RespProtocol(asyncio.get_running_loop(), reply_timeout)
    transport = FakeTransport(protocol)
    protocol.connection_made(transport)
    return protocol, transport


def sent(protocol: RespProtocol, count: int) -> list[asyncio.Future[Reply]]:
    futures: list[asyncio.Future[Reply]] = [protocol.loop.create_future() for _ in range(count)]
    protocol.send(b"".join(pack("PING") for _ in futures), futures)
    return futures


def outcome(future: asyncio.Future[Reply]) -> Reply:
    exc = future.exception()
    return exc if isinstance(exc, ReplyError) else future.result()


# -- the parser -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("wire", "want"), CASES)
def test_each_reply_type_parses_whole_and_stops_at_its_end(wire: bytes, want: Reply) -> None:
    parsed = parse_reply(bytearray(wire + b"+next\r\n"))
    assert parsed is not None
    assert same(parsed[0], want)
    assert parsed[1] == len(wire)


@pytest.mark.parametrize(("wire", "want"), CASES)
def test_every_proper_prefix_of_a_reply_is_incomplete(wire: bytes, want: Reply) -> None:
    for cut in range(len(wire)):
        assert parse_reply(bytearray(wire[:cut])) is None, wire[:cut]


def test_a_reply_is_read_from_any_position() -> None:
    first = len(CASES[0][0])
    assert parse_reply(STREAM, first) == ("", first + len(CASES[1][0]))


@pytest.mark.parametrize("wire", [b"?1\r\n", b":x\r\n", b"$3\r\nabcd\r\n", b"*1\r\n!\r\n"])
def test_what_is_not_resp2_is_a_protocol_error(wire: bytes) -> None:
    with pytest.raises((ProtocolError, ValueError)):
        parse_reply(bytearray(wire))


def test_an_error_reply_knows_noscript() -> None:
    assert ReplyError("NOSCRIPT No matching script.").noscript
    assert not ReplyError("ERR NOSCRIPT elsewhere").noscript


def test_pack_is_an_array_of_bulk_strings() -> None:
    assert pack("SET", "k", b"v\r\n", "é") == (
        b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv\r\n\r\n$2\r\n\xc3\xa9\r\n"
    )


# -- the connection: replies resolve their commands' futures in order ----------------------------


async def test_replies_split_at_every_byte_resolve_their_futures_in_order() -> None:
    for cut in range(1, len(STREAM)):
        protocol, _ = connected()
        futures = sent(protocol, len(CASES))
        protocol.data_received(STREAM[:cut])
        complete = sum(end <= cut for end in ENDS)  # exactly the replies wholly received
        assert [future.done() for future in futures] == [i < complete for i in range(len(CASES))]
        protocol.data_received(STREAM[cut:])
        assert all(same(outcome(f), want) for f, (_, want) in zip(futures, CASES, strict=True))


async def test_replies_fed_one_byte_at_a_time() -> None:
    protocol, transport = connected()
    futures = sent(protocol, len(CASES))
    for index in range(len(STREAM)):
        protocol.data_received(STREAM[index : index + 1])
    assert all(same(outcome(f), want) for f, (_, want) in zip(futures, CASES, strict=True))
    assert not transport.aborted


async def test_an_error_reply_fails_only_its_command() -> None:
    protocol, transport = connected()
    futures = sent(protocol, 3)
    protocol.data_received(b"+PONG\r\n-ERR boom\r\n+PONG\r\n")
    assert futures[0].result() == futures[2].result() == "PONG"
    with pytest.raises(ReplyError, match="ERR boom"):
        futures[1].result()
    assert protocol.usable
    assert not transport.aborted


async def test_a_later_group_written_before_the_replies_of_an_earlier_one() -> None:
    protocol, transport = connected()
    first, second = sent(protocol, 2), sent(protocol, 1)
    assert len(transport.writes) == 2
    protocol.data_received(b":1\r\n:2\r\n:3")
    assert [f.result() for f in first] == [1, 2]
    assert not second[0].done()
    protocol.data_received(b"\r\n")
    assert second[0].result() == 3


async def test_an_ignored_reply_keeps_the_order() -> None:
    protocol, _ = connected()
    future: asyncio.Future[Reply] = protocol.loop.create_future()
    protocol.send(pack("SCRIPT", "LOAD", "return 1") + pack("PING"), [None, future])
    protocol.data_received(b"$40\r\n" + b"e" * 40 + b"\r\n+PONG\r\n")
    assert future.result() == "PONG"


async def test_a_cancelled_caller_does_not_shift_the_replies() -> None:
    protocol, _ = connected()
    futures = sent(protocol, 2)
    futures[0].cancel()
    protocol.data_received(b":1\r\n:2\r\n")
    assert futures[1].result() == 2


async def test_garbage_fails_every_outstanding_command_and_drops_the_connection() -> None:
    protocol, transport = connected()
    futures = sent(protocol, 3)
    protocol.data_received(b":1\r\n?what\r\n")
    assert futures[0].result() == 1
    for future in futures[1:]:
        with pytest.raises(ProtocolError):
            future.result()
    assert transport.aborted
    assert not protocol.usable


async def test_a_reply_nobody_asked_for_drops_the_connection() -> None:
    protocol, transport = connected()
    protocol.data_received(b"+surprise\r\n")
    assert transport.aborted


async def test_a_write_on_a_closing_transport_fails_its_commands_at_once() -> None:
    protocol, transport = connected()
    transport.close()  # closed by the transport (a write error, say) before connection_lost ran
    futures = sent(protocol, 2)
    for future in futures:
        with pytest.raises(ConnectionError, match="closed"):
            future.result()
    assert transport.writes == []


async def test_a_lost_connection_fails_every_outstanding_command() -> None:
    protocol, _ = connected()
    futures = sent(protocol, 2)
    protocol.data_received(b"+PONG\r\n")
    protocol.connection_lost(ConnectionResetError("reset"))
    assert futures[0].result() == "PONG"
    with pytest.raises(ConnectionError, match="reset"):
        futures[1].result()
    assert not protocol.usable
    assert protocol.closed.done()


async def test_an_answered_write_never_times_out() -> None:
    protocol, transport = connected(reply_timeout=0.05)
    futures = sent(protocol, 1)
    protocol.data_received(b"+PONG\r\n")
    await asyncio.sleep(0.15)  # well past its deadline (sleeping longer only strengthens this)
    assert futures[0].result() == "PONG"
    assert not transport.aborted
    assert protocol.usable


async def test_a_late_reply_fails_everything_outstanding_and_drops_the_connection() -> None:
    """Timed from its own write: an earlier write answered in time does not shorten the wait."""
    protocol, transport = connected(reply_timeout=0.2)
    early = sent(protocol, 1)
    protocol.data_received(b"+PONG\r\n")
    await asyncio.sleep(0.1)
    sent_at = protocol.loop.time()
    late = sent(protocol, 2)
    with pytest.raises(TimeoutError):
        await late[0]
    assert protocol.loop.time() - sent_at >= 0.2  # not at the first write's deadline (0.1 in)
    with pytest.raises(TimeoutError):
        late[1].result()
    assert early[0].result() == "PONG"
    assert transport.aborted
    assert not protocol.usable


# -- the pipeline: one write per loop iteration, one connection per loop --------------------------


class FakeConnect:
    """`resp.connect` replaced: connections on fake transports, kept for inspection."""

    def __init__(self) -> None:
        self.opened: list[tuple[RespProtocol, FakeTransport]] = []
        self.refuse = False

    async def __call__(self, target: Target, reply_timeout: float) -> RespProtocol:
        if self.refuse:
            raise ConnectionRefusedError("refused")
        pair = connected(reply_timeout)
        self.opened.append(pair)
        return pair[0]


@pytest.fixture
def fake_connect(monkeypatch: pytest.MonkeyPatch) -> FakeConnect:
    fake = FakeConnect()
    monkeypatch.setattr(resp, "connect", fake)
    return fake


async def test_commands_of_one_iteration_go_out_in_one_write(fake_connect: FakeConnect) -> None:
    pipeline = RespPipeline(Target(), reply_timeout=5.0)
    first = [pipeline.send(pack("ECHO", str(n))) for n in range(5)]
    await asyncio.sleep(0)  # the group is written once the iteration ends (here: connect first)
    await asyncio.sleep(0)
    ((protocol, transport),) = fake_connect.opened
    assert transport.writes == [b"".join(pack("ECHO", str(n)) for n in range(5))]
    second = [pipeline.send(pack("ECHO", str(n))) for n in range(5, 8)]
    await asyncio.sleep(0)
    assert len(transport.writes) == 2  # the same connection, before the first replies
    protocol.data_received(b"".join(b"+%d\r\n" % n for n in range(8)))
    assert [f.result() for f in first + second] == [str(n) for n in range(8)]
    assert len(fake_connect.opened) == 1
    await pipeline.aclose()


async def test_send_once_is_not_repeated_within_a_group(fake_connect: FakeConnect) -> None:
    pipeline = RespPipeline(Target(), reply_timeout=5.0)
    load = pack("SCRIPT", "LOAD", "return 1")
    for _ in range(3):
        pipeline.send_once(load)
        pipeline.send(pack("PING"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    ((_, transport),) = fake_connect.opened
    assert transport.writes == [load + pack("PING") * 3]


class RecordingWaiter:
    """A waiter that is not a future: resolved as the reply is parsed."""

    def __init__(self) -> None:
        self.replies: list[Any] = []

    def done(self) -> bool:
        return bool(self.replies)

    def set_result(self, result: Reply, /) -> None:
        self.replies.append(result)

    def set_exception(self, exception: BaseException, /) -> None:
        self.replies.append(exception)


async def test_a_flushed_group_is_written_at_once_and_its_waiter_resolved_as_parsed(
    fake_connect: FakeConnect,
) -> None:
    pipeline = RespPipeline(Target(), reply_timeout=5.0)
    first = pipeline.send(pack("PING"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    ((protocol, transport),) = fake_connect.opened
    protocol.data_received(b"+PONG\r\n")
    assert await first == "PONG"
    waiter, other = RecordingWaiter(), RecordingWaiter()
    pipeline.send_to(pack("ECHO", "a"), waiter)
    pipeline.flush()  # written now, not when this iteration ends
    assert transport.writes[-1] == pack("ECHO", "a")
    pipeline.send_to(pack("ECHO", "b"), other)
    assert pipeline.outstanding() == []  # a waiter is tracked by its owner
    await asyncio.sleep(0)  # the scheduled write: the later command only
    assert transport.writes[-1] == pack("ECHO", "b")
    protocol.data_received(b"+a\r\n-ERR b\r\n")  # resolved in this call, not a later one
    assert waiter.replies == ["a"]
    assert [type(reply) for reply in other.replies] == [ReplyError]
    await pipeline.aclose()


async def test_unreachable_fails_the_group_and_the_next_command_connects_again(
    fake_connect: FakeConnect,
) -> None:
    pipeline = RespPipeline(Target(), reply_timeout=5.0)
    fake_connect.refuse = True
    futures = [pipeline.send(pack("PING")) for _ in range(3)]
    for future in futures:
        with pytest.raises(ConnectionRefusedError):
            await future
    fake_connect.refuse = False
    again = pipeline.send(pack("PING"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    ((protocol, _),) = fake_connect.opened
    protocol.data_received(b"+PONG\r\n")
    assert await again == "PONG"


async def test_a_dropped_connection_is_replaced_and_nothing_is_resent(
    fake_connect: FakeConnect,
) -> None:
    pipeline = RespPipeline(Target(), reply_timeout=5.0)
    lost = pipeline.send(pack("PING"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    ((_, transport),) = fake_connect.opened
    transport.close()
    with pytest.raises(ConnectionError):
        await lost
    later = pipeline.send(pack("ECHO", "x"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(fake_connect.opened) == 2
    new_protocol, new_transport = fake_connect.opened[1]
    assert new_transport.writes == [pack("ECHO", "x")]  # the lost PING is not sent again
    new_protocol.data_received(b"+x\r\n")
    assert await later == "x"
    await pipeline.aclose()


async def test_close_waits_for_replies_under_way(fake_connect: FakeConnect) -> None:
    pipeline = RespPipeline(Target(), reply_timeout=5.0)
    future = pipeline.send(pack("PING"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    ((protocol, transport),) = fake_connect.opened
    closing = asyncio.ensure_future(pipeline.aclose())
    await asyncio.sleep(0.01)
    assert not transport.closing
    protocol.data_received(b"+PONG\r\n")
    await closing
    assert future.result() == "PONG"
    assert transport.closing


# -- URLs and real connections --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("redis://127.0.0.1:6379/0", Target()),
        ("redis://localhost", Target(host="localhost")),
        (
            "redis://user:p%40ss@redis.internal:6380/2",
            Target("redis.internal", 6380, username="user", password="p@ss", db=2),
        ),
        ("redis://:secret@h:1/3", Target("h", 1, password="secret", db=3)),
        ("rediss://h:6390/1", Target("h", 6390, tls=True, db=1)),
        ("unix:///run/redis/redis.sock", Target(path="/run/redis/redis.sock")),
        ("unix://:pw@/tmp/r.sock?db=4", Target(path="/tmp/r.sock", password="pw", db=4)),
    ],
)
def test_target_from_url(url: str, target: Target) -> None:
    assert Target.from_url(url) == target


def test_handshake_authenticates_and_selects_only_when_asked() -> None:
    assert Target().handshake() == []
    assert Target(username="u", password="p", db=2).handshake() == [
        pack("AUTH", "u", "p"),
        pack("SELECT", "2"),
    ]
    assert Target(password="p").handshake() == [pack("AUTH", "p")]


@pytest.fixture
def scratch_key() -> Iterator[str]:
    key = f"mi:test:resp:{uuid.uuid4().hex}"
    yield key
    client = redis.Redis(db=15)
    client.delete(key)
    client.close()


async def test_a_real_redis_on_another_database(scratch_key: str) -> None:
    """SELECT on connect: the value lands in database 15, where redis-py reads it."""
    pipeline = RespPipeline(Target.from_url("redis://127.0.0.1:6379/15"), reply_timeout=2.0)
    replies = await asyncio.gather(
        pipeline.send(pack("SET", scratch_key, "v")),
        pipeline.send(pack("INCR", scratch_key)),
        pipeline.send(pack("GET", scratch_key)),
        pipeline.send(pack("EVAL", "return {1, 'a', {false}}", "0")),
        return_exceptions=True,
    )
    assert replies[0] == "OK"
    assert isinstance(replies[1], ReplyError)
    assert replies[2:] == ["v", [1, "a", [None]]]
    await pipeline.aclose()
    client = redis.Redis(db=15)
    assert client.get(scratch_key) == b"v"
    client.close()


def test_a_real_redis_on_uvloop(scratch_key: str) -> None:
    """`mi serve` (granian) runs uvloop, whose transports are not asyncio.Transport subclasses."""
    uvloop = pytest.importorskip("uvloop")

    async def main() -> list[Reply]:
        pipeline = RespPipeline(Target.from_url("redis://127.0.0.1:6379/15"), reply_timeout=2.0)
        replies = await asyncio.gather(
            pipeline.send(pack("SET", scratch_key, "u")), pipeline.send(pack("GET", scratch_key))
        )
        await pipeline.aclose()
        return list(replies)

    assert uvloop.run(main()) == ["OK", "u"]


async def test_a_refused_password_fails_the_connection() -> None:
    pipeline = RespPipeline(Target.from_url("redis://:wrong@127.0.0.1:6379/0"), reply_timeout=2.0)
    with pytest.raises(ConnectionError, match="setup"):
        await pipeline.send(pack("PING"))
    await pipeline.aclose()


@asynccontextmanager
async def unix_server(path: Path, received: list[bytes]) -> AsyncIterator[None]:
    """A stand-in Redis on a unix socket answering +PONG to each PING it reads."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            received.append(data)
            writer.write(b"+PONG\r\n" * data.count(b"PING"))
        writer.close()

    server = await asyncio.start_unix_server(serve, str(path))
    try:
        yield
    finally:
        server.close()
        await server.wait_closed()


async def test_a_unix_socket(tmp_path: Path) -> None:
    received: list[bytes] = []
    path = tmp_path / "redis.sock"
    async with unix_server(path, received):
        pipeline = RespPipeline(Target.from_url(f"unix://{path}"), reply_timeout=2.0)
        replies: list[Any] = await asyncio.gather(*(pipeline.send(pack("PING")) for _ in range(4)))
        assert replies == ["PONG"] * 4
        assert received == [pack("PING") * 4]
        await pipeline.aclose()
