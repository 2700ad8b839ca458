"""``provider_from_spec``: a provider from ``"<api>:<model>"`` and the environment.

Owns the spec prefixes and the environment variables each provider reads:

=====================  ==================================  ===========================
prefix                 key                                 base URL (default)
=====================  ==================================  ===========================
``openai``             ``OPENAI_API_KEY``                  ``OPENAI_BASE_URL``
                                                           (``https://api.openai.com/v1``)
``openai-responses``   ``OPENAI_API_KEY``                  ``OPENAI_BASE_URL``
``anthropic``          ``ANTHROPIC_API_KEY``               ``ANTHROPIC_BASE_URL``
                                                           (``https://api.anthropic.com``)
``ollama``             none                                ``OLLAMA_HOST``
                                                           (``http://127.0.0.1:11434``)
``gemini``             ``GEMINI_API_KEY``, else            ``GOOGLE_GEMINI_BASE_URL``
                       ``GOOGLE_API_KEY``                  (generativelanguage API)
=====================  ==================================  ===========================

``offline`` (or ``offline:<seed>``) needs nothing: it is the
:class:`~bridge.providers.offline.OfflineModel`, which answers without a network.

Does no I/O: it only builds an ``HttpProvider`` (or an ``OfflineModel``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

import attrs
import httpx

from runtime.errors import ProviderConfigError

from ._apis import (
    Api,
    anthropic_api,
    gemini_api,
    ollama_api,
    openai_chat_api,
    openai_responses_api,
)
from ._http import DEFAULT_DEADLINE, MAX_ANSWER, HttpProvider, Retry
from .offline import OfflineModel

__all__ = ["PREFIXES", "provider_from_spec"]


@attrs.frozen
class _Entry:
    api: Callable[[], Api]
    keys: tuple[str, ...]
    base_env: str
    base_default: str


_ENTRIES = {
    "openai": _Entry(
        openai_chat_api,
        ("OPENAI_API_KEY",),
        "OPENAI_BASE_URL",
        "https://api.openai.com/v1",
    ),
    "openai-responses": _Entry(
        openai_responses_api,
        ("OPENAI_API_KEY",),
        "OPENAI_BASE_URL",
        "https://api.openai.com/v1",
    ),
    "anthropic": _Entry(
        anthropic_api,
        ("ANTHROPIC_API_KEY",),
        "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com",
    ),
    "ollama": _Entry(ollama_api, (), "OLLAMA_HOST", ""),
    "gemini": _Entry(
        gemini_api,
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        "GOOGLE_GEMINI_BASE_URL",
        "https://generativelanguage.googleapis.com",
    ),
}

PREFIXES = (*_ENTRIES, "offline")
"""The provider prefixes :func:`provider_from_spec` knows."""


def provider_from_spec(
    spec: str,
    *,
    env: Mapping[str, str] | None = None,
    stream: bool = False,
    timeout: float = 60.0,
    deadline: float | None = DEFAULT_DEADLINE,
    max_answer: int = MAX_ANSWER,
    retry: Retry | None = None,
    client: httpx.AsyncClient | None = None,
) -> HttpProvider | OfflineModel:
    """The provider for ``spec``, e.g. ``"openai:gpt-4o-mini"``.

    Args:
        spec: ``<prefix>:<model>``; the model may itself contain colons
            (``ollama:llama3.2:3b``). ``offline`` or ``offline:<seed>`` is the
            offline model (the other arguments do not apply to it).
        env: where to read keys and base URLs (default ``os.environ``).
        stream: ask for streamed answers (accumulated into one reply).
        timeout: seconds to wait for each network step.
        deadline: seconds for a sample's whole answer, every try included
            (None: no bound).
        max_answer: bytes of one answer read (whole, streamed, or an error
            page); past it, a ``ProviderError``.
        retry: the retry policy (default :class:`Retry`).
        client: a shared ``httpx.AsyncClient`` (the caller closes it).

    Raises:
        ProviderConfigError: an unknown prefix, no model, or a missing key.
    """
    environ = os.environ if env is None else env
    prefix, _, model = spec.partition(":")
    if prefix == "offline":
        return _offline(spec, model)
    entry = _ENTRIES.get(prefix)
    if entry is None or not model:
        raise ProviderConfigError(
            f"bad provider spec {spec!r}: expected '<prefix>:<model>' with prefix "
            f"one of {', '.join(PREFIXES)}"
        )
    key = next((environ[k] for k in entry.keys if environ.get(k)), None)
    if entry.keys and key is None:
        raise ProviderConfigError(
            f"provider {prefix!r} needs an API key: set {' or '.join(entry.keys)}"
        )
    base = environ.get(entry.base_env) or entry.base_default
    if prefix == "ollama":
        base = ollama_base_url(base)
    elif not _is_http_url(base):
        # Not shown: it may hold a proxy's password, and no error redacts
        # what it cannot read as a URL.
        raise ProviderConfigError(f"{entry.base_env} is not an http:// or https:// URL")
    return HttpProvider(
        api=entry.api(),
        model=model,
        base_url=base,
        api_key=key,
        stream=stream,
        timeout=timeout,
        deadline=deadline,
        max_answer=max_answer,
        retry=retry or Retry(),
        client=client,
    )


def _offline(spec: str, seed: str) -> OfflineModel:
    try:
        return OfflineModel(int(seed or "0"))
    except ValueError:
        raise ProviderConfigError(
            f"bad provider spec {spec!r}: expected 'offline' or 'offline:<seed>' "
            f"with an integer seed"
        ) from None


def ollama_base_url(host: str) -> str:
    """The base URL for an ``OLLAMA_HOST`` value, read as the Ollama CLI does.

    A bare ``host[:port]`` means ``http`` on port 11434; empty means
    ``http://127.0.0.1:11434``.
    """
    host = host.strip().rstrip("/")
    has_scheme = "://" in host
    try:
        parts = urlsplit(host if has_scheme else f"http://{host}")
        parts.port  # noqa: B018 - raises for a port that is no number
    except ValueError:
        raise ProviderConfigError("OLLAMA_HOST is not a host[:port] or a URL") from None
    name = parts.hostname or "127.0.0.1"
    if ":" in name:
        name = f"[{name}]"
    port = parts.port or (None if has_scheme else 11434)
    netloc = name if port is None else f"{name}:{port}"
    return f"{parts.scheme}://{netloc}{parts.path}"


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a port that is no number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)
