"""The policy every outbound HTTP request of the pipeline follows (feeds, price APIs, webhooks).

- A URL is `http` or `https` (webhooks: `https` only) and its host resolves, once, to addresses
  that are all public, unless the host is one the operator allowed (`allowed_hosts`). The request
  then connects to the address that was checked, never to a second resolution of the name (DNS
  rebinding); the name still goes out as the `Host` header and, for TLS, as the SNI and the name
  the certificate is verified against.
- A public address is judged on what it reaches: an IPv6 address that embeds an IPv4 one (mapped,
  translated, compatible, 6to4, NAT64) is judged as that IPv4 address, and every special-purpose
  block of the IANA registries is refused, whatever `ipaddress.is_global` says on this CPython.
- Redirects are followed by hand, each hop checked and pinned as the first, at most
  `max_redirects` of them.
- A body is streamed and read up to `max_bytes`: beyond it a fetch fails (`TooLarge`), or (a
  webhook receiver's answer, `truncate=True`) what was read is kept and the rest is not read.
- The whole attempt, connection, headers and body, holds one deadline (`deadline_seconds`), not a
  timeout per read: a peer that drips a byte a second cannot hold it longer.

`fetch` is the coroutine; `fetch_sync` runs it for the pipeline's synchronous steps.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

Resolver = Callable[[str, int], list[str]]
"""host, port -> every address the host resolves to now (the system's: `resolve_addresses`)."""

REDIRECTS = frozenset({301, 302, 303, 307, 308})

# Special-purpose blocks (IANA IPv4 and IPv6 special-purpose address registries, RFC 6890 and
# later): none of them is a public receiver or source, whatever a CPython patch level's
# `is_global` says of some of them.
NOT_PUBLIC = tuple(
    ipaddress.ip_network(block)
    for block in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.31.196.0/24",
        "192.52.193.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "192.175.48.0/24",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "255.255.255.255/32",
        "::/128",
        "::1/128",
        "::ffff:0:0/96",
        "::ffff:0:0:0/96",
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "2002::/16",
        "3fff::/20",
        "5f00::/16",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
"""The well-known NAT64 prefix: its last 32 bits are the IPv4 address reached (RFC 6052)."""
_TRANSLATED_PREFIX = b"\x00" * 8 + b"\xff\xff\x00\x00"  # ::ffff:0:a.b.c.d (RFC 2765)


class OutboundRefused(Exception):  # noqa: N818 (named for the outcome, as the webhooks' errors)
    """The policy refuses the URL: its scheme, its host's addresses, a redirect."""


class UnresolvedHost(OutboundRefused):
    """The URL's host does not resolve now (another attempt may find it)."""


class TooLarge(Exception):  # noqa: N818
    """The answer's body is larger than the policy's `max_bytes`."""


@dataclass(frozen=True)
class OutboundPolicy:
    """What a request may reach and read; see the module's docstring."""

    schemes: frozenset[str] = frozenset({"http", "https"})
    allowed_hosts: frozenset[str] = frozenset()
    """Hosts (lower case) exempt from the public-address rule: the operator's own, on purpose."""
    max_redirects: int = 5
    max_bytes: int = 10 * 1024 * 1024
    deadline_seconds: float = 30.0
    ca_file: str | None = None

    @classmethod
    def of(
        cls,
        *,
        https_only: bool = False,
        allowed_hosts: Collection[str] = (),
        **settings: object,
    ) -> OutboundPolicy:
        schemes = frozenset({"https"} if https_only else {"http", "https"})
        hosts = frozenset(h.lower() for h in allowed_hosts)
        return cls(schemes=schemes, allowed_hosts=hosts, **settings)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Fetched:
    """One answer: its status, headers, body (up to the policy's bound) and the URL it came from."""

    status: int
    headers: httpx.Headers
    body: bytes
    url: str
    truncated: bool = False

    def as_response(self) -> httpx.Response:
        """The answer as an `httpx.Response` (its JSON, text and headers as httpx gives them)."""
        return httpx.Response(
            self.status,
            headers=self.headers,
            content=self.body,
            request=httpx.Request("GET", self.url),
        )


@dataclass(frozen=True)
class Pinned:
    """A URL's request, aimed at the one address that was checked."""

    url: str
    """The URL with the checked address in place of the host."""
    host_header: str
    sni: str | None
    address: str


def resolve_addresses(host: str, port: int) -> list[str]:
    """Every address `host` resolves to now (an address literal resolves to itself)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries to (mapped, translated, compatible, 6to4, NAT64), or
    None when it carries none."""
    packed = ip.packed
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if packed.startswith(_TRANSLATED_PREFIX):
        return ipaddress.IPv4Address(packed[12:])
    if packed[:12] == b"\x00" * 12 and int(ip) > 1:  # IPv4-compatible (deprecated), not :: or ::1
        return ipaddress.IPv4Address(packed[12:])
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(packed[12:])
    return None


def is_public(address: str) -> bool:
    """Whether `address` is a public unicast address: not loopback, private, link-local, shared,
    documentation, benchmarking, reserved, multicast, nor (so) a cloud metadata service. An IPv6
    address that embeds an IPv4 one reaches that address, and is judged as it."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone (fe80::1%eth0) aside
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = embedded_ipv4(ip)
        if embedded is not None:
            return is_public(str(embedded))
    if any(ip in block for block in NOT_PUBLIC if block.version == ip.version):
        return False
    return ip.is_global and not ip.is_multicast


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address literal."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_scheme(url: str, policy: OutboundPolicy) -> None:
    parts = urlsplit(url)
    if parts.scheme not in policy.schemes or not parts.hostname:
        schemes = " or ".join(f"{s}://" for s in sorted(policy.schemes))
        raise OutboundRefused(f"{url}: only {schemes} URLs with a host are fetched")


def pin(url: str, policy: OutboundPolicy, resolve: Resolver | None = None) -> Pinned:
    """`url` aimed at one of its host's addresses, all of which the policy accepts (resolved
    once, here: the request connects to what was checked)."""
    check_scheme(url, policy)
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = (resolve or resolve_addresses)(host, port)
    except OSError as error:
        raise UnresolvedHost(f"{url}: {host} does not resolve ({error})") from None
    if not addresses:
        raise UnresolvedHost(f"{url}: {host} resolves to no address")
    if host not in policy.allowed_hosts:
        inside = [a for a in addresses if not is_public(a)]
        if inside:
            raise OutboundRefused(
                f"{url}: {host} resolves to {', '.join(inside)}, an address inside a network "
                "(loopback, private, link-local, special-purpose or cloud metadata); list the "
                "host in allowed_hosts if it is meant"
            )
    address = addresses[0]
    literal = f"[{address}]" if ":" in address else address
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    pinned = parts._replace(netloc=netloc).geturl()
    host_header = parts.netloc.rsplit("@", 1)[-1]
    sni = host if parts.scheme == "https" and not _is_literal(host) else None
    return Pinned(pinned, host_header, sni, address)


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


async def fetch(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    policy: OutboundPolicy,
    *,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str | int] | None = None,
    content: bytes | None = None,
    truncate: bool = False,
    resolve: Resolver | None = None,
) -> Fetched:
    """One attempt at `url` under `policy`, within its deadline (`TimeoutError` beyond it)."""
    async with asyncio.timeout(policy.deadline_seconds):
        return await _follow(
            client, method, url, policy, headers, params, content, truncate, resolve
        )


async def _follow(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    policy: OutboundPolicy,
    headers: Mapping[str, str] | None,
    params: Mapping[str, str | int] | None,
    content: bytes | None,
    truncate: bool,
    resolve: Resolver | None,
) -> Fetched:
    target = str(httpx.URL(url).copy_merge_params(params)) if params else url
    for _ in range(policy.max_redirects + 1):
        pinned = pin(target, policy, resolve)
        request = client.build_request(
            method,
            pinned.url,
            headers={**(headers or {}), "Host": pinned.host_header},
            content=content,
            extensions={"sni_hostname": pinned.sni} if pinned.sni else None,
        )
        response = await client.send(request, stream=True)
        try:
            location = response.headers.get("location")
            if response.status_code in REDIRECTS and location and policy.max_redirects:
                target = urljoin(target, location)
                if response.status_code == 303:
                    method, content = "GET", None
                continue
            body, truncated = await _read(response, policy.max_bytes, truncate)
            return Fetched(response.status_code, response.headers, body, target, truncated)
        finally:
            await response.aclose()
    raise OutboundRefused(f"{url}: more than {policy.max_redirects} redirects")


async def _read(response: httpx.Response, limit: int, truncate: bool) -> tuple[bytes, bool]:
    """At most `limit` bytes of the body as decoded (a compressed body is bounded as it inflates)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            if not truncate:
                raise TooLarge(f"the answer is larger than {limit:,} bytes")
            chunks.append(chunk[: limit - (size - len(chunk))])
            return b"".join(chunks), True
        chunks.append(chunk)
    return b"".join(chunks), False


def async_client(policy: OutboundPolicy, user_agent: str) -> httpx.AsyncClient:
    """A client for `fetch`: no redirects of its own (`fetch` follows them by hand), the policy's
    certificate authorities (an explicit context: httpx deprecates `verify=<path>`)."""
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=policy.ca_file)
    return httpx.AsyncClient(
        verify=verify,
        follow_redirects=False,
        headers={"User-Agent": user_agent},
        timeout=httpx.Timeout(policy.deadline_seconds),
        trust_env=False,
    )


def fetch_sync(
    method: str,
    url: str,
    policy: OutboundPolicy,
    user_agent: str,
    **options: object,
) -> Fetched:
    """`fetch` for a synchronous caller (a pipeline step): one attempt, on a client of its own."""

    async def attempt() -> Fetched:
        async with async_client(policy, user_agent) as client:
            return await fetch(client, method, url, policy, **options)  # type: ignore[arg-type]

    return asyncio.run(attempt())


__all__: Sequence[str] = (
    "Fetched",
    "OutboundPolicy",
    "OutboundRefused",
    "TooLarge",
    "UnresolvedHost",
    "embedded_ipv4",
    "fetch",
    "fetch_sync",
    "is_loopback",
    "is_public",
    "pin",
    "resolve_addresses",
)
