"""Symbol tagging: which instruments of a market an article names, by symbol, name or alias."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pipelines.newsroom.terms import trie_alternation

ALIASES: dict[str, tuple[str, ...]] = {
    # crypto
    "BTC": ("bitcoin", "XBT"),
    "ETH": ("ether", "ethereum"),
    "BNB": ("Binance Coin",),
    "XRP": ("Ripple",),
    "DOGE": ("doge", "dogecoin"),
    "SHIB": ("Shiba Inu",),
    "MATIC": ("Polygon", "POL"),
    "AVAX": ("Avalanche",),
    "BCH": ("Bitcoin Cash",),
    "ETC": ("Ethereum Classic",),
    "PEPE": ("pepe",),
    # forex: a currency on its own is quoted against the dollar
    "EURUSD": ("the euro", "euro-dollar", "fiber"),
    "USDJPY": ("the yen", "dollar-yen"),
    "GBPUSD": ("the pound", "sterling", "cable"),
    "USDCHF": ("the Swiss franc", "the franc"),
    "AUDUSD": ("the Aussie", "Australian dollar"),
    "USDCAD": ("the loonie", "Canadian dollar"),
    "NZDUSD": ("the kiwi", "New Zealand dollar"),
    "USDSEK": ("the krona",),
    "USDNOK": ("the krone",),
    "USDMXN": ("the peso", "Mexican peso"),
    # commodities: "oil" and "crude" alone mean the US benchmark
    "GOLD": ("gold", "bullion", "XAU/USD", "XAUUSD"),
    "SILVER": ("silver", "XAG/USD", "XAGUSD"),
    "PLATINUM": ("platinum",),
    "PALLADIUM": ("palladium",),
    "COPPER": ("copper", "Dr. Copper"),
    "WTI": ("WTI crude", "US crude", "West Texas Intermediate", "crude oil", "crude", "oil"),
    "BRENT": ("Brent", "Brent crude"),
    "NATGAS": ("natural gas", "natgas"),
    "CORN": ("corn",),
    "WHEAT": ("wheat",),
    "SOYBEAN": ("soybeans", "soybean", "soy"),
    "COFFEE": ("coffee", "arabica"),
    "HEATOIL": ("heating oil",),
    "SOYOIL": ("soybean oil",),
    "PALMOIL": ("palm oil",),
    "GASOLINE": ("gasoline", "RBOB"),
    # stocks: short names beside the legal ones
    "GOOGL": ("Google", "Alphabet"),
    "META": ("Meta", "Facebook"),
    "BRKB": ("Berkshire", "Berkshire Hathaway", "BRK.B"),
    "JNJ": ("J&J",),
    "PG": ("P&G", "Procter & Gamble"),
    "KO": ("Coca-Cola", "Coke"),
    "PEP": ("Pepsi", "PepsiCo"),
    "LLY": ("Eli Lilly", "Lilly"),
    "GS": ("Goldman Sachs", "Goldman"),
    "HD": ("Home Depot",),
    "BAC": ("Bank of America", "BofA"),
    "T": ("AT&T",),
    "MCD": ("McDonald's",),
    "DIS": ("Disney",),
    "XOM": ("Exxon", "ExxonMobil"),
    "AMZN": ("Amazon",),
    "JPM": ("JPMorgan", "JP Morgan"),
    "F": ("Ford",),
    "LDO": ("Lido",),
}
"""Curated aliases by symbol; used only for symbols that are instruments of the market being tagged.

