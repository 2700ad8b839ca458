"""A task as the wire shows it, and who it runs as.

The task itself is a typed document in the store
(:class:`bridge.durable.tasks.TaskDoc`, whose status moves through one
transition table). This module turns it into the extension's results:
``CreateTaskResult`` (:func:`created`) and ``tasks/get``'s (:func:`detailed`),
with ISO 8601 times (:func:`iso`), and keeps who made the task as the
principal it runs for (:func:`caller_json`, :func:`caller`).

It does no I/O, and does not run tasks (:mod:`.runner`).
"""

from __future__ import annotations

import datetime
from typing import Any

from bridge.durable.tasks import TaskDoc, TaskStatus
from runtime.principal import Principal

__all__ = ["caller", "caller_json", "created", "detailed", "iso"]

Doc = dict[str, Any]


def iso(seconds: float) -> str:
    """``seconds`` since the epoch as the ISO 8601 UTC time the wire uses."""
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


def caller(doc: TaskDoc) -> Principal | None:
    """Who the task runs for (None: a server that checks no tokens)."""
    found = doc.caller
    if found is None:
        return None
    return Principal(**dict(found))


def _envelope(task_id: str, doc: TaskDoc) -> Doc:
    out: Doc = {
        "taskId": task_id,
        "status": doc.status.value,
        "createdAt": iso(doc.created),
        "lastUpdatedAt": iso(doc.updated),
        "ttlMs": doc.ttl_ms,
        "pollIntervalMs": doc.poll_ms,
    }
    if doc.status_message is not None:
        out["statusMessage"] = doc.status_message
    return out


def created(task_id: str, doc: TaskDoc) -> Doc:
    """The ``CreateTaskResult`` of a new task: flat, ``resultType: "task"``."""
    return {"resultType": "task", **_envelope(task_id, doc)}


def detailed(task_id: str, doc: TaskDoc) -> Doc:
    """The ``tasks/get`` result: the task, with its result or error once
    terminal, or the questions it waits on."""
    out: Doc = {"resultType": "complete", **_envelope(task_id, doc)}
    if doc.status is TaskStatus.COMPLETED and doc.result is not None:
        out["result"] = dict(doc.result)
    elif doc.status is TaskStatus.FAILED and doc.error is not None:
        out["error"] = dict(doc.error)
    elif doc.status is TaskStatus.INPUT_REQUIRED:
        out["inputRequests"] = dict(doc.input_requests)
    return out
