"""MCP encoding of a host's answers: ``CreateMessageResult`` and ``ElicitResult``.

Owns what a yieldmcp host (or a client answering for its user) sends back to a
server's ``sampling/createMessage`` and ``elicitation/create``:
:func:`sample_result` (role ``assistant``, usage in ``_meta``) and
:func:`elicit_result` (integral floats sent as integers). Every payload passes
:func:`~encoders._mcp_wire.checked` before it is returned.

It does not encode the requests being answered (``_mcp_requests``), or produce
the answer (a model, a user, a handler does).
"""

from __future__ import annotations

from typing import Any

from runtime.codec import elicit_reply_to_json, sample_reply_to_json
from runtime.errors import LocalProtocolError
from runtime.lowlevel import plain_form_content
from runtime.replies import ElicitReply, SampleReply

from ._mcp_wire import Era, JSONObject, checked, plain_text

__all__ = ["elicit_result", "sample_result"]


def sample_result(reply: SampleReply, *, era: Era) -> JSONObject:
    """The ``CreateMessageResult`` a host answers with (role ``assistant``).

    One block is sent as a single object, several (or none) as a list; usage,
    when known, travels in ``_meta["io.yieldmcp/usage"]``.

    Raises:
        LocalProtocolError: ``reply`` cannot be sent as valid MCP in ``era``.
    """
    out = sample_reply_to_json(reply)
    if len(out["content"]) == 1:
        out["content"] = out["content"][0]
    trusted = ["role"]  # always "assistant"
    if plain_text(reply.content):
        trusted.append("content")
    if type(reply.model) is str:
        trusted.append("model")
    if type(reply.stop_reason) is str:
        trusted.append("stopReason")
    if type(out.get("_meta")) is dict:  # the usage, counted in ints
        trusted.append("_meta")
    return checked(era, "CreateMessageResult", out, "sampling result", trusted=trusted)


def elicit_result(reply: ElicitReply, *, era: Era = "2025-11-25") -> JSONObject:
    """The ``ElicitResult`` a host answers with (the same in both eras;
    ``era`` says which era's model checks it, so a client builds only the
    models of the era it speaks).

    Integral floats in the content are sent as integers: the official
    ``schema.json`` types answer values as ``integer`` although the TypeScript
    schema says ``number``. Other floats are sent as they are (see
    PROTOCOL.md §3.2).

    Raises:
        LocalProtocolError: ``reply`` declines or cancels but carries content.
    """
    if reply.content is not None and reply.action != "accept":
        raise LocalProtocolError(
            f"an elicitation answered {reply.action!r} carries no content; only "
            f"'accept' may"
        )
    out = elicit_reply_to_json(reply)
    if "content" in out:
        out["content"] = {k: _integral(v) for k, v in out["content"].items()}
    # ElicitReply checks its action; the content is the user's: checked
    # unless its values are plain (as most forms' are).
    trusted = ["action"]
    if "content" in out and plain_form_content(out["content"]):
        trusted.append("content")
    return checked(era, "ElicitResult", out, "elicitation result", trusted=trusted)


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
