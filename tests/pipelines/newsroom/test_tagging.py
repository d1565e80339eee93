"""Symbol tagging: names, aliases and tickers are found; English-word tickers need a ticker context."""

from __future__ import annotations

import pytest

from pipelines.newsroom.tagging import AliasIndex, build_index

CRYPTO = [
    ("BTC", "Bitcoin"), ("ETH", "Ethereum"), ("SOL", "Solana"), ("LINK", "Chainlink"),
    ("DOT", "Polkadot"), ("ONE", "Harmony"), ("OP", "Optimism"), ("NEAR", "NEAR Protocol"),
    ("XLM", "Stellar"), ("BCH", "Bitcoin Cash"), ("UNI", "Uniswap"),
]  # fmt: skip
FOREX = [("EURUSD", "EUR/USD"), ("USDJPY", "USD/JPY"), ("GBPUSD", "GBP/USD")]
COMMODITIES = [("GOLD", "Gold"), ("WTI", "WTI Crude Oil"), ("BRENT", "Brent Crude Oil")]
STOCKS = [
    ("AAPL", "Apple Inc."), ("META", "Meta Platforms Inc."), ("T", "AT&T Inc."),
    ("V", "Visa Inc."), ("ALL", "Allstate Corp."), ("GOOGL", "Alphabet Inc."),
]  # fmt: skip


@pytest.fixture(scope="module")
def crypto() -> AliasIndex:
    return build_index(CRYPTO)


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Bitcoin surges; ether follows", ["BTC", "ETH"]),
        ("ETH outpaces BTC as Solana stalls", ["ETH", "BTC", "SOL"]),
        ("$LINK jumps 10% as LINK/USD breaks out", ["LINK"]),
        ("Polkadot (DOT) rises after parachain auction", ["DOT"]),
        ("Harmony ONE token rallies", ["ONE"]),
        ("Traders buy SOL-USD calls", ["SOL"]),
        ("Bitcoin Cash splits from bitcoin again", ["BCH", "BTC"]),
        ("The rally in Stellar (XLM) continues", ["XLM"]),
        ("Why traders like Optimism and Arbitrum", ["OP"]),
    ],
)
def test_names_aliases_and_tickers_are_tagged_in_order_of_first_mention(
    crypto: AliasIndex, title: str, expected: list[str]
) -> None:
    assert crypto.tag(title, None) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Click the link to read more about one thing",
        "Traders are near a decision on the DOT proposal",  # NEAR lower case; DOT bare
        "IT spending is up at ALL firms, OP-ED says",
        "The ONE thing investors should know",
        "Optimism returns to markets",  # a name that is a word, first in its sentence
        "Stellar results lift the mood",
        "Uni students flock to trading apps",
        "Prices Trade Near Record Levels",  # Title Case: capitals say nothing
    ],
)
def test_english_word_tickers_and_names_without_ticker_context_are_not_tagged(
    crypto: AliasIndex, text: str
) -> None:
    assert crypto.tag(text, None) == []


def test_title_then_body_each_symbol_once(crypto: AliasIndex) -> None:
    assert crypto.tag("Solana slips", "Solana (SOL) fell; Bitcoin (BTC) held.") == ["SOL", "BTC"]


def test_forex_pairs_by_slash_plain_dash_and_currency_name() -> None:
    index = build_index(FOREX)
    assert index.tag("EUR/USD climbs as the yen weakens", None) == ["EURUSD", "USDJPY"]
    assert index.tag("EURUSD and GBP-USD in focus; sterling firm", None) == ["EURUSD", "GBPUSD"]
    assert index.tag("Traders watch ECB", None) == []


def test_commodities_by_lower_case_name_and_the_longest_alias_wins() -> None:
    index = build_index(COMMODITIES)
    assert index.tag("gold rises while oil slips", None) == ["GOLD", "WTI"]
    assert index.tag("Brent crude falls", None) == ["BRENT"]
    # "palm oil" is another commodity's alias: it blocks "oil" even with no PALMOIL instrument
    assert index.tag("palm oil exports rise", None) == []


def test_stocks_by_short_company_name_and_context_for_short_tickers() -> None:
    index = build_index(STOCKS)
    assert index.tag("Apple and Google lead tech higher", None) == ["AAPL", "GOOGL"]
    assert index.tag("AT&T cuts prices; NYSE: T slips", None) == ["T"]
    assert index.tag("V shares rise", None) == ["V"]
    assert index.tag("ALL of the majors fell; T-bills rallied", None) == []
    assert index.tag("Shares of Meta fall", None) == ["META"]
    assert index.tag("the meta of the market", None) == []


def test_symbols_only_of_the_market_indexed() -> None:
    index = build_index(FOREX)
    assert index.tag("Bitcoin and gold rally", None) == []
    assert index.symbols == {"EURUSD", "USDJPY", "GBPUSD"}