An alias whose symbol is not an instrument still blocks its span ("heating oil" is never "oil").
"""

WORD_TICKERS: frozenset[str] = frozenset(
    [
        "ONE",
        "GAS",
        "LINK",
        "DOT",
        "SOL",
        "OP",
        "ARE",
        "ALL",
        "IT",
        "NEAR",
        "FLOW",
        "SAND",
        "ATOM",
        "UNI",
        "COST",
        "META",
        "CAT",
        "KEY",
        "NOW",
        "LOW",
        "HOT",
        "RUN",
        "APE",
        "GALA",
        "MASK",
        "RUNE",
        "ROSE",
        "GOLD",
        "SILVER",
        "CORN",
        "WHEAT",
        "COFFEE",
        "COPPER",
        "OIL",
        "TIN",
        "LEAD",
        "ZINC",
        "SUGAR",
        "COTTON",
        "COCOA",
        "RICE",
        "OATS",
        "MILK",
        "LUMBER",
        "RUBBER",
        "COAL",
        "NICKEL",
        "HOGS",
        "CATTLE",
        "FEEDER",
        "TRUE",
        "BEST",
        "BIG",
        "CAN",
        "JOB",
        "FUN",
        "NEW",
        "OUT",
        "FOR",
        "AI",
        "US",
        "UK",
        "EU",
        "CEO",
        "CFO",
        "ETF",
        "SEC",
        "IPO",
        "GDP",
        "CPI",
        "FED",
        "ECB",
        "USD",
        "EUR",
        "API",
        "NFT",
        "DAO",
        "ATH",
        "EPS",
        "IMF",
        "OPEC",
        "LNG",
        "PEPE",
        "MANA",
        "EOS",
        "CRV",
        "DIS",
        "KO",
        "PG",
        "HD",
        "MA",
        "GS",
        "BA",
        "PEP",
        "ON",
        "SO",
        "GO",
        "BE",
        "AN",
        "AT",
        "BY",
        "OR",
        "IN",
        "OF",
        "TO",
        "UP",
        "ME",
        "MY",
        "NO",
        "OK",
        "WE",
        "HE",
        "DO",
        "AM",
        "AS",
        "IF",
        "IS",
    ]
)
"""Symbols that are also English words or common abbreviations: they need a ticker-like context."""

WORD_NAMES: frozenset[str] = frozenset(
    [
        "meta",
        "visa",
        "oracle",
        "target",
        "stellar",
        "optimism",
        "maker",
        "render",
        "quant",
        "cosmos",
        "polygon",
        "avalanche",
        "flow",
        "near",
        "lead",
        "tin",
        "live",
        "uber",
        "theta",
        "pepe",
        "curve",
    ]
) | {"the graph", "the sandbox", "internet computer"}
"""Names that are also ordinary words: counted only capitalised and, in running text, not as the
first word of a sentence or inside a Title-Case headline unless a ticker-like context follows."""

_PAIR_QUOTES = r"(?:USDT|USDC|USD|EUR|BTC|ETH|JPY|GBP)"
_AFTER_TICKER = re.compile(
    rf"^(?:[/-]?{_PAIR_QUOTES}\b|\)|\s+(?:tokens?|coins?|price|shares|stock|futures|contracts?|holders)\b)",
    re.IGNORECASE,
)
_BEFORE_TICKER = re.compile(
    r"(?:\$|\(|(?:NYSE|NASDAQ|Nasdaq|NYSEARCA|AMEX|ticker|symbol)\s*:?\s*)$", re.IGNORECASE
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]\s*|[\"'“‘]\s*)$")
_CORPORATE = re.compile(
    r"[\s,]+(?:Inc\.?|Incorporated|Corporation|Corp\.?|Co\.?|Company|Ltd\.?|plc|PLC|Group|"
    r"Holdings|Wholesale|Platforms|Communications|Technologies|Systems|Protocol|Network|"
    r"& Co\.?|and Co\.?)$"
)


@dataclass(frozen=True)
class Alias:
    """One way of naming an instrument: the text, its symbol (None blocks the span) and its kind."""

    text: str
    symbol: str | None
    kind: str
    """'symbol' (upper case, a context when it is a word) or 'name'."""


@dataclass(frozen=True)
class Mention:
    symbol: str
    start: int
    text: str


class AliasIndex:
    """Every alias of a market's instruments, matched in one pass with word boundaries."""

    def __init__(self, aliases: Iterable[Alias]) -> None:
        self._by_text: dict[str, list[Alias]] = {}
        for alias in aliases:
            self._by_text.setdefault(alias.text.lower(), []).append(alias)
        alternation = trie_alternation(self._by_text) or r"(?!x)x"  # longest alias first
        self._pattern = re.compile(rf"(?<![\w&/.])(?:{alternation})(?![\w&]|\.\w)", re.IGNORECASE)

    @property
    def symbols(self) -> frozenset[str]:
        return frozenset(a.symbol for group in self._by_text.values() for a in group if a.symbol)

    def mentions(self, text: str) -> list[Mention]:
        """Every accepted mention in `text`, in order of position."""
        title_case = _is_title_case(text)
        found: list[Mention] = []
        for match in self._pattern.finditer(text):
            for alias in self._by_text[match.group(0).lower()]:
                if _accepts(alias, text, match.start(), match.end(), title_case):
                    if alias.symbol is not None:
                        found.append(Mention(alias.symbol, match.start(), match.group(0)))
                    break
        return found

    def tag(self, title: str | None, body: str | None) -> list[str]:
        """Symbols named in the title, then the body, each once, ordered by first mention."""
        seen: dict[str, None] = {}
        for part in (title, body):
            for mention in self.mentions(part or ""):
                seen.setdefault(mention.symbol, None)
        return list(seen)


