"""The `[news]` section of the sources TOML, and the embedded default."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from pipelines.news.config import load_news_config, parse_news_section
from pipelines.news.sources import FeedListNewsSource, FileDropNewsSource
from pipelines.platform.settings import PipelineSettings


def settings(data_dir: Path, sources: Path | None = None) -> PipelineSettings:
    return PipelineSettings(data_dir=data_dir, sources_config=sources, seed=1, end_date=None)


def test_without_a_sources_file_the_embedded_file_drop_is_read(tmp_path: Path) -> None:
    config = load_news_config(settings(tmp_path))
    assert config.source == FileDropNewsSource(tmp_path / "sources" / "embedded")


def test_sources_toml_lists_urls_and_paths_per_market_relative_to_the_file(tmp_path: Path) -> None:
    toml = tmp_path / "conf" / "sources.toml"
    toml.parent.mkdir()
    toml.write_text(
        """
[prices.crypto]
connector = "binance"

[news]
freshness_hours = 12
clock_skew_minutes = 5
timeout_seconds = 3
attempts = 2

[news.crypto]
feeds = ["https://feeds.example.com/crypto.rss", "local/extra.xml", "/abs/feed.xml"]
file_drop = "drop"
""",
        encoding="utf-8",
    )
    config = load_news_config(settings(tmp_path, toml))
    assert isinstance(config.source, FeedListNewsSource)
    assert config.source.feeds == {
        "crypto": (
            "https://feeds.example.com/crypto.rss",
            str(tmp_path / "conf" / "local" / "extra.xml"),
            "/abs/feed.xml",
            str(tmp_path / "conf" / "drop" / "news" / "crypto"),
        )
    }
    assert (config.source.fetcher.timeout_seconds, config.source.fetcher.attempts) == (3.0, 2)
    assert (config.policy.freshness_hours, config.policy.clock_skew) == (12.0, timedelta(minutes=5))


def test_a_sources_toml_without_news_has_no_feeds(tmp_path: Path) -> None:
    toml = tmp_path / "sources.toml"
    toml.write_text('[prices.crypto]\nconnector = "binance"\n', encoding="utf-8")
    config = load_news_config(settings(tmp_path, toml))
    assert config.source.documents("crypto") == []


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"freshness": 3}, r"\[news\]: .*unknown field `freshness`"),
        ({"bonds": {"feeds": []}}, r"\[news\]: .*unknown field `bonds`"),
        ({"crypto": {"urls": []}}, r"\[news\]: .*unknown field `urls` - at `\$.crypto`"),
        ({"crypto": {"feeds": "https://one.example/"}}, r"Expected `array`.*\$.crypto.feeds"),
        ({"attempts": "three"}, r"Expected `int`, got `str` - at `\$.attempts`"),
    ],
)
def test_a_mistyped_news_section_is_refused(section: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_news_section(section, base=Path())
