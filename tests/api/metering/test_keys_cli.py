"""`mi keys` on both backends: create prints the key last, list, topup, usage, revoke."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner

from api.metering.backends import open_store
from api.metering.config import DEFAULT_CONFIG_PATH, MeteringConfig
from api.metering.model import KEY_PATTERN, Outcome
from mi.cli import main

pytestmark = pytest.mark.anyio


@pytest.fixture
def mi(store_url: str) -> CliRunner:
    return CliRunner(env={"MI_METERING_URL": store_url})


def invoke(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(main, ["keys", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_create_prints_the_new_key_as_the_last_line(mi: CliRunner) -> None:
    key = invoke(mi, "create", "--plan", "sandbox", "--name", "alice").splitlines()[-1]
    assert KEY_PATTERN.match(key)
    listing = invoke(mi, "list")
    assert key[8:18] in listing
    assert "alice" in listing
    assert key not in listing


def test_create_refuses_an_unknown_plan(mi: CliRunner) -> None:
    result = mi.invoke(main, ["keys", "create", "--plan", "gold"])
    assert result.exit_code == 2
    assert "'gold' is not one of 'internal', 'pro', 'quant', 'sandbox'" in result.output


def test_create_takes_the_plans_of_the_configured_file(store_url: str, tmp_path: Path) -> None:
    """An operator's MI_METERING_CONFIG may add plans: keys can be created on them."""
    edited = tmp_path / "metering.toml"
    edited.write_text(DEFAULT_CONFIG_PATH.read_text() + "\n[plans.gold]\nmonthly_budget = 5\n")
    runner = CliRunner(env={"MI_METERING_URL": store_url, "MI_METERING_CONFIG": str(edited)})
    invoke(runner, "create", "--plan", "gold")
    assert "gold" in invoke(runner, "list")


def test_topup_and_usage_report_packs_and_spending(
    mi: CliRunner, store_url: str, config: MeteringConfig
) -> None:
    key = invoke(mi, "create", "--plan", "quant").splitlines()[-1]
    assert "pack balance 700" in invoke(mi, "topup", key, "--tokens", "700")

    async def spend() -> None:
        store = open_store(store_url, config)
        account = await store.authenticate(key)
        assert account is not None
        admission = await store.admit(account, "get-indicators", 8)
        assert admission.charge is not None
        await store.settle(admission.charge, 404)
        await store.close()

    asyncio.run(spend())
    report = invoke(mi, "usage", key[:18])
    assert "plan quant" in report
    assert "remaining this month 250699 of 250000" in report
    assert "get-indicators" in report
    assert "spent today: 1" in report


def test_revoke_by_prefix_refuses_the_key(
    mi: CliRunner, store_url: str, config: MeteringConfig
) -> None:
    key = invoke(mi, "create", "--plan", "pro").splitlines()[-1]

    async def check(expected: Outcome | None) -> None:
        store = open_store(store_url, config)
        account = await store.authenticate(key)
        if expected is None:
            assert account is None
        else:
            assert account is not None
            assert (await store.admit(account, "ping", 1)).outcome is expected
        await store.close()

    asyncio.run(check(Outcome.ADMITTED))
    invoke(mi, "revoke", key[:18])
    asyncio.run(check(None))
    assert mi.invoke(main, ["keys", "revoke", key]).exit_code != 0


def test_topup_of_an_unknown_key_fails(mi: CliRunner) -> None:
    result = mi.invoke(main, ["keys", "topup", "mi_live_XXXXXXXXXX", "--tokens", "5"])
    assert result.exit_code != 0
    assert "no key" in result.output


@pytest.mark.parametrize(
    "content", [None, "[plans.gold\n", "[plans.gold]\nmonthly_budget = 'many'\n"]
)
def test_an_unreadable_configuration_is_a_clear_error(
    store_url: str, tmp_path: Path, content: str | None
) -> None:
    """A missing, malformed or invalid MI_METERING_CONFIG: exit 2 naming it, no traceback."""
    path = tmp_path / "metering.toml"
    if content is not None:
        path.write_text(content)
    runner = CliRunner(env={"MI_METERING_URL": store_url, "MI_METERING_CONFIG": str(path)})
    result = runner.invoke(main, ["keys", "create", "--plan", "sandbox"])
    assert result.exit_code == 2
    assert result.output.startswith("Error: metering configuration:")
    assert "Traceback" not in result.output
