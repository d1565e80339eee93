"""The embedded newsroom: stories about the simulated moves, by the clock, in RSS and Atom documents."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from xml.sax.saxutils import escape, quoteattr

import numpy as np

import pipelines.embedded_market.templates as templates
from pipelines.embedded_market.universe import DEFAULT_SIZES, Universe

NEWS_HOST = "https://news.market-intelligence.example"
WIRE = "wire"
"""RSS 2.0 feed of the market."""
DIGEST = "digest"
"""Atom 1.0 feed of the market."""
FEEDS = (WIRE, DIGEST)
ITEMS_PER_DAY = {"crypto": 3, "forex": 2, "commodities": 2, "stocks": 3}
"""Fewest stories a day for the default universe (up to two more are drawn)."""
SHARED = 0.15
"""Share of stories carried by both feeds (half with the same guid, half with the same link only)."""
HYPE = 0.2
"""Share of stories written in FUD, FOMO or speculation language."""
NEWS_KEY = 7
"""Last element of a day's news seed, so news draws never overlap price draws."""
_DRAWS = 16
"""Uniforms drawn per story (more than any story uses), so each story's draws are a fixed block."""


@dataclass(frozen=True)
class Story:
    """One article; `in_wire` and `in_digest` say which feeds carry it."""

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


class Newsroom:
    """Writes one market's stories, day by day: each day's draws come from its own seed."""

    def __init__(self, universe: Universe, seed: int, market_index: int) -> None:
        self.universe, self.seed, self.market_index = universe, seed, market_index
        weights = 1.0 / np.arange(1, len(universe) + 1) ** 0.9
        self.cdf = np.cumsum(weights / weights.sum())
        self.base = ITEMS_PER_DAY[universe.market]
        self.scale = min(
            1.5, 1.0 + math.log10(max(1.0, len(universe) / DEFAULT_SIZES[universe.market]))
        )

    def stories(self, day: date, returns: np.ndarray | None, closes: np.ndarray) -> list[Story]:
        """Every story of calendar day `day`, oldest first, whatever the clock says.

        `returns` are the day's log returns (None when the market is closed that day), `closes`
        the latest closes on or before it. Times are stratified: every 24 hours hold stories.
        """
        rng = np.random.default_rng([self.seed, self.market_index, day.toordinal(), NEWS_KEY])
        count = round(self.scale * (self.base + int(rng.random() * 3)))
        u = rng.random((count, _DRAWS))
        z = rng.standard_normal(count)
        moves = None if returns is None else np.expm1(returns)
        facts = _Day(day, moves, closes)
        midnight = datetime.combine(day, datetime.min.time(), UTC)
        # instruments drawn with weights 1 / rank^0.9; a second one for 30 % of the stories
        last = len(self.universe) - 1
        firsts = np.minimum(np.searchsorted(self.cdf, u[:, 1], side="right"), last).tolist()
        seconds = np.minimum(np.searchsorted(self.cdf, u[:, 3], side="right"), last).tolist()
        out = []
        for k, (row, noise) in enumerate(zip(u.tolist(), z.tolist(), strict=True)):
            published = midnight + timedelta(seconds=int((k + row[0]) / count * 86_400))
            other = seconds[k] if last > 0 and row[2] < 0.3 else firsts[k]
            out.append(self._story(row, noise, facts, k, published, firsts[k], other))
        return out

    def _story(
        self,
        u: list[float],
        noise: float,
        day: _Day,
        k: int,
        published: datetime,
        first: int,
        other: int,
    ) -> Story:
        universe = self.universe
        move = 0.0 if day.moves is None else float(day.moves[first])
        score = move / float(universe.vol[first]) + 0.8 * noise
        tone = "bullish" if score > 0.6 else "bearish" if score < -0.6 else "neutral"
        style = tone
        if u[4] < HYPE:
            style = {"bullish": "fomo", "bearish": "fud", "neutral": "speculation"}[tone]
        fields = _fields(u[5], universe, day, first, other)
        title = _pick(u[6], templates.TITLES[style]).format(**fields)
        body = _body(u[7:11], universe.market, day, move, style, fields, other != first)
        story_id = f"{universe.market[:2]}{day.day.toordinal()}{k:03d}"
        link = f"{NEWS_HOST}/{universe.market}/{day.day:%Y/%m/%d}/{_slug(title)}-{story_id}"
        shared = bool(u[11] < SHARED)
        in_wire = shared or bool(u[11] < SHARED + (1 - SHARED) / 2)
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
            shared_guid=bool(u[12] < 0.5),
        )


