"""A task as stored, and as the wire shows it: pure functions on one document.

A task is one JSON document in the store under ``("task", task_id)``; its
journal is the call stream ``("call", task_id)``
(:mod:`bridge.durable.records`). The document says what to run (the tool,
its arguments, the client's capabilities), where it is (``status``, the
questions waiting in ``inputRequests`` with what the rounds need to accept
their answers, ``asked``), the answers delivered but not yet
used (``responses``), how it ended (``result`` or ``error``), and who runs it
(``lease``: an owner and an expiry).

Every change is a function from a document to a new one; the caller writes it
with compare-and-swap and, on a conflict, reads again and re-applies it
(:func:`bridge.server.tasks.service.Tasks.change`). So a ``tasks/cancel`` that
lands while a runner finishes wins whichever write comes second: a cancelled
task stays cancelled.

It does no I/O, and does not run tasks (:mod:`.runner`).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping
from typing import Any, Final, cast

from runtime.principal import Principal

__all__ = [
    "TERMINAL",
    "caller",
    "cancel",
    "claim",
    "created",
    "deliver",
    "detailed",
    "expires_at",
    "finish",
    "iso",
    "new_document",
    "park",
    "refuse",
    "status_message",
    "take_responses",
]

TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})

Doc = dict[str, Any]


def iso(seconds: float) -> str:
    """``seconds`` since the epoch as the ISO 8601 UTC time the wire uses."""
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_document(
    *,
    tool: str,
    arguments: Mapping[str, Any],
    capabilities: Mapping[str, Any],
    ttl_ms: int,
    poll_ms: int,
    principal: str | None,
    now: float,
) -> Doc:
    """A new ``working`` task of ``tool`` with ``arguments``."""
    doc: Doc = {
        "tool": tool,
        "arguments": dict(arguments),
        "capabilities": dict(capabilities),
        "status": "working",
        "created": now,
        "updated": now,
        "ttlMs": ttl_ms,
        "pollIntervalMs": poll_ms,
        "asked": {},
        "inputRequests": {},
        "responses": {},
    }
    if principal is not None:
        doc["principal"] = principal
    return doc


def caller_json(principal: Principal) -> Doc:
    """Who made the task, as the document keeps it (the task runs for them)."""
    return {
        "subject": principal.subject,
        "issuer": principal.issuer,
        "client_id": principal.client_id,
        "scopes": sorted(principal.scopes),
        "audience": list(principal.audience),
        "expires_at": principal.expires_at,
        "claims": dict(principal.claims),
    }


def caller(doc: Mapping[str, Any]) -> Principal | None:
    """Who the task runs for (None: a server that checks no tokens)."""
    found: Any = doc.get("caller")
    if not isinstance(found, dict):
        return None
    return Principal(**cast("dict[str, Any]", found))


def expires_at(doc: Mapping[str, Any]) -> float:
    """When the task is swept: ``ttlMs`` after its last change."""
    return float(doc["updated"]) + int(doc["ttlMs"]) / 1000


def _touched(doc: Mapping[str, Any], now: float, **changes: Any) -> Doc:
    out = dict(doc)
    out.update(changes)
    out["updated"] = max(now, float(doc["updated"]))
    return out


def _envelope(task_id: str, doc: Mapping[str, Any]) -> Doc:
    out: Doc = {
        "taskId": task_id,
        "status": doc["status"],
        "createdAt": iso(doc["created"]),
        "lastUpdatedAt": iso(doc["updated"]),
        "ttlMs": doc["ttlMs"],
        "pollIntervalMs": doc["pollIntervalMs"],
    }
    message = doc.get("statusMessage")
    if isinstance(message, str):
        out["statusMessage"] = message
    return out


def created(task_id: str, doc: Mapping[str, Any]) -> Doc:
    """The ``CreateTaskResult`` of a new task: flat, ``resultType: "task"``."""
    return {"resultType": "task", **_envelope(task_id, doc)}


def detailed(task_id: str, doc: Mapping[str, Any]) -> Doc:
    """The ``tasks/get`` result: the task, with its result or error once
    terminal, or the questions it waits on."""
    out: Doc = {"resultType": "complete", **_envelope(task_id, doc)}
    status = doc["status"]
    if status == "completed" and "result" in doc:
        out["result"] = doc["result"]
    elif status == "failed" and "error" in doc:
        out["error"] = doc["error"]
    elif status == "input_required":
        out["inputRequests"] = doc["inputRequests"]
    return out


def cancel(doc: Mapping[str, Any], now: float) -> Doc | None:
    """The task cancelled; None if it has already ended (nothing to write)."""
    if doc["status"] in TERMINAL:
        return None
    return _touched(doc, now, status="cancelled", inputRequests={}, responses={})


def deliver(
    doc: Mapping[str, Any], responses: Mapping[str, Any], now: float
) -> Doc | None:
    """``responses`` to the questions the task waits on, kept for its next
    round; answered questions leave ``inputRequests``, and the task is
    ``working`` once none is left. None: none of them answers a question
    waiting (unknown keys are ignored, as a round ignores them)."""
    waiting = cast("dict[str, Any]", doc["inputRequests"])
    fresh = {k: v for k, v in responses.items() if k in waiting}
    if not fresh or doc["status"] in TERMINAL:
        return None
    left = {k: v for k, v in waiting.items() if k not in fresh}
    status = "input_required" if left else "working"
    kept = {**cast("dict[str, Any]", doc["responses"]), **fresh}
    return _touched(doc, now, status=status, inputRequests=left, responses=kept)


def take_responses(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The answers a round of the task should be given."""
    return dict(cast("dict[str, Any]", doc["responses"]))


