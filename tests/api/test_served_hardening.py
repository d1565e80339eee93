"""decisions.md, Parameters, Bulk export and Operations, through a real `mi serve` on the embedded
market: a request is charged for what it is served, by one reading of its parameters; no input
takes a worker's memory, CPU or connections beyond its bounds."""

from __future__ import annotations

import io
import socket
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import httpx
import polars as pl
import pyarrow.csv as pa_csv
import pytest

from pipelines.catalog import BRIEFS as BRIEFS_TABLE
from pipelines.catalog import DAILY_PRICES, INSTRUMENTS, Column
from pipelines.warehouse.store import Warehouse
from tests.api.metering.conftest import MiServer, mi_keys_create, mi_serve
from tests.served import ServedApi, clean_env

pytestmark = pytest.mark.slow

V2 = "/api/v2"
BRIEFS = f"{V2}/crypto/newsroom/get-recent-briefs/BTC"
SEARCH = f"{V2}/crypto/newsroom/search-briefs/BTC"
SENTIMENT = f"{V2}/crypto/sentiment/get-sentiment-history/BTC"
BACKTEST = f"{V2}/crypto/trades/get-backtest-summary/BTC/aggressive"
PRICES = f"{V2}/crypto/technical-analysis/get-price-history/BTC"
TREND_HISTORY = f"{V2}/crypto/trades/get-trend-history/BTC"
EXPORT = f"{V2}/crypto/bulk/daily-prices?format=csv"


@pytest.fixture(scope="module")
def api(served_api: ServedApi) -> Iterator[httpx.Client]:
    """A client of the served API with a quant key (budgets, limits and exports apply)."""
    key = served_api.new_key("quant")
    with httpx.Client(base_url=served_api.base, headers=bearer(key), timeout=30) as client:
        yield client


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def cost(response: httpx.Response) -> int:
    return int(response.headers["x-tokens-cost"])


NOT_INTEGERS = [
    (f"{BRIEFS}?limit=5e2", "limit"),
    (f"{BRIEFS}?limit=500.0", "limit"),
    (f"{BRIEFS}?limit=%2B5", "limit"),
    (f"{BRIEFS}?limit=5_000", "limit"),
    (f"{BRIEFS}?limit=%205", "limit"),
    (f"{BRIEFS}?limit=", "limit"),
    (f"{BRIEFS}?limit=%F0%9D%9F%93", "limit"),  # 𝟓, a mathematical digit
    (f"{BACKTEST}?years=2e1", "years"),
    (f"{SENTIMENT}?limit=3.65e3", "limit"),
    (f"{TREND_HISTORY}/%F0%9D%9F%93", "limit"),  # 𝟓 in the path
    (f"{TREND_HISTORY}/5_000", "limit"),
    (f"{PRICES}?from=1e12", "from"),
]


@pytest.mark.parametrize(("path", "parameter"), NOT_INTEGERS)
def test_an_integer_is_ascii_digits_and_anything_else_is_a_422_costing_1(
    api: httpx.Client, path: str, parameter: str
) -> None:
    """decisions.md: `5e2`, `500.0`, `+5`, `5_000`, ` 5`, non-ASCII digits and empty are not
    integers, in the query and in the path; the 422 names the parameter and costs 1 token net
    (today `limit=5e2` served 500 briefs for 3 tokens)."""
    response = api.get(path)
    assert response.status_code == 422, response.text
    assert response.json()["error"].startswith(f"Invalid parameter '{parameter}'")
    assert cost(response) == 1


@pytest.mark.parametrize(
    ("path", "tokens"),
    [
        (f"{BRIEFS}?limit=500", 8),
        (f"{BRIEFS}?limit=0500", 8),  # the same integer, written with a leading zero
        (f"{BRIEFS}?limit=26", 5),
        (f"{BRIEFS}?limit=10000", 8),  # clamped to 500, priced as 500
        (f"{SENTIMENT}?limit=3650", 12),
        (f"{BACKTEST}?years=20", 20),
        (f"{BACKTEST}?years=%2D3", 8),  # -3, clamped to 1
        (f"{TREND_HISTORY}/0031", 7),
    ],
)
def test_a_request_is_charged_for_the_value_it_is_served(
    api: httpx.Client, path: str, tokens: int
) -> None:
    """decisions.md: charged from the values the route serves (after defaults and clamps), by the
    same reading the route makes."""
    response = api.get(path)
    assert response.status_code == 200, response.text
    assert cost(response) == tokens


