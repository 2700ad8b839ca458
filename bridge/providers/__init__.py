"""Model providers over HTTP: the I/O half of the provider adapters.

A :class:`Provider` answers a ``runtime.requests.SamplingRequest`` with a
``runtime.replies.SampleReply``. :class:`HttpProvider` does it for one of five
APIs (OpenAI Chat Completions and Responses, Anthropic Messages, Ollama
``/api/chat``, Gemini ``generateContent``) with httpx on trio, using the pure
``encoders``/``decoders`` for the wire JSON. :func:`provider_from_spec` builds
one from ``"openai:gpt-4o-mini"`` and the usual environment variables.
:class:`OfflineModel` (``"offline"``, ``"offline:<seed>"``) answers every
request deterministically with no network, for demos and tests;
:func:`value_from_schema` is the JSON-Schema value generator it uses.

This package owns HTTP, retries, timeouts and configuration; it owns no wire
mapping and no MCP session logic.
"""

from ._apis import ANTHROPIC_VERSION as ANTHROPIC_VERSION
from ._apis import Api as Api
from ._apis import anthropic_api as anthropic_api
from ._apis import gemini_api as gemini_api
from ._apis import ollama_api as ollama_api
from ._apis import openai_chat_api as openai_chat_api
from ._apis import openai_responses_api as openai_responses_api
from ._http import DEFAULT_DEADLINE as DEFAULT_DEADLINE
from ._http import MAX_ANSWER as MAX_ANSWER
from ._http import HttpProvider as HttpProvider
from ._http import Provider as Provider
from ._http import Retry as Retry
from ._jsongen import value_from_schema as value_from_schema
from ._spec import PREFIXES as PREFIXES
from ._spec import ollama_base_url as ollama_base_url
from ._spec import provider_from_spec as provider_from_spec
from .offline import OfflineModel as OfflineModel

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_DEADLINE",
    "PREFIXES",
    "Api",
    "HttpProvider",
    "MAX_ANSWER",
    "OfflineModel",
    "Provider",
    "Retry",
    "anthropic_api",
    "gemini_api",
    "ollama_api",
    "ollama_base_url",
    "openai_chat_api",
    "openai_responses_api",
    "provider_from_spec",
    "value_from_schema",
]
