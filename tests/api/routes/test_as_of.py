"""Rule (decisions.md, "Point in time"): `as_of` answers any data route as the API did then.

End to end: a real `mi serve` over a real warehouse; answers of every data route are recorded,
then a news refresh and a daily run publish new versions; asked `as_of` each recorded instant
(and each recorded version id), every route gives the same bytes and the same ETag it gave then.
Every answer says which version it comes from; `/api/v1/versions` lists them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.metering.conftest import MI
from tests.served import END_DATE, INSTRUMENTS, NOW, ServedApi, clean_env, serving

pytestmark = pytest.mark.slow

Answer = tuple[int, bytes, str | None, str | None, str | None]
"""status, body, ETag, x-data-version, x-data-published"""


def _example_url(path: str, operation: dict[str, Any]) -> str:
    examples = {
        p["name"]: p["example"] for p in operation.get("parameters", []) if p["in"] == "path"
    }
    return re.sub(r"\{([^}]+)\}", lambda m: str(examples[m.group(1)]), path)


def _data_urls(served: ServedApi) -> list[str]:
    """Every documented route that takes `as_of`, with its example path parameters."""
    document = httpx.get(f"{served.base}/schema/openapi.json", timeout=30).json()
    urls = []
    for path, item in document["paths"].items():
        operation = item["get"]
        if any(p["name"] == "as_of" for p in operation.get("parameters", [])):
            urls.append(_example_url(path, operation))
    return urls


def _get(client: httpx.Client, url: str, **params: str) -> Answer:
    answer = client.get(url, params=params)
    headers = answer.headers
    return (
        answer.status_code,
        answer.content,
        headers.get("etag"),
        headers.get("x-data-version"),
        headers.get("x-data-published"),
    )


CLOCKED = "/search-briefs/"
"""The one route whose answer depends on the clock too (its 24-hour window, by the minute)."""


def _at_an_instant(client: httpx.Client, url: str) -> tuple[datetime, Answer]:
    """The answer and an instant it answers for: search-briefs' window moves each minute, so a
    request that straddles a minute's end is asked again."""
    while True:
        before = datetime.now(UTC)
        answer = _get(client, url)
        if datetime.now(UTC).replace(second=0, microsecond=0) == before.replace(second=0, microsecond=0):  # fmt: skip
            return before, answer


