"""Error envelopes: controller-level `{"error": ...}` and pipeline-level `{"success": false, ...}`."""

from __future__ import annotations

from typing import Literal

from api.schemas.base import Wire


class ErrorBody(Wire, frozen=True):
    """Controller-level failure (400, 404, 405, 422, 500, 503): one human-readable `error` string."""

    error: str


class PipelineErrorBody(Wire, frozen=True):
    """Pipeline-level failure (401, 402, 429): `success` is always false."""

    message: str
    success: bool = False


class TokenLimitErrorBody(Wire, frozen=True):
    """The token-limit 401: the pipeline envelope plus which budget ran out and where to buy more."""

    message: str
    error_code: Literal["DAILY_TOKEN_LIMIT", "MONTHLY_TOKEN_LIMIT"]
    limit_type: Literal["daily", "monthly"]
    upgrade_url: str
    success: bool = False
