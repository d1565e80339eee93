"""The finance lexicon added to VADER, and the word lists of the FUD, FOMO, speculation and topic rules."""

from __future__ import annotations

from pipelines.newsroom.caseless import Caseless


def _forms(valence: float, *words: str) -> dict[str, float]:
    return dict.fromkeys(words, valence)


FINANCE_WORDS: dict[str, float] = {
    # up moves and good news
    **_forms(2.6, "surge", "surges", "surged", "surging", "soar", "soars", "soared", "soaring"),
    **_forms(3.0, "skyrocket", "skyrockets", "skyrocketed", "skyrocketing", "recordhigh"),
    **_forms(2.3, "rally", "rallies", "rallied", "rallying", "breakout", "boom", "booming"),
    **_forms(1.8, "jump", "jumps", "jumped", "rebound", "rebounds", "rebounded", "rips"),
    **_forms(1.6, "climb", "climbs", "climbed", "gain", "gains", "gained", "regains", "reclaims"),
    **_forms(1.4, "rise", "rises", "rose", "rising", "advance", "advances"),
    **_forms(1.4, "recover", "recovers", "recovered", "recovery", "higher", "highs", "firmer"),
    **_forms(2.5, "bullish", "upbeat", "outperform", "outperforms", "outperformed"),
    **_forms(2.0, "upgrade", "upgrades", "upgraded", "regapproval", "contractwin"),
    **_forms(1.8, "inflow", "inflows", "lifts", "lifted"),
    **_forms(1.5, "strengthens", "strengthened", "tailwind", "tailwinds", "uptrend", "buyback"),
    **_forms(1.2, "bull", "bulls", "buyers", "adoption", "accumulation", "lift"),
    **_forms(2.5, "beatsestimates", "raisesguidance", "tothemoon", "moon", "mooning"),
    **_forms(2.0, "parabolic", "fomo", "upmove", "newhigh", "bestday", "ingreen", "shortsqueeze"),
    **_forms(
        1.2,
        "riskon",
    ),
    # down moves and bad news
    **_forms(-2.8, "plunge", "plunges", "plunged", "plunging", "crash", "crashes", "crashed"),
    **_forms(-3.0, "plummet", "plummets", "plummeted", "collapse", "collapses", "collapsed"),
    **_forms(-2.3, "slump", "slumps", "slumped", "tumble", "tumbles", "tumbled", "rout"),
    **_forms(-1.8, "sink", "sinks", "sank", "slide", "slides", "slid", "sheds", "shed"),
    **_forms(-1.5, "fall", "falls", "fell", "fallen", "falling", "drop", "drops", "dropped"),
    **_forms(-1.5, "decline", "declines", "declined", "loses", "lost", "slips", "slipped"),
    **_forms(-1.2, "slip", "dip", "dips", "dipped", "retreat", "retreats", "retreated", "lows"),
    **_forms(-2.2, "sell-off", "selloff", "selloffs", "bearish", "downturn", "turmoil"),
    **_forms(-2.8, "hack", "hacked", "hacks", "hacker", "hackers", "exploit", "exploited"),
    **_forms(-2.5, "exploits", "breach", "stolen", "drained", "depeg", "depegs", "depegged"),
    **_forms(-2.0, "lawsuit", "sued", "sues", "crackdown", "banned", "bans", "probe"),
    **_forms(-2.2, "default", "defaults", "defaulted", "downgrade", "downgrades", "downgraded"),
    **_forms(-3.0, "bankruptcy", "bankrupt", "insolvent", "insolvency", "bloodbath", "rugpull"),
    **_forms(-1.8, "outflow", "outflows", "liquidations", "liquidated", "liquidation"),
    **_forms(-2.5, "capitulation", "contagion", "missesestimates", "cutsguidance", "bankrun"),
    **_forms(-2.0, "delist", "delisted", "delisting", "weakens", "weakened", "weaker", "recession"),
    **_forms(-1.5, "underperform", "underperforms", "headwind", "headwinds", "slowdown", "halted"),
    **_forms(-1.8, "layoffs", "outage", "outages", "dump", "dumps", "dumping", "exodus", "wiped"),
    **_forms(-2.0, "fud", "downmove", "recordlow", "worstday", "inred", "underpressure", "newlow"),
    **_forms(-1.5, "misses", "missed", "sellers", "bears", "tariffs", "sanctions", "fined"),
    **_forms(
        -1.8,
        "weighson",
    ),
    **_forms(-1.2, "riskoff", "investigation", "warns", "volatile"),
    # "not enough", "not strong enough" (finance_scope): something falls short
    **_forms(-1.5, "notenough"),
    # a loss in the guidance: "expects a loss this year" (so "no longer expects a loss" is good)
    **_forms(-2.0, "lossahead"),
    # operations cut back, prices giving back or extending a move, money in and out, trouble
    **_forms(-1.8, "opsdown", "gainsgiven", "lossesextended", "fundsselling", "underfire"),
    **_forms(1.8, "lossesrecouped", "gainsextended", "fundsbuying"),
    **_forms(1.5, "keenon", "accumulating", "impresses", "impressed", "attractive"),
    **_forms(2.0, "trialsuccess", "newbusiness", "toppick", "outperforming", "gainer"),
    **_forms(1.2, "likes", "resilient"),
    **_forms(1.5, "buyinginterest", "probedropped"),
    # news that lifts a little: a settlement ends a lawsuit's uncertainty, a discovery may pay
    **_forms(0.6, "settlement", "discovery"),
    **_forms(-1.5, "hinder", "hinders", "hindered", "hindering"),
    **_forms(0.0, "abandons", "erratum"),
    **_forms(-1.5, "putsbought", "shutdowns", "obliterated", "plummeting"),
    **_forms(1.5, "callsbought"),
    **_forms(-1.5, "writedown", "writedowns", "shutdown"),
    **_forms(-2.5, "nosedive", "nosedives", "nosedived"),
    **_forms(-1.5, "hamper", "hampers", "hampered", "hampering", "dampen", "dampens", "dampened"),
    **_forms(-1.5, "dent", "dents", "dented", "hurting", "cripple", "crippled", "cripples"),
    **_forms(-1.5, "battered", "hammered", "falters", "faltered", "faltering", "stumbles"),
    **_forms(-1.5, "stumbled", "sputters", "sputtered", "gloom", "gloomy", "woes", "weakness"),
    **_forms(-1.5, "weaknesses", "glut", "oversupply", "suing", "stripped", "skids", "skidded"),
    **_forms(-1.2, "stalls", "stalled", "stalling", "fades", "faded", "fading", "wanes", "waning"),
    # the grammar's reading of a figure's move (finance_grammar): good or bad news for holders
    **_forms(2.2, "finup"),
    **_forms(-2.2, "findown"),
    # everyday words that keep their weight in market news (VADER's others are damped)
    **_forms(2.0, "strong", "robust", "solid", "impressive", "optimistic", "optimism", "upside"),
    **_forms(1.5, "beat", "beats", "winners", "gainers", "undervalued"),
    **_forms(1.5, "positive", "improved", "profitable", "blackink", "upbeat"),
    **_forms(2.0, "exceptional", "outstanding", "blockbuster", "stellar", "upgrading", "explosive"),
    **_forms(1.5, "favorable", "favourable", "oks", "bounce"),
    # "record" is as often a record date or a record loss as a record result; "awarded" an award
    **_forms(1.0, "record", "records"),
    **_forms(0.5, "awarded"),
    **_forms(1.5, "buythedip"),
    **_forms(-2.0, "weak", "soft", "disappointing", "disappoints", "disappointed", "grim"),
    **_forms(-2.0, "bleak", "bleaker", "stagnation", "stagnant", "crisis", "shock", "bust"),
    **_forms(-1.8, "tank", "tanks", "tanked", "crater", "craters", "cratered", "whimper"),
    **_forms(-1.5, "miss", "losing", "losers", "loser", "hurt", "hurts", "trouble", "troubles"),
    **_forms(-1.5, "concern", "concerns", "worries", "worried", "worry", "stress", "risky"),
    **_forms(-1.5, "negative", "bad", "worse", "worst", "overvalued", "pessimistic", "downside"),
    **_forms(-1.5, "recall", "recalls", "recalled", "suspends", "suspended", "shut", "shuts"),
    **_forms(-1.5, "closure", "closures", "fraud", "scandal", "scam", "jail", "strike"),
    **_forms(-1.5, "correction", "bubble", "deterioration", "cautious", "pressure", "warning"),
    **_forms(-1.5, "warned", "unprofitable", "redink", "lawsuits", "suit", "penalty", "fine"),
    **_forms(-1.0, "hit", "loss", "losses"),
    **_forms(0.0, "debt", "risk", "risks"),
    # crypto
    **_forms(1.5, "exchangelisting", "halving", "airdrop", "etfapproval"),
    **_forms(-2.2, "etfrejection", "delistings", "rugpulled", "scammers", "freezes"),
    # general-language words that mean little in market news
    **_forms(0.0, "shares", "value", "values", "profit", "profits", "agreement", "agreements"),
    **_forms(0.0, "number", "numbers", "earnings", "figure", "growth", "increase", "deal"),
    **_forms(0.0, "outstandingshares"),
    **_forms(0.0, "interest", "united", "credit", "security", "share", "care", "free", "stable"),
    **_forms(0.0, "grant", "block", "gross", "wells", "trust", "chance", "littlechanged", "flat"),
    **_forms(
        0.5,
        "techupgrade",
    ),
    **_forms(0.3, "support", "demand", "well", "top", "partnership", "win", "wins", "won"),
    # mostly description in finance news: wins of awards, votes and games, approvals of routine
    # resolutions, a stock's listing, a plan to boost something; the phrases that are news
    # (a contract won, a regulator's approval, a crypto exchange listing a token) have tokens
    **_forms(0.5, "good", "better"),
    **_forms(0.7, "approval", "approves", "approved"),
    **_forms(0.8, "boost", "boosts", "boosted"),
    **_forms(0.0, "listing", "listings", "lists"),
}
"""VADER valences (-4..+4) by lower-case token; they replace VADER's own where both exist."""

