"""The ``gen_ai.*`` attributes of a sample and of its answer, and of the
``elicit`` effect: key and action. Plain values from plain values, read by
attribute name so no effect type is imported."""

from __future__ import annotations

from typing import Any

__all__ = ["answer_attributes", "question_attributes", "reply_attributes"]


def question_attributes(question: Any) -> dict[str, Any]:
    """What a question asks: for a sample, the model request."""
    attributes: dict[str, Any] = {}
    if type(question).__name__ == "Sample":
        attributes["gen_ai.operation.name"] = "chat"
        attributes["gen_ai.request.max_tokens"] = question.max_tokens
        temperature = getattr(question, "temperature", None)
        if temperature is not None:
            attributes["gen_ai.request.temperature"] = temperature
        preferences = getattr(question, "model_preferences", None)
        hints = getattr(preferences, "hints", ())
        if hints:
            attributes["gen_ai.request.model"] = str(hints[0])
    elif type(question).__name__ == "Elicit":
        attributes["yieldmcp.elicit.key"] = question.key
    return attributes


def reply_attributes(reply: Any) -> dict[str, Any]:
    """What a model answered (a ``SampleReply``): model, usage, finish reason."""
    attributes: dict[str, Any] = {}
    model = getattr(reply, "model", None)
    if isinstance(model, str):
        attributes["gen_ai.response.model"] = model
    usage = getattr(reply, "usage", None)
    if usage is not None:
        attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
        attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
    reason = getattr(reply, "stop_reason", None)
    if isinstance(reason, str):
        attributes["gen_ai.response.finish_reasons"] = (reason,)
    return attributes


def answer_attributes(question: Any, reply: Any) -> dict[str, Any]:
    """What came back for ``question``: a sample's reply, a form's action."""
    name = type(question).__name__
    if name == "Sample":
        return reply_attributes(reply)
    action = getattr(reply, "action", None)
    if name.startswith("Elicit") and isinstance(action, str):
        return {"yieldmcp.elicit.action": action}
    return {}
