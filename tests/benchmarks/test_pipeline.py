"""The pipeline section's parsing, figures and plot (no materialization: nothing here is timed)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from benchmarks.__main__ import parse_args
from benchmarks.pipeline import (
    Run,
    incremental_figures,
    parse_new_articles,
    parse_steps,
    plot_scale,
    scale_figures,
)

OUTPUT = """materializing crypto, forex, commodities, stocks into /tmp/x (day 2026-03-02)
[daily] run 1234
[daily] embedded_market_prices started
[daily] embedded_market_prices done in 1.8s: embedded_market_prices written
[daily] trends done in 1.0s: trend_history 34,260 rows
[news] run 5678
[news]   briefs: briefs crypto: 12 enriched
[news]   briefs: briefs stocks: 30 enriched
[news] briefs done in 13.3s: briefs 7,971 rows
[daily] run 9012
[daily] trends done in 0.5s: trend_history 34,260 rows
done in 20.0s
"""


def run(instruments: int, seconds: float, rss: float) -> Run:
    steps = {k: v * instruments / 100 for k, v in parse_steps(OUTPUT).items()}
    return Run(instruments, date(2026, 3, 2), seconds, rss, steps)


def test_step_lines_are_read_per_run_and_a_step_run_twice_is_summed() -> None:
    steps = parse_steps(OUTPUT)
    assert steps == {
        "daily/embedded_market_prices": 1.8,
        "daily/trends": 1.5,
        "news/briefs": 13.3,
    }
    by_step = run(100, 20.0, 500.0).by_step()
    assert list(by_step) == ["briefs", "embedded_market_prices", "trends"]


def test_the_news_refresh_counts_the_articles_it_enriched_over_the_markets() -> None:
    assert parse_new_articles(OUTPUT) == 42
    assert parse_new_articles("[news] briefs done in 1.0s: briefs 10 rows") == 0


def test_sizes_are_anchored_on_the_smallest_and_carry_the_issue_goals(tmp_path: Path) -> None:
    runs = [run(5000, 50.0, 1900.0), run(100, 20.0, 500.0)]
    figures = scale_figures(runs)
    names = [f.name for f in figures]
    assert names[:2] == [
        "full materialization, 100 instruments",
        "full materialization peak RSS, 100 instruments",
    ]
    assert figures[0].anchor is None
    assert figures[0].goal is None
    assert (figures[2].project, figures[2].anchor, figures[2].ratio) == (50.0, 20.0, 2.5)
    assert (str(figures[2].goal), figures[2].passed) == ("project < 60", True)
    assert (str(figures[3].goal), figures[3].passed) == ("project < 2048", True)
    assert figures[-1].name.startswith("slowest step (briefs)")
    assert plot_scale(runs, tmp_path / "scale.png", daily=daily_run())
    assert (tmp_path / "scale.png").read_bytes()[:4] == b"\x89PNG"


def test_the_day_is_a_share_of_the_full_run_and_the_news_refresh_is_seconds() -> None:
    full = run(5000, 50.0, 1900.0)
    news = Run(5000, date(2026, 3, 9), 4.0, 700.0, new_articles=97)
    daily, memory, refresh = incremental_figures(full, daily_run(), news)
    assert (daily.ratio, daily.anchor_name, str(daily.goal), daily.passed) == (
        0.1,
        "full run",
        "ratio <= 0.1",
        True,
    )
    assert (memory.project, memory.anchor) == (800, 1900)
    assert refresh.name == "news refresh (97 new articles), 5,000 instruments"
    assert (refresh.project, refresh.anchor, refresh.passed) == (4.0, None, True)


def test_a_daily_run_with_nothing_new_is_reported_as_a_share_of_the_full_run() -> None:
    full = run(5000, 50.0, 1900.0)
    again = Run(5000, date(2026, 3, 3), 3.5, 700.0)
    figures = incremental_figures(full, daily_run(), again=again)
    floor = figures[-1]
    assert floor.name == "daily run with nothing new (the same day again), 5,000 instruments"
    assert (floor.project, floor.anchor, floor.ratio, floor.goal) == (3.5, 50.0, 0.07, None)
    assert len(incremental_figures(full, daily_run())) == len(figures) - 1


def test_a_news_refresh_with_nothing_new_is_reported_in_seconds_without_a_goal() -> None:
    full = run(5000, 50.0, 1900.0)
    news = Run(5000, date(2026, 3, 9), 4.0, 700.0, new_articles=97)
    news_again = Run(5000, date(2026, 3, 9), 2.5, 600.0, new_articles=0)
    figures = incremental_figures(full, daily_run(), news, news_again=news_again)
    floor = figures[-1]
    assert floor.name == "news refresh with nothing new (the same refresh again), 5,000 instruments"
    assert (floor.project, floor.anchor, floor.goal) == (2.5, None, None)
    assert len(incremental_figures(full, daily_run(), news)) == len(figures) - 1


def daily_run() -> Run:
    return Run(5000, date(2026, 3, 3), 5.0, 800.0)


def test_pipeline_options() -> None:
    args = parse_args(["--only", "pipeline", "--sizes", "50,200", "--incremental", "0"])
    assert (args.sections, args.sizes, args.incremental) == (["pipeline"], [50, 200], 0)
    assert args.end_date == date(2026, 3, 2)
