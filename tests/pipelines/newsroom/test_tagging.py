"""Symbol tagging: names, aliases and tickers are found; English-word tickers need a ticker context."""

from __future__ import annotations

import re
import string
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.embedded_market.universe import build_universe
from pipelines.newsroom.tagging import AliasIndex, build_index, word_key
from tests.pipelines.newsroom.labelled import LABELLED

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


# A batch's index: only the aliases its texts can match, the same mentions.

TRICKY = list("\u0130\u0131\u017f\u212aéß&/.$()- \n")
"""Characters where case-insensitive matching and word boundaries are subtle."""


def _alias_pieces(pairs: list[tuple[str, str]]) -> list[str]:
    texts = [t for symbol, name in pairs for t in (symbol, name, name.split()[0])]
    return [*texts, *(t.upper() for t in texts), *(t.lower() for t in texts)]


@st.composite
def _texts(draw: st.DrawFn, pairs: list[tuple[str, str]]) -> str:
    pieces = _alias_pieces(pairs) + TRICKY + ["shares", "USD", "a", "the", "Inc."]
    return "".join(draw(st.lists(st.sampled_from(pieces), max_size=40)))


@pytest.mark.parametrize("pairs", [CRYPTO, FOREX, COMMODITIES, STOCKS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_index_of_a_batchs_texts_tags_them_as_the_whole_index_does(
    pairs: list[tuple[str, str]], data: st.DataObject
) -> None:
    batch = data.draw(st.lists(_texts(pairs), min_size=1, max_size=4))
    whole, restricted = build_index(pairs), build_index(pairs, batch)
    for text in batch:
        assert restricted.mentions(text) == whole.mentions(text)
        assert restricted.tag(text, text) == whole.tag(text, text)


@pytest.mark.parametrize(
    ("market", "size"), [("crypto", 1_894), ("forex", 758), ("commodities", 454), ("stocks", 1_894)]
)
def test_an_index_of_a_batchs_texts_tags_a_whole_market_as_the_whole_index_does(
    market: str, size: int
) -> None:
    universe = build_universe(market, size)  # the markets of 5,000 instruments
    pairs = list(zip(universe.symbols, universe.names, strict=True))
    headlines = [item.headline for item in LABELLED if item.market == market]
    texts = [*headlines, *(f"{n} ({s}) shares rise; {n.upper()} beats" for s, n in pairs[::97])]
    whole, restricted = build_index(pairs), build_index(pairs, texts)
    assert [restricted.mentions(t) for t in texts] == [whole.mentions(t) for t in texts]
    assert len(restricted.symbols) < len(whole.symbols) / 2


def test_a_batchs_index_leaves_out_the_aliases_its_texts_cannot_match() -> None:
    index = build_index(STOCKS, ["Apple and AT&T rise", "T-bills rally"])
    assert index.symbols == {"AAPL", "T"}
    assert index.tag("Apple and AT&T rise", None) == ["AAPL", "T"]


def test_no_character_outside_ascii_matches_an_ascii_one_but_the_four_folded() -> None:
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    ascii_word_characters = string.ascii_letters + string.digits + "_"
    for char in ascii_word_characters:
        found = re.findall(re.escape(char), every, re.IGNORECASE)
        for other in found:
            assert word_key(other) == char.lower(), (char, other)
    assert word_key("\u0130stanbul") == "istanbul"
    assert word_key("Zürich") is None


def test_a_batchs_index_keeps_the_aliases_whose_first_word_is_not_ascii() -> None:
    pairs = [("NESN", "Nestlé"), ("ORSTED", "Ørsted")]
    texts = ["NESTLÉ and ørsted rise"]
    assert build_index(pairs, texts).tag(texts[0], None) == ["NESN", "ORSTED"]
    assert build_index(pairs).tag(texts[0], None) == ["NESN", "ORSTED"]


def test_a_batchs_index_of_empty_texts_tags_nothing_as_the_whole_index_does() -> None:
    for batch in ([], ["", "  ", "—"]):
        restricted = build_index(STOCKS, batch)
        assert restricted.symbols == frozenset()
        assert [restricted.tag(t, None) for t in batch] == [
            build_index(STOCKS).tag(t, None) for t in batch
        ]
