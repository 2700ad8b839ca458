"""``yieldmcp dev FILE``: FILE's tools in a browser page, both sides in one process.

The page (plain HTML, JS and CSS in ``dev_page/``, served by this module: no
CDN, no build step) lists the tools, resources and prompts, makes a form per
tool from its ``inputSchema``, and runs it in either era. Each run is a
client (:class:`~bridge.client.Client`) connected to the served
:class:`~bridge.server.Server` over an in-memory transport pair, so the
server's side of the call runs here too: its stepper reports to a
:class:`~runtime.picture.Recorder` (``OBSERVING`` is set for the run's
connection), and the picture shows the server's own steps, timers and
branches, live, beside what crossed the client's wire (a session tap,
:class:`~bridge.cli.trace_record.WireRecorder`, on each run's client). The
tool's questions go to the page (elicitation forms; sampling answered by a
model picked in the page, or typed by hand), and so do logs, progress and the
result, over Server-Sent Events.

FILE is reloaded on change (:class:`~bridge.cli.reload.Reloader`) and the
page follows. The HTTP server is the project's own
(:mod:`bridge.transports.http.serving`): it already serves long-lived SSE
responses for MCP, and needs no other loop.

Security: 127.0.0.1 only; a one-time token from the printed URL is exchanged
(once) for an ``HttpOnly``, ``SameSite=Strict`` cookie holding another
secret, checked on every request, streams included (``hmac.compare_digest``).
Browsers send a host's cookies to every port of it, so everything is served
under a random path, the cookie's ``Path``: another server on 127.0.0.1 is
never sent the cookie, since it cannot know the path, and two ``dev`` pages
keep their own cookies;
Host and Origin must be this port on 127.0.0.1 or localhost; POST bodies must
be JSON; the page is served under a CSP with no inline script or style, and
builds its DOM with ``textContent`` only.

Chatty or long runs: a run keeps its last ``keep_logs`` log lines (``dev
--keep-logs``) and counts the earlier ones, and its picture the first
:data:`MAX_NOTICES` log and progress notices of each side, so what a run
holds is bounded. A change to a run costs the same however long the run: it
only marks the run changed for each page, and each page's stream sends the
runs it has not seen since its last event, at most every :data:`REFRESH`
seconds, latest first; a busy run is never serialised once per log line. A
large run is sent less often: after sending N bytes a stream waits N /
:data:`PACE` seconds times the pages open, so a run whose picture is a
megabyte, changing all the time, costs the server 2 MiB a second however
many pages show it, not ten times its size per page; at most
:data:`MAX_PAGES` pages are open at once.
The page shows the first 4,096 characters of one text (a log's data, a
result, a description), counts the rest, and offers the whole as a download.
"""

from __future__ import annotations

import collections
import contextlib
import hmac
import importlib.resources
import itertools
import json
import os
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any, Final, cast, final

import pydantic_core
import trio

from bridge.client import Client
from bridge.jsonrpc import tap
from bridge.jsonrpc.tap import Tap
from bridge.providers import OfflineModel, Provider, provider_from_spec
from bridge.server.server import Server
from bridge.transports.memory import memory_pair
from runtime.lowlevel import OBSERVING
from runtime.picture import Bar, Recorder, Timeline
from runtime.replies import ElicitReply, SampleReply
from runtime.requests import ElicitationRequest, SamplingRequest

from .reload import Reloader
from .serving import ListenError
from .trace_record import WireRecorder

__all__ = ["COOKIE", "DevApp", "serve_dev"]

COOKIE: Final = "yieldmcp_dev"
KEEPALIVE = 10.0
"""Seconds between SSE comments on a quiet stream (so proxies and the
server's write clock see it alive)."""
MAX_BODY = 1024 * 1024
"""Bytes a POST body may have by default: a tool's arguments, an answer
(``dev --max-body``)."""
MAX_RUNS = 50
"""Past runs the page keeps by default, the oldest forgotten first
(``dev --keep-calls``)."""
MAX_LOGS = 200
"""Log lines a run keeps by default, the last ones; the earlier are counted
(``dev --keep-logs``)."""
MAX_NOTICES: Final = 1000
"""Log and progress notices each side of a run's picture keeps: the first
ones; the last kept says that later ones are left out."""
REFRESH = 0.1
"""Seconds a page's stream waits after an event, so that the changes to a
busy run go out together."""
PACE: Final = 2 << 20
"""Bytes a second the pages' streams send together, at most, on average
(each waits longer than :data:`REFRESH` after sending more than a fifth of
this, shared among the pages open)."""
MAX_PAGES: Final = 8
"""Pages (event streams) open at once; one more is refused (503). Each holds
what it is sending, the whole state when it opens, until it is read."""

