"""The sentiment section: the scorer against labelled finance headlines, and 100 articles' time.

Two labelled sets (tests/fixtures/sentiment/README.md says where each comes from). The written set
(`tests/fixtures/sentiment/written.csv`) was written for this project and is committed, so it is
always measured. The external set (Twitter Financial News, MIT) is not in this repository: data
obtained from other repositories is kept beside it, in `../shared/datasets/sentiment/`, or where
`MI_SENTIMENT_SET` points, and is measured when it is there. Each set is split by a hash of each
text into a tuning part and a held-out part; the figures are the held-out parts'. Each headline is scored through the
call the briefs use (`LexiconEnricher.enrich_one` with the headline as title and body) and
bucketed with the product's thresholds (positive at >= 1, negative at <= -1).
"""

from __future__ import annotations

import csv
import hashlib
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from benchmarks.figures import Figure, Goal
from pipelines.newsroom.enrichment import SENTIMENT_SCALE, Article, LexiconEnricher
from pipelines.newsroom.sentiment import POSITIVE_FROM

SET_FILE = "twitter_financial_news_valid.csv"
LABELLED_SET = Path(
    os.environ.get("MI_SENTIMENT_SET")
    or Path(__file__).resolve().parents[2] / "shared" / "datasets" / "sentiment" / SET_FILE
)
"""Where the external labelled set is read (its SHA-256 is in tests/fixtures/sentiment/README.md)."""
LABELS = {"0": "negative", "1": "positive", "2": "neutral"}
"""The external set's label codes (bearish, bullish, neutral) as the product's buckets."""
BUCKETS = ("positive", "neutral", "negative")
WRITTEN_SET = (
    Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sentiment" / "written.csv"
)
"""The set written for this project, committed: its labels are the product's buckets."""
WRITTEN_LABELS = {bucket: bucket for bucket in BUCKETS}

ACCURACY_GOAL = Goal("project", ">=", 0.80)
MACRO_F1_GOAL = Goal("project", ">=", 0.75)
NEGATIVE_RECALL_GOAL = Goal("project", ">=", 0.70)
ENRICH_SECONDS_GOAL = Goal("project", "<", 1.0)
BATCH = 100
"""Articles in the timed batch: about one news refresh of the embedded market."""


@dataclass(frozen=True)
class Headline:
    text: str
    bucket: str


def labelled(path: Path = LABELLED_SET, labels: dict[str, str] = LABELS) -> list[Headline]:
    with path.open(newline="", encoding="utf-8") as rows:
        return [Headline(row["text"], labels[row["label"]]) for row in csv.DictReader(rows)]


def written() -> list[Headline]:
    """The set written for this project (tests/fixtures/sentiment/README.md)."""
    return labelled(WRITTEN_SET, WRITTEN_LABELS)


def is_held_out(text: str) -> bool:
    """Deterministic, about half: an odd SHA-256 of the text is held out, an even one tunes."""
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 2 == 1


def held_out(headlines: Sequence[Headline]) -> list[Headline]:
    return [h for h in headlines if is_held_out(h.text)]


def tuning(headlines: Sequence[Headline]) -> list[Headline]:
    return [h for h in headlines if not is_held_out(h.text)]


def bucket_of(sentiment: float | None) -> str:
    """The sentiment buckets of decisions.md (a missing score is neutral)."""
    value = sentiment or 0.0
    if value >= POSITIVE_FROM:
        return "positive"
    return "negative" if value <= -POSITIVE_FROM else "neutral"


@dataclass(frozen=True)
class Scores:
    """Agreement of predicted buckets with the labels."""

    accuracy: float
    macro_f1: float
    recall: dict[str, float]
    count: int