def test_briefs_served_never_exceed_what_the_limit_paid_for(api: httpx.Client) -> None:
    paid_for_ten = api.get(f"{BRIEFS}?limit=10")
    assert cost(paid_for_ten) == 3
    assert len(paid_for_ten.json()["briefs"]) <= 10


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        (f"{PRICES}?limit=1&limit=5000", "limit"),
        (f"{PRICES}?limit=5000&limit=1", "limit"),
        (f"{BRIEFS}?limit=10&limit=10", "limit"),
        (f"{SEARCH}?keywords=a&keywords=b", "keywords"),
        (f"{V2}/crypto/bulk/daily-prices?symbols=BTC&symbols=ETH", "symbols"),
    ],
)
def test_a_repeated_parameter_answers_422_naming_it(
    api: httpx.Client, path: str, parameter: str
) -> None:
    """decisions.md: no route takes a repeated parameter (today the first value was priced and the
    last served: `limit=1&limit=5000` was the whole series for 2 tokens)."""
    response = api.get(path)
    assert response.status_code == 422, response.text
    assert response.json()["error"] == (
        f"Invalid parameter '{parameter}': given more than once (no parameter takes several values)"
    )
    assert cost(response) == 1


@pytest.mark.parametrize(
    "path",
    [f"{PRICES}?limt=5", f"{BRIEFS}?limit=5&page=2", f"{V2}/crypto/instruments/get-detail/BTC?x=1"],
)
def test_an_unknown_parameter_answers_422_naming_it_and_the_known_ones(
    api: httpx.Client, path: str
) -> None:
    """docs/clients.md: a misspelt parameter is not silently ignored (a `limt=5` would be served
    and priced as the whole series)."""
    response = api.get(path)
    assert response.status_code == 422, response.text
    assert "unknown parameter; this route takes" in response.json()["error"]
    assert cost(response) == 1


def test_search_briefs_takes_20_keywords_of_64_characters_at_most(api: httpx.Client) -> None:
    """decisions.md: more answers 422 (3,000 words cost 43 s of server time for 3 tokens)."""
    twenty = "+".join(f"{chr(97 + i % 26)}{'x' * 63}" for i in range(20))
    assert api.get(f"{SEARCH}?keywords={twenty}").status_code == 200
    many = api.get(f"{SEARCH}?keywords={'+'.join(['bitcoin'] * 21)}")
    assert many.status_code == 422
    assert many.json()["error"] == "Invalid parameter 'keywords': at most 20 keywords, got 21"
    long = api.get(f"{SEARCH}?keywords={'x' * 65}")
    assert long.status_code == 422
    assert "at most 64 characters" in long.json()["error"]
    assert cost(many) == cost(long) == 1


def test_status_answers_from_a_result_at_most_five_seconds_old(served_api: ServedApi) -> None:
    """decisions.md, Operations: the public status route's cost does not grow with calls."""
    first = httpx.get(f"{served_api.base}/api/v1/status").json()
    again = [httpx.get(f"{served_api.base}/api/v1/status").json() for _ in range(20)]
    assert all(answer == first for answer in again)
    assert first["checks"]["warehouse"]["status"] == "ok"
    time.sleep(5.2)
    later = httpx.get(f"{served_api.base}/api/v1/status").json()
    assert later["time"] > first["time"]


def test_a_request_head_over_its_bounds_answers_414_or_431_as_json(api: httpx.Client) -> None:
    """docs/deployment.md: within the server's own limits, too long a target or too many header
    bytes get the `error` envelope (the server's bare answers start far beyond)."""
    long = api.get(f"{BRIEFS}?limit=1&{'x' * 9000}=1")
    assert long.status_code == 414
    assert "at most 8192" in long.json()["error"]
    heavy = api.get(BRIEFS, headers={"X-Padding": "y" * 20_000})
    assert heavy.status_code == 431
    assert "at most 16384" in heavy.json()["error"]


def test_a_connection_that_stops_in_its_request_head_is_closed(served_api: ServedApi) -> None:
    """mi serve closes a connection whose request head is not whole within 10 s, and one left
    idle as long after its last answer (`HEADER_TIMEOUT_SECONDS`)."""
    host, port = served_api.base.removeprefix("http://").split(":")
    partial = socket.create_connection((host, int(port)), timeout=20)
    partial.sendall(b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\n")
    idle = socket.create_connection((host, int(port)), timeout=20)
    idle.sendall(b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\n\r\n")
    started = time.monotonic()
    assert idle.recv(4096).startswith(b"HTTP/1.1 200")
    assert partial.recv(4096) == b""  # closed by the server
    assert idle.recv(4096) == b""
    assert 8 < time.monotonic() - started < 15
    partial.close()
    idle.close()


EXPORT_SYMBOLS = 200
EXPORT_DAYS = 2000
FORMULAS = (
    '=HYPERLINK("http://evil.example","click")',
    "+1+1",
    "-2+3",
    "@SUM(A1)",
    "\tTab",
    "\rCR",
)


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MiServer, dict[str, str]]]:
    """`mi serve` over a warehouse whose crypto daily prices are a 40 MB CSV (200 symbols x 2,000
    days, far more than socket buffers hold) and whose briefs' titles start like formulas."""
    root = tmp_path_factory.mktemp("exports")
    warehouse = Warehouse(root / "warehouse")
    symbols = [f"C{i:03d}" for i in range(EXPORT_SYMBOLS)]
    warehouse.write(INSTRUMENTS, "crypto", instruments(symbols))
    warehouse.write(DAILY_PRICES, "crypto", bars(symbols, EXPORT_DAYS))
    warehouse.write(BRIEFS_TABLE, "crypto", briefs(symbols[0], FORMULAS))
    env = clean_env(root)
    with mi_serve(env, root / "serve.log", workers=1) as server:
        yield server, env


