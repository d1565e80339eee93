"""The pipeline section's parsing, figures and plot (no materialization: nothing here is timed)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from benchmarks.__main__ import parse_args
from benchmarks.pipeline import Run, incremental_figure, parse_steps, plot_scale, scale_figures

OUTPUT = """materializing 4 market(s) into /tmp/x
[crypto] run 1234
[crypto] embedded_market_files started
[crypto] embedded_market_files done in 1.8s: embedded_market_files written
[crypto] briefs done in 13.3s: briefs 7,971 rows
[forex] briefs done in 2.5s: briefs 5,893 rows
[forex] trends done in 1.0s: trend_history 34,260 rows
done in 20.0s
"""


def run(instruments: int, seconds: float, rss: float) -> Run:
    steps = {k: v * instruments / 100 for k, v in parse_steps(OUTPUT).items()}
    return Run(instruments, date(2026, 3, 2), seconds, rss, steps)


def test_step_lines_are_read_per_market_and_summed_per_step() -> None:
    steps = parse_steps(OUTPUT)
    assert steps == {
        "crypto/embedded_market_files": 1.8,
        "crypto/briefs": 13.3,
        "forex/briefs": 2.5,
        "forex/trends": 1.0,
    }
    by_step = run(100, 20.0, 500.0).by_step()
    assert list(by_step) == ["briefs", "embedded_market_files", "trends"]
    assert by_step["briefs"] == 15.8


def test_sizes_are_anchored_on_the_smallest_and_the_day_on_the_full_run(tmp_path: Path) -> None:
    runs = [run(1000, 60.0, 900.0), run(100, 20.0, 500.0)]
    figures = scale_figures(runs)
    names = [f.name for f in figures]
    assert names[:2] == ["full materialization, 100 instruments", "full materialization peak RSS, 100 instruments"]  # fmt: skip
    assert figures[0].anchor is None
    assert (figures[2].project, figures[2].anchor, figures[2].ratio) == (60.0, 20.0, 3.0)
    assert figures[-1].name.startswith("slowest step (briefs")
    daily = incremental_figure(runs[0], Run(1000, date(2026, 3, 3), 30.0, 800.0))
    assert (daily.ratio, daily.anchor_name) == (0.5, "full run")
    assert plot_scale(runs, tmp_path / "scale.png", daily=daily_run())
    assert (tmp_path / "scale.png").read_bytes()[:4] == b"\x89PNG"


def daily_run() -> Run:
    return Run(1000, date(2026, 3, 3), 30.0, 800.0)


def test_pipeline_options() -> None:
    args = parse_args(["--only", "pipeline", "--sizes", "50,200", "--incremental", "0"])
    assert (args.sections, args.sizes, args.incremental) == (["pipeline"], [50, 200], 0)
    assert args.end_date == date(2026, 3, 2)
