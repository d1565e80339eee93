"""Authentication: the API key of every metered route, verified before limits or charges.

A route is metered when its handler declares `opt={"operation": ...}`; this layer answers 401 for
a missing, malformed, unknown or revoked key and 503 when the key store cannot be asked, and hands
the key's `Account` on in `scope["user"]` (Litestar's place for it: `request.user`). A route with
`opt["key"] == "optional"` (ping) passes without an Authorization header, with no user.
Metering (`api.metering.middleware`) runs next, on the account found here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar.types import ASGIApp, Receive, Scope, Send

from api.errors import DependencyUnavailable, Unauthorized, send_failure
from api.metering.model import Account, MeteringUnavailableError, key_id_of
from api.metering.store import MeteringStore

MAX_AUTHORIZATION_LENGTH = 256
USER = "user"
"""The scope key of the authenticated `Account` (what Litestar's `request.user` reads)."""
UNAVAILABLE = "token accounting is temporarily unavailable; retry later"

_AUTHORIZATION = b"authorization"
_PARSED: dict[bytes, str | None] = {}
"""A header value -> its key (the caches section's row "authorization")."""
_PARSED_SIZE = 4096
_NO_OPT: Mapping[str, Any] = {}


def parse_authorization(headers: Any) -> tuple[bool, str | None]:
    """(an Authorization header was sent, the well-formed key in it or None)."""
    value: bytes | None = None
    for name, raw in headers:
        # ASGI servers send lowercase names; the length test keeps the common miss cheap.
        if len(name) == 13 and (name == _AUTHORIZATION or name.lower() == _AUTHORIZATION):
            if value is not None:
                return True, None  # two Authorization headers: ambiguous, refused
            value = raw
    if value is None:
        return False, None
    if len(value) > MAX_AUTHORIZATION_LENGTH:
        return True, None
    try:
        return True, _PARSED[value]
    except KeyError:
        pass
    key = _parse_value(value)
    if len(_PARSED) >= _PARSED_SIZE:
        _PARSED.clear()
    _PARSED[value] = key
    return True, key


def _parse_value(value: bytes) -> str | None:
    """The key of a `Bearer <key>` header value (a pure function of the bytes: memoized)."""
    try:
        text = value.decode("ascii")
    except UnicodeDecodeError:
        return None
    scheme, _, key = text.strip().partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or key_id_of(key) is None:
        return None
    return key


def account_of(scope: Scope) -> Account | None:
    """The account this layer authenticated for the request (None: a free, keyless ping)."""
    account = scope.get(USER)
    return account if isinstance(account, Account) else None


class AuthenticationMiddleware:
    """Verifies the key of every metered route; other routes (status, docs) pass untouched."""

    def __init__(self, app: ASGIApp, store: MeteringStore) -> None:
        self.app = app
        self.store = store
        self._needs_key: dict[
            object, bool | None
        ] = {}  # handler -> key required (None: not metered)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        needs_key = self._route(scope.get("route_handler")) if scope["type"] == "http" else None
        if needs_key is None:
            await self.app(scope, receive, send)
            return
        sent, key = parse_authorization(scope["headers"])
        if not sent and not needs_key:
            await self.app(scope, receive, send)
            return
        if key is None:
            await send_failure(send, Unauthorized())
            return
        try:
            # A key verified in the last AUTH_CACHE_SECONDS costs no coroutine.
            account = self.store.cached_account(key) or await self.store.authenticate(key)
        except MeteringUnavailableError:
            await send_failure(send, DependencyUnavailable(UNAVAILABLE))
            return
        if account is None:
            await send_failure(send, Unauthorized())
            return
        scope["user"] = account
        await self.app(scope, receive, send)

    def _route(self, handler: Any) -> bool | None:
        """Whether `handler`'s requests need a key (None: not metered), worked out once."""
        try:
            return self._needs_key[handler]
        except KeyError:
            pass
        opt: Mapping[str, Any] = handler.opt if handler is not None else _NO_OPT
        needs = None if opt.get("operation") is None else opt.get("key") != "optional"
        self._needs_key[handler] = needs
        return needs
