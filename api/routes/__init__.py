"""Route handlers, one module per route group of the spec."""

from __future__ import annotations

from litestar import Controller

from api.routes.common import mounted
from api.routes.instruments import InstrumentsController
from api.routes.technical_analysis import TechnicalAnalysisController

V2_CONTROLLERS: list[type[Controller]] = mounted(InstrumentsController, TechnicalAnalysisController)
"""Every /api/v2 controller, each at its documented path and its twin (see `mounted`)."""
