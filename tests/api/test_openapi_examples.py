"""Rule: every operation's 200 carries a real example, the answer the embedded market gives.

The examples live in `api/openapi_examples.json` (lists cut to their first two items). This test
asks a real `mi serve` over the tests' embedded market for every example request of the
document and compares: a change of the data or of a route shows here. To write the file anew:
`MI_WRITE_EXAMPLES=1 .venv/bin/pytest tests/api/test_openapi_examples.py`.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import httpx
import pytest

from api.openapi import EXAMPLES_FILE, EXAMPLES_OMITTED, cut_lists
from tests.served import ServedApi

pytestmark = pytest.mark.slow


VOLATILE = frozenset({"time", "latency_ms", "last_updated", "version", "published"})
"""Fields that say when the answer was made (the clock, a latency, a run's time, the data
version's id and publish time), not the data."""


CLOCKED = {"dataStatus": VOLATILE | {"date", "status"}}
"""Operations whose example request answers about days relative to today (data-status's
default: the 30 days through today): their days' dates, and whether yesterday is due yet, move
with the clock too."""


def _stable(value: Any, volatile: frozenset[str] = VOLATILE) -> Any:
    if isinstance(value, list):
        return [_stable(item, volatile) for item in value]
    if isinstance(value, dict):
        return {k: "<varies>" if k in volatile else _stable(v, volatile) for k, v in value.items()}
    return value


def _stable_examples(examples: dict[str, Any]) -> dict[str, Any]:
    return {name: _stable(v, CLOCKED.get(name, VOLATILE)) for name, v in examples.items()}


def _example_url(path: str, operation: dict[str, Any]) -> str:
    examples = {
        p["name"]: p["example"] for p in operation.get("parameters", []) if p["in"] == "path"
    }
    return re.sub(r"\{([^}]+)\}", lambda m: str(examples[m.group(1)]), path)


def _captured(served_api: ServedApi) -> dict[str, Any]:
    key = served_api.new_key("internal")
    document = httpx.get(f"{served_api.base}/schema/openapi.json", timeout=30).json()
    captured = {}
    for path, item in document["paths"].items():
        operation = item["get"]
        if operation["operationId"] in EXAMPLES_OMITTED:
            continue
        url = served_api.base + _example_url(path, operation)
        answer = httpx.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert answer.status_code == 200, (url, answer.text)
        captured[operation["operationId"]] = cut_lists(answer.json())
    return captured


def test_the_examples_are_what_the_embedded_market_answers(served_api: ServedApi) -> None:
    captured = _captured(served_api)
    if os.environ.get("MI_WRITE_EXAMPLES"):
        EXAMPLES_FILE.write_text(json.dumps(captured, indent=1, sort_keys=True) + "\n")
    assert _stable_examples(json.loads(EXAMPLES_FILE.read_text())) == _stable_examples(captured)


def test_every_operation_but_the_file_export_shows_its_example(served_api: ServedApi) -> None:
    document = httpx.get(f"{served_api.base}/schema/openapi.json", timeout=30).json()
    stored = json.loads(EXAMPLES_FILE.read_text())
    for item in document["paths"].values():
        operation = item["get"]
        if operation["operationId"] in EXAMPLES_OMITTED:
            continue
        content = operation["responses"]["200"]["content"]["application/json"]
        assert content["example"] == stored[operation["operationId"]], operation["operationId"]