PHRASES: tuple[tuple[str, str], ...] = (
    (
        r"\b(?:record|all[- ]time|fresh|multi-year|52-week)(?: closing| intraday)? highs?\b",
        "recordhigh",
    ),
    (r"\brecord (?:net |operating |quarterly |annual )?loss(?:es)?\b", "recordlow"),
    (r"\b(?:record|all[- ]time|multi-year|52-week) lows?\b", "recordlow"),
    (r"\bnew highs?\b", "newhigh"),
    (r"\bnew lows?\b", "newlow"),
    (
        r"\b(?:beats?|smash(?:es|ed)?|crush(?:es|ed)?|trounc(?:es|ed)|blows? past|blew past)"
        r" (?:\w+ ){0,2}(?:estimates|expectations|forecasts)\b"
        r"|\b(?:estimates?|consensus|expectations?|street|market|forecast)-beating\b",
        "beatsestimates",
    ),
    (r"\bmiss(?:es|ed)? (?:\w+ ){0,2}(?:estimates|expectations|forecasts)\b", "missesestimates"),
    (
        r"\b(?:raises|raised|lifts|hikes|boosts) (?:\w+ ){0,2}(?:guidance|outlook|forecast)\b",
        "raisesguidance",
    ),
    (
        r"\b(?:cuts|cut|lowers|lowered|slashes|slashed) (?:\w+ ){0,2}(?:guidance|outlook|forecast)\b",
        "cutsguidance",
    ),
    (
        r"\b(?:tops?|topped|exceeds?|exceeded|surpass(?:es|ed)?|(?:plows?|plowed|sails?|sailed"
        r"|races?|raced|blows?|blew) past) (?:\w+ ){0,4}?(?:estimates|expectations|forecasts"
        r"|consensus|views)\b",
        "beatsestimates",
    ),
    (
        r"\b(?:above|ahead of) (?:\w+ ){0,1}(?:estimates|expectations|forecasts|consensus)\b",
        "beatsestimates",
    ),
    (
        r"\b(?:below|short of) (?:\w+ ){0,1}(?:estimates|expectations|forecasts|consensus)\b",
        "missesestimates",
    ),
    (
        r"\b(?:did not|didn't|does not|doesn't|do not|don't|not|failed to|fails to|fail to"
        r"|failing to|unable to) (?:meet|match|reach|hit|achieve)(?:es|ed|s)? (?:[\w'’-]+ ){0,2}"
        r"(?:expectations|estimates|forecasts?|consensus|targets?|goals?|guidance|endpoints?)\b",
        "missesestimates",
    ),
    (
        r"\b(?:expects?|expected|expecting|sees|saw|seen|forecasts?|predicts?|flags?|warns? of)"
        r" (?:an? )?(?:[\w-]+ ){0,2}loss(?:es)?\b",
        "lossahead",
    ),
    (r"\bbeats? (?:by|on)\b", "beatsestimates"),
    (r"\bmiss(?:es|ed)? (?:by|on)\b", "missesestimates"),
    (r"\bfalls? short\b", "missesestimates"),
    (r"\bbuy(?:ing|s)? (?:the )?dips?\b", "buythedip"),
    (r"\betfs? (?:approval|approved|greenlit|green light|wins approval)\b", "etfapproval"),
    (
        r"\b(?:wins?|won|winning|secures?|secured|lands?|landed|awarded|bags?|bagged|clinch(?:es|ed)?"
        r"|receives?|received|inks?|inked|signs?|signed)"
        r" (?:an? |the )?(?:[\w$.,-]+ ){0,4}?(?:contracts?|orders?|deals?|tenders?|mandates?"
        r"|bids?|approval|licen[cs]es?)\b",
        "contractwin",
    ),
    (
        r"\b(?:fda|ema|sec|cftc|ftc|doj|cma|nmpa|pmda|chmp|regulators?|antitrust|competition"
        r" (?:authority|regulators?)|european commission|health canada)"
        r" (?:[\w-]+ ){0,2}?(?:approv(?:es|ed|al)|clears?|cleared|green-?lights?|green-?lit|backs)\b"
        r"|\b(?:wins?|won|receives?|received|gets?|got|granted|secures?|secured|earns?|earned"
        r"|obtains?|obtained) (?:[\w-]+ ){0,2}?(?:approval|clearance|authori[sz]ation|licen[cs]es?)\b"
        r"|\b(?:fda|ema) win\b|\bok'?d\b|\bpriority review\b|\bbreakthrough (?:therapy )?designation\b",
        "regapproval",
    ),
    (
        r"\b(?:binance|coinbase|kraken|okx|okex|bybit|upbit|kucoin|bitfinex|gemini|bithumb|huobi"
        r"|bitstamp|robinhood|crypto\.com)(?:'s)? (?:to |will |plans to )?(?:list(?:s|ed|ing)?)\b"
        r"|\b(?:list(?:s|ed|ing)?|debuts?) on (?:binance|coinbase|kraken|okx|okex|bybit|upbit"
        r"|kucoin|bitfinex|gemini|bithumb|huobi|bitstamp|robinhood|crypto\.com)\b",
        "exchangelisting",
    ),
    (r"\betfs? (?:rejection|rejected|denied|denial|delayed)\b", "etfrejection"),
    (
        r"\b(?:swung|swings|swing|turned|turns|returned|returns|back) (?:in)?to (?:a )?(?:net |operating |pre-?tax |quarterly )?profits?\b",
        "blackink",
    ),
    (
        r"\b(?:swung|swings|swing|turned|turns) (?:in)?to (?:a )?(?:net |operating |pre-?tax |quarterly )?loss(?:es)?\b",
        "redink",
    ),
    (r"\bin the black\b", "blackink"),
    (
        r"\b(?:shares|stock|debt|loans?|notes|bonds|options) outstanding\b"
        r"|\boutstanding (?:shares|stock|debt|loans?|notes|bonds|options|balance)\b",
        "outstandingshares",
    ),
    (
        r"\b(?:clos(?:e|es|ed|ing)|shut(?:s|ting)?(?: down)?|shutter(?:s|ed|ing)?"
        r"|suspend(?:s|ed|ing)?|halt(?:s|ed|ing)?|paus(?:e|es|ed|ing)|idl(?:e|es|ed|ing)"
        r"|scrap(?:s|ped|ping)?|abandon(?:s|ed|ing)?|scal(?:e|es|ed|ing) back)"
        r" (?:[\w,'’-]+ ){0,4}?(?:stores|shops|plants|factories|branches|mines?|restaurants"
        r"|offices|outlets|mills|refiner(?:y|ies)|sites|facilities|operations|production|output"
        r"|flights|routes|services|shipments|deliveries|withdrawals|dividends?|buybacks?|guidance"
        r"|development|enrollment|trials?|studies|study|projects?|plans?|programs?|programmes?)\b"
        r"|\b(?:suspension|closure|halt|cancellation|elimination) (?:of|to) (?:the |its |their )?"
        r"(?:\w+ )?(?:dividends?|buybacks?|guidance|production|operations|flights|plants?|stores)\b"
        r"|\bpull(?:s|ed|ing)? the plug\b",
        "opsdown",
    ),
    (
        r"\b(?:pares?|pared|paring|erases?|erased|erasing|trims?|trimmed|trimming|gives? (?:up|back)"
        r"|gave (?:up|back)|giving (?:up|back)|surrender(?:s|ed|ing)?|wipes? out|wiped out)"
        r" (?:[\w,.-]+ ){0,4}?(?:gains?|rally|rebound|advance|recovery)\b"
        r"|\b(?:gives?|gave|giving|hands?|handed) back \+?\d+(?:\.\d+)?\s?%",
        "gainsgiven",
    ),
    (
        r"\b(?:pares?|pared|paring|erases?|erased|erasing|trims?|trimmed|trimming|recoup(?:s|ed|ing)?"
        r"|recover(?:s|ed|ing)?(?: from)?|shakes? off|shook off|claw(?:s|ed)? back)"
        r" (?:(?:all|some|most|much|early|earlier|its|their|the|of|year-to-date|\d{4}) )*losses\b",
        "lossesrecouped",
    ),
    (
        r"\b(?:extend(?:s|ed|ing)?|add(?:s|ed|ing)? to|build(?:s|ing)? on|built on)"
        r" (?:(?:its|their|the|early|earlier) )*(?:gains|rally|advance|winning streak)\b",
        "gainsextended",
    ),
    (
        r"\b(?:extend(?:s|ed|ing)?|add(?:s|ed|ing)? to|deepen(?:s|ed|ing)?)"
        r" (?:(?:its|their|the|early|earlier) )*(?:losses|slide|decline|sell-?off|slump|rout"
        r"|losing streak|drop|fall)\b",
        "lossesextended",
    ),
    (
        r"\b(?:hedge funds?|funds|investors|insiders|institutions|whales|billionaires?|smart money)"
        r" (?:are |were |have been |keep |kept )?(?:buying|accumulating|piling into|loading up"
        r"|betting on|scooping up|snapping up|adding to|accumulates?|buy|pile into|piled into)\b",
        "fundsbuying",
    ),
    (
        r"\b(?:hedge funds?|funds|investors|insiders|institutions|whales|billionaires?|smart money)"
        r" (?:are |were |have been |keep |kept )?(?:selling|dumping|cashing out|exiting|unloading"
        r"|sell|dump|dumped|flee|fled|pull out|pulled out"
        r"|betting against|shorting|fleeing|bailing on|disconnecting from|dropp(?:ed|ing) the ball"
        r"|rushing to sell|running from|getting burned)\b",
        "fundsselling",
    ),
    (r"\bcrazy about\b", "keenon"),
    (r"\bunder fire\b|\btook a beating\b|\btakes a beating\b", "underfire"),
    (
        r"\b(?:agree(?:s|d)? to pay (?:[\w$.,'’-]+ ){0,6}?to )?(?:settles?|settled|settling"
        r"|resolves?|resolved|resolving|end) (?:[\w$.,'’-]+ ){0,5}?(?:lawsuits?|suits?|probes?"
        r"|investigations?|charges|claims|cases?|litigation|disputes?|allegations)\b",
        "settlement",
    ),
    (r"\blegal action\b|\bclass[- ]action\b", "lawsuit"),
    (
        r"\b(?:reels?|reeled|reeling|reins?|reined|reining|tempers?|tempered|dials?|dialed) (?:in|back)"
        r" (?:\w+ ){0,2}(?:expectations|estimates|forecasts?|outlook|targets?|pt)\b",
        "cutsguidance",
    ),
    (
        r"\bunusual puts\b|\b(?:buys?|bought|buying|buyers? of) (?:[\w$.,/-]+ ){0,4}?puts\b",
        "putsbought",
    ),
    (
        r"\bunusual calls\b|\b(?:buys?|bought|buying|buyers? of) (?:[\w$.,/-]+ ){0,4}?calls\b"
        r"|\bcalls bought\b",
        "callsbought",
    ),
    (r"\b(?:free ?fall|nose ?dive)s?\b", "nosedive"),
    (
        r"\b(?:met|meets|meeting|achieved|achieves|hit|hits) (?:its |the |all |both )?"
        r"(?:(?:primary|main|secondary|key|co-primary) )*(?:and (?:secondary|primary) )?endpoints?\b"
        r"|\b(?:successful|positive|encouraging|strong) (?:\w+ ){0,2}(?:trial|study|data|results)\b",
        "trialsuccess",
    ),
    (
        r"\b(?:add(?:s|ed|ing)?|creat(?:e|es|ed|ing)|hir(?:e|es|ed|ing)) (?:about |some |nearly "
        r"|over |more than |another |an? )?[\d,.]+\s?(?:k|m|million|thousand)? (?:new )?"
        r"(?:jobs|workers|staff|employees|payrolls|positions|subscribers|users|customers)\b"
        r"|\b(?:new|additional|more) (?:jobs|orders|customers|subscribers)\b"
        r"|\badds? (?:the )?(?:most|record|more) (?:new )?(?:subscribers|users|customers|jobs)\b"
        r"|\b(?:hits?|tops?|topped|has|have|amassed|receives?|received|gets?|got|secures?|secured|books?"
        r"|reports?|reported"
        r"|booked) (?:more than |over |nearly |about )?[\d,.]+\s?(?:k|m|million|thousand)? "
        r"(?:pre-?)?orders\b",
        "newbusiness",
    ),
    (
        r"\bbuys? back\b|\bbuying back\b|\bbought back\b"
        r"|\bnew (?:[\w$.]+ ){0,3}(?:share )?(?:buyback|repurchase) (?:program|programme|plan)\b",
        "buyback",
    ),
    (r"\b(?:eps|earnings per share|loss per share) (?:of )?[-−](?=\$?\d)", "redink "),
    (r"\b(?:oil|gas|gold|copper|lithium|mineral|new|major|significant) discovery\b", "discovery"),
    (r"\b(?:ground|grinds?|grinding|came|comes|coming) to a (?:halt|standstill)\b", "opsdown"),
    (r"\bbuying interest\b|\bbuy blocks?\b|\btime to buy\b", "buyinginterest"),
    (
        r"\b(?:drops?|dropped|dropping|abandons?|abandoned|ends?|ended|suspends?|suspended|closes?"
        r"|closed|halts?|halted) (?:its |their |the |a )?"
        r"(?:\w+ )?(?:probe|investigation|charges|lawsuit|case|suit|claims?|inquiry)\b",
        "probedropped",
    ),
    (
        r"\b(?:drops?|dropped|dropping) (?:its |their |the |a )?(?:\w+ )?(?:bid|plan|offer"
        r"|proposal|pursuit|effort|opposition|brand|name|appeal|challenge|requirements?|limits?)\b",
        "abandons",
    ),
    (r"(?:^|:\s*)correction\b|\bcorrection(?: to|:)", "erratum"),
    (
        r"\b(?:withdrawals|funds|assets|accounts|deposits|balances)"
        r" (?:are |were |remain |have been |been )?frozen\b"
        r"|\b(?:freez(?:es|ing|e)|froze) (?:\w+ )?(?:withdrawals|funds|assets|accounts|deposits)\b",
        "freezes",
    ),
    (r"\bgap(?:s|ped|ping)? up\b", "upmove"),
    (r"\bgap(?:s|ped|ping)? down\b", "downmove"),
    (r"\bbreak(?:s|ing)? out\b|\bbroke out\b", "breakout"),
    (r"\btop (?:\w+ )?picks?\b|\bfavou?rite (?:stocks?|picks?|names?)\b", "toppick"),
    (r"\bfear of missing out\b", "fomo"),
    (r"\bto the moon\b", "tothemoon"),
    (r"\brisk[- ]on\b", "riskon"),
    (r"\brisk[- ]off\b", "riskoff"),
    (r"\bshort squeeze\b", "shortsqueeze"),
    (r"\bsell[- ]offs?\b", "selloff"),
    (r"\brug[- ]pulls?\b", "rugpull"),
    (r"\bbank runs?\b", "bankrun"),
    (r"\bunder pressure\b", "underpressure"),
    (r"\bweigh(?:s|ed|ing)? on\b", "weighson"),
    (r"\b(?:network|protocol|software|chain|mainnet) upgrades?\b", "techupgrade"),
    (r"\blittle changed\b", "littlechanged"),
    (r"\bin the red\b", "inred"),
    (r"\bin the green\b", "ingreen"),
    (r"\bbest (?:day|week|month|quarter)\b", "bestday"),
    (r"\bworst (?:day|week|month|quarter)\b", "worstday"),
    (r"\b(?:up|higher by|adds|added) \+?\d+(?:\.\d+)?\s?%", "upmove"),
    (r"\b(?:down|lower by) -?\d+(?:\.\d+)?\s?%", "downmove"),
    (r"(?<![\w.])\+\d+(?:\.\d+)?\s?%", "upmove"),
    (r"(?<![\w.%])[-−]\d+(?:\.\d+)?\s?%", "downmove"),
)
"""Multi-word finance phrases, rewritten to one lexicon token before VADER reads the text."""

