"""The LLM enricher against a real loopback chat-completions server: validation and every fallback."""

from __future__ import annotations

import pytest

from pipelines.newsroom.config import LlmSettings, load_llm_settings
from pipelines.newsroom.definitions import build_enricher
from pipelines.newsroom.enrichment import Article, LexiconEnricher
from pipelines.newsroom.llm import SYSTEM_PROMPT, LlmEnricher

from .loopback import Reply, serve

ARTICLE = Article("crypto", "Bitcoin surges to record high", "Bitcoin (BTC) rose 6%.", ("BTC",))
OTHER = Article("crypto", "Ether slides as liquidations mount", "ETH fell 5%.", ("ETH",))


def enricher(base_url: str, timeout: float = 2.0, max_failures: int = 3) -> LlmEnricher:
    settings = LlmSettings(base_url, "gpt-4o-mini", "sk-test", timeout, max_failures)
    return LlmEnricher(settings, LexiconEnricher())


@pytest.fixture(scope="module")
def lexicon() -> LexiconEnricher:
    return LexiconEnricher()


def test_a_valid_answer_fills_every_field_from_the_model() -> None:
    with serve([Reply("chat_valid.json")]) as server:
        (result,) = enricher(server.base_url).enrich([ARTICLE])
    assert result.enricher == "llm"
    assert (result.sentiment, result.tone, result.clout) == (3.5, "bullish", "high")
    assert (result.fud_fomo_bias, result.fud_fomo_score, result.speculation_score) == (
        "fomo",
        "6",
        "2",
    )


def test_the_request_is_an_openai_chat_completion_with_the_key_as_bearer() -> None:
    with serve([Reply("chat_valid.json")]) as server:
        enricher(server.base_url).enrich([ARTICLE])
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test"
    body = request["json"]
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert "Bitcoin surges to record high" in body["messages"][1]["content"]


def test_a_fenced_json_answer_is_accepted_and_nulls_stay_null() -> None:
    with serve([Reply("chat_fenced.json")]) as server:
        (result,) = enricher(server.base_url).enrich([OTHER])
    assert (result.enricher, result.sentiment, result.tone) == ("llm", -2.25, "bearish")
    assert result.speculation_score is None


@pytest.mark.parametrize(
    "reply",
    [
        Reply("chat_not_json.json"),
        Reply("chat_out_of_range.json"),
        Reply("chat_missing_key.json"),
        Reply("chat_bad_enum.json"),
        Reply("server_error.json", status=500),
        Reply("server_error.json", status=429),
    ],
    ids=["not_json", "out_of_range", "missing_key", "bad_enum", "http_500", "http_429"],
)
def test_an_invalid_answer_or_http_error_falls_back_to_the_lexicon(
    reply: Reply, lexicon: LexiconEnricher
) -> None:
    with serve([reply]) as server:
        (result,) = enricher(server.base_url).enrich([ARTICLE])
    assert result == lexicon.enrich_one(ARTICLE)
    assert result.enricher == "lexicon"


def test_a_timeout_falls_back_to_the_lexicon(lexicon: LexiconEnricher) -> None:
    with serve([Reply("chat_valid.json", delay=1.0)]) as server:
        (result,) = enricher(server.base_url, timeout=0.2).enrich([ARTICLE])
    assert result == lexicon.enrich_one(ARTICLE)


def test_an_unreachable_endpoint_falls_back_to_the_lexicon(lexicon: LexiconEnricher) -> None:
    with serve([Reply("chat_valid.json")]) as server:
        url = server.base_url
    (result,) = enricher(url, timeout=0.5).enrich([ARTICLE])
    assert result == lexicon.enrich_one(ARTICLE)


def test_fallback_is_per_article_in_order() -> None:
    replies = [Reply("chat_not_json.json"), Reply("chat_valid.json")]
    with serve(replies) as server:
        first, second = enricher(server.base_url).enrich([OTHER, ARTICLE])
    assert (first.enricher, second.enricher) == ("lexicon", "llm")


def test_after_max_consecutive_failures_the_endpoint_is_not_called_again() -> None:
    with serve([Reply("server_error.json", status=500)]) as server:
        results = enricher(server.base_url, max_failures=2).enrich([ARTICLE] * 5)
    assert len(server.requests) == 2
    assert {r.enricher for r in results} == {"lexicon"}


def test_llm_settings_need_a_base_url_and_a_model() -> None:
    assert load_llm_settings({}) is None
    assert load_llm_settings({"MI_LLM_BASE_URL": "http://x/v1"}) is None
    settings = load_llm_settings(
        {"MI_LLM_BASE_URL": "http://x/v1/", "MI_LLM_MODEL": "m", "MI_LLM_API_KEY": "k"}
    )
    assert settings == LlmSettings("http://x/v1", "m", "k")
    assert "k" not in repr(settings)


def test_build_enricher_is_the_lexicon_without_settings_and_the_llm_with_them() -> None:
    assert isinstance(build_enricher(None), LexiconEnricher)
    assert isinstance(build_enricher(LlmSettings("http://x/v1", "m")), LlmEnricher)
