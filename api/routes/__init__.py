"""Route handlers, one module per route group of the spec."""

from __future__ import annotations

from litestar import Controller

from api.routes.bulk import BulkController
from api.routes.common import mounted
from api.routes.data_status import DataStatusController
from api.routes.instruments import InstrumentsController
from api.routes.legacy import LegacyController
from api.routes.newsroom import CryptoNewsroomController, NewsroomController
from api.routes.reference import ReferenceController
from api.routes.sentiment import SentimentController
from api.routes.technical_analysis import TechnicalAnalysisController
from api.routes.trades import CryptoTradesController, MarketTradesController

V2_CONTROLLERS: list[type[Controller]] = [
    *mounted(
        InstrumentsController,
        ReferenceController,
        TechnicalAnalysisController,
        NewsroomController,
        CryptoNewsroomController,
        SentimentController,
        CryptoTradesController,
        MarketTradesController,
        BulkController,
        DataStatusController,
    ),
    LegacyController,
]
"""Every /api/v2 controller; the market groups each at their documented path and a twin (`mounted`)."""