_ASSETS: Final = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/dev.js": ("dev.js", "text/javascript; charset=utf-8"),
    "/dev.css": ("dev.css", "text/css; charset=utf-8"),
}
_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


def _asset(name: str) -> bytes:
    return (importlib.resources.files("bridge.cli") / "dev_page" / name).read_bytes()


# --- one run of a tool ---------------------------------------------------------------


@final
class _Hearing:
    """What one page's stream has yet to send: which runs changed, and
    whether the listing did; each sent once, as it is when sent."""

    def __init__(self) -> None:
        self.listing = False
        self.runs: dict[int, None] = {}  # run numbers, in the order changed
        self._ready = trio.Event()

    def listing_changed(self) -> None:
        self.listing = True
        self._ready.set()

    def run_changed(self, number: int) -> None:
        self.runs[number] = None
        self._ready.set()

    async def wait(self) -> None:
        await self._ready.wait()

    def take(self) -> tuple[bool, list[int]]:
        taken = self.listing, list(self.runs)
        self.listing, self.runs, self._ready = False, {}, trio.Event()
        return taken


@final
class _Question:
    """A question of the tool's, waiting for the page's answer."""

    def __init__(self, number: int, kind: str, shown: dict[str, Any]) -> None:
        self.number = number
        self.kind = kind  # "elicit" or "sample"
        self.shown = shown
        self.answer: dict[str, Any] | None = None
        self.answered = trio.Event()


@final
class _Run:
    """One call of a tool from the page: its questions, logs and picture."""

    def __init__(
        self,
        number: int,
        tool: str,
        arguments: Any,
        era: str,
        keep_logs: int = MAX_LOGS,
    ) -> None:
        self.number = number
        self.tool = tool
        self.arguments = arguments
        self.era = era
        self.status = "running"
        self.questions: dict[int, _Question] = {}
        self.logs = collections.deque[dict[str, Any]](maxlen=keep_logs)
        self.logs_heard = 0
        self.progress: dict[str, Any] | None = None
        self.result: dict[str, Any] | None = None
        self.recorder = Recorder(tool)  # the server's side: its stepper
        # the client's side: what crossed the wire
        self.wire = WireRecorder(tool, max_notices=MAX_NOTICES)
        self.scope = trio.CancelScope()  # cancelled when the page drops the run

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.number,
            "tool": self.tool,
            "arguments": self.arguments,
            "era": self.era,
            "status": self.status,
            "questions": [
                {"id": q.number, "kind": q.kind, **q.shown}
                for q in self.questions.values()
                if q.answer is None
            ],
            "logs": list(self.logs),
            "logsLeftOut": self.logs_heard - len(self.logs),
            "progress": self.progress,
            "result": self.result,
            "picture": _picture(self.recorder.timeline, self.wire.timeline),
        }


def _picture(timeline: Timeline, wire: Timeline) -> dict[str, Any]:
    """The server's timeline and the client's wire, as the page draws them:
    offsets in milliseconds from the start of the run; the wire's bars in a
    lane of their own (``"client"``)."""
    t0 = min(timeline.started, wire.started)

    def ms(at: float | None) -> float | None:
        return None if at is None else round((at - t0) * 1000, 1)

    def bar(b: Bar, lane: str) -> dict[str, Any]:
        return {
            "key": b.key,
            "lane": lane,
            "kind": b.kind,
            "label": b.label,
            "start": ms(b.start),
            "end": ms(b.end),
            "replayed": b.replayed,
            "error": b.error,
        }

    return {
        "title": timeline.title,
        "ended": ms(timeline.ended),
        "error": timeline.error,
        "branches": dict(timeline.branches),
        "bars": [bar(b, b.lane) for b in timeline.bars],
        "wire": [bar(b, "client") for b in wire.bars],
    }


