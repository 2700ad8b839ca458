"""``yieldmcp call --trace``: the picture of a call, from the wire it sees.

:class:`WireRecorder` makes a session tap (:mod:`bridge.jsonrpc.tap`) that
fills a :class:`~runtime.picture.Timeline` with what crossed the wire, as it
crossed it: each question the server asked (a 2025-11-25 request, or a
2026-07-28 ``inputRequests`` entry) is a bar from the moment it arrived to
the moment our answer left, showing both messages' params; each log or
progress notification is an instant bar.

A picture keeps at most ``max_notices`` log and progress notices (2,000 by
default; ``call --trace-max-notices``): a server that logs without end would
otherwise grow the client, and the page, without bound. The last notice kept
says that later ones are left out. Each notice is kept in part: the first
:data:`MAX_NOTICE_KEPT` characters of its JSON (a server's 4 MB log lines
made a 400 MB page). So is each question the server asked, and each
answer, and a picture draws at most :data:`MAX_QUESTIONS` questions: a
2026-07-28 server's rounds, each of up to 64 questions of 16 MiB, made a
600 MB page from 40 rounds, and 6,336 tiny questions each in lanes of its
own a page that took 20 s and 2 GB to open.

Lanes come from the effect key a yieldmcp server puts in ``_meta``
(``io.yieldmcp/effect``) when the client declares that experimental
capability, which the recorder does on ``initialize`` and on each 2026-07-28
request. Another server's questions all go in the root lane, as does a key
longer than :data:`MAX_KEY` characters or :data:`MAX_KEY_LEVELS` branches
deep: each enclosing branch is a lane of the page, so one crafted key of
32 KB drew 8,000 lanes (27 s and 1.3 GB to write the page, after the call
and outside ``--timeout``). Replays never
cross the wire, so nothing here is dimmed.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Generator, Mapping
from typing import Any, Final, cast, final

from bridge.elicit import cut
from bridge.jsonrpc.messages import (
    ErrorResponse,
    Notification,
    Request,
    RequestId,
    Response,
)
from bridge.telemetry.attributes import EFFECT_META
from runtime.picture import Bar, Timeline

__all__ = [
    "MAX_KEY",
    "MAX_KEY_LEVELS",
    "MAX_NOTICE_KEPT",
    "MAX_QUESTIONS",
    "WireRecorder",
]

_KINDS = {
    "sampling/createMessage": "sample",
    "elicitation/create": "elicit",
    "roots/list": "list_roots",
}
_NOTICES = {"notifications/message": "log", "notifications/progress": "progress"}
_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
MAX_NOTICES: Final = 2000
"""Log and progress notices a picture keeps (see the module's doc)."""
MAX_NOTICE_KEPT: Final = 16384
"""Characters of one notice's params, a question's or an answer (as JSON)
a picture keeps."""
MAX_QUESTIONS: Final = 500
"""Questions a picture draws (a call's, every round's); later ones are left
out, and the last one drawn says so."""
MAX_KEY: Final = 512
"""Characters of an effect key from the wire that a picture draws as lanes."""
MAX_KEY_LEVELS: Final = 16
"""Branches an effect key from the wire may be nested in to be drawn so."""


def _drawable(key: str) -> bool:
    return len(key) <= MAX_KEY and key.count("/") <= MAX_KEY_LEVELS


def _kept(params: Any) -> Any:
    """A notice's params (a question's, an answer) as the picture keeps
    them: whole, or their JSON text cut at :data:`MAX_NOTICE_KEPT`
    characters, the rest counted."""
    text = json.dumps(params, ensure_ascii=False, default=str)
    if len(text) <= MAX_NOTICE_KEPT:
        return (
            dict(cast("Mapping[str, Any]", params))
            if isinstance(params, Mapping)
            else params
        )
    return {"cut": cut(text, MAX_NOTICE_KEPT)}


def _fields(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _kind(method: str, params: Mapping[str, Any]) -> str:
    kind = _KINDS.get(method, method)
    return "elicit_url" if kind == "elicit" and params.get("mode") == "url" else kind


def _with_capability(capabilities: Any) -> dict[str, Any]:
    declared = dict(_fields(capabilities))
    declared["experimental"] = {
        **_fields(declared.get("experimental")),
        EFFECT_META: {},
    }
    return declared


@final
class WireRecorder:
    """The timeline of one ``call``, and the taps that fill it."""

    def __init__(self, title: str, *, max_notices: int = MAX_NOTICES) -> None:
        self.timeline = Timeline(title, started=time.monotonic())
        self._numbers = itertools.count()
        self.max_notices = max_notices
        self.notices = 0  # log and progress notices heard
        self.questions = 0  # questions heard

    def factory(self, handler: object, transport: object) -> _WireTap:
        return _WireTap(self)

    def key(self, params: Mapping[str, Any], wire: str | None = None) -> str:
        """The effect key a question or notice carries, else one of its own
        in the root lane (``?3``); a 2026 ``inputRequests`` key names the
        branch after ``@``."""
        key = _fields(params.get("_meta")).get(EFFECT_META)
        if isinstance(key, str) and _drawable(key):
            return key
        if (
            wire is not None
            and "@" in wire
            and _drawable(found := wire.rpartition("@")[2])
        ):
            return found
        return f"?{next(self._numbers)}"

    def ask(self, key: str, method: str, params: Mapping[str, Any]) -> bool:
        """Draw a question (False: past :data:`MAX_QUESTIONS`, it is not)."""
        self.questions += 1
        if self.questions > MAX_QUESTIONS:
            return False
        kind = _kind(method, params)
        label = kind if key.startswith("?") else f"{kind} {key}"
        if self.questions == MAX_QUESTIONS:
            label = f"{label}: questions after this {MAX_QUESTIONS:,} are left out"
        bar = Bar(key, kind, label, time.monotonic(), question=_kept(params))
        self.timeline.open(bar)
        return True


@final
class _WireTap:
    """One session's traffic, into the recorder's timeline."""

    def __init__(self, recorder: WireRecorder) -> None:
        self._recorder = recorder
        self._asked: dict[RequestId, str] = {}  # server's request id -> key
        self._calls: set[RequestId] = set()  # our tools/call ids
        self._waiting: dict[str, str] = {}  # 2026 wire key -> effect key

    @contextlib.contextmanager
    def incoming(self, request: Request) -> Generator[object]:
        params = request.params or {}
        if request.method in _KINDS:
            key = self._recorder.key(params)
            if self._recorder.ask(key, request.method, params):
                self._asked[request.id] = key
        yield None

    def answered(
        self, request_id: RequestId, reply: Response | ErrorResponse | None
    ) -> None:
        key = self._asked.pop(request_id, None)
        if key is None:
            return
        now, timeline = time.monotonic(), self._recorder.timeline
        if isinstance(reply, Response):
            timeline.close(key, now, answer=_kept(reply.result))
        else:
            error = "cancelled" if reply is None else reply.error.message
            timeline.close(key, now, error=error)

    def outgoing(
        self, request_id: RequestId, method: str, params: Mapping[str, Any] | None
    ) -> Mapping[str, Any] | None:
        fields = dict(params or {})
        if method == "initialize":
            fields["capabilities"] = _with_capability(fields.get("capabilities"))
        meta = _fields(fields.get("_meta"))
        if _CAPABILITIES_META in meta:
            caps = _with_capability(meta[_CAPABILITIES_META])
            fields["_meta"] = {**meta, _CAPABILITIES_META: caps}
        if method in ("tools/call", "prompts/get"):
            if not self._calls and not self._recorder.timeline.bars:
                self._recorder.timeline.started = time.monotonic()  # the call's t0
            self._calls.add(request_id)
            answers = _fields(fields.get("inputResponses"))
            now = time.monotonic()
            for wire, answer in answers.items():
                key = self._waiting.pop(wire, None)
                if key is not None:
                    self._recorder.timeline.close(key, now, answer=_kept(answer))
        return fields

    def settled(
        self, request_id: RequestId, result: Any, error: BaseException | None
    ) -> None:
        if request_id not in self._calls:
            return
        self._calls.discard(request_id)
        fields = _fields(result)
        if error is None and fields.get("resultType") == "input_required":
            for wire, entry in _fields(fields.get("inputRequests")).items():
                item = _fields(entry)
                params = _fields(item.get("params"))
                key = self._recorder.key(params, wire)
                if self._recorder.ask(key, str(item.get("method")), params):
                    self._waiting[wire] = key
            return
        failure = None if error is None else str(error)
        if fields.get("isError") is True:
            failure = "the tool failed (isError)"
        self._recorder.timeline.finish(time.monotonic(), failure)

    def notified(self, notification: Notification) -> None:
        kind = _NOTICES.get(notification.method)
        if kind is None:
            return
        recorder = self._recorder
        recorder.notices += 1
        if recorder.notices > recorder.max_notices:
            return
        params = notification.params or {}
        key, now = recorder.key(params), time.monotonic()
        kept = _kept(params)
        if recorder.notices == recorder.max_notices:  # the last one kept
            label = f"notices after this {recorder.max_notices:,} are left out"
            bar = Bar(key, kind, label, now, now, question=kept)
        else:
            bar = Bar(key, kind, kind, now, now, question=kept)
        recorder.timeline.open(bar)

    def closed(self) -> None:
        pass
