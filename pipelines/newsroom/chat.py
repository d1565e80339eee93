"""The newsroom's one OpenAI-compatible chat-completions client, for the enricher and the writer."""

from __future__ import annotations

import re
from types import TracebackType
from typing import Annotated

import httpx
import msgspec

from pipelines.newsroom.config import LlmSettings


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message


class ChatCompletion(msgspec.Struct):
    """The part of an OpenAI chat-completions response the newsroom reads."""

    choices: Annotated[list[_Choice], msgspec.Meta(min_length=1)]


_RESPONSE = msgspec.json.Decoder(ChatCompletion)
_FENCE = re.compile(r"^\s*```\w*\s*|\s*```\s*$")
"""A Markdown code fence around the whole answer, which models add although asked not to."""


class ChatError(Exception):
    """The endpoint failed, or answered something that is not a chat completion."""


class ChatClient:
    """`POST {base_url}/chat/completions` on one connection for a batch of questions.

    No retries: a failed question falls back to the caller's non-LLM path at once, and a batch
    stops asking after the settings' consecutive failures.
    """

    def __init__(self, settings: LlmSettings) -> None:
        self.settings = settings
        self._client: httpx.Client | None = None

    def __enter__(self) -> ChatClient:
        key = self.settings.api_key
        self._client = httpx.Client(
            base_url=self.settings.base_url,
            timeout=self.settings.timeout_seconds,
            headers={"Authorization": f"Bearer {key}"} if key else {},
        )
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def complete(self, system: str, user: str, json_object: bool = False) -> str:
        """The model's answer to `user` under the `system` prompt, without a surrounding code
        fence; `json_object` asks for a JSON object (OpenAI's `response_format`)."""
        if self._client is None:
            raise RuntimeError("ChatClient is used inside `with`")
        try:
            response = self._client.post(
                "/chat/completions", json=self.request(system, user, json_object)
            )
            response.raise_for_status()
            content = _RESPONSE.decode(response.content).choices[0].message.content
        except (httpx.HTTPError, msgspec.MsgspecError) as exc:
            raise ChatError(f"{type(exc).__name__}: {exc}") from exc
        return _FENCE.sub("", content or "")

    def request(self, system: str, user: str, json_object: bool = False) -> dict[str, object]:
        """The request body: deterministic (temperature 0), the system prompt, then the user's."""
        body: dict[str, object] = {"model": self.settings.model, "temperature": 0}
        if json_object:
            body["response_format"] = {"type": "json_object"}
        body["messages"] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        return body
