"""The grammar of finance news: each rule moves the brief's sentiment bucket the way it should.

Sentences are written for these tests in the style of company releases and wire headlines; each is
scored through the enricher the briefs use (headline as title and body) and bucketed with the
product's thresholds (positive at >= 1, negative at <= -1).
"""

from __future__ import annotations

import pytest

from pipelines.incremental.modes import code_version
from pipelines.newsroom import (
    caseless,
    finance_grammar,
    finance_scope,
)
from pipelines.newsroom.enrichment import Article, LexiconEnricher
from pipelines.newsroom.finance_grammar import plain_forms, read_comparisons
from pipelines.newsroom.finance_scope import read_hedges, read_negations, scoped_valences
from pipelines.newsroom.update import HASHED, VERSION


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


@pytest.mark.parametrize(
    "text",
    [
        "Energy stocks make up 5% of the S&P 500",
        "Crypto made up 2% of the fund's assets at the end of June",
        "Banks make up about a third of the index",
    ],
)
def test_a_share_of_a_whole_is_no_rise(scorer: LexiconEnricher, text: str) -> None:
    # "make up 3%" is a share, not "up 3%"
    assert bucket(scorer, text) == "neutral"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The drugmaker failed to win approval for its obesity pill", "negative"),
        ("The company does not expect demand to recover before 2026", "negative"),
        ("The miner no longer expects a loss for the full year", "positive"),
        ("The retailer no longer expects sales to grow this year", "negative"),
        ("The stimulus is not enough to lift consumer demand", "negative"),
        ("Rate cuts were not big enough, economists said", "negative"),
        ("Quarterly revenue did not meet analysts' estimates", "negative"),
        ("The upgrade went live without problems", "positive"),
    ],
)
def test_negation_reaches_the_words_it_governs(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    # VADER looks three words back and stops at words of its lexicon; a negator here governs
    # three words of its clause, fillers not counted
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Congress passes a debt-ceiling deal, averting a default", "positive"),
        ("Stocks shrug off weak jobs data", "positive"),
        ("Profit-taking halts the rally in chip stocks", "negative"),
        # prevented twice: still bad news
        ("Emergency rate cut fails to stop the sell-off", "negative"),
    ],
)
def test_verbs_of_prevention_negate_what_they_prevent(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Hedge funds have never been this bullish on gold",
        "Hedge funds have never been more bullish on the chipmaker",
    ],
)
def test_never_before_this_so_or_more_is_emphasis_not_negation(
    scorer: LexiconEnricher, text: str
) -> None:
    assert bucket(scorer, text) == "positive"


