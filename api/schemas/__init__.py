"""Wire types: every JSON body the API sends, as msgspec Structs derived from `Wire`."""

from api.schemas.base import Wire
from api.schemas.errors import ErrorBody, PipelineErrorBody, TokenLimitErrorBody
from api.schemas.system import Check, CheckStatus, Ping, SystemStatus

__all__ = [
    "Check",
    "CheckStatus",
    "ErrorBody",
    "Ping",
    "PipelineErrorBody",
    "SystemStatus",
    "TokenLimitErrorBody",
    "Wire",
]