@final
class _LiveRecorder:
    """A :class:`Recorder` (an ``Observer``) that tells the page after each
    thing it records."""

    def __init__(
        self,
        recorder: Recorder,
        changed: Callable[[], None],
        max_notices: int = MAX_NOTICES,
    ) -> None:
        self._recorder = recorder
        self._changed = changed
        self.max_notices = max_notices
        self.notices = 0  # told: log and progress notices

    def began(self, call_id: str) -> None:
        self._recorder.began(call_id)

    def asked(self, key: str, question: Any) -> None:
        self._recorder.asked(key, question)
        self._changed()

    def replayed(self, key: str, question: Any, recorded: Any) -> None:
        self._recorder.replayed(key, question, recorded)
        self._changed()

    def answered(self, key: str, reply: Any) -> None:
        self._recorder.answered(key, reply)
        self._changed()

    def failed(self, key: str, error: BaseException) -> None:
        self._recorder.failed(key, error)
        self._changed()

    def withdrawn(self, key: str) -> None:
        self._recorder.withdrawn(key)
        self._changed()

    def told(self, key: str, notice: Any, fresh: bool) -> None:
        self.notices += 1
        if self.notices > self.max_notices:
            return  # a tool that logs without end grows no picture
        self._recorder.told(key, notice, fresh)
        if self.notices == self.max_notices:  # the last one kept
            bar = self._recorder.timeline.bars[-1]
            bar.label = f"notices after this {self.max_notices:,} are left out"
        self._changed()

    def branched(self, key: str, limits: Any, children: int) -> None:
        self._recorder.branched(key, limits, children)
        self._changed()

    def joined(self, key: str, error: BaseException | None) -> None:
        self._recorder.joined(key, error)

    def finished(self, outcome: Any) -> None:
        self._recorder.finished(outcome)
        self._changed()

    def performing(self, key: str) -> contextlib.AbstractContextManager[None]:
        return self._recorder.performing(key)


@final
class _PageElicitation:
    """Asks the page the tool's forms (an ``ElicitationHandler``)."""

    def __init__(self, app: DevApp, run: _Run) -> None:
        self.app, self.run = app, run

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        shown = {
            "message": request.message,
            "mode": request.mode,
            "schema": dict(request.requested_schema),
            "url": request.url,
        }
        answer = await self.app.ask(self.run, "elicit", shown)
        action = answer.get("action")
        if action not in ("accept", "decline", "cancel"):
            action = "cancel"
        content: Any = answer.get("content") if action == "accept" else None
        if request.mode == "url" or not isinstance(content, dict):
            content = None
        return ElicitReply(
            action=action, content=cast("dict[str, Any] | None", content)
        )


@final
class _PageSampler:
    """Asks the page how to answer a sample: a model it names, or typed text."""

    supports_tools = False

    def __init__(self, app: DevApp, run: _Run) -> None:
        self.app, self.run = app, run

    async def complete(self, request: SamplingRequest) -> SampleReply:
        shown = {
            "message": _sample_text(request),
            "models": list(self.app.models),
        }
        answer = await self.app.ask(self.run, "sample", shown)
        text = answer.get("text")
        if answer.get("action") == "text" and isinstance(text, str):
            return SampleReply(content=text, model="typed by hand")
        model = self.app.models.get(str(answer.get("model")))
        if model is None:
            model = next(iter(self.app.models.values()))
        return await model.complete(request)


def _sample_text(request: SamplingRequest) -> str:
    lines: list[str] = []
    if request.system_prompt:
        lines.append(f"system: {request.system_prompt}")
    for message in request.messages:
        text = "".join(getattr(b, "text", "") for b in message.content)
        lines.append(f"{message.role}: {text}")
    return "\n".join(lines)


# --- the HTTP app ---------------------------------------------------------------------