@pytest.mark.parametrize(
    "text",
    [
        "Economists expect payrolls to rise by 180,000 in March",
        "Analysts expect quarterly revenue to decline 4%",
        "Core CPI rose 0.3% in May, in line with forecasts",
        "Revenue grew 5%, in line with the company's guidance",
        "Quarterly sales rose as expected",
    ],
)
def test_the_consensus_and_figures_in_line_with_it_are_no_news(
    scorer: LexiconEnricher, text: str
) -> None:
    # the yardstick a result is read against, or a result that only matched it
    assert bucket(scorer, text) == "neutral"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a forecast stated as news keeps its reading: it is news about the outlook
        ("Sales are expected to rise 5% next year", "positive"),
        ("The company expects margins to shrink in 2025", "negative"),
        # the news beside an in-line figure is still news
        ("Camtek surges 8% as first-quarter shipments come in line with guidance", "positive"),
        ("Revenue rose 4%, in line with expectations, while margins fell", "negative"),
    ],
)
def test_forecasts_in_the_news_and_news_beside_an_in_line_figure_keep_their_reading(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Non-performing loans rose to 3.1% of total lending", "negative"),
        ("The bank's NPL ratio increased to 4.2%", "negative"),
        ("Impairments increased sharply in the quarter", "negative"),
        ("Loan-loss provisions jumped 40%", "negative"),
        ("Credit card charge-offs climbed in the fourth quarter", "negative"),
        ("Bad loans fell for a third quarter", "positive"),
    ],
)
def test_bad_loans_impairments_and_provisions_rising_is_bad_news(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The net loss was smaller than forecast", "positive"),
        ("Quarterly loss narrower than expected", "positive"),
        ("Quarterly loss of $30 million was narrower than the $48 million analysts expected",
         "positive"),
        ("Operating costs rose more than expected", "negative"),
        ("Retail sales rose less than expected in November", "negative"),
        ("Lower-than-expected inflation lifts stocks", "positive"),
        ("Orders were weaker than expected", "negative"),
    ],
)  # fmt: skip
def test_a_result_against_expectations_is_read_with_its_figure(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    # a smaller loss than expected beats; smaller sales than expected miss
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "A company spokesperson declined to comment",
        "The bank declined to comment on the report",
        "The chief executive will step down at the end of the year",
    ],
)
def test_declining_to_comment_and_a_succession_are_no_news(
    scorer: LexiconEnricher, text: str
) -> None:
    assert bucket(scorer, text) == "neutral"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Can bitcoin hit $100,000 this year?", "neutral"),
        ("Is this utility a good stock to buy?", "neutral"),
        # only the question is hedged, not the news after it
        ("Is bitcoin going to zero? Fear spreads after a brutal crash", "negative"),
    ],
)
def test_a_question_is_hedged(scorer: LexiconEnricher, text: str, expected: str) -> None:
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MPLX cut at Credit Suisse on dilution worries", "negative"),
        ("Barclays cools on the brewer", "negative"),
        ("Goldman removes the chipmaker from its conviction buy list", "negative"),
        ("The bank stock was added to the conviction list at Goldman", "positive"),
        ("Retailer loses a bull at Morgan Stanley", "negative"),
        ("Short seller goes short on the lender", "negative"),
        ("Analyst turns negative on the carmaker", "negative"),
        ("Why this REIT is a buy", "positive"),
    ],
)
def test_analyst_stances_without_a_rating_name(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Carmaker closes three plants in Germany",
        "Airline suspends flights to Asia",
        "Miner halts production at its main mine",
        "Retailer to lay off 2,000 workers",
        "Steel giant to axe 3,000 jobs",
        "Crypto lender halts withdrawals",
    ],
)
def test_operations_cut_back_are_bad_news(scorer: LexiconEnricher, text: str) -> None:
    assert bucket(scorer, text) == "negative"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Stocks pare gains after the Fed minutes", "negative"),
        ("Oil erases early losses", "positive"),
        ("Gold extends gains for a third day", "positive"),
        ("Bitcoin extends losses below $60,000", "negative"),
        ("Hedge funds are selling the utility", "negative"),
        ("Whales are accumulating ether", "positive"),
    ],
)
def test_prices_giving_back_or_extending_a_move_and_money_in_and_out(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # description: an award, routine resolutions, a stock market listing
        ("Chef wins an award for the restaurant", "neutral"),
        ("Shareholders approved all resolutions at the AGM", "neutral"),
        ("Shares began trading after the Hong Kong listing", "neutral"),
        # news: a contract won, a regulator's approval, a crypto exchange listing a token
        ("Defence group wins $1.2 billion army contract", "positive"),
        ("FDA approves the company's migraine drug", "positive"),
        ("Binance to list the token", "positive"),
    ],
)
def test_wins_approvals_and_listings_count_where_they_are_news(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Analyst rounds up the week's earnings", "neutral"),
        ("Strategist breaks down three trades", "neutral"),
        ("The group pays down debt", "positive"),
        ("Stock up 3% premarket", "positive"),
    ],
)
def test_a_verbs_particle_is_no_price_move(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    # "rounds up" and "breaks down" move nothing; "pays down debt" reduces it
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Jobless claims hit a three-month high", "negative"),
        ("Uranium hits a 16-year high on nuclear revival", "positive"),
        ("Copper inventories fell to a 15-year low", "positive"),
        ("The peso hit its weakest level since 2016", "negative"),
    ],
)
def test_a_figure_at_its_highest_or_lowest_is_a_move_of_that_figure(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    # a high of jobless claims is bad news, a high of a price good news
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Amazon to create 500 new jobs in Ohio",
        "The economy added 250,000 jobs in May",
        "Tesla says it has 200,000 orders for the truck",
        "The drug met its primary endpoint in a late-stage trial",
        "Canopy gets Health Canada licence for its beverage plant",
        "AbbVie reports estimate-beating quarterly results",
        "Price target raised to $1.00 from 80 cents",
        "Analysts have been lifting their price targets",
        "Tiffany stock just popped 6%",
        "Baird names the chipmaker its top pick for 2025",
    ],
)
def test_new_business_trial_results_approvals_and_price_pops_are_good_news(
    scorer: LexiconEnricher, text: str
) -> None:
    assert bucket(scorer, text) == "positive"