def instruments(symbols: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {"market": "crypto", "symbol": symbols, "name": symbols, "logo": "", "source": "test"}
    )


def bars(symbols: list[str], days: int) -> pl.DataFrame:
    start = date(2020, 1, 1)
    day = pl.date_range(start, start + timedelta(days=days - 1), eager=True)
    frame = pl.DataFrame({"symbol": symbols}).join(pl.DataFrame({"date": day}), how="cross")
    epoch = int(datetime(2020, 1, 1, tzinfo=UTC).timestamp() * 1000)
    return frame.with_columns(
        market=pl.lit("crypto"),
        timestamp=(pl.col("date") - pl.lit(start)).dt.total_days() * 86_400_000 + epoch,
        open=pl.lit(1.5),
        high=pl.lit(2.0),
        low=pl.lit(1.0),
        close=pl.lit(1.75),
        volume=pl.lit(10.0),
        source=pl.lit("test"),
    )


def briefs(symbol: str, titles: tuple[str, ...]) -> pl.DataFrame:
    """One brief a title, every other column a plain value of its type."""
    n = len(titles)
    values: dict[str, object] = {
        "market": ["crypto"] * n,
        "article_id": [f"a{i}" for i in range(n)],
        "timestamp": [1_700_000_000_000 + i for i in range(n)],
        "date": [date(2023, 11, 14)] * n,
        "title": list(titles),
        "symbols": [[symbol]] * n,
        "body": [f"{t} body" for t in titles],
    }
    return pl.DataFrame({c.name: values.get(c.name, [plain(c)] * n) for c in BRIEFS_TABLE.columns})


def plain(column: Column) -> object:
    dtype = column.dtype
    if dtype.is_nested():
        return ["x"]
    if dtype.is_numeric():
        return 0
    return "neutral"


def stalled_export(server: MiServer, key: str, path: str) -> socket.socket:
    """An export whose client reads its head and nothing more (the rest of its file stays unsent)."""
    client = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.sendall(
        f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\r\n".encode()
    )
    assert client.recv(64).startswith(b"HTTP/1.1 200")
    return client


def test_an_export_holds_its_slot_until_its_body_is_sent_or_the_client_has_gone(
    exports: tuple[MiServer, dict[str, str]],
) -> None:
    """decisions.md, Bulk export: a key runs at most 2 exports at once, each holding its in-flight
    slot until its file is sent; a third answers 429 with Retry-After, free. Once a client has
    gone, its slot is free again (today the slot was freed at the first chunk: one key ran 40)."""
    server, env = exports
    key = mi_keys_create(env, "quant")
    held = [stalled_export(server, key, EXPORT) for _ in range(2)]
    try:
        third = httpx.get(f"{server.base}{EXPORT}", headers=bearer(key), timeout=30)
        assert third.status_code == 429
        assert third.json()["message"].startswith("too many simultaneous exports: at most 2")
        assert third.headers["retry-after"] == "1"
        assert cost(third) == 0
        assert httpx.get(f"{server.base}/api/v1/ping", headers=bearer(key)).status_code == 200
        held.pop().close()
        deadline = time.monotonic() + 15
        while True:
            again = httpx.get(f"{server.base}{EXPORT}", headers=bearer(key), timeout=60)
            if again.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert again.status_code == 200
        assert again.content.count(b"\n") == EXPORT_SYMBOLS * EXPORT_DAYS + 1
        assert cost(again) == -(-EXPORT_SYMBOLS * EXPORT_DAYS // 1000)
    finally:
        for client in held:
            client.close()


def test_csv_text_that_starts_like_a_formula_is_written_quoted(
    exports: tuple[MiServer, dict[str, str]],
) -> None:
    """decisions.md, Bulk export: in CSV a text cell starting with =, +, -, @, a tab or a carriage
    return gets a leading ' (spreadsheet formula injection); Parquet carries the text unchanged."""
    server, env = exports
    key = mi_keys_create(env, "quant")
    path = f"{V2}/crypto/bulk/briefs"
    csv = httpx.get(f"{server.base}{path}?format=csv", headers=bearer(key), timeout=30)
    assert csv.status_code == 200
    titles = pa_csv.read_csv(io.BytesIO(csv.content)).column("title").to_pylist()
    assert sorted(titles) == sorted(f"'{title}" for title in FORMULAS)
    parquet = httpx.get(f"{server.base}{path}?format=parquet", headers=bearer(key), timeout=30)
    assert sorted(pl.read_parquet(io.BytesIO(parquet.content))["title"]) == sorted(FORMULAS)