def _fields(u: float, universe: Universe, day: _Day, first: int, other: int) -> dict[str, str]:
    aliases = (universe.names[first], *universe.aliases[first])
    other_move = 0.0 if day.moves is None else float(day.moves[other])
    decimals = int(universe.decimals[first])
    return {
        "name": universe.names[first],
        "ticker": universe.symbols[first],
        "alias": _pick(u, aliases),
        "pct": _pct(0.0 if day.moves is None else float(day.moves[first])),
        "price": f"{float(day.closes[first]):,.{decimals}f}",
        "date": f"{day.day:%A %d %B}",
        "other": universe.names[other] if other != first else "its peers",
        "other_ticker": universe.symbols[other],
        "other_pct": f"{100 * other_move:+.1f}%",
    }


def _body(
    u: list[float],
    market: str,
    day: _Day,
    move: float,
    style: str,
    fields: dict[str, str],
    has_other: bool,
) -> str:
    direction = "closed" if day.moves is None else "up" if move >= 0 else "down"
    reasons = templates.REASONS[market]["flat" if direction == "closed" else direction]
    opener = _pick(u[0], templates.OPENERS[direction])
    sentences = [opener.format(**fields, reason=_pick(u[1], reasons))]
    if style in templates.HYPE:
        sentences.append(_pick(u[2], templates.HYPE[style]).format(**fields))
    if has_other:
        sentences.append(_pick(u[3], templates.OTHERS).format(**fields))
    return " ".join(sentences)


def _pick(u: float, bank: tuple[str, ...]) -> str:
    return bank[int(u * len(bank))]  # u < 1, so the index is in range


def _pct(move: float) -> str:
    return f"{abs(100 * move):.1f}%"


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60].rstrip("-")


# --- defects: extra items a real feed might carry ---------------------------------------------


def defect_stories(base: Story) -> dict[str, Story]:
    """Malformed copies of `base`, one second later, by defect kind (each one extra item)."""
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
    pub = BAD_DATE if bad_date else _rfc822(story.published)
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


_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _rfc822(moment: datetime) -> str:
    """`Sun, 01 Mar 2026 14:00:00 GMT` (English names whatever the locale, as RSS requires)."""
    utc = moment.astimezone(UTC)
    return (
        f"{_WEEKDAYS[utc.weekday()]}, {utc.day:02d} {_MONTHS[utc.month - 1]} {utc.year} "
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d} GMT"
    )


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


ARCHIVE_NS = "http://purl.org/syndication/history/1.0"
"""RFC 5005 feed history: an archive document says so with `<fh:archive/>`."""


def rss_document(market: str, items: list[str], built: datetime, archive: str | None) -> str:
    """An RSS 2.0 document; `archive` names the month (`YYYY-MM`) of an archive document."""
    title = f"Market Intelligence Wire: {market}" + (f" ({archive})" if archive else "")
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + (
            f'<rss version="2.0" xmlns:fh="{ARCHIVE_NS}"><channel>'
            if archive
            else '<rss version="2.0"><channel>'
        )
        + f"<title>{title}</title>"
        f"<link>{NEWS_HOST}/{market}/</link>"
        f"<description>Embedded {market} news wire</description>"
        f"<lastBuildDate>{_rfc822(built)}</lastBuildDate>"
        + ("<fh:archive/>" if archive else "")
        + "\n"
    )
    return head + "\n".join(items) + "\n</channel></rss>\n"


def atom_document(market: str, entries: list[str], updated: datetime, archive: str | None) -> str:
    """An Atom 1.0 document; `archive` names the month (`YYYY-MM`) of an archive document."""
    suffix = f"/{archive}" if archive else ""
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom"'
        + (f' xmlns:fh="{ARCHIVE_NS}">' if archive else ">")
        + f"<id>tag:market-intelligence.example,2013:digest/{market}{suffix}</id>"
        f"<title>Market Intelligence Digest: {market}"
        + (f" ({archive})" if archive else "")
        + f"</title><updated>{_rfc3339(updated)}</updated>"
        f'<link rel="alternate" href="{NEWS_HOST}/{market}/"/>'
        + ("<fh:archive/>" if archive else "")
        + "\n"
    )
    return head + "\n".join(entries) + "\n</feed>\n"
