"""Sampling: asking the client's model, and reading what it answered.

Owns the :class:`Sample` effect (``effect``: its checks, the request it stands
for, its fingerprint, the ``__schema__`` meta-tool) and the reading of a
model's reply into a :class:`~runtime.results.SampleResult`, with the
corrective conversations of ``sample_schema`` / ``sample_tools`` retries
(``outcome``).

It does not spell sampling for MCP or a provider (``encoders``/``decoders``),
define the result values (:mod:`runtime.results`) or decide how often to retry
(the context does).
"""

from .effect import Sample as Sample
from .outcome import resolve_sample as resolve_sample
from .outcome import schema_retry_messages as schema_retry_messages
from .outcome import tool_call_problems as tool_call_problems
from .outcome import tools_retry_messages as tools_retry_messages

__all__ = [
    "Sample",
    "resolve_sample",
    "schema_retry_messages",
    "tool_call_problems",
    "tools_retry_messages",
]