def scores(gold: Sequence[str], predicted: Sequence[str]) -> Scores:
    pairs = list(zip(gold, predicted, strict=True))
    f1s, recall = [], {}
    for bucket in BUCKETS:
        hits = sum(g == p == bucket for g, p in pairs)
        labelled_so = sum(g == bucket for g, _ in pairs)
        called_so = sum(p == bucket for _, p in pairs)
        recall[bucket] = hits / labelled_so if labelled_so else 0.0
        precision = hits / called_so if called_so else 0.0
        both = precision + recall[bucket]
        f1s.append(2 * precision * recall[bucket] / both if both else 0.0)
    accuracy = sum(g == p for g, p in pairs) / len(pairs)
    return Scores(accuracy, statistics.fmean(f1s), recall, len(pairs))


def product_buckets(headlines: Sequence[Headline]) -> list[str]:
    """Each headline scored as the briefs score it, and bucketed."""
    enricher = LexiconEnricher()
    articles = [Article("stocks", h.text, h.text) for h in headlines]
    return [bucket_of(e.sentiment) for e in enricher.enrich_each(articles)]


def plain_vader_buckets(headlines: Sequence[Headline]) -> list[str]:
    """The anchor: VADER's own lexicon alone, on the same scale and buckets."""
    vader = SentimentIntensityAnalyzer()
    return [
        bucket_of(vader.polarity_scores(h.text)["compound"] * SENTIMENT_SCALE) for h in headlines
    ]


def evaluate(
    headlines: Sequence[Headline], scorer: Callable[[Sequence[Headline]], list[str]]
) -> Scores:
    return scores([h.bucket for h in headlines], scorer(headlines))


def refresh_articles(headlines: Sequence[Headline], count: int = BATCH) -> list[Article]:
    """`count` articles shaped like a news refresh's: a headline and a body of a few sentences."""
    texts = [h.text for h in headlines]
    return [
        Article(
            "crypto",
            texts[i % len(texts)],
            " ".join(texts[(i + k) % len(texts)] for k in range(1, 6)),
        )
        for i in range(count)
    ]


def enrich_seconds(articles: Sequence[Article], repeats: int = 5) -> float:
    """Median wall seconds of `LexiconEnricher.enrich` over the batch (the enricher made once,
    as the pipeline's resource is)."""
    enricher = LexiconEnricher()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        enricher.enrich(articles)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def set_figures(label: str, headlines: Sequence[Headline]) -> list[Figure]:
    """Held-out accuracy, macro-F1 and per-class recall of one set, plain VADER beside each."""
    product = evaluate(headlines, product_buckets)
    anchor = evaluate(headlines, plain_vader_buckets)
    name = f"{label} held-out headlines ({product.count})"
    details = {"recall": product.recall, "anchor_recall": anchor.recall}

    def figure(what: str, mine: float, theirs: float, goal: Goal | None) -> Figure:
        return Figure(
            "sentiment", f"{what}, {name}", "share", mine, theirs, "plain VADER", goal, details
        )

    return [
        figure("accuracy", product.accuracy, anchor.accuracy, ACCURACY_GOAL),
        figure("macro-F1", product.macro_f1, anchor.macro_f1, MACRO_F1_GOAL),
        figure(
            "negative recall",
            product.recall["negative"],
            anchor.recall["negative"],
            NEGATIVE_RECALL_GOAL,
        ),
        figure("positive recall", product.recall["positive"], anchor.recall["positive"], None),
        figure("neutral recall", product.recall["neutral"], anchor.recall["neutral"], None),
    ]


def sentiment_section() -> list[Figure]:
    own = held_out(written())
    figures = set_figures("written", own)
    if LABELLED_SET.is_file():
        figures += set_figures("Twitter", held_out(labelled()))
    else:
        print(f"  no external set at {LABELLED_SET} (tests/fixtures/sentiment/README.md): skipped")
    seconds = enrich_seconds(refresh_articles(own))
    figures.append(
        Figure(
            "sentiment", f"enrichment of {BATCH} articles", "s", seconds, goal=ENRICH_SECONDS_GOAL
        )
    )
    return figures
