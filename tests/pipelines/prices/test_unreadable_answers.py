"""Run-level rule: when most of a market's answers in a run are unreadable (an HTML page served at
HTTP 200, say), the source is broken and the run fails; a few unreadable answers are rejects."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from pipelines.prices.sources.base import SourceError
from pipelines.prices.sources.ecb import EcbSource
from pipelines.prices.sources.http import HttpFetcher, HttpPolicy, ListedInstrument
from pipelines.prices.sources.stooq import StooqSource
from pipelines.prices.update import MarketPrices, Request, update_market
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.store import Warehouse
from tests.pipelines.prices.loopback import Reply, route, serve

FAST = HttpFetcher(HttpPolicy(timeout_seconds=5, max_retries=0, allowed_hosts=("127.0.0.1",)))
QUOTES = "/q/d/l/"
STOCKS = [
    ListedInstrument("AAPL", "Apple Inc."),
    ListedInstrument("MSFT", "Microsoft"),
    ListedInstrument("NVDA", "NVIDIA"),
]
HTML = Reply(fixture="stooq/html_page_at_200.html", content_type="text/html")
AAPL = Reply(fixture="stooq/aapl.us_d.csv", content_type="text/csv")


def update(tmp_path: Path, source: StooqSource | EcbSource, market: str) -> MarketPrices:
    tx = RunTransaction(Warehouse(tmp_path / "warehouse"), "run-1", "prices")
    symbols = [item.symbol for item in source.listing]
    return update_market(tx, source, Request(market, symbols, through=date(2024, 1, 5)))


def test_most_answers_unreadable_fail_the_run_naming_the_url_and_the_first_body(
    tmp_path: Path,
) -> None:
    routes = [(route(QUOTES, s="aapl.us"), [AAPL]), (route(QUOTES), [HTML])]
    with serve(routes) as server:
        source = StooqSource(STOCKS, "sources.toml", base_url=server.base_url, http=FAST)
        with pytest.raises(SourceError) as error:
            update(tmp_path, source, "stocks")
    message = str(error.value)
    assert message.startswith(f"stocks: 2 of 3 answers from GET {server.base_url}/q/d/l/ were")
    assert "s=msft.us" in message  # the first unreadable answer, in full
    assert "<title>Stooq - maintenance</title>" in message


def test_a_minority_of_unreadable_answers_are_rejects_and_the_run_goes_on(tmp_path: Path) -> None:
    routes = [(route(QUOTES, s="nvda.us"), [HTML]), (route(QUOTES), [AAPL])]
    with serve(routes) as server:
        source = StooqSource(STOCKS, "sources.toml", base_url=server.base_url, http=FAST)
        result = update(tmp_path, source, "stocks")
    assert result.rejects["reason"].to_list() == [
        "response is not Date,Open,High,Low,Close[,Volume] CSV"
    ]
    assert "s=nvda.us" in result.rejects["source"].item()


def test_a_market_asked_once_fails_when_its_only_answer_is_unreadable(tmp_path: Path) -> None:
    forex = [ListedInstrument("EURUSD", "EUR/USD")]
    page = Reply(fixture="ecb/html_page_at_200.html", content_type="text/html")
    with serve([(route("/service/data/EXR/D.USD.EUR.SP00.A"), [page])]) as server:
        source = EcbSource(forex, "sources.toml", base_url=server.base_url, http=FAST)
        with pytest.raises(SourceError, match=r"^forex: 1 of 1 answers from GET .*EXR"):
            update(tmp_path, source, "forex")


def test_no_data_answers_are_readable_and_never_fail_the_run(tmp_path: Path) -> None:
    no_data = Reply(fixture="stooq/no_data.txt", content_type="text/plain")
    with serve([(route(QUOTES), [no_data])]) as server:
        source = StooqSource(STOCKS, "sources.toml", base_url=server.base_url, http=FAST)
        result = update(tmp_path, source, "stocks")
    assert set(result.rejects["reason"]) == {
        "no data for AAPL",
        "no data for MSFT",
        "no data for NVDA",
    }
