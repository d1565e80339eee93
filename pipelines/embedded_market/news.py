"""The embedded newsroom: stories about the simulated moves, written as one RSS and one Atom feed."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from pipelines.embedded_market import templates
from pipelines.embedded_market.model import Bars
from pipelines.embedded_market.universe import DEFAULT_SIZES, Universe

NEWS_HOST = "https://news.market-intelligence.example"
WIRE = "wire.xml"
"""RSS 2.0 feed of the market."""
DIGEST = "digest.xml"
"""Atom 1.0 feed of the market."""
ITEMS_PER_DAY = {"crypto": 3, "forex": 2, "commodities": 2, "stocks": 3}
"""Fewest stories a day for the default universe (up to two more are drawn)."""
SHARED = 0.15
"""Share of stories carried by both feeds (half with the same guid, half with the same link only)."""
HYPE = 0.2
"""Share of stories written in FUD, FOMO or speculation language."""
NEWS_KEY = 7
"""Last element of a day's news seed, so news draws never overlap price draws."""


@dataclass(frozen=True)
class Story:
    """One article; `feeds` says where it appears (`wire`, `digest` or both)."""

    story_id: str
    published: datetime
    title: str | None
    body: str
    link: str | None
    guid: str | None
    symbols: tuple[str, ...]
    tone: str
    in_wire: bool
    in_digest: bool
    shared_guid: bool


@dataclass(frozen=True)
class _Day:
    """What a story of one calendar day may say: each instrument's move and close."""

    day: date
    moves: np.ndarray | None
    """Close-to-close simple returns, None when the market is closed that day."""
    closes: np.ndarray


def make_stories(
    universe: Universe, bars: Bars, seed: int, market_index: int, start: date, as_of: datetime
) -> list[Story]:
    """Every story from `start` to `as_of` (none later), oldest first."""
    weights = 1.0 / np.arange(1, len(universe) + 1) ** 0.9
    weights /= weights.sum()
    base = ITEMS_PER_DAY[universe.market]
    scale = min(1.5, 1.0 + math.log10(max(1.0, len(universe) / DEFAULT_SIZES[universe.market])))
    stories: list[Story] = []
    for day in _days(bars, start, as_of.date()):
        rng = np.random.default_rng([seed, market_index, day.day.toordinal(), NEWS_KEY])
        count = round(scale * (base + int(rng.integers(0, 3))))
        for k in range(count):
            # stratified times: every 24-hour window holds at least count - 1 stories
            second = int((k + rng.random()) / count * 86_400)
            published = datetime.combine(day.day, datetime.min.time(), UTC) + timedelta(
                seconds=second
            )
            story = _story(rng, universe, weights, day, k, published)
            if published <= as_of:
                stories.append(story)
    return stories


def _days(bars: Bars, start: date, end: date) -> list[_Day]:
    """Every calendar day of the window with the latest bar on or before it."""
    moves = np.expm1(bars.returns)
    out: list[_Day] = []
    row = 0
    for i in range((end - start).days + 1):
        day = start + timedelta(days=i)
        while row + 1 < len(bars.days) and bars.days[row + 1] <= day:
            row += 1
        trading = bars.days[row] == day
        out.append(_Day(day, moves[row] if trading else None, bars.close[row]))
    return out


def _story(
    rng: np.random.Generator,
    universe: Universe,
    weights: np.ndarray,
    day: _Day,
    k: int,
    published: datetime,
) -> Story:
    n = len(universe)
    first = int(rng.choice(n, p=weights))
    other = int(rng.choice(n, p=weights)) if n > 1 and rng.random() < 0.3 else first
    move = 0.0 if day.moves is None else float(day.moves[first])
    score = move / float(universe.vol[first]) + 0.8 * float(rng.standard_normal())
    tone = "bullish" if score > 0.6 else "bearish" if score < -0.6 else "neutral"
    style = tone
    if rng.random() < HYPE:
        style = {"bullish": "fomo", "bearish": "fud", "neutral": "speculation"}[tone]
    fields = _fields(rng, universe, day, first, other)
    title = _pick(rng, templates.TITLES[style]).format(**fields)
    body = _body(rng, universe.market, day, move, style, fields, other != first)
    story_id = f"{universe.market[:2]}{day.day.toordinal()}{k:03d}"
    link = f"{NEWS_HOST}/{universe.market}/{day.day:%Y/%m/%d}/{_slug(title)}-{story_id}"
    u = rng.random(2)
    shared = bool(u[0] < SHARED)
    in_wire = shared or bool(u[0] < SHARED + (1 - SHARED) / 2)
    symbols = tuple(dict.fromkeys((universe.symbols[first], universe.symbols[other])))
    return Story(
        story_id=story_id,
        published=published,
        title=title,
        body=body,
        link=link,
        guid=f"urn:market-intelligence:story:{story_id}",
        symbols=symbols,
        tone=tone,
        in_wire=in_wire,
        in_digest=shared or not in_wire,
        shared_guid=bool(u[1] < 0.5),
    )


