"""A labelled set of realistic headlines across the four markets: bullish, bearish, neutral, FUD, FOMO.

Written for these tests in the style of real wire and crypto-press headlines (not the embedded
generator's templates). FUD headlines are bearish and FOMO headlines bullish in sign.
"""

from __future__ import annotations

from typing import NamedTuple


class Labelled(NamedTuple):
    market: str
    headline: str
    label: str
    """bullish, bearish, neutral, fud or fomo."""


LABELLED: tuple[Labelled, ...] = (
    # bullish
    Labelled("crypto", "Bitcoin surges to record high as spot ETF inflows accelerate", "bullish"),
    Labelled("crypto", "Ether rallies 8% after successful network upgrade", "bullish"),
    Labelled("crypto", "Solana climbs to two-year high on strong developer activity", "bullish"),
    Labelled("crypto", "XRP soars after court win against regulator", "bullish"),
    Labelled("crypto", "Crypto market rebounds as bitcoin reclaims $60,000", "bullish"),
    Labelled("forex", "Dollar gains broadly after upbeat jobs report", "bullish"),
    Labelled("forex", "Euro strengthens as ECB signals more rate hikes", "bullish"),
    Labelled("forex", "Sterling jumps to six-month high on robust retail sales", "bullish"),
    Labelled("commodities", "Gold hits all-time high as investors seek safety", "bullish"),
    Labelled("commodities", "Oil prices rally after OPEC+ agrees deeper output cuts", "bullish"),
    Labelled("commodities", "Copper climbs on optimism over Chinese demand", "bullish"),
    Labelled("commodities", "Wheat futures jump as drought damages crops", "bullish"),
    Labelled("stocks", "Apple shares rise after earnings beat estimates", "bullish"),
    Labelled("stocks", "Nvidia soars as data-center revenue tops forecasts", "bullish"),
    Labelled("stocks", "Microsoft raises full-year guidance, stock climbs", "bullish"),
    Labelled("stocks", "Tesla jumps after analyst upgrade to buy", "bullish"),
    Labelled(
        "stocks", "Wall Street rallies as inflation cools, S&P 500 hits record high", "bullish"
    ),
    # bearish
    Labelled("crypto", "Bitcoin slides below $40,000 as liquidations mount", "bearish"),
    Labelled(
        "crypto", "Ethereum tumbles 10% after major DeFi exploit drains $200 million", "bearish"
    ),
    Labelled("crypto", "Exchange hacked, users' funds stolen in $150 million breach", "bearish"),
    Labelled("crypto", "SEC sues crypto exchange, tokens drop sharply", "bearish"),
    Labelled("crypto", "Crypto funds see record outflows as prices slump", "bearish"),
    Labelled("forex", "Yen weakens to 34-year low against the dollar", "bearish"),
    Labelled("forex", "Pound falls after Bank of England signals rate cuts", "bearish"),
    Labelled("forex", "Australian dollar drops as China data disappoints", "bearish"),
    Labelled("commodities", "Oil plunges on fears of a global recession", "bearish"),
    Labelled("commodities", "Gold slips as strong dollar weighs on bullion", "bearish"),
    Labelled(
        "commodities", "Natural gas prices crash to multi-year lows on mild weather", "bearish"
    ),
    Labelled("stocks", "Intel shares plunge after weak guidance and layoffs", "bearish"),
    Labelled("stocks", "Boeing falls after regulator orders new inspections", "bearish"),
    Labelled("stocks", "Netflix slumps as subscriber growth misses expectations", "bearish"),
    Labelled("stocks", "Analyst downgrade sends PayPal lower", "bearish"),
    Labelled("stocks", "Stocks sell off as bond yields jump to 16-year high", "bearish"),
    # neutral
    Labelled("crypto", "Bitcoin little changed as traders await Fed decision", "neutral"),
    Labelled("crypto", "Ethereum developers schedule next network upgrade for March", "neutral"),
    Labelled("crypto", "Cardano foundation publishes quarterly report", "neutral"),
    Labelled("crypto", "Crypto exchange names new chief financial officer", "neutral"),
    Labelled("forex", "EUR/USD holds steady ahead of inflation data", "neutral"),
    Labelled("forex", "Dollar flat as markets look to central bank minutes", "neutral"),
    Labelled("forex", "Swiss franc trades in narrow range ahead of SNB meeting", "neutral"),
    Labelled("commodities", "Oil steady as traders weigh supply and demand outlook", "neutral"),
    Labelled("commodities", "Gold unchanged ahead of US payrolls report", "neutral"),
    Labelled("commodities", "Corn futures flat as planting progresses", "neutral"),
    Labelled("stocks", "Apple to hold annual developer conference in June", "neutral"),
    Labelled("stocks", "Microsoft schedules earnings release date", "neutral"),
    Labelled("stocks", "Amazon names new head of cloud unit", "neutral"),
    Labelled("stocks", "US stocks mixed ahead of Fed minutes", "neutral"),
    # FUD
    Labelled("crypto", "Panic selling grips crypto as fears of exchange insolvency spread", "fud"),
    Labelled("crypto", "Is bitcoin going to zero? Fear spreads after brutal crash", "fud"),
    Labelled("crypto", "Stablecoin depeg sparks contagion fears across DeFi", "fud"),
    Labelled("crypto", "Rumors of bank run at exchange trigger massive withdrawals", "fud"),
    Labelled("crypto", "Capitulation: holders dump altcoins as fear index hits extreme", "fud"),
    Labelled("forex", "Panic in currency markets as lira collapses", "fud"),
    Labelled("commodities", "Crash fears grip oil traders as demand doom spreads", "fud"),
    Labelled("stocks", "Bank shares collapse amid panic over deposit flight", "fud"),
    Labelled("stocks", "Meltdown fears: tech bubble about to burst, warn bears", "fud"),
    Labelled("stocks", "Investors flee as fraud allegations spark panic selling", "fud"),
    # FOMO
    Labelled("crypto", "Dogecoin to the moon? Retail piles in as meme coin skyrockets", "fomo"),
    Labelled("crypto", "FOMO returns: traders rush to buy bitcoin before halving", "fomo"),
    Labelled("crypto", "Meme coin mania: new token rallies 1000x in a week", "fomo"),
    Labelled("crypto", "Don't miss out: altcoins go parabolic as euphoria builds", "fomo"),
    Labelled("crypto", "Buying frenzy sends Solana soaring as everyone piles in", "fomo"),
    Labelled("forex", "Traders pile into the dollar on fear of missing out on rate rally", "fomo"),
    Labelled("commodities", "Gold buying frenzy: investors rush in as prices soar", "fomo"),
    Labelled("stocks", "AI stock mania: Nvidia skyrockets as retail investors pile in", "fomo"),
    Labelled("stocks", "Euphoria on Wall Street as meme stocks go parabolic", "fomo"),
    Labelled("stocks", "Fear of missing out drives record inflows into tech stocks", "fomo"),
)
