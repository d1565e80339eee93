"""Newsroom configuration: the optional LLM endpoint, read from an environment mapping."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LlmSettings:
    """An OpenAI-compatible chat-completions endpoint: `{base_url}/chat/completions`."""

    base_url: str
    """Up to and including the API version, e.g. `https://api.openai.com/v1`."""
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_seconds: float = 20.0
    max_consecutive_failures: int = 3
    """After this many failures in a row the rest of the batch goes to the lexicon enricher."""


def load_llm_settings(env: Mapping[str, str]) -> LlmSettings | None:
    """`MI_LLM_BASE_URL` and `MI_LLM_MODEL` (both needed), `MI_LLM_API_KEY`,
    `MI_LLM_TIMEOUT_SECONDS` and `MI_LLM_MAX_FAILURES`; None when the endpoint is not configured."""
    base_url, model = env.get("MI_LLM_BASE_URL", "").strip(), env.get("MI_LLM_MODEL", "").strip()
    if not base_url or not model:
        return None
    return LlmSettings(
        base_url=base_url.rstrip("/"),
        model=model,
        api_key=env.get("MI_LLM_API_KEY") or None,
        timeout_seconds=float(env.get("MI_LLM_TIMEOUT_SECONDS", 20.0)),
        max_consecutive_failures=int(env.get("MI_LLM_MAX_FAILURES", 3)),
    )
