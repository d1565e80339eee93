"""The scorer on the held-out labelled headlines (tests/fixtures/sentiment/README.md): correctness,
not speed; skipped, saying why, where the set is not beside the repository.

The issue's goals are accuracy >= 0.80, macro-F1 >= 0.75 and negative recall >= 0.70. Measured on
this set the scorer reaches 0.807, 0.755 and 0.709 (docs/newsroom.md): the floors below are those
figures rounded down, which are the goals, so that a change that makes the scorer worse, or drops
it below a goal, fails here.
"""

from __future__ import annotations

import pytest

from benchmarks.sentiment import (
    LABELLED_SET,
    Headline,
    Scores,
    evaluate,
    held_out,
    is_held_out,
    labelled,
    plain_vader_buckets,
    product_buckets,
    scores,
    tuning,
)

pytestmark = pytest.mark.skipif(
    not LABELLED_SET.is_file(),
    reason=f"the labelled set is not at {LABELLED_SET} (tests/fixtures/sentiment/README.md)",
)

ACCURACY_FLOOR = 0.80
MACRO_F1_FLOOR = 0.75
NEGATIVE_RECALL_FLOOR = 0.70


@pytest.fixture(scope="module")
def headlines() -> list[Headline]:
    return labelled()


@pytest.fixture(scope="module")
def measured(headlines: list[Headline]) -> Scores:
    return evaluate(held_out(headlines), product_buckets)


def test_the_labelled_set_has_over_a_thousand_headlines_of_every_bucket(
    headlines: list[Headline],
) -> None:
    assert len(headlines) >= 1000
    assert {h.bucket for h in headlines} == {"positive", "neutral", "negative"}


def test_the_split_is_deterministic_disjoint_and_about_half(headlines: list[Headline]) -> None:
    kept, tuned = held_out(headlines), tuning(headlines)
    assert len(kept) + len(tuned) == len(headlines)
    assert {h.text for h in kept}.isdisjoint(h.text for h in tuned)
    assert 0.4 < len(kept) / len(headlines) < 0.6
    assert all(is_held_out(h.text) for h in held_out(labelled()))


def test_scores_on_a_hand_checked_example() -> None:
    gold = ["positive", "positive", "neutral", "negative"]
    predicted = ["positive", "neutral", "neutral", "positive"]
    result = scores(gold, predicted)
    assert result.accuracy == pytest.approx(0.5)
    assert result.recall == {"positive": 0.5, "neutral": 1.0, "negative": 0.0}
    # F1: positive 2*0.5*0.5/1 = 0.5, neutral 2*0.5*1/1.5 = 2/3, negative 0
    assert result.macro_f1 == pytest.approx((0.5 + 2 / 3 + 0.0) / 3)


def test_held_out_accuracy_macro_f1_and_negative_recall_hold_their_floors(
    measured: Scores,
) -> None:
    assert measured.accuracy >= ACCURACY_FLOOR
    assert measured.macro_f1 >= MACRO_F1_FLOOR
    assert measured.recall["negative"] >= NEGATIVE_RECALL_FLOOR


def test_the_scorer_beats_plain_vader_on_every_held_out_figure(
    headlines: list[Headline], measured: Scores
) -> None:
    plain = evaluate(held_out(headlines), plain_vader_buckets)
    assert measured.accuracy > plain.accuracy
    assert measured.macro_f1 > plain.macro_f1
    assert all(measured.recall[b] > plain.recall[b] for b in measured.recall)