def _materialize(data_dir: Path, *args: str, **env: str) -> None:
    done = subprocess.run(
        [MI, "materialize", *args],
        env=clean_env(data_dir, MI_INSTRUMENTS=INSTRUMENTS, **env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _wait_for_new_version(client: httpx.Client, url: str, old: str | None) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        version = client.get(url).headers.get("x-data-version")
        if version != old:
            return str(version)
        time.sleep(0.1)
    pytest.fail("the server never served the new version")


def test_as_of_answers_every_route_as_it_was_served_then(
    embedded_market: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(embedded_market, data_dir, ignore=shutil.ignore_patterns("metering*"))
    with serving(clean_env(data_dir), tmp_path / "serve.log") as served:
        key = served.new_key("internal")
        auth = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=served.base, headers=auth, timeout=30) as client:
            _record_and_replay(client, data_dir, _data_urls(served))


def _record_and_replay(client: httpx.Client, data_dir: Path, urls: list[str]) -> None:
    assert len(urls) >= 20
    assert any("/bulk/" in u for u in urls)
    recorded: list[dict[str, tuple[datetime, Answer]]] = []

    def record() -> str | None:
        answers = {url: _at_an_instant(client, url) for url in urls}
        recorded.append(answers)
        versions = {a[3] for _, a in answers.values()}
        assert len(versions) == 1, versions  # one version answers them all
        assert None not in versions
        assert all(a[4] is not None for _, a in answers.values())
        return versions.pop()

    first = record()
    later_news = (datetime.fromisoformat(NOW) + timedelta(hours=6)).isoformat()
    _materialize(data_dir, "--job", "news", MI_END_DATE=END_DATE, MI_NOW=later_news)
    second = _wait_for_new_version(client, urls[0], first)
    record()
    next_day = (datetime.fromisoformat(END_DATE) + timedelta(days=1)).date().isoformat()
    _materialize(data_dir, MI_END_DATE=next_day, MI_NOW=later_news)
    third = _wait_for_new_version(client, urls[0], second)
    assert len({first, second, third}) == 3

    for answers in recorded:
        for url, (instant, then) in answers.items():
            stamp = instant.isoformat().replace("+00:00", "Z")
            assert _get(client, url, as_of=stamp) == then, (url, stamp)
            if CLOCKED not in url:  # its window ends at the request's time, or at an instant's
                assert _get(client, url, as_of=str(then[3])) == then, (url, then[3])
            not_modified = client.get(url, params={"as_of": stamp}, headers={"If-None-Match": str(then[2])})  # fmt: skip
            assert not_modified.status_code == 304
            assert not_modified.headers["x-data-version"] == then[3]

    listed = client.get("/api/v1/versions").json()["versions"]
    assert [v["version"] for v in listed[:3]] == [third, second, first]
    assert any("raw_news" in tables for tables in listed[1]["changed"].values())
    assert any("daily_prices" in tables for tables in listed[0]["changed"].values())


def test_as_of_refuses_what_it_cannot_answer(served_api: ServedApi) -> None:
    key = served_api.new_key("internal")
    auth = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=served_api.base, headers=auth, timeout=30) as client:
        _refusals(client, served_api.base)


def _refusals(client: httpx.Client, base: str) -> None:
    url = "/api/v2/crypto/instruments/list-symbols"
    current = client.get(url)
    malformed = client.get(url, params={"as_of": "yesterday"})
    assert malformed.status_code == 422
    assert "as_of" in malformed.json()["error"]
    before = client.get(url, params={"as_of": "2001-01-01T00:00:00Z"})
    assert before.status_code == 404
    assert "oldest retained" in before.json()["error"]
    future = client.get(url, params={"as_of": "2999-01-01T00:00:00+02:00"})
    assert (future.status_code, future.content) == (200, current.content)
    assert future.headers["etag"] == current.headers["etag"]
    unknown = client.get(url, params={"as_of": "12345"})
    assert unknown.status_code == 404
    listed = client.get("/api/v1/versions")
    assert listed.status_code == 200
    assert listed.json()["versions"][0]["version"] == current.headers["x-data-version"]
    assert listed.headers["x-tokens-cost"] == "0"
    assert listed.headers.get("x-data-version") is None  # the log, not a data answer
    newest = listed.json()["versions"][0]["published"]
    day = newest[:10]
    same_day = [v for v in listed.json()["versions"] if v["published"].startswith(day)]
    by_day = client.get("/api/v1/versions", params={"from": day, "to": day}).json()
    assert by_day == {"versions": same_day}
    assert client.get("/api/v1/versions", params={"to": "2001-01-01"}).json() == {"versions": []}
    backwards = client.get("/api/v1/versions", params={"from": "2026-03-02", "to": "2026-03-01"})
    assert backwards.status_code == 422
    assert client.get("/api/v1/versions", params={"from": "soon"}).status_code == 422
    assert client.get("/api/v1/versions", params={"from": "12345"}).status_code == 422
    # limit is clamped to 1..500 (decisions.md), not refused
    one = client.get("/api/v1/versions", params={"limit": "0"}).json()["versions"]
    assert one == listed.json()["versions"][:1]
    many = client.get("/api/v1/versions", params={"limit": "9999"})
    assert many.json() == listed.json()  # fewer than 500 retained here
    assert client.get("/api/v1/versions", params={"limit": "ten"}).status_code == 422
    assert httpx.get(f"{base}/api/v1/versions").status_code == 401