@final
class DevApp:
    """The page's ASGI app, and the runs it started."""

    def __init__(
        self,
        server: Server,
        *,
        token: str | None = None,
        models: Mapping[str, Provider] | None = None,
        keep_calls: int = MAX_RUNS,
        keep_logs: int = MAX_LOGS,
        max_body: int = MAX_BODY,
    ) -> None:
        self.server = server
        self.keep_calls = keep_calls
        self.keep_logs = keep_logs
        self.max_body = max_body
        self.token = token or secrets.token_urlsafe(32)
        self.port = 0  # set once listening; Host and Origin must name it
        self.exchanged = False  # the URL's token became a cookie: once only
        self.session = secrets.token_urlsafe(32)  # the cookie: never in a URL
        self.base = "/" + secrets.token_urlsafe(12)  # every path is under it
        self.models: dict[str, Provider] = dict(models or {"offline": OfflineModel()})
        self.runs: dict[int, _Run] = {}
        self.notices: list[str] = []
        self._numbers = itertools.count(1)
        self._hearings: set[_Hearing] = set()  # one per page's stream
        self._wires: dict[int, WireRecorder] = {}  # by id() of a client's transport
        self.nursery: trio.Nursery | None = None

    # --- what the page hears -----------------------------------------------------

    def listing(self) -> dict[str, Any]:
        server = self.server
        return {
            "type": "listing",
            "tools": [
                {
                    "name": t.name,
                    "description": t.description or "",
                    "inputSchema": t.input_schema,
                }
                for t in server.tools.values()
            ],
            "resources": [
                {"name": r.name or r.uri, "uri": r.uri, "description": r.description}
                for r in server.resources.values()
            ],
            "prompts": [
                {"name": p.name, "description": p.description}
                for p in server.prompts.values()
            ],
            "notices": self.notices[-5:],
        }

    def reloaded(self, line: str) -> None:
        print(f"yieldmcp: {line}", file=sys.stderr, flush=True)
        self.notices.append(line)
        for hearing in self._hearings:
            hearing.listing_changed()

    def tap(self, handler: object, transport: object) -> Tap | None:
        """A session's tap (:mod:`bridge.jsonrpc.tap`): the wire recorder of
        the run whose client speaks over ``transport``, else none."""
        wire = self._wires.get(id(transport))
        return None if wire is None else wire.factory(handler, transport)

    def _run_changed(self, run: _Run) -> None:
        # Called on every log line and effect: what it costs must not grow
        # with the run (the streams serialise the run, at most every REFRESH).
        for hearing in self._hearings:
            hearing.run_changed(run.number)

    @contextlib.contextmanager
    def _subscribed(self) -> Generator[_Hearing]:
        hearing = _Hearing()
        self._hearings.add(hearing)
        try:
            yield hearing
        finally:
            self._hearings.discard(hearing)

    # --- runs ------------------------------------------------------------------------

    async def ask(self, run: _Run, kind: str, shown: dict[str, Any]) -> dict[str, Any]:
        number = next(self._numbers)
        question = _Question(number, kind, shown)
        run.questions[number] = question
        self._run_changed(run)
        try:
            await question.answered.wait()
        finally:
            run.questions.pop(number, None)
            self._run_changed(run)
        return question.answer or {}

    def start_run(self, tool: str, arguments: Any, era: str) -> _Run:
        assert self.nursery is not None
        run = _Run(next(self._numbers), tool, arguments, era, self.keep_logs)
        self.runs[run.number] = run
        while len(self.runs) > self.keep_calls:
            # Dropped from the page, its questions could never be answered:
            # a run still waiting on one would wait, and hold, for ever.
            self.runs.pop(min(self.runs)).scope.cancel()
        self.nursery.start_soon(self._run_until_dropped, run)
        self._run_changed(run)
        return run

    async def _run_until_dropped(self, run: _Run) -> None:
        with run.scope:
            await self._run(run)

    async def _run(self, run: _Run) -> None:
        client_end, server_end = memory_pair()
        live = _LiveRecorder(run.recorder, lambda: self._run_changed(run))

        # The server's steppers of this run report to its recorder: both ends
        # of the pair run in tasks of this one (a frame is handled in the
        # sender's task), so they all see this context.
        OBSERVING.set(live)

        async def serve() -> None:
            await self.server.serve(server_end)

        async def on_log(level: str, data: Any, logger: str | None) -> None:
            run.logs.append({"level": level, "data": data, "logger": logger})
            run.logs_heard += 1
            self._run_changed(run)

        async def on_progress(
            progress: float, total: float | None, message: str | None
        ) -> None:
            run.progress = {"progress": progress, "total": total, "message": message}
            self._run_changed(run)

        era: Any = "2026-07-28" if run.era == "2026-07-28" else "legacy"
        self._wires[id(client_end)] = run.wire
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve)
                async with Client.connect(
                    client_end,
                    era=era,
                    sampler=_PageSampler(self, run),
                    elicitation=_PageElicitation(self, run),
                    on_log=on_log,
                    log_level="debug",
                ) as client:
                    result = await client.call_tool(
                        run.tool, run.arguments, on_progress=on_progress
                    )
                await client_end.aclose()
                nursery.cancel_scope.cancel()
            run.result = {
                "text": result.text,
                "structured": result.structured_content,
                "isError": result.is_error,
            }
            run.status = "failed" if result.is_error else "done"
        except Exception as exc:  # the page shows why; the dev server goes on
            run.status = "failed"
            run.result = {"text": f"{type(exc).__name__}: {exc}", "isError": True}
        finally:
            del self._wires[id(client_end)]
        run.wire.timeline.finish(time.monotonic())
        self._run_changed(run)

    # --- ASGI --------------------------------------------------------------------

    async def __call__(
        self, scope: dict[str, Any], receive: Receive, send: Send
    ) -> None:
        if scope["type"] != "http":
            return None
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1")
            for k, v in scope["headers"]
        }
        path: str = scope["path"]
        method: str = scope["method"]
        if not self._host_ok(headers):
            return await _plain(send, 421, "wrong Host or Origin")
        if not path.startswith(self.base + "/"):
            return await _plain(send, 404, "not found")
        path = path[len(self.base) :]
        query = scope.get("query_string", b"").decode("latin-1")
        offered = dict(p.partition("=")[::2] for p in query.split("&") if p)
        if path == "/" and "token" in offered:
            home = (self.base + "/").encode()
            if self._token_ok(headers):  # the cookie is set already
                return await _respond(send, 303, b"", [(b"location", home)])
            if self.exchanged or not _same(offered["token"], self.token):
                return await _plain(
                    send, 403, "this URL's token was used already, or is wrong"
                )
            self.exchanged = True
            # The token leaves the URL at once: from now on it is a cookie.
            cookie = (
                f"{COOKIE}={self.session}; HttpOnly; SameSite=Strict; Path={self.base}/"
            )
            return await _respond(
                send, 303, b"", [(b"location", home), (b"set-cookie", cookie.encode())]
            )
        if not self._token_ok(headers):
            return await _plain(send, 403, "open the URL yieldmcp dev printed")
        if method == "GET" and path in _ASSETS:
            name, kind = _ASSETS[path]
            return await _respond(
                send, 200, _asset(name), [(b"content-type", kind.encode())]
            )
        if method == "GET" and path == "/api/events":
            return await self._events(receive, send)
        if method == "GET" and path == "/api/state":
            return await _json(send, self._state())
        if method == "POST" and path in ("/api/run", "/api/answer"):
            if not headers.get("content-type", "").startswith("application/json"):
                return await _plain(send, 415, "send JSON")
            try:
                text = await _body(receive, self.max_body)
                body: Any = json.loads(text, parse_constant=_not_json)
            except (ValueError, _TooLarge):
                return await _plain(
                    send, 400, f"a JSON object of at most {self.max_body} bytes"
                )
            except RecursionError:  # "[[[[…" a hundred thousand deep
                return await _plain(send, 400, "a JSON object nested less deeply")
            if not isinstance(body, dict):
                return await _plain(send, 400, "a JSON object")
            fields = cast("dict[str, Any]", body)
            if path == "/api/run":
                return await self._post_run(send, fields)
            return await self._post_answer(send, fields)
        return await _plain(send, 404, "not found")

    def _host_ok(self, headers: Mapping[str, str]) -> bool:
        allowed = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        if headers.get("host") not in allowed:
            return False
        origin = headers.get("origin")
        return origin is None or origin in {f"http://{a}" for a in allowed}

    def _token_ok(self, headers: Mapping[str, str]) -> bool:
        offered = headers.get("x-yieldmcp-token")
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                offered = value
        return offered is not None and _same(offered, self.session)

    def _state(self) -> dict[str, Any]:
        return {
            "listing": self.listing(),
            "runs": [r.as_json() for r in self.runs.values()],
            "models": list(self.models),
        }

    async def _post_run(self, send: Send, body: dict[str, Any]) -> None:
        tool, arguments, era = (
            body.get("tool"),
            body.get("arguments", {}),
            body.get("era"),
        )
        if not isinstance(tool, str) or not isinstance(arguments, dict):
            return await _plain(send, 400, "tool (a string) and arguments (an object)")
        run = self.start_run(tool, arguments, str(era))
        return await _json(send, {"id": run.number})

    async def _post_answer(self, send: Send, body: dict[str, Any]) -> None:
        number = body.get("question")
        for run in self.runs.values():
            question = run.questions.get(number) if isinstance(number, int) else None
            if question is not None and question.answer is None:
                question.answer = body
                question.answered.set()
                return await _json(send, {"ok": True})
        return await _plain(send, 404, "no such question (answered already?)")

    async def _events(self, receive: Receive, send: Send) -> None:
        if len(self._hearings) >= MAX_PAGES:
            return await _plain(
                send, 503, f"{MAX_PAGES} pages are open already: close one"
            )
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        with self._subscribed() as hearing:
            async with trio.open_nursery() as nursery:

                async def until_gone() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    nursery.cancel_scope.cancel()

                nursery.start_soon(until_gone)
                await _event(send, {"type": "state", **self._state()})
                while True:
                    with trio.move_on_after(KEEPALIVE) as quiet:
                        await hearing.wait()
                    if quiet.cancelled_caught:
                        await send(
                            {
                                "type": "http.response.body",
                                "body": b": alive\n\n",
                                "more_body": True,
                            }
                        )
                        continue
                    listing, numbers = hearing.take()
                    sent = await _event(send, self.listing()) if listing else 0
                    for number in numbers:
                        run = self.runs.get(number)
                        if run is not None:  # (else the page forgot it)
                            event = {"type": "run", "run": run.as_json()}
                            sent += await _event(send, event)
                    # What changes meanwhile goes together; the pages share PACE.
                    await trio.sleep(max(REFRESH, sent * len(self._hearings) / PACE))


