"""The webhooks file: HTTPS-only receiver URLs, the loopback dev switch, SSRF, secrets, validation."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.platform.outbound import is_public
from pipelines.webhooks.config import (
    DeliveryPolicy,
    UnresolvedHostError,
    UrlRefusedError,
    WebhookConfigError,
    check_url,
    load_config,
    parse_config,
)
from tests.pipelines.webhooks.conftest import SECRET

EXAMPLE = Path(__file__).parents[3] / "config" / "webhooks.example.toml"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _raw(url: str, allow: bool = False, **extra: object) -> dict[str, object]:
    sub = {"id": "acme", "url": url, "secret": SECRET, "events": ["news.*"], **extra}
    delivery = {"allow_http_loopback": allow, "allowed_hosts": list(LOOPBACK)}
    return {"delivery": delivery, "subscriptions": [sub]}


def _resolving_to(*addresses: str) -> Callable[[str, int], list[str]]:
    """A resolver for which every host has `addresses` (the DNS answer a test needs)."""
    return lambda host, port: list(addresses)


@pytest.mark.parametrize(
    ("url", "allow", "refused"),
    [
        ("https://hooks.example.com/mi", False, False),
        ("http://hooks.example.com/mi", False, True),
        ("http://hooks.example.com/mi", True, True),
        ("http://127.0.0.1:8080/hook", False, True),
        ("http://127.0.0.1:8080/hook", True, False),
        ("http://localhost/hook", True, False),
        ("http://[::1]:81/hook", True, False),
        ("ftp://hooks.example.com", True, True),
    ],
)
def test_only_https_or_dev_loopback_http_is_accepted(url: str, allow: bool, refused: bool) -> None:
    policy = DeliveryPolicy(allow_http_loopback=allow, allowed_hosts=LOOPBACK)
    public = _resolving_to("93.184.215.14")
    if refused:
        with pytest.raises(UrlRefusedError, match="HTTPS only"):
            check_url(url, policy, public)
    else:
        check_url(url, policy, public)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",  # loopback
        "::1",
        "10.1.2.3",  # private
        "172.16.0.9",
        "192.168.1.1",
        "fd12::1",
        "169.254.10.10",  # link-local
        "fe80::1%eth0",
        "169.254.169.254",  # cloud metadata: AWS, GCP, Azure
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba (shared address space)
        "0.0.0.0",
        "::ffff:10.0.0.1",  # private, written as IPv4-mapped IPv6
        "224.0.0.1",  # multicast
    ],
)
def test_a_host_resolving_inside_a_network_is_refused_unless_allowed(address: str) -> None:
    url = "https://hooks.customer.example/mi"
    with pytest.raises(UrlRefusedError, match=f"resolves to {re.escape(address)}.*allowed_hosts"):
        check_url(url, DeliveryPolicy(), _resolving_to("93.184.215.14", address))
    check_url(
        url, DeliveryPolicy(allowed_hosts=("hooks.customer.example",)), _resolving_to(address)
    )


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"])
def test_a_host_resolving_to_public_addresses_only_is_accepted(address: str) -> None:
    assert is_public(address)
    check_url("https://hooks.customer.example/mi", DeliveryPolicy(), _resolving_to(address))


def test_address_literals_are_judged_without_a_resolver_and_an_unknown_host_is_undecided() -> None:
    with pytest.raises(UrlRefusedError, match=r"169\.254\.169\.254"):
        check_url("https://169.254.169.254/latest/meta-data", DeliveryPolicy())
    with pytest.raises(UnresolvedHostError, match="does not resolve"):
        check_url("https://hooks.customer.invalid/mi", DeliveryPolicy())


def test_the_file_refuses_a_receiver_inside_the_network_and_accepts_an_allowed_host() -> None:
    raw = _raw("https://hooks.internal.example/mi")
    with pytest.raises(UrlRefusedError, match=r"subscription 'acme': .*resolves to 10\.0\.0\.5"):
        parse_config(raw, {}, _resolving_to("10.0.0.5"))
    raw["delivery"] = {"allowed_hosts": ["HOOKS.internal.example"]}
    config = parse_config(raw, {}, _resolving_to("10.0.0.5"))
    assert config.delivery.allowed_hosts == ("hooks.internal.example",)


def test_a_secret_that_is_not_a_standard_webhooks_secret_is_refused() -> None:
    with pytest.raises(WebhookConfigError, match="subscription 'acme': a secret starts with"):
        parse_config(_raw("https://x.example/h", secret="s"), {})


def test_a_refused_url_names_the_subscription() -> None:
    with pytest.raises(UrlRefusedError, match=r"subscription 'acme': http://x\.example"):
        parse_config(_raw("http://x.example/h"), {})


def test_the_secret_can_come_from_the_environment() -> None:
    raw = _raw("https://x.example/h", secret_env="ACME_SECRET")
    del raw["subscriptions"][0]["secret"]  # type: ignore[index]
    config = parse_config(raw, {"ACME_SECRET": SECRET})
    assert config.subscriptions[0].secret == SECRET
    with pytest.raises(WebhookConfigError, match="secret"):
        parse_config(raw, {})


def test_symbols_are_upper_cased_and_keywords_lower_cased() -> None:
    config = parse_config(_raw("https://x.example/h", symbols=["btc"], keywords=["ETF"]), {})
    assert config.subscriptions[0].symbols == ("BTC",)
    assert config.subscriptions[0].keywords == ("etf",)


def test_unknown_keys_and_duplicate_ids_are_errors() -> None:
    with pytest.raises(WebhookConfigError, match="colour"):
        parse_config(_raw("https://x.example/h", colour="red"), {})
    raw = _raw("https://x.example/h")
    raw["subscriptions"] = raw["subscriptions"] * 2  # type: ignore[operator]
    with pytest.raises(WebhookConfigError, match="unique"):
        parse_config(raw, {})


def test_no_file_means_no_subscriptions(tmp_path: Path) -> None:
    assert load_config(tmp_path / "absent.toml").subscriptions == ()


def test_the_example_file_loads() -> None:
    config = load_config(
        EXAMPLE, env={"ACME_WEBHOOK_SECRET": SECRET, "GLOBEX_WEBHOOK_SECRET": SECRET}
    )
    assert {s.id for s in config.subscriptions} >= {"acme-news"}
    assert all(s.url.startswith("https://") for s in config.subscriptions)


def test_a_malformed_webhooks_file_is_refused_naming_where(tmp_path: Path) -> None:
    with pytest.raises(WebhookConfigError, match=r"unknown field `max_attempt` - at `\$.delivery`"):
        parse_config({"delivery": {"max_attempt": 3}}, {})
    raw = _raw("https://x.example/h", timeout_seconds="soon")
    with pytest.raises(WebhookConfigError, match=r"subscription 'acme': Expected `float`"):
        parse_config(raw, {})
    with pytest.raises(WebhookConfigError, match="non-empty key list"):
        parse_config({"custom": [{"name": "n", "table": "t", "key": []}]}, {})
    path = tmp_path / "webhooks.toml"
    path.write_text("[delivery\n")
    with pytest.raises(WebhookConfigError, match=r"webhooks\.toml"):
        load_config(path)