COMPILED_PHRASES: tuple[tuple[Caseless, str], ...] = tuple(
    (Caseless(p), token) for p, token in PHRASES
)

FOMO_TERMS: tuple[str, ...] = (
    "fomo", "fear of missing out", "miss out", "missing out", "don't miss", "to the moon",
    "moon", "mooning", "parabolic", "euphoria", "euphoric", "mania", "frenzy", "piles in",
    "pile in", "piling in", "pile into", "piles into", "piling into", "rush to buy", "rushes in",
    "everyone is buying", "last chance", "before it's too late", "100x", "10x", "1000x",
    "skyrocket", "skyrockets", "going vertical", "lambo", "generational", "life-changing",
    "once-in-a-lifetime", "all in", "hype", "rips", "explodes", "buying spree",
)  # fmt: skip
"""Crowd greed: chasing a move for fear of missing it."""

FUD_TERMS: tuple[str, ...] = (
    "fud", "fear", "fears", "panic", "panic selling", "capitulation", "collapse", "contagion",
    "bank run", "insolvent", "insolvency", "bankrupt", "bankruptcy", "death spiral", "bloodbath",
    "rug pull", "scam", "ponzi", "doom", "doomed", "is it over", "finished?", "dead?",
    "going to zero", "to zero", "worthless", "meltdown", "exodus", "wiped out", "dump", "dumps",
    "dumping", "rumours of trouble", "rumors of trouble", "crash fears", "terrified", "nightmare",
    "sell everything", "get out", "bubble", "depeg", "uncertainty", "doubt", "scare", "scared",
)  # fmt: skip
"""Crowd fear: fear, uncertainty and doubt beyond the news itself."""

