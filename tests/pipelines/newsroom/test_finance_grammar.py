"""The grammar of finance news: each rule moves the brief's sentiment bucket the way it should.

Sentences are written for these tests in the style of company releases and wire headlines; each is
scored through the enricher the briefs use (headline as title and body) and bucketed with the
product's thresholds (positive at >= 1, negative at <= -1).
"""

from __future__ import annotations

import pytest

from pipelines.incremental.modes import code_version
from pipelines.newsroom import briefs, enrichment, finance_grammar, lexicon, tagging, terms, topics
from pipelines.newsroom.enrichment import Article, LexiconEnricher
from pipelines.newsroom.finance_grammar import plain_forms, read_comparisons
from pipelines.newsroom.update import VERSION


@pytest.fixture(scope="module")
def scorer() -> LexiconEnricher:
    return LexiconEnricher()


def bucket(scorer: LexiconEnricher, text: str) -> str:
    sentiment = scorer.enrich_one(Article("stocks", text, text)).sentiment or 0.0
    return "positive" if sentiment >= 1 else "negative" if sentiment <= -1 else "neutral"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Net loss narrowed to EUR 2.0 mn in the third quarter", "positive"),
        ("Operating costs fell 8% in the quarter", "positive"),
        ("Operating profit decreased by 12% year on year", "negative"),
        ("Net sales grew 6% on stronger demand for paper", "positive"),
        ("Order intake went down in the second half", "negative"),
        ("The group's debt rose sharply after the acquisition", "negative"),
        ("Operating expenses increased by 9%", "negative"),
        ("The company cut 300 jobs at its Finnish mills", "negative"),
        ("The company cuts costs at its mills", "positive"),
        ("A rise in raw material costs weighed on the quarter", "negative"),
        ("Net loss widened to EUR 4.1 mn", "negative"),
        ("Gold edges lower with investors eyeing US data", "negative"),
    ],
)
def test_a_move_is_read_with_what_moves(scorer: LexiconEnricher, text: str, expected: str) -> None:
    # loss, costs and debt going up is bad news; profit, sales and orders going up good news
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Operating profit totalled EUR 7.8 mn compared to EUR 11.2 mn in 2007", "negative"),
        ("Net sales were EUR 13.1 mn, compared with EUR 8.7 mn a year earlier", "positive"),
        ("Net loss was EUR 2.1 mn compared to EUR 3.4 mn a year ago", "positive"),
        ("Operating profit improved from EUR 8.7 mn to EUR 13.1 mn", "positive"),
        ("Operating loss of EUR 1.0 mn compared to a profit of EUR 2.0 mn", "negative"),
        ("Quarterly revenue $4.62 bln vs. $4.80 bln expected", "negative"),
    ],
)
def test_a_comparison_of_two_figures_is_read_from_which_is_current(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    assert bucket(scorer, text) == expected


def test_years_are_not_figures_to_compare() -> None:
    text = "The plant ran from 2007 to 2009 against 2005 plans"
    assert read_comparisons(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Microsoft raises full-year guidance", "positive"),
        ("Retailer lowers its sales outlook for the year", "negative"),
        ("Chipmaker beats analyst estimates", "positive"),
        ("Carmaker misses revenue expectations", "negative"),
        ("Netflix cut to hold at Wedbush", "negative"),
        ("Clovis Oncology downgraded to in line from outperform", "negative"),
        ("Twitter upgraded to positive from neutral at Susquehanna", "positive"),
        ("Tesla price target raised to $290 from $260 at Deutsche Bank", "positive"),
        ("Boeing started at buy with $375 price target", "positive"),
        ("Peabody Energy initiated at hold at Benchmark", "neutral"),
        ("Results came in better than expected", "positive"),
    ],
)
def test_guidance_and_rating_verbs(scorer: LexiconEnricher, text: str, expected: str) -> None:
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Net sales rose by 5 pct", "positive"),
        ("Net sales rose by 5 per cent", "positive"),
        ("Costs up 5% in the quarter", "negative"),
        ("Progressive shares -2.7% after the call", "negative"),
        ("Operating profit fell 14 percent", "negative"),
    ],
)
def test_percent_forms(scorer: LexiconEnricher, text: str, expected: str) -> None:
    assert bucket(scorer, text) == expected


def test_pct_per_cent_and_percent_read_as_the_percent_sign() -> None:
    assert plain_forms("up 5 pct, 6 per cent and 7 percent") == "up 5%, 6% and 7%"


@pytest.mark.parametrize(
    "text",
    [
        "The agreement covers the delivery of 20 machines",
        "The value of the deal was not disclosed",
        "Profit for the period was EUR 4.2 mn",
        "The company has 12.5 mn shares outstanding",
        "The number of employees is about 1,200",
        "Shares of the company are listed on the Helsinki exchange",
    ],
)
def test_everyday_words_carry_no_sentiment_in_finance(scorer: LexiconEnricher, text: str) -> None:
    # VADER rates agreement, value, profit, shares and number as good in everyday speech
    assert bucket(scorer, text) == "neutral"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Memecoin collapses in a rug pull, developers vanish", "negative"),
        ("Bridge exploit drains $100 million from DeFi protocol", "negative"),
        ("Exchange hack: hot wallet emptied", "negative"),
        ("Binance delisting sends token lower", "negative"),
        ("Coinbase listing lifts the token", "positive"),
        ("Miners brace for the halving", "positive"),
        ("Spot bitcoin ETF approval expected this week", "positive"),
        ("FUD spreads across altcoins", "negative"),
        ("FOMO drives retail into memecoins", "positive"),
    ],
)
def test_crypto_words(scorer: LexiconEnricher, text: str, expected: str) -> None:
    assert bucket(scorer, text) == expected


def test_negation_still_applies_to_a_read_move(scorer: LexiconEnricher) -> None:
    # the move becomes one token VADER reads, so its negation rule still flips it
    assert bucket(scorer, "Net sales rose") == "positive"
    assert bucket(scorer, "Net sales did not rise") == "negative"


def test_the_scorer_is_part_of_the_code_version_that_re_enriches_stored_briefs() -> None:
    # a change to the grammar must re-enrich every stored article once, as any enrichment change
    without = code_version(briefs, enrichment, lexicon, tagging, terms, topics)
    assert (
        code_version(briefs, enrichment, finance_grammar, lexicon, tagging, terms, topics)
        == VERSION
    )
    assert without != VERSION