def build_index(
    instruments: Iterable[tuple[str, str]], texts: Iterable[str] | None = None
) -> AliasIndex:
    """The index of one market from its (symbol, name) pairs plus the curated aliases.

    With `texts`, only the aliases that can match in one of them: the same mentions in those
    texts from a far smaller pattern. Compiling a market's whole pattern (every alias of 5,000
    instruments) is most of the tagging of a refresh's few articles.
    """
    pairs = list(instruments)
    known = {symbol.upper() for symbol, _ in pairs}
    aliases: list[Alias] = []
    for symbol, name in pairs:
        aliases.extend(_instrument_aliases(symbol.upper(), name))
    for symbol, curated in ALIASES.items():
        target = symbol if symbol in known else None
        aliases.extend(Alias(t, target, _kind(t)) for t in curated)
    if texts is not None:
        words = words_of(texts)
        aliases = [a for a in aliases if _can_match(a.text, words)]
    return AliasIndex(aliases)


_WORD = re.compile(r"\w+")
_ASCII_EQUIVALENTS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
"""The only characters outside ASCII that `re.IGNORECASE` matches to ASCII ones (İ and ı to i,
ſ to s, the Kelvin sign to k; the tests check every code point)."""


def word_key(word: str) -> str | None:
    """A word as `re.IGNORECASE` compares it with ASCII words: two words with keys match each
    other exactly when their keys are equal; None for a word no ASCII word matches."""
    folded = word.translate(_ASCII_EQUIVALENTS)
    return folded.lower() if folded.isascii() else None


def words_of(texts: Iterable[str]) -> set[str]:
    """The keys of every word of `texts`."""
    return {k for text in texts for w in _WORD.findall(text) if (k := word_key(w)) is not None}


def _can_match(alias: str, words: set[str]) -> bool:
    """Whether `alias` can match in texts of `words`. A match starts where no word character
    precedes it (the pattern's look-behind) and the alias's first word ends where a non-word
    character follows in the alias or its end's look-ahead demands one: so the text holds that
    word whole. An alias opening with a non-word character or a word no ASCII word matches is
    kept."""
    first = _WORD.match(alias)
    key = word_key(first.group()) if first else None
    return key is None or key in words


def _instrument_aliases(symbol: str, name: str) -> list[Alias]:
    out = [Alias(symbol, symbol, "symbol")]
    if re.fullmatch(r"[A-Z]{6}", symbol) and name == f"{symbol[:3]}/{symbol[3:]}":
        out.append(Alias(f"{symbol[:3]}-{symbol[3:]}", symbol, "symbol"))
    for text in {name.strip(), _short_name(name)}:
        if text and text.upper() != symbol:
            out.append(Alias(text, symbol, _kind(text)))
    return out


def _short_name(name: str) -> str:
    """'Apple Inc.' -> 'Apple', 'Meta Platforms Inc.' -> 'Meta'; at least one word is kept."""
    short = name.strip()
    while (shorter := _CORPORATE.sub("", short)) != short and shorter:
        short = shorter
    return short


def _kind(text: str) -> str:
    return "symbol" if re.fullmatch(r"[A-Z0-9][A-Z0-9./-]*", text) and len(text) <= 10 else "name"


def _accepts(alias: Alias, text: str, start: int, end: int, title_case: bool) -> bool:
    found = text[start:end]
    if alias.kind == "symbol":
        if found != alias.text:
            return False
        plain = alias.text not in WORD_TICKERS and len(alias.text) > 2
        return plain or _ticker_context(text, start, end)
    if alias.text.lower() not in WORD_NAMES:
        return True
    if not found[:1].isupper():
        return False
    if _ticker_context(text, start, end):
        return True
    return not title_case and not _SENTENCE_START.search(text[:start])


def _ticker_context(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - 12) : start]
    return bool(_BEFORE_TICKER.search(before) or _AFTER_TICKER.match(text[end : end + 12]))


def _is_title_case(text: str) -> bool:
    """Headline style where most words are capitalised: capitals then say nothing about names."""
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z']+", text) if len(w) > 3]
    return len(words) >= 4 and sum(w[0].isupper() for w in words) / len(words) > 0.7