class _TooLarge(Exception):
    pass


def _same(offered: str, token: str) -> bool:
    return hmac.compare_digest(offered.encode(), token.encode())


async def _body(receive: Receive, limit: int) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        body.extend(message.get("body", b""))
        if len(body) > limit:
            raise _TooLarge
        if not message.get("more_body"):
            return bytes(body)


_SECURITY_HEADERS: Final = [
    (b"content-security-policy", _CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, *_SECURITY_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _plain(send: Send, status: int, text: str) -> None:
    await _respond(
        send, status, text.encode(), [(b"content-type", b"text/plain; charset=utf-8")]
    )


def _not_json(constant: str) -> Any:
    """NaN and Infinity, which Python's reader takes and the page's
    JSON.parse does not: echoed in a run's arguments, they broke its stream."""
    raise ValueError(f"{constant} is not JSON")


def _page_json(data: Any) -> bytes:
    """``data`` as JSON the page's ``JSON.parse`` reads: a NaN or an infinity
    (which Python's ``json`` writes bare) becomes the string ``"NaN"`` or
    ``"Infinity"``, and anything that is not JSON its ``repr``."""
    return pydantic_core.to_json(data, inf_nan_mode="strings", fallback=repr)


async def _json(send: Send, data: Any) -> None:
    body = _page_json(data)
    await _respond(send, 200, body, [(b"content-type", b"application/json")])


async def _event(send: Send, data: Any) -> int:
    """Send ``data`` as one event; the bytes it took."""
    body = b"data: " + _page_json(data) + b"\n\n"
    await send({"type": "http.response.body", "body": body, "more_body": True})
    return len(body)


# --- the command ---------------------------------------------------------------------


def models_from(specs: list[str]) -> dict[str, Provider]:
    """The page's models: the offline model, and each ``--model`` spec."""
    models: dict[str, Provider] = {"offline": OfflineModel()}
    for spec in specs:
        models[spec] = provider_from_spec(spec)
    return models


async def serve_dev(
    server: Server,
    target: str,
    port: int,
    models: Mapping[str, Provider],
    *,
    keep_calls: int = MAX_RUNS,
    keep_logs: int = MAX_LOGS,
    max_body: int = MAX_BODY,
    announce: Callable[[str], None] | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the dev page on 127.0.0.1:``port`` until cancelled; the URL with
    its token goes to ``announce`` (stderr) and ``task_status``."""
    from bridge.transports.http.serving import serve_app

    app = DevApp(
        server,
        models=models,
        keep_calls=keep_calls,
        keep_logs=keep_logs,
        max_body=max_body,
    )
    reloader = Reloader(server, target, report=app.reloaded)
    tap.install("dev-picture", app.tap)
    try:
        async with server.running(), trio.open_nursery() as nursery:
            app.nursery = nursery
            await nursery.start(reloader.watch)
            try:
                listener = await nursery.start(serve_app, app, "127.0.0.1", port)
            except* OSError as group:
                failure = cast(OSError, group.exceptions[0])
                why = os.strerror(failure.errno) if failure.errno else str(failure)
                raise ListenError(
                    f"cannot listen on 127.0.0.1:{port}: {why.lower()}"
                ) from None
            app.port = listener.port
            url = f"http://127.0.0.1:{app.port}{app.base}/?token={app.token}"
            (announce or _announce)(url)
            task_status.started(url)
    finally:
        tap.install("dev-picture", None)


def _announce(url: str) -> None:
    print(f"yieldmcp dev: open {url}", file=sys.stderr, flush=True)
    print(
        f"(started {time.strftime('%H:%M:%S')}; Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
