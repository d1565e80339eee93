"""Rule (decisions.md, "Freshness"): data-status says, per day of a market's calendar, whether it
is available, degraded (a WARN check failed), pending (not due yet) or missing (an ERROR check
failed, or absent although due), naming the failed checks; free with a valid key.

End to end: a real `mi materialize` over a file drop that ends yesterday, with a symbol that
stopped trading a week ago (its fresh check fails), a symbol that skipped a day (a gap), and days
before the first bar; then a real `mi serve`. Today is not due yet.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from pipelines.catalog import MARKETS
from pipelines.catalog.quality import last_due_day, trades_on
from tests.api.metering.conftest import MI
from tests.served import ServedApi, serving

pytestmark = pytest.mark.slow

TODAY = datetime.now(UTC).date()
END = TODAY - timedelta(days=1)
FIRST = END - timedelta(days=30)
STOPPED = END - timedelta(days=7)
"""ETH's last bar: beyond crypto's freshness budget (2 days) at END."""
SKIPPED = next(d for d in (END - timedelta(days=n) for n in range(12, 20)) if d.isoweekday() <= 5)
"""A weekday MSFT has no bar on (AAPL has one)."""
FRESH = "daily_prices.fresh"
GAP = "daily_prices.no_missing_trading_days"


def _bar(day: date, n: int) -> str:
    price = 100 + n
    return f"{day},{price},{price + 2},{price - 1},{price + 1},1000"


def write_drop(root: Path) -> None:
    series = {
        "crypto": {"BTC": END, "ETH": STOPPED},
        "stocks": {"AAPL": END, "MSFT": END},
        "forex": {"EURUSD": END},
        "commodities": {"GOLD": END},
    }
    for market, symbols in series.items():
        (root / "instruments").mkdir(parents=True, exist_ok=True)
        listing = ["symbol,name,logo", *(f"{s},{s},https://example.com/{s}.png" for s in symbols)]
        (root / "instruments" / f"{market}.csv").write_text("\n".join(listing) + "\n")
        (root / "prices" / market).mkdir(parents=True)
        for symbol, last in symbols.items():
            days = [FIRST + timedelta(days=n) for n in range((last - FIRST).days + 1)]
            lines = ["date,open,high,low,close,volume"]
            lines += [
                _bar(day, n)
                for n, day in enumerate(days)
                if trades_on(market, day) and (symbol, day) != ("MSFT", SKIPPED)
            ]
            (root / "prices" / market / f"{symbol}.csv").write_text("\n".join(lines) + "\n")


SOURCES = "".join(f'[markets.{m}]\nkind = "file_drop"\nroot = "drop"\n' for m in MARKETS)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApi]:
    root = tmp_path_factory.mktemp("data-status")
    write_drop(root / "drop")
    (root / "sources.toml").write_text(SOURCES)
    env = {name: value for name, value in os.environ.items() if not name.startswith("MI_")}
    env |= {
        "MI_DATA_DIR": str(root / "data"),
        "MI_SOURCES": str(root / "sources.toml"),
        "MI_END_DATE": END.isoformat(),
    }
    done = subprocess.run(
        [MI, "materialize", "--job", "daily"], env=env, capture_output=True, text=True, timeout=600
    )
    # ETH's failed fresh check fails the run (exit 1), after every table is committed.
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ERROR daily_prices:fresh" in done.stdout
    assert "price_rejects" not in done.stdout.split("checks:")[-1]
    with serving(env, root / "serve.log") as api:
        yield api


@pytest.fixture
def client(served: ServedApi) -> Iterator[httpx.Client]:
    auth = {"Authorization": f"Bearer {served.new_key('internal')}"}
    with httpx.Client(base_url=served.base, headers=auth, timeout=30) as http:
        yield http


def expected(market: str, day: date) -> tuple[str, list[str]]:
    """What the drop makes of `day`, by the rule."""
    if day > END:
        return ("pending" if day > last_due_day(datetime.now(UTC)) else "missing"), []
    if day < FIRST:
        return "missing", []  # absent although due
    if market == "crypto" and day > STOPPED:
        return "missing", [FRESH]  # ETH lacks it: its fresh check failed
    if market == "stocks" and day == SKIPPED:
        return "degraded", [GAP]
    return "available", []


def test_every_day_of_the_calendar_is_listed_newest_first_with_its_condition(
    client: httpx.Client,
) -> None:
    since = FIRST - timedelta(days=3)
    for market in ("crypto", "stocks"):
        answer = client.get(f"/api/v2/{market}/data-status", params={"from": str(since)})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["market"] == market
        days = [since + timedelta(days=n) for n in range((TODAY - since).days + 1)]
        listed = [d for d in reversed(days) if trades_on(market, d)]
        assert [d["date"] for d in body["days"]] == [str(d) for d in listed]
        for entry, day in zip(body["days"], listed, strict=True):
            status, checks = expected(market, day)
            assert (entry["status"], entry["checks"]) == (status, checks), (market, day)
    today = client.get("/api/v2/crypto/data-status").json()["days"][0]
    assert today == {"date": str(TODAY), "status": "pending", "checks": []}


def test_the_default_is_the_last_30_days_and_it_costs_nothing(client: httpx.Client) -> None:
    answer = client.get("/api/v2/crypto/data-status")
    days = answer.json()["days"]
    assert (days[0]["date"], days[-1]["date"], len(days)) == (
        str(TODAY),
        str(TODAY - timedelta(days=29)),
        30,
    )
    assert answer.headers["x-tokens-cost"] == "0"
    assert answer.headers["x-data-version"]
    assert answer.headers["x-data-published"]
    again = client.get("/api/v2/crypto/data-status", headers={"If-None-Match": answer.headers["etag"]})  # fmt: skip
    assert again.status_code == 304
    assert httpx.get(f"{client.base_url}/api/v2/crypto/data-status").status_code == 401


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"from": "2026-13-01"}, "from"),
        ({"to": "yesterday"}, "to"),
        ({"from": "2026-03-02", "to": "2026-03-01"}, "from"),
        ({"as_of": "soon"}, "as_of"),
    ],
)
def test_a_bad_range_answers_422_naming_the_parameter(
    client: httpx.Client, params: dict[str, str], named: str
) -> None:
    answer = client.get("/api/v2/stocks/data-status", params=params)
    assert answer.status_code == 422
    assert named in answer.json()["error"]


def test_at_most_366_days_are_listed_and_an_unknown_market_is_404(client: httpx.Client) -> None:
    year = client.get("/api/v2/crypto/data-status", params={"from": "2025-01-01", "to": "2026-01-01"})  # fmt: skip
    assert len(year.json()["days"]) == 366
    longer = client.get("/api/v2/crypto/data-status", params={"from": "2020-01-01", "to": "2026-01-01"})  # fmt: skip
    assert longer.json() == year.json()  # the 366 days through `to`
    first = client.get("/api/v2/crypto/data-status", params={"to": "0001-01-05"})
    assert [d["date"] for d in first.json()["days"]][-1] == "0001-01-01"
    last = client.get("/api/v2/crypto/data-status", params={"to": "9999-12-31"}).json()["days"]
    assert (len(last), last[0]["date"]) == (30, "9999-12-31")
    assert {d["status"] for d in last} == {"pending"}
    assert client.get("/api/v2/bonds/data-status").status_code == 404
