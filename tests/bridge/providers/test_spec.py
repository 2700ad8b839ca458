"""provider_from_spec: prefixes, keys and base URLs from the environment."""

from __future__ import annotations

import pytest

from bridge.providers import ollama_base_url, provider_from_spec
from runtime.errors import ProviderConfigError

KEYS = {
    "OPENAI_API_KEY": "sk-o",
    "ANTHROPIC_API_KEY": "sk-a",
    "GEMINI_API_KEY": "g-1",
}


@pytest.mark.parametrize(
    ("spec", "api", "model", "base", "key"),
    [
        (
            "openai:gpt-4o-mini",
            "openai",
            "gpt-4o-mini",
            "https://api.openai.com/v1",
            "sk-o",
        ),
        (
            "openai-responses:o4-mini",
            "openai-responses",
            "o4-mini",
            "https://api.openai.com/v1",
            "sk-o",
        ),
        (
            "anthropic:claude-sonnet-4-5",
            "anthropic",
            "claude-sonnet-4-5",
            "https://api.anthropic.com",
            "sk-a",
        ),
        ("ollama:llama3.2:3b", "ollama", "llama3.2:3b", "http://127.0.0.1:11434", None),
        (
            "gemini:gemini-2.5-flash",
            "gemini",
            "gemini-2.5-flash",
            "https://generativelanguage.googleapis.com",
            "g-1",
        ),
    ],
)
def test_each_prefix_builds_its_provider(
    spec: str, api: str, model: str, base: str, key: str | None
) -> None:
    p = provider_from_spec(spec, env=KEYS)
    assert (p.api.name, p.model, p.base_url, p.api_key) == (api, model, base, key)


def test_base_urls_come_from_the_environment() -> None:
    env = {
        **KEYS,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OLLAMA_HOST": "127.0.0.1:8",
    }
    assert provider_from_spec("openai:m", env=env).base_url == "http://127.0.0.1:9/v1"
    assert provider_from_spec("ollama:m", env=env).base_url == "http://127.0.0.1:8"


def test_gemini_falls_back_to_google_api_key() -> None:
    assert (
        provider_from_spec("gemini:m", env={"GOOGLE_API_KEY": "g-2"}).api_key == "g-2"
    )


@pytest.mark.parametrize("spec", ["mistral:large", "openai", "openai:", ":gpt"])
def test_a_bad_spec_raises_a_one_line_config_error(spec: str) -> None:
    with pytest.raises(ProviderConfigError) as caught:
        provider_from_spec(spec, env=KEYS)
    assert "\n" not in str(caught.value)
    assert "openai" in str(caught.value)


@pytest.mark.parametrize(
    "spec", ["openai:m", "openai-responses:m", "anthropic:m", "gemini:m"]
)
def test_a_missing_key_raises_a_one_line_config_error(spec: str) -> None:
    with pytest.raises(ProviderConfigError) as caught:
        provider_from_spec(spec, env={})
    assert "\n" not in str(caught.value)
    assert "_API_KEY" in str(caught.value)


def test_stream_and_timeout_are_passed_on() -> None:
    p = provider_from_spec("anthropic:m", env=KEYS, stream=True, timeout=3.0)
    assert (p.stream, p.timeout) == (True, 3.0)


def test_the_key_is_not_in_the_provider_repr() -> None:
    assert "sk-o" not in repr(provider_from_spec("openai:m", env=KEYS))


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("", "http://127.0.0.1:11434"),
        ("example.com", "http://example.com:11434"),
        ("example.com:56789", "http://example.com:56789"),
        ("https://example.com", "https://example.com"),
        ("http://10.0.0.2:1234/", "http://10.0.0.2:1234"),
        ("[::1]:5000", "http://[::1]:5000"),
    ],
)
def test_ollama_host_is_read_as_the_ollama_cli_does(host: str, url: str) -> None:
    assert ollama_base_url(host) == url
