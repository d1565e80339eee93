"""Error envelopes: controller-level `{"error": ...}` and pipeline-level `{"success": false, ...}`."""

from __future__ import annotations

from typing import Literal

from api.schemas.base import Wire


class ErrorBody(Wire, frozen=True):
    """Controller-level failure (400, 404, 405, 422, 500, 503): one human-readable `error` string."""

    error: str
    """What was wrong, naming the offending value or parameter and what is accepted."""


class PipelineErrorBody(Wire, frozen=True):
    """Pipeline-level failure (401, 402, 429): `success` is always false."""

    message: str
    """What was refused and why (an unknown key, a market outside the plan, a rate limit)."""
    success: bool = False
    """Always false."""


class TokenLimitErrorBody(Wire, frozen=True):
    """The token-limit 401: the pipeline envelope plus which budget ran out and where to buy more."""

    message: str
    """Which budget cannot pay for the request."""
    error_code: Literal["DAILY_TOKEN_LIMIT", "MONTHLY_TOKEN_LIMIT"]
    """The budget spent, as a constant."""
    limit_type: Literal["daily", "monthly"]
    """`daily` (resets at 00:00 UTC) or `monthly` (resets on the 1st)."""
    upgrade_url: str
    """Where to buy more tokens."""
    success: bool = False
    """Always false."""