SPECULATION_TERMS: tuple[str, ...] = (
    "could", "might", "may", "possibly", "potential", "potentially", "reportedly", "rumor",
    "rumors", "rumour", "rumours", "rumored", "rumoured", "rumour mill", "rumor mill",
    "speculate", "speculates", "speculated", "speculation", "speculative", "speculators",
    "unconfirmed", "allegedly", "sources say", "people familiar", "price prediction",
    "prediction", "predicts", "poised", "set for", "bet on", "bets on", "betting on", "moon",
    "100x", "10x", "1000x", "next big", "double", "triple", "what's next", "if", "whether",
    "expected to", "eyes", "target", "?",
)  # fmt: skip
"""Hedged, unconfirmed or forward-guessing language."""

TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("security", ("hack", "hacked", "exploit", "breach", "stolen", "drained", "vulnerability",
                  "outage", "attack", "phishing", "rug pull", "scam", "fraud")),
    ("regulation", ("sec", "regulator", "regulators", "regulation", "regulatory", "lawsuit",
                    "sued", "court", "ban", "banned", "crackdown", "license", "licence", "cftc",
                    "compliance", "sanction", "sanctions", "legislation", "bill", "lawmakers",
                    "probe", "investigation", "approval", "approves", "fined")),
    ("earnings", ("earnings", "results", "revenue", "profit", "guidance", "eps", "quarterly",
                  "quarter", "dividend", "buyback", "estimates", "sales")),
    ("macro", ("fed", "federal reserve", "central bank", "ecb", "boj", "rate", "rates",
               "inflation", "cpi", "jobs", "payrolls", "gdp", "yields", "treasury", "recession",
               "tariff", "tariffs", "dovish", "hawkish", "dollar", "economy", "growth data")),
    ("supply", ("inventories", "inventory", "opec", "output", "production", "supply",
                "harvest", "weather", "drought", "stockpiles", "shipments", "mine", "mining")),
    ("adoption", ("adoption", "partnership", "integration", "launch", "launches", "listing",
                  "etf", "institutional", "inflows", "upgrade", "mainnet", "payments",
                  "treasury reserve", "on-chain activity", "network upgrade")),
)  # fmt: skip
"""Brief topics by keyword, in priority order for ties; a brief matching none is about 'price'."""

TOPIC_NAMES: tuple[str, ...] = (*(name for name, _ in TOPICS), "price")
