"""Selection of a connector per market by the sources file, or the embedded file drop without one."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.catalog import MARKETS
from pipelines.platform.settings import PipelineSettings
from pipelines.prices.sources.binance import BinanceSource
from pipelines.prices.sources.config import SourcesConfigError, load_sources
from pipelines.prices.sources.ecb import EcbSource
from pipelines.prices.sources.file_drop import FileDropSource
from pipelines.prices.sources.stooq import StooqSource

EXAMPLE = Path(__file__).resolve().parents[3] / "config" / "sources.example.toml"
FILE_DROPS = "\n".join(f'[markets.{m}]\nkind = "file_drop"\nroot = "drop"\n' for m in MARKETS)


def settings(tmp_path: Path, sources: Path | None) -> PipelineSettings:
    return PipelineSettings(data_dir=tmp_path, sources_config=sources, seed=1, end_date=None)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sources.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_without_a_sources_file_every_market_reads_the_embedded_file_drop(tmp_path: Path) -> None:
    registry = load_sources(settings(tmp_path, None))
    assert registry.embedded
    for market in MARKETS:
        source = registry.for_market(market)
        assert isinstance(source, FileDropSource)
        assert source.root == tmp_path / "sources" / "embedded"


def test_the_example_sources_file_selects_one_http_connector_per_market(tmp_path: Path) -> None:
    registry = load_sources(settings(tmp_path, EXAMPLE))
    assert not registry.embedded
    assert isinstance(registry.for_market("crypto"), BinanceSource)
    assert isinstance(registry.for_market("forex"), EcbSource)
    assert isinstance(registry.for_market("commodities"), StooqSource)
    assert isinstance(registry.for_market("stocks"), StooqSource)
    assert registry.freshness_days["crypto"] == 2
    crypto = registry.for_market("crypto")
    assert isinstance(crypto, BinanceSource)
    assert crypto.base_url == "https://api.binance.com"
    assert crypto.http.policy.max_retries == 4


def test_a_relative_file_drop_root_is_relative_to_the_sources_file(tmp_path: Path) -> None:
    registry = load_sources(settings(tmp_path, write(tmp_path, FILE_DROPS)))
    source = registry.for_market("stocks")
    assert isinstance(source, FileDropSource)
    assert source.root == tmp_path / "drop"


def test_base_url_is_configurable(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("https://stooq.com", "http://127.0.0.1:8080")
    source = load_sources(settings(tmp_path, write(tmp_path, text))).for_market("stocks")
    assert isinstance(source, StooqSource)
    assert source.base_url == "http://127.0.0.1:8080"


def test_a_key_of_the_wrong_type_is_refused_naming_its_market_and_key(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("page_limit = 1000", 'page_limit = "1000"')
    with pytest.raises(
        SourcesConfigError,
        match=r"\[markets.crypto\]: Expected `int`, got `str` - at `\$.page_limit`",
    ):
        load_sources(settings(tmp_path, write(tmp_path, text)))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            FILE_DROPS.replace('[markets.stocks]\nkind = "file_drop"\nroot = "drop"\n', ""),
            "no \\[markets",
        ),
        (
            FILE_DROPS.replace('kind = "file_drop"', 'kind = "yahoo"', 1),
            r"\[markets.crypto\]: Invalid value 'yahoo' - at `\$.kind`",
        ),
        (FILE_DROPS.replace('root = "drop"', 'root = "drop"\ncolour = "red"', 1), "colour"),
        (
            FILE_DROPS.replace('kind = "file_drop"\nroot = "drop"', 'kind = "binance"', 1),
            "needs an instruments list",
        ),
        (FILE_DROPS + "[http]\nretries = 3\n", r"unknown field `retries` - at `\$.http`"),
    ],
)
def test_an_invalid_sources_file_is_an_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SourcesConfigError, match=message):
        load_sources(settings(tmp_path, write(tmp_path, text)))


@pytest.mark.parametrize("page_limit", ["0", "1500"])
def test_a_binance_page_limit_outside_1_to_1000_is_refused_naming_the_setting(
    tmp_path: Path, page_limit: str
) -> None:
    text = EXAMPLE.read_text().replace("page_limit = 1000", f"page_limit = {page_limit}")
    assert f"page_limit = {page_limit}" in text
    with pytest.raises(SourcesConfigError, match=r"\[markets\.crypto\] page_limit = "):
        load_sources(settings(tmp_path, write(tmp_path, text)))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (FILE_DROPS + "[marketz.crypto]\nkind = 'ecb'\n", r"unknown field `marketz`"),
        (FILE_DROPS + "[http\n", r"sources.toml: "),
        (FILE_DROPS + "[http]\ntimeout_seconds = 'soon'\n", r"Expected `float`.*\$.http.timeout"),
    ],
    ids=["unknown top-level table", "not TOML", "wrong type"],
)
def test_a_malformed_sources_file_is_refused_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(SourcesConfigError, match=message):
        load_sources(settings(tmp_path, write(tmp_path, text)))
