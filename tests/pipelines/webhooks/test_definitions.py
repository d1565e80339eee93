"""The webhooks Dagster wiring: the events sensor derives after a write, the delivery job delivers."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from pipelines.catalog import BRIEFS
from pipelines.platform.settings import load_settings
from pipelines.warehouse.store import Warehouse
from pipelines.webhooks.definitions import DELIVERY_JOB, build_defs
from pipelines.webhooks.service import WebhookSettings
from tests.pipelines.webhooks.conftest import SECRET, Receiver
from tests.pipelines.webhooks.test_derive import briefs


@pytest.fixture
def settings(tmp_path: Path, ca_file: Path, receiver: Receiver) -> WebhookSettings:
    config = tmp_path / "webhooks.toml"
    config.write_text(
        f'[delivery]\nca_file = "{ca_file}"\nallowed_hosts = ["127.0.0.1"]\n\n'
        f'[[subscriptions]]\nid = "acme"\nurl = "{receiver.url}"\nsecret = "{SECRET}"\n'
        'events = ["news.*"]\nsymbols = ["BTC"]\n',
        encoding="utf-8",
    )
    return WebhookSettings(config, tmp_path / "outbox.sqlite", tmp_path / "warehouse")


def test_after_each_write_the_sensor_derives_and_the_job_delivers(
    tmp_path: Path, settings: WebhookSettings, receiver: Receiver
) -> None:
    defs = build_defs(load_settings({"MI_DATA_DIR": str(tmp_path)}), settings)
    sensor = defs.resolve_sensor_def("webhook_events")
    warehouse = Warehouse(root=settings.warehouse_dir)
    warehouse.write(BRIEFS, "crypto", briefs(("a1", ["BTC"], "old")))
    with dg.instance_for_test() as instance:
        first = sensor.evaluate_tick(dg.build_sensor_context(instance=instance))
        assert first.cursor is not None
        warehouse.write(BRIEFS, "crypto", briefs(("a1", ["BTC"], "old"), ("a2", ["BTC"], "new")))
        second = sensor.evaluate_tick(
            dg.build_sensor_context(instance=instance, cursor=first.cursor)
        )
        assert "'news': 1" in str(second.skip_message)
        again = sensor.evaluate_tick(
            dg.build_sensor_context(instance=instance, cursor=second.cursor)
        )
        assert again.skip_message == "no new warehouse version"

        delivery_sensor = defs.resolve_sensor_def("webhook_delivery_sensor")
        requests = delivery_sensor.evaluate_tick(dg.build_sensor_context(instance=instance))
        assert len(requests.run_requests or []) == 1
        result = defs.resolve_job_def(DELIVERY_JOB).execute_in_process(instance=instance)
        assert result.success
    assert len(receiver.received) == 1
    assert receiver.received[0].signature_ok
