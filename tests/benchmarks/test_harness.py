"""The benchmark harness at tiny sizes: it must keep running (nothing here checks a speed)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from pathlib import Path

import httpx
import pytest
import redis
from litestar.testing import TestClient

from api.app import asgi_app
from api.metering.backends import open_store
from api.metering.config import load_config
from benchmarks import caches, request_instructions, store_steps
from benchmarks.__main__ import parse_args
from benchmarks.analytics import run_job
from benchmarks.bare_app import PRICE_BODY_ENV, create_app
from benchmarks.figures import Figure, Goal, read_json, table, write_json
from benchmarks.load import LoadResult, parse_wrk, wrk_available
from benchmarks.servers import bare_command, create_key, free_port, serving, waiting_store_command
from benchmarks.serving import (
    CUSTOMER_PLANS,
    REDIS_URL,
    LoadPlan,
    Target,
    best,
    best_p99,
    create_keys,
    keys_file,
    measure,
    redis_cleanup,
)

LIST_SYMBOLS = "/api/v2/crypto/instruments/list-symbols"


@pytest.mark.parametrize(
    ("project", "anchor", "goal", "passed"),
    [
        (80.0, 100.0, Goal("ratio", ">=", 0.7), True),
        (60.0, 100.0, Goal("ratio", ">=", 0.7), False),
        (3.0, 2.0, Goal("ratio", "<=", 2.0), True),
        (9.0, None, Goal("project", "<", 10.0), True),
        (None, 100.0, Goal("ratio", ">=", 0.7), None),
    ],
)
def test_a_figure_passes_when_its_goal_holds(
    project: float | None, anchor: float | None, goal: Goal, passed: bool | None
) -> None:
    assert Figure("s", "f", "u", project, anchor, goal=goal).passed is passed


def test_the_table_and_json_carry_project_anchor_and_ratio(tmp_path: Path) -> None:
    figures = [
        Figure("api", "route rate", "req/s", 800.0, 1000.0, "bare", Goal("ratio", ">=", 0.7))
    ]
    assert "0.80" in table(figures).splitlines()[2]
    write_json(tmp_path / "run.json", figures, {"workers": 1})
    row = json.loads((tmp_path / "run.json").read_text())["figures"][0]
    assert (row["project"], row["anchor"], row["ratio"], row["pass"]) == (800.0, 1000.0, 0.8, True)
    assert read_json(tmp_path / "run.json")[0] == figures


def test_wrk_output_is_read_from_the_scripts_json_line() -> None:
    line = (
        'BENCH_JSON {"requests": 500, "duration_us": 2000000, "bytes": 9, "non2xx": 0, '
        '"socket_errors": 0, "p50_us": 400, "p90_us": 700, "p99_us": 1500, "max_us": 3000, '
        '"mean_us": 450.0}'
    )
    result = parse_wrk("Running 2s test\n" + line + "\n")
    assert (result.rps, result.p99_ms, result.clean) == (250.0, 1.5, True)


def test_only_names_known_sections() -> None:
    assert parse_args(["--only", "api,metering"]).sections == ["api", "metering"]
    with pytest.raises(SystemExit):
        parse_args(["--only", "apii"])


def test_the_bare_app_serves_the_given_price_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "body.json").write_bytes(b'{"price_history":[]}')
    monkeypatch.setenv(PRICE_BODY_ENV, str(tmp_path / "body.json"))
    with TestClient(create_app()) as client:
        assert client.get("/prices").content == b'{"price_history":[]}'
        assert client.get("/small").json()["success"] is True


@pytest.mark.parametrize(("url", "status"), [("off", 503), (None, 401)])
def test_metering_off_serves_without_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str | None, status: int
) -> None:
    """No warehouse: with metering off a keyless request reaches the route (503), else 401."""
    monkeypatch.setenv("MI_DATA_DIR", str(tmp_path))
    if url is None:
        monkeypatch.delenv("MI_METERING_URL", raising=False)
    else:
        monkeypatch.setenv("MI_METERING_URL", url)
    with TestClient(asgi_app()) as client:
        assert client.get(LIST_SYMBOLS).status_code == status


@pytest.mark.parametrize("job", ["ratio", "layer"])
def test_analytics_jobs_report_their_figures(job: str) -> None:
    result = run_job(job, ["scaled", "3", "120"], repeats=1)
    expected = (
        {"indicator_layer_s", "talib_loop_s"} if job == "ratio" else {"total_s", "peak_rss_mib"}
    )
    assert expected <= result.keys()


def test_the_bare_app_starts_under_the_production_server_and_takes_load(tmp_path: Path) -> None:
    port = free_port()
    command = bare_command(port, 1, "granian")
    plan = LoadPlan(connections=2, seconds=0.5, warmup_seconds=0, rounds=2, tool="python")
    with serving(command, dict(os.environ), port, "/small", tmp_path / "log") as server:
        results = measure([Target("bare", server, ["/small"], {})], plan)
    assert [r.clean for r in results["bare"]] == [True, True]
    # Each run also carries the server's CPU a request, read from its threads in /proc.
    for result in results["bare"]:
        assert result.busiest_thread_us is not None
        assert result.server_cpu_us is not None
        assert 0 < result.busiest_thread_us <= result.server_cpu_us


def test_the_ceiling_app_meters_real_keys_and_only_waits(tmp_path: Path) -> None:
    """benchmarks.waiting_store_app: a key of the real SQLite file is served (the route's own 503
    with no warehouse) with balance headers; a wrong key is still refused."""
    env = {**os.environ, "MI_DATA_DIR": str(tmp_path / "data")}
    env["MI_METERING_URL"] = f"sqlite://{tmp_path / 'metering.sqlite3'}"
    key = create_key(env)
    port = free_port()
    with serving(waiting_store_command(port, 1, "granian"), env, port, "/api/v1/ping", tmp_path / "log") as server:  # fmt: skip
        ok = httpx.get(server.base + LIST_SYMBOLS, headers={"Authorization": f"Bearer {key}"})
        wrong = httpx.get(server.base + LIST_SYMBOLS, headers={"Authorization": f"Bearer {key}x"})
    assert ok.status_code == 503  # no warehouse in tmp_path: the route's answer, metered
    assert ok.headers["x-tokens-cost"] == "1"  # net of a 503
    assert wrong.status_code == 401


def test_the_redis_ceiling_app_meters_real_keys_and_its_batch_call_writes_nothing(
    tmp_path: Path,
) -> None:
    """benchmarks.waiting_store_app on a redis:// URL: a key of the real Redis store is served
    with balance headers, nothing is written beyond the key's own records (no ledger entry, no
    counters), and a wrong key is refused."""
    prefix = f"mi:test-ceiling:{uuid.uuid4().hex[:8]}:"
    env = {**os.environ, "MI_DATA_DIR": str(tmp_path / "data")}
    env["MI_METERING_URL"] = f"{REDIS_URL}?prefix={prefix}"
    try:
        key = create_key(env)
        (customer,) = asyncio.run(create_keys(env["MI_METERING_URL"], ["sandbox"], 1))
        port = free_port()
        with serving(waiting_store_command(port, 1, "granian"), env, port, "/api/v1/ping", tmp_path / "log") as server:  # fmt: skip
            ok = httpx.get(server.base + LIST_SYMBOLS, headers={"Authorization": f"Bearer {key}"})
            limited = httpx.get(
                server.base + LIST_SYMBOLS, headers={"Authorization": f"Bearer {customer}"}
            )
            wrong = httpx.get(
                server.base + LIST_SYMBOLS, headers={"Authorization": f"Bearer {key}x"}
            )
        with redis.Redis.from_url(REDIS_URL) as client:
            written = sorted(name.decode() for name in client.scan_iter(f"{prefix}*"))
    finally:
        redis_cleanup(prefix)
    assert ok.status_code == 503  # no warehouse in tmp_path: the route's answer, metered
    assert ok.headers["x-tokens-cost"] == "1"  # net of a 503
    assert limited.status_code == 503  # a customer's key: admitted and settled, for free
    assert limited.headers["x-tokens-cost"] == "1"
    assert wrong.status_code == 401
    kinds = [name.removeprefix(prefix).split(":")[0] for name in written]
    assert kinds == ["acct", "acct", "clock", "keys"]  # the keys' records: no ledger, no counters


@pytest.mark.parametrize("path", store_steps.PATHS)
def test_the_store_steps_bench_reports_time_per_metered_request(path: str) -> None:
    cost = asyncio.run(store_steps.run("sqlite", "internal", 200, concurrent=4, path=path))
    assert cost.wall > 0
    assert cost.cpu > 0
    assert cost.server is None  # SQLite's work is in this process


def test_the_store_steps_bench_refuses_a_key_count_below_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["store_steps", "sqlite", "--keys", "0"])
    with pytest.raises(SystemExit) as refused:
        store_steps.main()
    assert refused.value.code == 2
    assert "needs a whole number of at least 1, not '0'" in capsys.readouterr().err


def test_the_store_steps_bench_reports_redis_time_per_customer_request() -> None:
    # Pro keys take 300 requests a minute: 300 requests over 4 keys stay within every limit.
    cost = asyncio.run(
        store_steps.run("redis", "pro", 300, concurrent=4, path="admit-release", keys=4)
    )
    assert cost.wall > 0
    assert cost.server is not None
    assert cost.server > 0


def test_the_instruction_count_covers_the_requests_of_customer_keys_and_keeps_their_profile(
    embedded_market: Path, tmp_path: Path
) -> None:
    """Under callgrind, counted only around the measured requests (every one answered 200): a
    customer's request executes tens of thousands of instructions at least; fewer would mean the
    count missed the requests. The profile asked for holds the same instructions, by function."""
    profile = tmp_path / "callgrind.out"
    per_request = request_instructions.count(
        embedded_market, "ceiling", "customers", requests=40, concurrent=4, profile=profile
    )
    assert 20_000 < per_request < 10_000_000
    text = profile.read_text()
    assert text.startswith("# callgrind format")
    (totals,) = re.findall(r"^totals: (\d+)", text, flags=re.MULTILINE)
    assert int(totals) == round(per_request * 40)


def test_a_cache_taken_out_leaves_the_requests_answered_and_costs_them_more(
    embedded_market: Path,
) -> None:
    """The caches section's instrument: without the response cache every request is computed and
    encoded again (still 200s, or `count` raises), so it executes more instructions."""
    with_cache = request_instructions.count(embedded_market, "sqlite", "internal", 40, 4)
    without = request_instructions.count(
        embedded_market, "sqlite", "internal", 40, 4, without=("responses",)
    )
    assert without > with_cache * 1.1


def test_every_cache_of_the_section_can_be_taken_out_by_name() -> None:
    """Each row's cache has a removal, and names are unique (a row measures one cache)."""
    assert len(caches.BY_NAME) == len(caches.CACHES)
    assert all(callable(cache.remove) for cache in caches.CACHES)
    forgetful = caches._Forgetful()
    forgetful["key"] = "value"
    assert "key" not in forgetful
    assert forgetful.setdefault("key", 1) == 1


