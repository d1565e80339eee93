"""`mi webhooks`: list, test (a signed event to a real HTTPS receiver), dead-letters, replay, deliver."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mi.cli import main
from tests.pipelines.webhooks.conftest import SECRET, Receiver


@pytest.fixture
def env(tmp_path: Path, ca_file: Path, receiver: Receiver) -> dict[str, str]:
    config = tmp_path / "webhooks.toml"
    config.write_text(
        f'[delivery]\nca_file = "{ca_file}"\nallowed_hosts = ["127.0.0.1"]\nmax_attempts = 1\n\n'
        f'[[subscriptions]]\nid = "acme"\ncustomer = "Acme"\nurl = "{receiver.url}"\n'
        f'secret = "{SECRET}"\nevents = ["*"]\n',
        encoding="utf-8",
    )
    return {"MI_DATA_DIR": str(tmp_path), "MI_WEBHOOKS": str(config)}


def run(env: dict[str, str], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["webhooks", *args], env=env)
    return result.exit_code, result.output


def test_test_sends_a_signed_event_and_list_shows_the_subscription(
    env: dict[str, str], receiver: Receiver
) -> None:
    code, output = run(env, "test", "acme")
    assert code == 0, output
    assert "delivered (HTTP 200)" in output
    [got] = receiver.received
    assert got.signature_ok
    assert b'"type":"webhook.test"' in got.body
    code, output = run(env, "list")
    assert code == 0
    assert "acme\tAcme\thttps://127.0.0.1" in output
    assert "queued=0\tdead=0" in output


def test_a_failed_test_is_dead_lettered_then_replayed_and_delivered(
    env: dict[str, str], receiver: Receiver
) -> None:
    receiver.script = [500]
    code, output = run(env, "test", "acme")
    assert code == 1
    assert "dead" in output
    code, output = run(env, "dead-letters")
    assert "\tacme\tevt_" in output
    assert "webhook.test" in output
    assert "HTTP 500" in output
    assert run(env, "replay")[0] == 2  # usage error: says what to replay
    code, output = run(env, "replay", "--subscription", "acme")
    assert "re-queued 1" in output
    code, output = run(env, "deliver")
    assert code == 0
    assert "\tdelivered" in output
    assert len(receiver.received) == 1


def test_an_unknown_subscription_and_a_refused_url_are_clear_errors(
    env: dict[str, str], tmp_path: Path
) -> None:
    code, output = run(env, "test", "nobody")
    assert code == 2  # bad input: one line, exit 2
    assert "no subscription 'nobody'" in output
    Path(env["MI_WEBHOOKS"]).write_text(
        '[[subscriptions]]\nid = "plain"\nurl = "http://hooks.example.com/x"\n'
        f'secret = "{SECRET}"\nevents = ["*"]\n',
        encoding="utf-8",
    )
    code, output = run(env, "list")
    assert code == 2  # bad configuration
    assert "HTTPS only" in output
