"""The grammar of financial news: moves of figures, comparisons and ratings read as sentiment tokens.

Plain VADER scores words alone: "profit" is good and "loss" bad whatever happens to them, and
"decreased" or "EUR 7.8 mn compared to EUR 11.2 mn" carry nothing. Finance news says whether
something good or bad went up or down, so each move is combined with what moves (loss narrowed:
good; costs up: bad) and rewritten to one token, `finup` (good news) or `findown` (bad news), that
the finance lexicon scores. VADER then reads the rewritten text with its own negation and
intensifier rules ("profit did not rise" is bad news).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from pipelines.newsroom import lexicon
from pipelines.newsroom.caseless import Caseless, substitute_each
from pipelines.newsroom.finance_scope import (
    BAD_NEWS,
    GOOD_NEWS,
    MEASURED,
    Word,
    read_scopes,
    words_of,
)
from pipelines.newsroom.terms import term_pattern


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


GOOD_WHEN_UP = _words(
    """profit profits earnings income revenue revenues sales turnover orders order bookings
    backlog margin margins ebit ebitda eps dividend dividends payout guidance outlook forecast
    forecasts target targets estimate estimates rating view views demand deliveries shipments
    subscriber subscribers user users customer customers traffic occupancy volume volumes share
    shares stock stocks price prices valuation value cash cashflow result results return returns
    productivity profitability efficiency market markets jobs workforce staff headcount
    employment savings surplus growth capacity stake inflows tvl hashrate liquidity buyback
    buybacks exports confidence sentiment index gdp wages payrolls pt pts rtg activity optimism"""
)
BAD_WHEN_UP = _words(
    """loss losses deficit cost costs expenses expense spending debt debts borrowings
    liabilities writedowns write-downs impairment impairments charges provisions unemployment
    jobless layoffs redundancies churn defaults delinquencies outflows inflation cpi ppi risk risks
    volatility inventories stockpiles shorts claims bankruptcies fees fines penalties
    liquidations fear fears worries concerns concern uncertainty recession pressure pressures
    headwinds tensions strain stress pessimism npls shortinterest charge-offs chargeoffs write-offs
    writeoffs arrears delinquency complaints spreads discount burn"""
)
EITHER_WAY = _words(
    """rate rates interest taxes tax capex investment yield yields production output supply
    supplies"""
)
"""Good for one side and bad for the other (a producer's output, a bond's yield): no sentiment."""

QUANTITIES: dict[str, int] = (
    dict.fromkeys(EITHER_WAY, 0) | dict.fromkeys(BAD_WHEN_UP, -1) | dict.fromkeys(GOOD_WHEN_UP, 1)
)
"""What moves, by whether its rise is good (+1), bad (-1) or neither (0) for investors."""

RISES = _words(
    """rose rise rises risen rising increase increases increased increasing grew grow grows
    growing grown jumped jump jumps climbed climb climbs gained gains surged surge surges soared
    improved improve improves improvement improving expanded expand expands widened widen widens
    widening higher doubled double doubles tripled rebounded recovered bounced bounces raised
    raises raise raising lifted lifts lift boosted boosts boost hiked hikes hike upped ups
    strengthened stronger up upmove accelerated accelerates edges edged ticked exceeded exceeds
    exceed exceeding ramps ramped topped bigger larger lifting hiking boosting upping popped pops
    pop popping spike spiked spikes spiking zoomed zooms rocketed rockets create creates created
    creating soar soars soaring surging skyrocket skyrockets skyrocketed skyrocketing deepen
    deepens deepened deepening"""
)
FALLS = _words(
    """fell fall falls fallen falling decrease decreases decreased decreasing decline declines
    declined declining dropped drop drops dropping lower lowered lowers lowering cut cuts cutting
    reduced reduce reduces reducing reduction trimmed trims trim slashed slashes slash shrank
    shrink shrinks shrunk contracted contracts contraction narrowed narrow narrows narrowing
    slipped slips slip slid sank sinks tanked tanks tank sagged sags plunged plunges tumbled
    slowing
    tumbles weakened weakens weaker halved eased eases dipped dips down downmove deteriorated
    deterioration smaller lost sheds shed pulls pulled withdraws withdrew suspends suspended
    scraps scrapped slowed slows decelerated subside subsides subsided axe axes axed axing
    eliminate eliminates eliminated eliminating slipping sliding sinking tumbling sagging skid
    skids skidded skidding nosedive nosedives nosedived dives dived diving plummet plummets
    plummeted plummeting trimming diminish diminishes diminished diminishing dwindle dwindles
    dwindled dwindling muted subdued"""
)
"""Words that say a figure went up or down: verbs, nouns and adjectives alike."""

TAKES_OBJECT = _words(
    """raised raises raise raising lifted lifts lift boosted boosts boost hiked hikes hike upped
    ups increased increases increase doubled tripled expanded expand expands higher bigger larger
    lower lowered lowers lowering cut cuts cutting reduced reduce reduces reducing trimmed trims
    trim slashed slashes slash halved smaller weaker stronger pulls pulled withdraws withdrew
    suspends suspended scraps scrapped improved improve improves rise decline decrease drop fall
    growth reduction improvement axe axes axed axing eliminate eliminates eliminated eliminating
    lifting hiking boosting upping create creates created creating muted subdued"""
)
"""Moves whose figure usually follows them ("raises guidance", "higher costs", "a rise in sales")."""

_ADJECTIVES = _words("higher lower weaker stronger bigger smaller muted subdued")
_MOVE_ENDS = _words(
    """to by on in at after as with over from amid for since ahead following toward towards
    against versus vs while but and again further of before despite"""
)
"""Words after which a move is over: "Gold edges lower on ...", "rose 5% to ..."."""
_AMOUNTS = _words(
    "over about nearly almost more sharply as on after amid following in premarket from"
)
"""Words after which "up" or "down" is a move ("down over 500 points"), not a phrase ("set up")."""
_BACK_WINDOW = 6
_AHEAD_WINDOW = 4


def read_moves(text: str) -> str:
    """The text with every move of a figure rewritten to `finup` or `findown`."""
    words = words_of(text)
    out = [w.text for w in words]
    for i, word in enumerate(words):
        is_move = word.key in RISES or word.key in FALLS
        if not is_move or word.text.startswith("UPS"):  # UPS, the carrier, is no rise
            continue
        found = moved_figure(words, i)
        if found is None:
            continue
        at, good = found
        rise = 1 if word.key in RISES else -1
        token = MEASURED if good == 0 else GOOD_NEWS if rise * good > 0 else BAD_NEWS
        out[i] = _retoken(word, token)
        if at != i:
            out[at] = _retoken(words[at], MEASURED)
    return " ".join(out)


def _retoken(word: Word, token: str) -> str:
    """The token in the word's place, its punctuation kept: the clause and sentence ends that
    the scopes read ("sales fell, but ...", "profit rose. Is it enough?")."""
    return token + word.text[len(word.text.rstrip(".,;:!?")) :]


def moved_figure(words: Sequence[Word], i: int) -> tuple[int, int] | None:
    """Where the figure that word i moves is (i itself for its subject's price) and whether its
    rise is good (+1), bad (-1) or neither (0); None when the word is no move here."""
    key = words[i].key
    if key in ("up", "down", "upmove", "downmove"):
        # "sales up 5%": these follow their figure, closely
        return _look_back(words, i, 2) or _price_move(words, i)
    ahead = _look_ahead(words, i)
    if key in TAKES_OBJECT or _next_key(words, i) in ("in", "of"):
        return ahead or _look_back(words, i, _BACK_WINDOW) or _price_move(words, i)
    return _look_back(words, i, _BACK_WINDOW) or ahead or _price_move(words, i)


def _next_key(words: Sequence[Word], i: int) -> str | None:
    return words[i + 1].key if i + 1 < len(words) else None


def _look_back(words: Sequence[Word], i: int, window: int) -> tuple[int, int] | None:
    for j in range(i - 1, max(-1, i - 1 - window), -1):
        if words[j].key in QUANTITIES:
            j = _head_figure(words, j)
            return j, QUANTITIES[words[j].key]
        if words[j].ends_clause:
            return None
    return None


_OF_WORDS = _words("of in for on at per")
_DETERMINERS = _words("the a an its their his her our this that these those")


def _head_figure(words: Sequence[Word], j: int) -> int:
    """The figure that the one at j qualifies, if any: "short interest in the stock rose" moves
    short interest, "the price of oil fell" the price; else j."""
    k = j - 1
    while k >= 0 and words[k].key in _DETERMINERS:
        k -= 1
    if k >= 1 and words[k].key in _OF_WORDS and words[k - 1].key in QUANTITIES:
        return k - 1
    return j


def _look_ahead(words: Sequence[Word], i: int) -> tuple[int, int] | None:
    if words[i].ends_clause:
        return None
    for j in range(i + 1, min(len(words), i + 1 + _AHEAD_WINDOW)):
        if words[j].key in QUANTITIES:
            return j, QUANTITIES[words[j].key]
        # qualifiers pass ("raises full-year guidance", "cut 200 jobs", "slash oil prices"),
        # and so does "in" or "of" right after a noun ("a rise in costs")
        in_of_after_noun = j == i + 1 and words[j].key in ("in", "of")
        if words[j].ends_clause or (words[j].key in _MOVE_ENDS and not in_of_after_noun):
            return None
    return None


def _price_move(words: Sequence[Word], i: int) -> tuple[int, int] | None:
    """A move with no figure named moves its subject's price ("Gold edges lower", "Dow is down
    500 points"), unless the word needs an object it lacks ("cut" alone), is part of a phrase
    ("set up") or describes the noun after it ("a bigger role", "weakened rouble")."""
    key, following = words[i].key, _next_key(words, i)
    if key in ("up", "down"):
        moved = following is not None and (
            _is_figure(following) or following in _AMOUNTS or following.endswith("ly")
        )
        return (i, 1) if moved else None
    if key in TAKES_OBJECT and key not in _ADJECTIVES:
        return None
    if following is None or words[i].ends_clause or _ends_move(following):
        return i, 1
    return None


def _ends_move(key: str) -> bool:
    return _is_figure(key) or key.endswith(("ly", "%")) or key in _MOVE_ENDS


def _is_figure(key: str) -> bool:
    """A number, with its currency if any: "down $1.84", "up 3%", "down -2"."""
    return key.lstrip("$€£¥+-−")[:1].isdigit()


_PERCENT = re.compile(r"(\d)\s?(?:pct|per cent|percent|p\.c\.)(?!\w)", re.IGNORECASE)
_PLAIN_PHRASES: tuple[tuple[Caseless, str], ...] = tuple(
    (Caseless(pattern), word)
    for pattern, word in (
        # no move and no news: "declined to comment"
        (
            r"\b(?:declined|declines|decline|declining|refused|refuses|refuse|refusing) to"
            r" (?:comment|elaborate|say|disclose|confirm|specify|discuss|give details)\b",
            "nocomment",
        ),
        (r"\b(?:declined|declines|declining) comment\b", "nocomment"),
        # bad quantities named in two words, so that their rise reads as bad news
        (
            r"\b(?:non-?performing|bad|soured|sour|problem|impaired|doubtful|delinquent)"
            r" (?:loans?|debts?|assets|credits?)\b|\bnpls?\b"
            r"|\b(?:loan|credit)[- ]loss(?:es)?(?: provisions?| reserves?| charges?)?\b",
            "npls",
        ),
        (r"\bshort interest\b", "shortinterest"),
        # a percent change named as a noun: "18% growth in traffic" is traffic rising
        (r"(?<=%) (?:growth|increase|rise|jump|gain) in\b", " rise in"),
        (r"(?<=%) (?:decline|drop|fall|decrease|contraction) in\b", " decline in"),
        # indicators whose rise is good for the economy, though their words alone are either
        # way (production) or bad (spending)
        (
            r"\b(?:industrial|factory|manufacturing) (?:production|output|activity)\b"
            r"|\b(?:consumer|household|retail|holiday) spending\b|\bhousing starts\b"
            r"|\bbuilding permits\b",
            "activity",
        ),
        (r"\b(?:lay|lays|laying|laid) off\b|\bjob (?:cuts|losses)\b", "layoffs"),
    )
)


def _particles(up_or_down: str, verbs: str, word: str) -> dict[tuple[str, str], str]:
    return {(verb, up_or_down): word for verb in verbs.split()}


_PARTICLE_VERBS: dict[tuple[str, str], str] = {
    **_particles("up", "went goes go gone going moved moves pick picks picked picking", "rose"),
    **_particles("down", "went goes go gone going moved moves", "fell"),
    **_particles("up", "dries dried drying dry", "fell"),
    # a share of a whole, not a rise: "shares make up 4% of the index"
    **_particles("up", "make makes made making", "comprise"),
    # a succession is no news
    **_particles("down", "step steps stepped stepping", "stepsaside"),
    # "steps up deliveries" raises them, "pays down debt" reduces it
    **_particles(
        "up",
        """step steps stepped stepping ramp ramps ramped ramping bump bumps bumped bumping beef
        beefs beefed scale scales scaled scaling speed speeds sped jack jacks jacked ratchet
        ratchets ratcheted""",
        "raises",
    ),
    **_particles(
        "down",
        """pay pays paid paying bring brings brought bringing drive drives drove driving push
        pushes pushed pushing cut cuts cutting whittle whittles whittled""",
        "reduces",
    ),
    **_particles("down", "slow slows slowed slowing", "slows"),
    **_particles(
        "down", "write writes wrote written writing mark marks marked marking", "writedown"
    ),
    **_particles("down", "crack cracks cracked cracking", "crackdown"),
    **_particles("down", "shut shuts shutting wind winds winding wound", "shutdown"),
    **_particles("up", "load loads loaded loading", "accumulating"),
    **_particles("back", "pull pulls pulled pulling", "retreats"),
    **_particles("off", "back backs backed backing", "retreats"),
}
"""Verbs whose particle `up` or `down` is no price move, and the word they mean."""
_NO_MOVE_VERBS = _words(
    """round rounds rounded rounding sign signs signed signing set sets setting team teams
    teamed teaming line lines lined lining wrap wraps wrapped wrapping sum sums summed show shows
    showed showing back backs backed backing link links linked linking tee tees teed gear gears
    geared gearing shake shakes shook shaking free frees freed freeing take takes took taking mix
    mixes mixed fill fills filled filling clean cleans cleaned light lights lit call calls called
    calling hook hooks hooked snap snaps snapped scoop scoops scooped break breaks broke breaking
    calm calms calmed settle settles settled tone tones toned play plays played playing water
    waters watered hunker hunkers hunkered narrow narrows narrowed boil boils track tracks tracked
    let lets sit sits sat sitting stand stands stood turn turns turned turning look looks looked
    looking hold holds held holding"""
)
"""Verbs whose particle moves nothing ("rounds up the week", "breaks down the data"), unless a
figure follows ("closes down 3%")."""
_PARTICLE = re.compile(
    r"\b([a-z]+) (up|down|back|off)\b(?P<figure>(?=\s*[+-]?\$?\d))?", re.IGNORECASE
)


def _particle(match: re.Match[str]) -> str:
    key = (match[1].lower(), match[2].lower())
    word = _PARTICLE_VERBS.get(key)
    if word is not None:
        return word
    no_move = key[0] in _NO_MOVE_VERBS and match["figure"] is None
    return match[1] if no_move else match[0]


_SPAN = r"(?:\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|multi)[- ]?"
_EXTREME = re.compile(
    r"\b(?P<away>(?:from|off|below|above|away from|short of)\s+)?"
    r"(?:(?:hits?|hitting|touch(?:es|ed|ing)?|reach(?:es|ed|ing)?|sets?|setting|marks?|marked"
    r"|notch(?:es|ed)?|at|near|to)\s+)?(?:(?:a|an|its|their|the|fresh|new)\s+)*"
    r"(?P<span>(?:(?:" + _SPAN + r"(?:year|month|week|day|session)s?|intraday|session|decade"
    r"|all-time|record|52-week|multi-year)[- ])+)"
    r"(?P<extreme>highs?|peaks?|lows?|troughs?)\b"
    r"|\b(?:(?:hits?|touch(?:es|ed)?|reach(?:es|ed)?|at|near|to)\s+)?(?:(?:a|the|its|their)\s+)?"
    r"(?P<superlative>highest|lowest|strongest|weakest)(?:\s+(?:level|levels|point|reading))?"
    r"(?=\s+(?:since|in|for|on record|ever|of the|of all))",
    re.IGNORECASE,
)
"""A figure at its highest or lowest in a span: "jobless claims hit a 3-month high" is a rise
of claims (bad news), "hits a 16-year high" of a price a rise (good news)."""


_EXTREME_HINTS = ("high", "low", "peak", "trough", "strongest", "weakest")
"""Words one of which the text must hold for `_EXTREME` to match: a cheap test first."""


def _extreme(match: re.Match[str]) -> str:
    if match["away"]:
        # the point a move starts from or stops short of ("dips from all-time highs"): no move
        return match["away"] + "levels"
    word = (match["extreme"] or match["superlative"]).lower()
    return "rises" if word.startswith(("high", "peak", "strong")) else "falls"


def plain_forms(text: str) -> str:
    """Percent written as `pct`/`per cent` as `%`, "went down" as "fell", "non-performing loans"
    as `npls`, "hits a 3-month high" as "rises": one form per idea, and no move where a move word
    means none ("make up 3%")."""
    text = _PARTICLE.sub(_particle, _PERCENT.sub(r"\1%", text))
    text = substitute_each(_PLAIN_PHRASES, text)
    lower = text.lower()
    if any(hint in lower for hint in _EXTREME_HINTS):
        text = _EXTREME.sub(_extreme, text)
    return text


BUY_RATINGS = (
    "strong buy", "conviction buy", "speculative buy", "buy", "outperform", "overweight",
    "positive", "accumulate", "add", "top pick", "market outperform", "sector outperform",
)  # fmt: skip
SELL_RATINGS = ("strong sell", "sell", "underperform", "underweight", "negative", "reduce")
HOLD_RATINGS = (
    "hold", "neutral", "equal weight", "equal-weight", "market perform", "sector perform",
    "peer perform", "in line", "in-line", "perform", "mixed", "sector weight", "market weight",
)  # fmt: skip
"""From any better rating, a move to hold or neutral is a downgrade; a first hold is no news."""

_UPGRADE = r"(?:upgraded|upgrades|upgrade|raised|raises|raise|upped|ups|lifted|lifts|boosted)"
_DOWNGRADE = r"(?:downgraded|downgrades|downgrade|cut|cuts|lowered|lowers|lower|trimmed|slashed)"
_COVERAGE = (
    r"(?:starts?|started|starting|initiates?|initiated|initiating|begins?|began|resumes?|resumed"
    r"|reinstates?|reinstated|assumes?|assumed|launches|launched|picks up|rated|maintained|named"
    r"|reiterated|reiterates|kept)"
)
_BETWEEN = r"\s+(?:[\w.&'-]+\s+){0,4}?"
"""Up to four words between the verb and the rating: "cut Netflix to", "started Boeing at"."""


def _rating_rule(verb: str, linker: str, ratings: Sequence[str]) -> Caseless:
    return Caseless(
        rf"\b{verb}{_BETWEEN}{linker}(?:an?\s+)?{term_pattern(ratings).pattern}"
        rf"(?:\s+from\s+{_rating_source()})?"
    )


def _rating_source() -> str:
    """The rating a change starts from ("from a buy", "from Conviction Buy")."""
    earlier = term_pattern((*BUY_RATINGS, *SELL_RATINGS, *HOLD_RATINGS)).pattern
    return rf"(?:an?\s+)?{earlier}"


_RATINGS: tuple[tuple[Caseless, str], ...] = (
    (_rating_rule(_UPGRADE, r"to\s+", BUY_RATINGS), GOOD_NEWS),
    (_rating_rule(_DOWNGRADE, r"to\s+", (*SELL_RATINGS, *HOLD_RATINGS)), BAD_NEWS),
    # a change's direction says more than the rating it lands on: "downgraded to outperform
    # from strong buy", "upgraded to hold from sell"
    (_rating_rule(r"(?:downgraded|downgrades)", r"to\s+", BUY_RATINGS), BAD_NEWS),
    (
        _rating_rule(
            r"(?:upgraded|upgrades|ups|upped|raised|raises)",
            r"to\s+",
            (*SELL_RATINGS, *HOLD_RATINGS),
        ),
        GOOD_NEWS,
    ),
    (_rating_rule(_COVERAGE, r"(?:(?:at|with|as|to)\s+)?", BUY_RATINGS), GOOD_NEWS),
    (_rating_rule(_COVERAGE, r"(?:at|with|as|to)\s+", SELL_RATINGS), BAD_NEWS),
)
"""Analyst ratings: upgraded to buy, cut to hold, started at outperform, initiated at sell."""

_BROKER = r"(?=(?-i:[A-Z]))"
"""A broker's name starts with a capital: "MPLX cut at Credit Suisse" (not "cut at least")."""
_LISTS = r"(?:the\s+|its\s+)?(?:conviction(?:\s+buy)?|top\s+picks?|buy|focus|best\s+ideas)\s+list"
_STANCES: tuple[tuple[Caseless, str], ...] = tuple(
    (Caseless(pattern), token)
    for pattern, token in (
        (rf"\b(?:cut|cuts|lowered|downgraded|trimmed|slashed)\s+(?:at|by)\s+{_BROKER}", BAD_NEWS),
        (rf"\b(?:raised|upgraded|lifted|upped)\s+(?:at|by)\s+{_BROKER}", GOOD_NEWS),
        (rf"\b(?:cut|cuts|lowered|downgraded|moved|moves)\s+from\s+{_rating_source()}", BAD_NEWS),
        (
            rf"\b(?:removed|removes|dropped|drops|pulled|pulls|taken|takes|cut|cuts)\s+"
            rf"(?:[\w.&'-]+\s+){{0,3}}?(?:from|off)\s+{_LISTS}",
            BAD_NEWS,
        ),
        (rf"\b(?:added|adds|wins\s+(?:a\s+)?spot\s+on|joins)\s+(?:to\s+)?{_LISTS}", GOOD_NEWS),
        (
            r"\b(?:moving|moves|moved|shifts?|shifting|switch(?:es|ed)?|goes|going|turns?|turned)"
            r"\s+to\s+(?:an?\s+)?(?:neutral|hold|sell|underweight|underperform|equal[- ]weight)\b",
            BAD_NEWS,
        ),
        (
            r"\b(?:turns?|turned|turning|grows?|grew)\s+(?:negative|bearish|cautious|sour)"
            r"\s+on\b|\b(?:cools?|cooled|sours?|soured|warns?|warned)\s+on\b",
            BAD_NEWS,
        ),
        (
            r"\b(?:turns?|turned|turning|grows?|grew)\s+(?:positive|bullish|constructive)"
            r"\s+on\b|\bwarms?\s+(?:up\s+)?to\b",
            GOOD_NEWS,
        ),
        (r"\b(?:loses|lost|losing)\s+(?:a|another|its)\s+bull\b", BAD_NEWS),
        (
            r"\b(?:new|another|gains\s+an?|adds\s+an?)\s+bear\b|\bjoins\s+(?:the\s+)?bear\s+camp\b"
            r"|\b(?:goes|going|went|go)\s+short\b|\bsell\s+short\b",
            BAD_NEWS,
        ),
        (
            r"\b(?:new|another|gains\s+an?|adds\s+an?)\s+bull\b|\bjoins\s+(?:the\s+)?bull\s+camp\b"
            r"|\b(?:goes|going|went|go)\s+long\b",
            GOOD_NEWS,
        ),
        (r"\b(?:is|remains|still|looks\s+like)\s+an?\s+(?:strong\s+)?buy\b", GOOD_NEWS),
        (r"\b(?:is|remains|still|looks\s+like)\s+an?\s+(?:strong\s+)?sell\b", BAD_NEWS),
        (
            r"\b(?:moves?|moved|moving|goes|went|hits?|steps?|stepped)\s+(?:to\s+)?the\s+sidelines\b",
            BAD_NEWS,
        ),
        (r"\bneg(?:ative)?\s+comments\b|\bstreet-low\b", BAD_NEWS),
        (r"\bpos(?:itive)?\s+comments\b|\bstreet-high\b", GOOD_NEWS),
    )
)
"""Analysts' stances without a rating's name: "cut at Credit Suisse", "cools on Molson Coors",
"removed from the conviction buy list", "loses a bull", "Muddy Waters goes short", "is a buy"."""


def read_ratings(text: str) -> str:
    return substitute_each((*_RATINGS, *_STANCES), text, around=" ")


_SCALES: dict[str, float] = {
    "k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "mln": 1e6, "million": 1e6, "b": 1e9,
    "bn": 1e9, "bln": 1e9, "billion": 1e9, "%": 1.0, "cents": 0.01, "cent": 0.01,
}  # fmt: skip
_MONEY = r"(?:eur|usd|gbp|sek|nok|dkk|chf|jpy|rmb|cny|inr|rs\.?|us\$|\$|€|£|¥)\s?"
_FIGURE = (
    r"(?P<{n}loss>(?:(?:net |operating |pre-tax |pretax )?loss(?:es)?(?: per share)? of"
    r"|loss per share|(?:a )?per-share loss(?: of)?)\s+)?"
    rf"(?P<{{n}}money>{_MONEY})?(?P<{{n}}value>\d[\d,]*(?:\.\d+)?)\s?"
    r"(?P<{n}unit>mn|mln|million|bn|bln|billion|m|b|k|thousand|%|cents?)?(?!\w)"
)


def _figure(name: str) -> str:
    return _FIGURE.replace("{n}", name)


_NOW_THEN = re.compile(
    rf"{_figure('now')}(?P<link>\s*,?\s*(?:(?:as |when )?compared (?:to|with)|versus|vs\.?"
    r"|against|(?:up |down )?from|over|in comparison (?:to|with))\s+(?:(?:a|an|the|its)\s+)?"
    r"(?:(?:prior|previous|earlier|old)\s+(?:view\s+|guidance\s+|forecast\s+|outlook\s+)?(?:of\s+)?)?"
    rf"(?:(?:net |operating )?profit of\s+)?){_figure('then')}",
    re.IGNORECASE,
)
"""A figure, then the one it is compared with: "EUR 7.8 mn compared to EUR 11.2 mn", "$350 from
$320", "revenue $4.625 bln vs. $4.628 bln" (the result against the consensus)."""
_THEN_NOW = re.compile(
    rf"\bfrom\s+{_figure('then')}(?P<link>\s+(?:to|into)\s+(?:(?:a|an)\s+)?){_figure('now')}",
    re.IGNORECASE,
)
"""From the earlier figure to the current one: "from EUR 8.7 mn to EUR 13.1 mn"."""


@dataclass(frozen=True)
class Figure:
    """A number as written, with its unit and whether it was written as a loss."""

    value: float
    unit: str
    is_money: bool
    is_loss: bool

    def amount(self, other_unit: str) -> float:
        # "EUR 7.8 compared to EUR 11.2 mn": an unwritten unit is the other figure's
        signed = -self.value if self.is_loss else self.value
        if self.is_money and not self.unit and other_unit.startswith("cent"):
            return signed  # "$1.00 from 80 cents": dollars against cents
        return signed * _SCALES.get(self.unit or other_unit, 1.0)

    @property
    def is_year(self) -> bool:
        plain = not self.unit and not self.is_money
        return plain and self.value.is_integer() and 1900 <= self.value <= 2100


def _read_figure(match: re.Match[str], name: str) -> Figure:
    return Figure(
        float(match[f"{name}value"].replace(",", "")),
        (match[f"{name}unit"] or "").lower(),
        bool(match[f"{name}money"]),
        bool(match[f"{name}loss"]),
    )


def read_comparisons(text: str) -> str:
    """Each comparison of two figures marked `finup` or `findown` between its two figures."""
    if sum(c.isdigit() for c in text) < 2:  # two figures need two digits: a cheap test first
        return text
    for pattern in (_THEN_NOW, _NOW_THEN):
        text = pattern.sub(partial(_compared, text), text)
    return text


def _compared(text: str, match: re.Match[str]) -> str:
    now, then = _read_figure(match, "now"), _read_figure(match, "then")
    if now.is_year or then.is_year or (now.unit == "%") != (then.unit == "%"):
        return match[0]
    change = now.amount(then.unit) - then.amount(now.unit)
    # a figure written as a loss is a signed profit: "a loss of 1 compared to a profit of 2"
    good = 1 if now.is_loss or then.is_loss else _figure_sign(text[: match.start()])
    if change == 0 or good == 0:
        return match[0]
    token = GOOD_NEWS if change * good > 0 else BAD_NEWS
    split = match.start("link") - match.start()
    # the comparison carries the news: "loss" inside it is no bad word of its own
    left, right = (_LOSS_WORD.sub(MEASURED, p) for p in (match[0][:split], match[0][split:]))
    return f"{left} {token} {right}"


_LOSS_WORD = re.compile(r"\bloss(?:es)?\b", re.IGNORECASE)


def _figure_sign(before: str) -> int:
    """Whether a rise of the figure the text last named is good: +1 when it names none."""
    words = words_of(before)[-8:]
    for j in range(len(words) - 1, -1, -1):
        if words[j].key in QUANTITIES:
            return QUANTITIES[words[_head_figure(words, j)].key]
    return 1


BEATS = "beatsestimates"
MISSES = "missesestimates"
_BETTER = _words("better stronger")
_WORSE = _words("worse weaker")
_MORE = _words("more higher bigger larger greater wider faster hotter steeper sharper deeper")
_LESS = _words("less lower smaller narrower fewer slower cooler softer milder shallower")
_SURPRISE = re.compile(
    r"\b(?:(?P<move>[a-z]+)\s+)?(?P<comparative>[a-z]+)[- ]than[- ](?:[\w$.,%-]+\s+){0,5}?"
    r"(?:expected|expectations?|forecasts?|forecasted|anticipated|estimated|estimates?|feared"
    r"|predicted|projected|consensus|hoped)\b",
    re.IGNORECASE,
)
"""A result against expectations: "loss narrower than expected", "rose less than forecast"."""


def read_surprises(text: str) -> str:
    """Each result against expectations as `beatsestimates` or `missesestimates`, read with the
    figure it is about: a smaller loss than expected beats, smaller sales than expected miss."""
    if "than" not in text.lower():  # a cheap test first
        return text
    return _SURPRISE.sub(partial(_surprise, text), text)


def _surprise(text: str, match: re.Match[str]) -> str:
    comparative, move = match["comparative"].lower(), (match["move"] or "").lower()
    if comparative in _BETTER | _WORSE:
        token = BEATS if comparative in _BETTER else MISSES
    elif comparative in _MORE | _LESS:
        # "rose less than expected": the move's direction times the comparison's
        direction = (1 if comparative in _MORE else -1) * (-1 if move in FALLS else 1)
        before = text[: match.start("comparative")]
        good = direction * _surprise_figure(before, text[match.end() :])
        token = BEATS if good > 0 else MISSES if good < 0 else MEASURED
    else:
        return match[0]
    kept = match["move"] if match["move"] and move not in RISES | FALLS else ""
    return f"{kept} {token} "


def _surprise_figure(before: str, after: str) -> int:
    """Whether a rise of the figure beaten or missed is good: the one named last in the clause
    before, else one just after ("lower-than-expected inflation"), else +1 (a price, a result)."""
    behind = words_of(before)
    found = _look_back(behind, len(behind), _BACK_WINDOW)
    if found is not None:
        return found[1]
    for word in words_of(after)[:_AHEAD_WINDOW]:
        if word.key in QUANTITIES:
            return QUANTITIES[word.key]
        if word.ends_clause:
            break
    return 1


def rewrite_phrases(text: str) -> str:
    """Multi-word finance phrases as single lexicon tokens ("record high" -> "recordhigh")."""
    return substitute_each(lexicon.COMPILED_PHRASES, text, around=" ")


def read_finance(text: str) -> str:
    """Every rule in turn: the text as VADER should read it, figures' moves rewritten to tokens.

    Comparisons read the figures before phrases rewrite "+5%"; moves come after the phrases, so
    that phrase tokens such as `upmove` ("sales up 5%") find their figure too; the scopes
    (negation, hedges, yardsticks: `finance_scope`) come last, over what the moves became.
    """
    read = read_surprises(read_ratings(read_comparisons(plain_forms(text))))
    events = read_moves(rewrite_phrases(read))
    return read_scopes(events)