def park(
    doc: Mapping[str, Any],
    used: Mapping[str, Any],
    requests: Mapping[str, Any],
    asked: Mapping[str, Any],
    now: float,
) -> Doc | None:
    """The task waiting on ``requests`` after a round that was given the
    answers ``used``; ``asked`` pins the answers its next round accepts.
    Answers that came during the round stay for the next one. None: the task
    ended meanwhile (cancelled)."""
    if doc["status"] in TERMINAL:
        return None
    kept = {
        k: v
        for k, v in cast("dict[str, Any]", doc["responses"]).items()
        if k not in used or used[k] != v
    }
    waiting = {k: v for k, v in requests.items() if k not in kept}
    return _touched(
        doc,
        now,
        status="input_required" if waiting else "working",
        inputRequests=waiting,
        responses=kept,
        asked=dict(asked),
    )


def refuse(
    doc: Mapping[str, Any], used: Mapping[str, Any], why: str, now: float
) -> Doc | None:
    """The answers ``used`` dropped, one of them not being a valid answer:
    the task asks again, and its ``statusMessage`` says ``why``."""
    if doc["status"] in TERMINAL:
        return None
    kept = {
        k: v
        for k, v in cast("dict[str, Any]", doc["responses"]).items()
        if k not in used or used[k] != v
    }
    return _touched(doc, now, responses=kept, statusMessage=why)


def finish(
    doc: Mapping[str, Any],
    *,
    result: Mapping[str, Any] | None = None,
    error: Mapping[str, Any] | None = None,
    now: float,
) -> Doc | None:
    """The task ended with ``result`` (``completed``) or ``error``
    (``failed``); None if it had already ended (a cancel won)."""
    if doc["status"] in TERMINAL:
        return None
    out = _touched(doc, now, inputRequests={}, responses={}, asked={})
    out.pop("lease", None)
    if error is not None:
        out["status"] = "failed"
        out["error"] = dict(error)
    else:
        out["status"] = "completed"
        out["result"] = dict(result or {})
    return out


def claim(
    doc: Mapping[str, Any], owner: str, lease: float, now: float | None = None
) -> Doc | None:
    """The task leased to ``owner`` for ``lease`` seconds; None if it has
    ended or another owner's lease is still running."""
    at = time.time() if now is None else now
    if doc["status"] in TERMINAL:
        return None
    held: Any = doc.get("lease")
    if isinstance(held, dict):
        held = cast("dict[str, Any]", held)
        if held.get("owner") != owner and float(held.get("until", 0)) > at:
            return None
    out = dict(doc)
    out["lease"] = {"owner": owner, "until": at + lease}
    return out


def status_message(doc: Mapping[str, Any], message: str, now: float) -> Doc | None:
    """The task's ``statusMessage`` (its latest progress message)."""
    if doc["status"] in TERMINAL or doc.get("statusMessage") == message:
        return None
    return _touched(doc, now, statusMessage=message)
