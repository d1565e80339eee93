"""The webhooks file: HTTPS-only receiver URLs, the loopback dev switch, secrets, validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.webhooks.config import (
    UrlRefusedError,
    WebhookConfigError,
    check_url,
    load_config,
    parse_config,
)

EXAMPLE = Path(__file__).parents[3] / "config" / "webhooks.example.toml"


def _raw(url: str, allow: bool = False, **extra: object) -> dict[str, object]:
    sub = {"id": "acme", "url": url, "secret": "s", "events": ["news.*"], **extra}
    return {"delivery": {"allow_http_loopback": allow}, "subscriptions": [sub]}


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
    if refused:
        with pytest.raises(UrlRefusedError, match="HTTPS only"):
            check_url(url, allow)
    else:
        check_url(url, allow)


def test_a_refused_url_names_the_subscription() -> None:
    with pytest.raises(UrlRefusedError, match=r"subscription 'acme': http://x\.example"):
        parse_config(_raw("http://x.example/h"), {})


def test_the_secret_can_come_from_the_environment() -> None:
    raw = _raw("https://x.example/h", secret_env="ACME_SECRET")
    del raw["subscriptions"][0]["secret"]  # type: ignore[index]
    config = parse_config(raw, {"ACME_SECRET": "from-env"})
    assert config.subscriptions[0].secret == "from-env"
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
    config = load_config(EXAMPLE, env={"GLOBEX_WEBHOOK_SECRET": "x"})
    assert {s.id for s in config.subscriptions} >= {"acme-news"}
    assert all(s.url.startswith("https://") for s in config.subscriptions)
