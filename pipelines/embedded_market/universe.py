"""The embedded market's instruments: the default universe per market and scaled synthetic extras."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pipelines.catalog import MARKETS

LOGO_BASE = "https://assets.market-intelligence.example/logos"
UNIVERSE_KEY = 7_000_001
"""Seed of the synthetic extras: the universe does not depend on the market seed, only paths do."""


@dataclass(frozen=True)
class Spec:
    """One default instrument: identity, typical price level and daily volatility."""

    symbol: str
    name: str
    price: float
    """Level the price mean-reverts to (log scale), quote currency."""
    vol: float
    """Target daily volatility of log returns."""
    aliases: tuple[str, ...] = ()
    """Other words the news uses for it ("ether", "gold", "Apple")."""


@dataclass(frozen=True)
class Universe:
    """The instruments of one market as parallel arrays (the numeric kernel works on these)."""

    market: str
    symbols: list[str]
    names: list[str]
    aliases: list[tuple[str, ...]]
    price: np.ndarray
    vol: np.ndarray
    rho: np.ndarray
    """Loading on the market factor (correlation of returns with it, before regimes)."""
    sign: np.ndarray
    """+1 or -1: direction of the factor in this instrument (USD-base vs USD-quote pairs)."""
    decimals: np.ndarray
    volume_base: np.ndarray
    """Typical daily volume: quote currency for crypto and stocks, contracts or ticks otherwise."""

    def __len__(self) -> int:
        return len(self.symbols)

    def logo(self, i: int) -> str:
        return f"{LOGO_BASE}/{self.market}/{self.symbols[i].lower()}.svg"


_C = Spec
CRYPTO: tuple[Spec, ...] = (
    _C("BTC", "Bitcoin", 48_000, 0.031, ("bitcoin",)),
    _C("ETH", "Ethereum", 2_400, 0.038, ("ether", "ethereum")),
    _C("BNB", "BNB", 380, 0.037),
    _C("SOL", "Solana", 95, 0.046),
    _C("XRP", "XRP", 0.55, 0.042, ("Ripple",)),
    _C("ADA", "Cardano", 0.42, 0.043),
    _C("DOGE", "Dogecoin", 0.11, 0.048, ("doge",)),
    _C("TRX", "TRON", 0.10, 0.038),
    _C("AVAX", "Avalanche", 28, 0.048),
    _C("DOT", "Polkadot", 6.2, 0.045),
    _C("LINK", "Chainlink", 14, 0.050),
    _C("MATIC", "Polygon", 0.75, 0.050),
    _C("SHIB", "Shiba Inu", 0.000018, 0.055),
    _C("LTC", "Litecoin", 78, 0.042),
    _C("BCH", "Bitcoin Cash", 290, 0.045),
    _C("UNI", "Uniswap", 6.8, 0.052),
    _C("ATOM", "Cosmos", 9.0, 0.048),
    _C("XLM", "Stellar", 0.11, 0.044),
    _C("ETC", "Ethereum Classic", 21, 0.046),
    _C("XMR", "Monero", 150, 0.040),
    _C("FIL", "Filecoin", 5.0, 0.053),
    _C("HBAR", "Hedera", 0.08, 0.052),
    _C("APT", "Aptos", 8.0, 0.056),
    _C("ARB", "Arbitrum", 1.1, 0.056),
    _C("OP", "Optimism", 2.0, 0.057),
    _C("NEAR", "NEAR Protocol", 3.8, 0.055),
    _C("VET", "VeChain", 0.028, 0.050),
    _C("ICP", "Internet Computer", 9.0, 0.055),
    _C("ALGO", "Algorand", 0.18, 0.050),
    _C("AAVE", "Aave", 95, 0.055),
    _C("GRT", "The Graph", 0.19, 0.056),
    _C("QNT", "Quant", 105, 0.050),
    _C("EGLD", "MultiversX", 42, 0.053),
    _C("SAND", "The Sandbox", 0.45, 0.056),
    _C("MANA", "Decentraland", 0.44, 0.056),
    _C("AXS", "Axie Infinity", 7.0, 0.058),
    _C("THETA", "Theta Network", 1.1, 0.055),
    _C("XTZ", "Tezos", 0.90, 0.050),
    _C("EOS", "EOS", 0.72, 0.050),
    _C("FTM", "Fantom", 0.45, 0.060),
    _C("FLOW", "Flow", 0.80, 0.056),
    _C("CHZ", "Chiliz", 0.09, 0.056),
    _C("MKR", "Maker", 1_750, 0.050),
    _C("SNX", "Synthetix", 2.6, 0.058),
    _C("CRV", "Curve DAO", 0.55, 0.060),
    _C("LDO", "Lido DAO", 2.1, 0.058),
    _C("INJ", "Injective", 21, 0.062),
    _C("RNDR", "Render", 4.8, 0.062),
    _C("PEPE", "Pepe", 0.0000085, 0.068, ("pepe",)),
    _C("KAS", "Kaspa", 0.12, 0.062),
)

USD_VALUE: dict[str, float] = {
    "USD": 1.0, "EUR": 1.09, "JPY": 1 / 148, "GBP": 1.27, "CHF": 1 / 0.89, "AUD": 0.66,
    "CAD": 1 / 1.35, "NZD": 0.61, "SEK": 1 / 10.5, "NOK": 1 / 10.6, "MXN": 1 / 17.8,
    "DKK": 1 / 6.85, "PLN": 1 / 4.0, "HUF": 1 / 360, "CZK": 1 / 23, "TRY": 1 / 32,
    "ZAR": 1 / 18.5, "SGD": 1 / 1.35, "HKD": 1 / 7.8, "CNH": 1 / 7.2, "INR": 1 / 83,
    "KRW": 1 / 1330, "BRL": 1 / 5.0, "ILS": 1 / 3.7, "THB": 1 / 35.5, "TWD": 1 / 31.5,
    "IDR": 1 / 15700, "PHP": 1 / 56, "CLP": 1 / 920, "COP": 1 / 3950, "RON": 1 / 4.6,
    "ISK": 1 / 138, "SAR": 1 / 3.75, "AED": 1 / 3.67, "KWD": 3.25, "QAR": 1 / 3.64,
    "MYR": 1 / 4.7, "EGP": 1 / 47, "NGN": 1 / 1450, "KES": 1 / 130, "PEN": 1 / 3.75,
    "ARS": 1 / 870, "UAH": 1 / 39, "VND": 1 / 25000, "PKR": 1 / 278, "BHD": 2.65,
    "OMR": 2.6, "JOD": 1.41, "MAD": 1 / 10, "GHS": 1 / 14, "UYU": 1 / 39, "KZT": 1 / 450,
}  # fmt: skip
"""Approximate value of one unit in US dollars: pair levels are ratios of these."""

CURRENCY_NAMES: dict[str, str] = {
    "USD": "dollar", "EUR": "euro", "JPY": "yen", "GBP": "pound", "CHF": "franc",
    "AUD": "Aussie", "CAD": "loonie", "NZD": "kiwi", "SEK": "krona", "NOK": "krone",
    "MXN": "peso",
}  # fmt: skip

FOREX_PAIRS: tuple[tuple[str, float], ...] = (
    ("EURUSD", 0.0048), ("USDJPY", 0.0058), ("GBPUSD", 0.0052), ("USDCHF", 0.0050),
    ("AUDUSD", 0.0062), ("USDCAD", 0.0045), ("NZDUSD", 0.0064), ("EURGBP", 0.0038),
    ("EURJPY", 0.0060), ("GBPJPY", 0.0068), ("EURCHF", 0.0040), ("AUDJPY", 0.0070),
    ("EURAUD", 0.0055), ("EURCAD", 0.0050), ("GBPCHF", 0.0055), ("CADJPY", 0.0062),
    ("CHFJPY", 0.0058), ("USDSEK", 0.0065), ("USDNOK", 0.0068), ("USDMXN", 0.0075),
)  # fmt: skip

COMMODITIES: tuple[Spec, ...] = (
    _C("GOLD", "Gold", 2_000, 0.0115, ("gold", "bullion")),
    _C("SILVER", "Silver", 25, 0.017, ("silver",)),
    _C("PLATINUM", "Platinum", 950, 0.015, ("platinum",)),
    _C("PALLADIUM", "Palladium", 1_150, 0.019, ("palladium",)),
    _C("COPPER", "Copper", 4.0, 0.013, ("copper", "Dr. Copper")),
    _C("WTI", "WTI Crude Oil", 76, 0.021, ("WTI crude", "US crude")),
    _C("BRENT", "Brent Crude Oil", 81, 0.020, ("Brent",)),
    _C("NATGAS", "Natural Gas", 2.8, 0.024, ("natural gas", "natgas")),
    _C("CORN", "Corn", 4.6, 0.014, ("corn",)),
    _C("WHEAT", "Wheat", 5.9, 0.016, ("wheat",)),
    _C("SOYBEAN", "Soybeans", 12.2, 0.012, ("soybeans", "soy")),
    _C("COFFEE", "Arabica Coffee", 1.9, 0.018, ("coffee",)),
)
EXTRA_COMMODITIES: tuple[tuple[str, str, float], ...] = (
    ("ALUMINIUM", "Aluminium", 2_300), ("NICKEL", "Nickel", 17_000), ("ZINC", "Zinc", 2_600),
    ("LEAD", "Lead", 2_100), ("TIN", "Tin", 27_000), ("HEATOIL", "Heating Oil", 2.6),
    ("GASOLINE", "RBOB Gasoline", 2.4), ("OATS", "Oats", 3.7), ("RICE", "Rough Rice", 17),
    ("SOYOIL", "Soybean Oil", 45), ("SOYMEAL", "Soybean Meal", 340), ("COCOA", "Cocoa", 4_500),
    ("SUGAR", "Sugar", 0.21), ("COTTON", "Cotton", 0.82), ("OJ", "Orange Juice", 3.5),
    ("LUMBER", "Lumber", 560), ("CATTLE", "Live Cattle", 1.85), ("HOGS", "Lean Hogs", 0.88),
    ("FEEDER", "Feeder Cattle", 2.5), ("MILK", "Class III Milk", 17), ("RUBBER", "Rubber", 165),
    ("IRONORE", "Iron Ore", 115), ("COAL", "Newcastle Coal", 130), ("URANIUM", "Uranium", 85),
    ("CANOLA", "Canola", 640), ("PALMOIL", "Palm Oil", 3_900), ("ETHANOL", "Ethanol", 2.1),
    ("LITHIUM", "Lithium Carbonate", 14_000), ("COBALT", "Cobalt", 28_000),
)  # fmt: skip

_S = Spec
STOCKS: tuple[Spec, ...] = (
    _S("AAPL", "Apple Inc.", 185, 0.016, ("Apple",)),
    _S("MSFT", "Microsoft Corporation", 390, 0.016, ("Microsoft",)),
    _S("NVDA", "NVIDIA Corporation", 110, 0.029, ("Nvidia",)),
    _S("AMZN", "Amazon.com Inc.", 170, 0.020, ("Amazon",)),
    _S("GOOGL", "Alphabet Inc.", 150, 0.018, ("Alphabet", "Google")),
    _S("META", "Meta Platforms Inc.", 430, 0.024, ("Meta",)),
    _S("TSLA", "Tesla Inc.", 210, 0.030, ("Tesla",)),
    _S("BRKB", "Berkshire Hathaway Inc.", 400, 0.0125, ("Berkshire",)),
    _S("JPM", "JPMorgan Chase & Co.", 185, 0.015, ("JPMorgan",)),
    _S("V", "Visa Inc.", 270, 0.013, ("Visa",)),
    _S("JNJ", "Johnson & Johnson", 155, 0.0125, ("J&J",)),
    _S("WMT", "Walmart Inc.", 62, 0.012, ("Walmart",)),
    _S("PG", "Procter & Gamble Co.", 160, 0.0125, ("Procter & Gamble", "P&G")),
    _S("MA", "Mastercard Inc.", 450, 0.014, ("Mastercard",)),
    _S("UNH", "UnitedHealth Group Inc.", 510, 0.016, ("UnitedHealth",)),
    _S("HD", "Home Depot Inc.", 350, 0.014, ("Home Depot",)),
    _S("XOM", "Exxon Mobil Corporation", 110, 0.016, ("Exxon",)),
    _S("CVX", "Chevron Corporation", 155, 0.016, ("Chevron",)),
    _S("KO", "Coca-Cola Co.", 61, 0.0125, ("Coca-Cola", "Coke")),
    _S("PEP", "PepsiCo Inc.", 170, 0.0125, ("PepsiCo", "Pepsi")),
    _S("ABBV", "AbbVie Inc.", 165, 0.014, ("AbbVie",)),
    _S("MRK", "Merck & Co. Inc.", 120, 0.013, ("Merck",)),
    _S("LLY", "Eli Lilly and Co.", 560, 0.019, ("Eli Lilly", "Lilly")),
    _S("AVGO", "Broadcom Inc.", 150, 0.024, ("Broadcom",)),
    _S("COST", "Costco Wholesale Corp.", 580, 0.013, ("Costco",)),
    _S("ORCL", "Oracle Corp.", 125, 0.018, ("Oracle",)),
    _S("ADBE", "Adobe Inc.", 480, 0.021, ("Adobe",)),
    _S("CRM", "Salesforce Inc.", 260, 0.020, ("Salesforce",)),
    _S("NFLX", "Netflix Inc.", 520, 0.023, ("Netflix",)),
    _S("AMD", "Advanced Micro Devices Inc.", 140, 0.029, ("AMD",)),
    _S("INTC", "Intel Corp.", 32, 0.022, ("Intel",)),
    _S("CSCO", "Cisco Systems Inc.", 50, 0.013, ("Cisco",)),
    _S("DIS", "Walt Disney Co.", 100, 0.016, ("Disney",)),
    _S("NKE", "Nike Inc.", 90, 0.017, ("Nike",)),
    _S("MCD", "McDonald's Corp.", 275, 0.0125, ("McDonald's",)),
    _S("BAC", "Bank of America Corp.", 36, 0.017, ("Bank of America",)),
    _S("WFC", "Wells Fargo & Co.", 52, 0.017, ("Wells Fargo",)),
    _S("PFE", "Pfizer Inc.", 29, 0.014, ("Pfizer",)),
    _S("T", "AT&T Inc.", 18, 0.013, ("AT&T",)),
    _S("VZ", "Verizon Communications Inc.", 40, 0.012, ("Verizon",)),
    _S("IBM", "International Business Machines", 175, 0.013, ("IBM",)),
    _S("QCOM", "Qualcomm Inc.", 165, 0.021, ("Qualcomm",)),
    _S("TXN", "Texas Instruments Inc.", 175, 0.016, ("Texas Instruments",)),
    _S("GS", "Goldman Sachs Group Inc.", 420, 0.016, ("Goldman Sachs", "Goldman")),
    _S("CAT", "Caterpillar Inc.", 320, 0.017, ("Caterpillar",)),
    _S("BA", "Boeing Co.", 190, 0.021, ("Boeing",)),
    _S("SBUX", "Starbucks Corp.", 88, 0.017, ("Starbucks",)),
    _S("PYPL", "PayPal Holdings Inc.", 65, 0.024, ("PayPal",)),
    _S("UBER", "Uber Technologies Inc.", 68, 0.026, ("Uber",)),
    _S("F", "Ford Motor Co.", 13, 0.020, ("Ford",)),
)

_SYLLABLES = (
    "zen", "lum", "kor", "vex", "nov", "ast", "qua", "blo", "ter", "ori", "flu", "pyr", "neo",
    "val", "cry", "hex", "ony", "run", "sky", "vol", "min", "arc", "ion", "mer", "sol", "tal",
    "ben", "cor", "dar", "fen", "gal", "hal", "jor", "kel", "lar", "mor", "nar", "pel", "ras",
    "sen", "tor", "ul", "ver", "wex", "yar", "zor", "bri", "cle", "dra", "gri",
)  # fmt: skip
_CRYPTO_SUFFIXES = ("", " Network", " Protocol", " Chain", " Finance", " Token", " Swap", " DAO")
_STOCK_SUFFIXES = (
    " Holdings Inc.", " Technologies Inc.", " Therapeutics Inc.", " Energy Corp.",
    " Industries Inc.", " Financial Corp.", " Systems Inc.", " Foods Co.", " Logistics Inc.",
    " Semiconductor Corp.", " Retail Group Inc.", " Materials Co.",
)  # fmt: skip
_COMMODITY_SUFFIXES = (" Ore", " Blend Crude", " Grain", " Concentrate", " Metal", " Pulp")

CAPACITY: dict[str, int] = {"forex": len(USD_VALUE) * (len(USD_VALUE) - 1)}
"""The most instruments a market can have: every ordered pair of distinct currencies."""
DEFAULT_SIZES: dict[str, int] = {
    "crypto": len(CRYPTO),
    "forex": len(FOREX_PAIRS),
    "commodities": len(COMMODITIES),
    "stocks": len(STOCKS),
}


def split_instruments(total: int) -> dict[str, int]:
    """Split a total instrument count across markets in proportion to the default sizes.

    Largest remainders, so the parts sum to `total`; every market gets at least one instrument. A
    market has at most `CAPACITY` instruments (there are only so many currency pairs): beyond it,
    the rest goes to the other markets in the same proportions, as a real universe of tens of
    thousands is stocks and coins.
    """
    if total < len(MARKETS):
        raise ValueError(f"a scaled universe needs at least {len(MARKETS)} instruments")
    capped: dict[str, int] = {}
    while True:
        open_markets = [m for m in MARKETS if m not in capped]
        parts = _proportional(total - sum(capped.values()), open_markets)
        over = [m for m in open_markets if parts[m] > CAPACITY.get(m, parts[m])]
        if not over:
            return {m: capped.get(m, parts.get(m, 0)) for m in MARKETS}
        capped |= {m: CAPACITY[m] for m in over}


def _proportional(total: int, markets: list[str]) -> dict[str, int]:
    weights = [DEFAULT_SIZES[m] for m in markets]
    exact = [total * w / sum(weights) for w in weights]
    parts = [max(1, math.floor(x)) for x in exact]
    order = sorted(range(len(markets)), key=lambda i: parts[i] - exact[i])
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return dict(zip(markets, parts, strict=True))


def price_decimals(price: float) -> int:
    """About four significant digits, never fewer than two decimals (BTC 2, XRP 4, SHIB 8)."""
    return int(min(10, max(2, 3 - math.floor(math.log10(price)))))


def forex_decimals(price: float) -> int:
    """Majors to 5 decimals, JPY-like levels (above 20) to 3, in between to 4."""
    return 3 if price >= 20 else 4 if price >= 5 else 5


def build_universe(market: str, count: int | None = None) -> Universe:
    """The default universe of `market`, or `count` instruments: the defaults first, then extras."""
    builder = {
        "crypto": _crypto,
        "forex": _forex,
        "commodities": _commodities,
        "stocks": _stocks,
    }[market]
    n = DEFAULT_SIZES[market] if count is None else count
    if n < 1:
        raise ValueError("instruments must be at least 1")
    rng = np.random.default_rng([UNIVERSE_KEY, MARKETS.index(market)])
    return builder(n, rng)


def _from_specs(
    market: str,
    specs: list[Spec],
    rho: np.ndarray,
    volume_base: np.ndarray,
    decimals: list[int] | None = None,
    sign: np.ndarray | None = None,
) -> Universe:
    prices = np.array([s.price for s in specs], dtype=float)
    return Universe(
        market=market,
        symbols=[s.symbol for s in specs],
        names=[s.name for s in specs],
        aliases=[s.aliases for s in specs],
        price=prices,
        vol=np.array([s.vol for s in specs], dtype=float),
        rho=rho,
        sign=np.ones(len(specs)) if sign is None else sign,
        decimals=np.array(decimals or [price_decimals(p) for p in prices], dtype=np.int64),
        volume_base=volume_base,
    )


def _synthetic_names(
    rng: np.random.Generator, n: int, taken: set[str], suffixes: tuple[str, ...], width: int
) -> list[tuple[str, str]]:
    """`n` (symbol, name) pairs made of syllables, unique and distinct from `taken`."""
    out: list[tuple[str, str]] = []
    while len(out) < n:
        a, b = rng.choice(len(_SYLLABLES), size=2)
        stem = _SYLLABLES[a] + _SYLLABLES[b]
        symbol = (_SYLLABLES[a][:2] + _SYLLABLES[b][: width - 2]).upper()
        k = 2
        while symbol in taken:
            symbol = f"{symbol[:width]}{k}"
            k += 1
        taken.add(symbol)
        out.append((symbol, stem.capitalize() + suffixes[int(rng.integers(len(suffixes)))]))
    return out


def _extras(
    rng: np.random.Generator,
    n: int,
    taken: set[str],
    suffixes: tuple[str, ...],
    price_range: tuple[float, float],
    vol_range: tuple[float, float],
) -> list[Spec]:
    names = _synthetic_names(rng, n, taken, suffixes, width=4)
    low, high = math.log(price_range[0]), math.log(price_range[1])
    prices = np.exp(rng.uniform(low, high, size=n))
    vols = rng.uniform(*vol_range, size=n)
    return [
        Spec(sym, name, float(p), float(v), ())
        for (sym, name), p, v in zip(names, prices, vols, strict=True)
    ]


def _zipf(n: int, top: float, exponent: float) -> np.ndarray:
    return top / np.arange(1, n + 1) ** exponent


def _crypto(n: int, rng: np.random.Generator) -> Universe:
    specs = list(CRYPTO[:n])
    taken = {s.symbol for s in CRYPTO}
    specs += _extras(rng, n - len(specs), taken, _CRYPTO_SUFFIXES, (0.0005, 40), (0.055, 0.075))
    # Large coins move with the market and small caps on their own news (alt-BTC correlation
    # falls with market cap): the loading falls with rank, from 0.85 to 0.50, give or take 0.05.
    rho = np.linspace(0.85, 0.50, n) + rng.uniform(-0.05, 0.05, size=n)
    rho[0] = 0.97  # BTC is nearly the market factor itself
    return _from_specs("crypto", specs, rho, _zipf(n, 28e9, 1.5) + 2e6)


def _forex(n: int, rng: np.random.Generator) -> Universe:
    pairs = [p for p, _ in FOREX_PAIRS[:n]]
    vols = [v for _, v in FOREX_PAIRS[:n]]
    codes = list(USD_VALUE)
    extra = [a + b for a in codes for b in codes if a != b and a + b not in pairs]
    if n - len(pairs) > len(extra):
        raise ValueError(f"at most {len(FOREX_PAIRS) + len(extra)} forex pairs")
    picks = rng.permutation(len(extra))[: n - len(pairs)]
    pairs += [extra[i] for i in sorted(picks)]
    vols += list(rng.uniform(0.0045, 0.0075, size=n - len(vols)))
    specs = [_pair_spec(p, v) for p, v in zip(pairs, vols, strict=True)]
    sign = np.array([1.0 if p[3:] == "USD" else -1.0 if p[:3] == "USD" else 0.0 for p in pairs])
    rho = np.where(sign == 0.0, 0.15, rng.uniform(0.35, 0.6, size=n))
    sign[sign == 0.0] = 1.0
    decimals = [forex_decimals(s.price) for s in specs]
    ticks = 60_000 + 160_000 * rng.random(n) / np.sqrt(np.arange(1, n + 1))
    return _from_specs("forex", specs, rho, ticks, decimals, sign)


def _pair_spec(pair: str, vol: float) -> Spec:
    base, quote = pair[:3], pair[3:]
    aliases = tuple(
        f"the {CURRENCY_NAMES[c]}" for c in (base, quote) if c in CURRENCY_NAMES and c != "USD"
    )
    return Spec(pair, f"{base}/{quote}", USD_VALUE[base] / USD_VALUE[quote], vol, aliases)


def _commodities(n: int, rng: np.random.Generator) -> Universe:
    specs = list(COMMODITIES[:n])
    for sym, name, price in EXTRA_COMMODITIES[: max(0, n - len(specs))]:
        specs.append(Spec(sym, name, price, float(rng.uniform(0.012, 0.022)), (name.lower(),)))
    taken = {s.symbol for s in COMMODITIES} | {e[0] for e in EXTRA_COMMODITIES}
    specs += _extras(rng, n - len(specs), taken, _COMMODITY_SUFFIXES, (1, 3_000), (0.012, 0.022))
    rho = rng.uniform(0.25, 0.45, size=n)
    contracts = np.round(_zipf(n, 300_000, 0.8) + 5_000)
    return _from_specs("commodities", specs, rho, contracts)


def _stocks(n: int, rng: np.random.Generator) -> Universe:
    specs = list(STOCKS[:n])
    taken = {s.symbol for s in STOCKS}
    specs += _extras(rng, n - len(specs), taken, _STOCK_SUFFIXES, (10, 300), (0.015, 0.028))
    rho = rng.uniform(0.32, 0.52, size=n)
    return _from_specs("stocks", specs, rho, _zipf(n, 12e9, 1.0) + 20e6, [2] * n)
