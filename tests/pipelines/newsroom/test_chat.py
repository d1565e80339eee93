"""The newsroom's one chat client against a real loopback server: the request, fences, failures."""

from __future__ import annotations

import json

import pytest

from pipelines.newsroom.chat import ChatClient, ChatError
from pipelines.newsroom.config import LlmSettings

from .loopback import Reply, serve


def settings(base_url: str, api_key: str | None = "sk-test") -> LlmSettings:
    return LlmSettings(base_url, "gpt-4o-mini", api_key, 2.0, 3)


@pytest.mark.parametrize("json_object", [True, False])
def test_a_question_is_one_deterministic_chat_completion_asking_json_only_when_told(
    json_object: bool,
) -> None:
    with serve([Reply("chat_valid.json")]) as server, ChatClient(settings(server.base_url)) as chat:
        chat.complete("system words", "user words", json_object)
    (request,) = server.requests
    assert (request["path"], request["auth"]) == ("/v1/chat/completions", "Bearer sk-test")
    body = request["json"]
    assert (body["model"], body["temperature"]) == ("gpt-4o-mini", 0)
    assert ("response_format" in body) == json_object
    assert body["messages"] == [
        {"role": "system", "content": "system words"},
        {"role": "user", "content": "user words"},
    ]


def test_the_answer_comes_without_its_code_fence_and_without_a_key_no_authorization() -> None:
    with (
        serve([Reply("chat_fenced.json")]) as server,
        ChatClient(settings(server.base_url, api_key=None)) as chat,
    ):
        text = chat.complete("s", "u")
    assert "```" not in text
    assert json.loads(text)["tone"] == "bearish"
    assert server.requests[0]["auth"] is None


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply("server_error.json", status=500), "HTTPStatusError"),
        (Reply("server_error.json", status=200), "ValidationError"),  # not a chat completion
    ],
)
def test_a_failed_call_or_a_body_that_is_not_a_completion_is_a_chat_error(
    reply: Reply, message: str
) -> None:
    with (
        serve([reply]) as server,
        ChatClient(settings(server.base_url)) as chat,
        pytest.raises(ChatError, match=message),
    ):
        chat.complete("s", "u")