def _fields(
    rng: np.random.Generator, universe: Universe, day: _Day, first: int, other: int
) -> dict[str, str]:
    aliases = (universe.names[first], *universe.aliases[first])
    other_move = 0.0 if day.moves is None else float(day.moves[other])
    decimals = int(universe.decimals[first])
    return {
        "name": universe.names[first],
        "ticker": universe.symbols[first],
        "alias": _pick(rng, aliases),
        "pct": _pct(0.0 if day.moves is None else float(day.moves[first])),
        "price": f"{float(day.closes[first]):,.{decimals}f}",
        "date": f"{day.day:%A %d %B}",
        "other": universe.names[other] if other != first else "its peers",
        "other_ticker": universe.symbols[other],
        "other_pct": f"{100 * other_move:+.1f}%",
    }


def _body(
    rng: np.random.Generator,
    market: str,
    day: _Day,
    move: float,
    style: str,
    fields: dict[str, str],
    has_other: bool,
) -> str:
    direction = "closed" if day.moves is None else "up" if move >= 0 else "down"
    reasons = templates.REASONS[market]["flat" if direction == "closed" else direction]
    sentences = [
        _pick(rng, templates.OPENERS[direction]).format(**fields, reason=_pick(rng, reasons))
    ]
    if style in templates.HYPE:
        sentences.append(_pick(rng, templates.HYPE[style]).format(**fields))
    if has_other:
        sentences.append(_pick(rng, templates.OTHERS).format(**fields))
    return " ".join(sentences)


def _pick(rng: np.random.Generator, bank: tuple[str, ...]) -> str:
    return bank[int(rng.integers(len(bank)))]


def _pct(move: float) -> str:
    return f"{abs(100 * move):.1f}%"


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60].rstrip("-")


# --- defects: extra items a real feed might carry ---------------------------------------------


def defect_stories(stories: list[Story]) -> dict[str, Story]:
    """Malformed copies of a mid-history story, by defect kind (each one extra item in a feed)."""
    base = stories[len(stories) // 2]
    wire = replace(base, published=base.published + timedelta(seconds=1), in_wire=True)
    wire = replace(wire, in_digest=False)
    return {
        "news_missing_title": replace(
            wire,
            story_id=base.story_id + "t",
            title=None,
            guid=f"{base.guid}-untitled",
            link=f"{base.link}-untitled",
        ),
        "news_missing_guid_and_link": replace(
            wire, story_id=base.story_id + "g", guid=None, link=None
        ),
        "news_unparseable_date": replace(
            wire,
            in_wire=False,
            in_digest=True,
            story_id=base.story_id + "d",
            guid=f"{base.guid}-undated",
            link=f"{base.link}-undated",
            shared_guid=True,
        ),
    }


BAD_DATE = "sometime last week"
"""The date text of the unparseable-date defect."""


# --- rendering --------------------------------------------------------------------------------


def rss_item(story: Story, bad_date: bool = False) -> str:
    parts = ["<item>"]
    if story.title is not None:
        parts.append(f"<title>{escape(story.title)}</title>")
    if story.link is not None:
        parts.append(f"<link>{escape(story.link)}</link>")
    if story.guid is not None:
        parts.append(f'<guid isPermaLink="false">{escape(story.guid)}</guid>')
    pub = BAD_DATE if bad_date else format_datetime(story.published, usegmt=True)
    parts.append(f"<pubDate>{pub}</pubDate>")
    parts.append(f"<description>{escape(story.body)}</description>")
    parts.extend(f"<category>{s}</category>" for s in story.symbols)
    parts.append("</item>")
    return "".join(parts)


def atom_entry(story: Story, bad_date: bool = False) -> str:
    when = BAD_DATE if bad_date else _rfc3339(story.published)
    if story.shared_guid and story.guid is not None:
        entry_id = story.guid
    else:
        entry_id = f"tag:market-intelligence.example,{story.published:%Y-%m-%d}:{story.story_id}"
    parts = ["<entry>", f"<id>{escape(entry_id)}</id>"]
    if story.title is not None:
        parts.append(f"<title>{escape(story.title)}</title>")
    if story.link is not None:
        parts.append(f'<link rel="alternate" href={quoteattr(story.link)}/>')
    parts.append(f"<published>{when}</published><updated>{when}</updated>")
    parts.append(f'<summary type="text">{escape(story.body)}</summary>')
    parts.extend(f"<category term={quoteattr(s)}/>" for s in story.symbols)
    parts.append("</entry>")
    return "".join(parts)


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rss_document(market: str, items: list[str], built: datetime) -> str:
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>'
        f"<title>Market Intelligence Wire: {market}</title>"
        f"<link>{NEWS_HOST}/{market}/</link>"
        f"<description>Embedded {market} news wire</description>"
        f"<lastBuildDate>{format_datetime(built, usegmt=True)}</lastBuildDate>\n"
    )
    return head + "\n".join(items) + "\n</channel></rss>\n"


def atom_document(market: str, entries: list[str], updated: datetime) -> str:
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
        f"<id>tag:market-intelligence.example,2013:digest/{market}</id>"
        f"<title>Market Intelligence Digest: {market}</title>"
        f"<updated>{_rfc3339(updated)}</updated>"
        f'<link rel="alternate" href="{NEWS_HOST}/{market}/"/>\n'
    )
    return head + "\n".join(entries) + "\n</feed>\n"
