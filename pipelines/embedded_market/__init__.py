"""The embedded market: deterministic, realistic source files in the file-drop layout."""

from pipelines.embedded_market.files import Defect
from pipelines.embedded_market.market import MarketManifest, read_manifest, write_embedded_market

__all__ = ["Defect", "MarketManifest", "read_manifest", "write_embedded_market"]
