"""Briefs: raw news articles tagged with their market's instruments and enriched, as one frame."""

from __future__ import annotations

import polars as pl

from pipelines.catalog.newsroom import BRIEFS
from pipelines.newsroom.enrichment import Article, Enricher, Enrichment
from pipelines.newsroom.tagging import AliasIndex, build_index
from pipelines.newsroom.topics import topic_of

ENRICHMENT_FIELDS = tuple(Enrichment.__struct_fields__)


FEW_ARTICLES = 1_000
"""Articles up to which a batch is tagged with the aliases its texts can match only: collecting
their words costs less than compiling every alias (a refresh's batch); a first load's does not."""


def market_index(
    instruments: pl.DataFrame, market: str, texts: list[str] | None = None
) -> AliasIndex:
    """The alias index of `market` from the instruments table (other markets' rows ignored); with
    `texts`, of the aliases that can match in them (`build_index`)."""
    rows = instruments.filter(pl.col("market") == market).select("symbol", "name").rows()
    return build_index(((str(s), str(n)) for s, n in rows), texts)


def impacted_coins(market: str, symbols: list[str]) -> list[str] | None:
    """Crypto: the coins named (None when none); other markets have no coins: None."""
    return symbols if market == "crypto" and symbols else None


def build_briefs(
    raw_news: pl.DataFrame, instruments: pl.DataFrame, market: str, enricher: Enricher
) -> pl.DataFrame:
    """One brief per article of `market`, newest first, conformed to the `briefs` table."""
    news = raw_news.filter(pl.col("market") == market).sort(
        ["timestamp", "article_id"], descending=[True, False]
    )
    if news.is_empty():
        return BRIEFS.empty()
    titles = news.get_column("title").to_list()
    bodies = news.get_column("body").to_list()
    texts = [t or "" for t in titles + bodies] if news.height <= FEW_ARTICLES else None
    index = market_index(instruments, market, texts)
    symbols = [index.tag(t, b) for t, b in zip(titles, bodies, strict=True)]
    articles = [
        Article(market, t, b, tuple(s)) for t, b, s in zip(titles, bodies, symbols, strict=True)
    ]
    enrichments = enricher.enrich(articles)
    if len(enrichments) != len(articles):
        raise ValueError(f"enricher returned {len(enrichments)} results for {len(articles)}")
    fields = {f: [getattr(e, f) for e in enrichments] for f in ENRICHMENT_FIELDS}
    frame = news.with_columns(
        pl.col("published_at").dt.date().alias("date"),
        pl.Series("symbols", symbols, dtype=pl.List(pl.String())),
        pl.Series(
            "impacted_coins",
            [impacted_coins(market, s) for s in symbols],
            dtype=pl.List(pl.String()),
        ),
        pl.Series("topic", [topic_of(t, b) for t, b in zip(titles, bodies, strict=True)]),
        *(pl.Series(name, values, dtype=_dtype(name)) for name, values in fields.items()),
    )
    return BRIEFS.conform(frame)


def _dtype(field: str) -> pl.DataType:
    return pl.Float64() if field == "sentiment" else pl.String()
