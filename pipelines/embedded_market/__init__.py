"""The embedded market: deterministic, realistic source files in the file-drop layout."""

from pipelines.embedded_market.files import Defect
from pipelines.embedded_market.market import (
    MarketManifest,
    NewsManifest,
    PricesManifest,
    read_manifest,
    read_news_manifest,
    read_prices_manifest,
    write_embedded_market,
    write_embedded_news,
    write_embedded_prices,
)
from pipelines.embedded_market.model import HISTORY_START

__all__ = [
    "HISTORY_START",
    "Defect",
    "MarketManifest",
    "NewsManifest",
    "PricesManifest",
    "read_manifest",
    "read_news_manifest",
    "read_prices_manifest",
    "write_embedded_market",
    "write_embedded_news",
    "write_embedded_prices",
]