@pytest.mark.parametrize(
    "text",
    [
        # a high a price falls from is no move up
        "Futures dip from all-time highs",
        # a change's direction says more than the rating it lands on
        "Becton Dickinson downgraded to outperform from strong buy at Raymond James",
        "Oil prices fell, paring some of their recent rebound",
        "WTI crude gives back 1% on trade worries",
        "WTI oil down $1.84 to settle at $55.21",
        "Loss per share deepened to 18 cents from 7 cents",
        # indicators whose rise is good for the economy
        "Industrial production contracts 3.8% in October",
        "Construction costs soar to $12 billion",
        "Optimism among small businesses plummets",
        "A securities class action was filed against the lender",
        "Traders bought 10,000 puts on the retailer",
        "Citi reels in its price target on the retailer",
    ],
)
def test_bad_news_the_scorer_missed_on_the_tuning_part(scorer: LexiconEnricher, text: str) -> None:
    assert bucket(scorer, text) == "negative"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Airline reports 18% growth in January traffic", "positive"),
        ("Chipmaker surpasses quarterly earnings and revenue estimates", "positive"),
        ("Retailer now sees full-year EPS of $4.75 to $4.95 vs. prior $5.15 to $5.45", "negative"),
        ("Biotech reports EPS of -$0.45 for the quarter", "negative"),
        ("Oil shipments to China have ground to a halt", "negative"),
        ("Compass Point ups the REIT to neutral", "positive"),
        # dropping a probe is good news for who was probed; dropping a plan is no news
        ("Prosecutor drops investigation into the bank", "positive"),
        ("Google drops plan to buy a stake in the wind park", "neutral"),
        # frozen withdrawals are bad news, a film called Frozen is none
        ("The exchange froze withdrawals after the hack", "negative"),
        ("Frozen 2 opens in cinemas across China", "neutral"),
        ("Correction: the company's results are due on Tuesday", "neutral"),
    ],
)
def test_results_guidance_and_events_read_on_the_tuning_part(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    assert bucket(scorer, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a settlement ends a lawsuit's uncertainty at a cost: not bad news, a little good
        ("The restaurant chain will pay $26 million to settle a wage lawsuit", "neutral"),
        ("The bank agrees to pay $192 million to resolve a tax probe", "neutral"),
        ("The regulator has suspended its probe of the music group", "positive"),
        # a loss written per share is a loss in the comparison
        ("Quarterly EPS $1.88 vs. loss per share $1.23 a year ago", "positive"),
        ("EPS of 42 cents vs. a per-share loss of 24 cents", "positive"),
        ("Net loss of EUR 2.1 mn compared to a net loss of EUR 3.4 mn", "positive"),
        ("U.S. job cuts rise in January, Challenger says", "negative"),
    ],
)
def test_settlements_losses_per_share_and_job_cuts(
    scorer: LexiconEnricher, text: str, expected: str
) -> None:
    assert bucket(scorer, text) == expected


def test_scoped_words_are_prefixed_for_the_lexicon() -> None:
    assert read_negations("Sales did not rise sharply") == "Sales did not_rise not_sharply"
    assert (
        read_hedges("Gold rallies. Is it a bubble?")
        == "Gold rallies. hedge_Is hedge_it hedge_a hedge_bubble?"
    )
    valences = scoped_valences({"rise": 2.0})
    assert valences == pytest.approx(
        {"rise": 2.0, "not_rise": -1.48, "hedge_rise": 0.7, "hedge_not_rise": -0.518}
    )


def test_the_scorer_is_part_of_the_code_version_that_re_enriches_stored_briefs() -> None:
    # a change to the grammar, its scopes or its patterns' search must re-enrich every stored
    # article once, as any enrichment change
    assert code_version(*HASHED) == VERSION
    for left_out in (caseless, finance_grammar, finance_scope):
        assert left_out in HASHED
        assert code_version(*(m for m in HASHED if m is not left_out)) != VERSION