@pytest.mark.parametrize("argv", [["--requests", "5", "--concurrent", "10"], ["--concurrent", "0"]])
def test_the_instruction_count_refuses_fewer_requests_than_tasks(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MI_REQUEST_INSTRUCTIONS_CHILD", raising=False)
    monkeypatch.setattr("sys.argv", ["request_instructions", "--data-dir", "x", *argv])
    with pytest.raises(SystemExit) as refused:
        request_instructions.main()
    assert refused.value.code == 2
    assert "at least one request a task" in capsys.readouterr().err


def test_the_best_round_is_the_fastest_clean_one() -> None:
    rounds = [_result(requests=100, non2xx=0), _result(300, 5), _result(200, 0)]
    assert best(rounds).requests == 200
    assert (
        best_p99([_result(100, 0, p99=4.0), _result(200, 0, p99=9.0), _result(9, 1, p99=1.0)])
        == 4.0
    )


def _result(requests: int, non2xx: int, p99: float = 2.0) -> LoadResult:
    return LoadResult("wrk", requests, 1.0, non2xx, 0, 1.0, p99, 3.0, 0)


def test_the_metering_bench_makes_keys_of_every_limited_plan_in_turn(tmp_path: Path) -> None:
    """Customer keys come interleaved (sandbox, quant, pro, sandbox, ...), each plan with a budget
    and the rate and connection limits, so a rotation over them loads every plan alike."""
    url = f"sqlite://{tmp_path / 'metering.sqlite3'}"
    keys = asyncio.run(create_keys(url, CUSTOMER_PLANS, 2))

    async def plans() -> list[str]:
        store = open_store(url, load_config())
        try:
            accounts = [await store.authenticate(key) for key in keys]
        finally:
            await store.close()
        return [account.plan for account in accounts if account is not None]

    assert asyncio.run(plans()) == [*CUSTOMER_PLANS, *CUSTOMER_PLANS]
    config = load_config()
    for plan in CUSTOMER_PLANS:
        assert config.plan(plan).limited
        assert not config.plan(plan).unlimited_budget


@pytest.mark.parametrize("tool", ["python", *(["wrk"] if wrk_available() else [])])
def test_a_keyed_load_sends_every_key_of_its_file_in_turn(tmp_path: Path, tool: str) -> None:
    """The ceiling app over real keys: a load rotating over good keys is clean; one more key in
    the file that is not a key is reached too (its requests answer 401)."""
    env = {**os.environ, "MI_DATA_DIR": str(tmp_path / "data")}
    env["MI_METERING_URL"] = f"sqlite://{tmp_path / 'metering.sqlite3'}"
    keys = asyncio.run(create_keys(env["MI_METERING_URL"], CUSTOMER_PLANS, 1))
    good = keys_file(tmp_path / "good", keys)
    bad = keys_file(tmp_path / "bad", [*keys, keys[0] + "x"])
    port = free_port()
    plan = LoadPlan(connections=2, seconds=1, warmup_seconds=0, rounds=1, tool=tool)
    with serving(waiting_store_command(port, 1, "granian"), env, port, "/api/v1/ping", tmp_path / "log") as server:  # fmt: skip
        targets = [
            Target(name, server, ["/api/v1/ping"], {}, path)
            for name, path in (("good", good), ("bad", bad))
        ]
        results = measure(targets, plan)
    assert results["good"][0].clean
    assert results["bad"][0].non2xx > 0
