"""The MCP client: connect to a server, call its tools, answer its questions.

A :class:`Client` talks to one server over any transport (a spawned command's
stdio, Streamable HTTP, or memory) in either protocol era, and answers what
the server asks while a tool runs: ``sampling/createMessage`` through a
:class:`~bridge.providers.Provider`, ``elicitation/create`` through an
elicitation handler, ``roots/list`` from a fixed list. It declares only the
capabilities it really has: ``sampling`` (with ``tools``) when it has a model,
``elicitation`` when it has a handler, ``roots`` when it has roots.

Eras: ``"auto"`` probes ``server/discover`` and uses 2026-07-28 when the server
speaks it, else the ``initialize`` handshake (2025-11-25) when the server says
it does not know the probe; a probe with no reply within ``connect_timeout``
fails (:mod:`bridge.client.handshake` has the rules). Every handshake request
is bounded by ``connect_timeout``, so a server that never answers is an error,
not a hang. In 2025-11-25 the
server asks mid-call; in 2026-07-28 a call returns ``input_required`` and the
client answers and retries (echoing ``requestState`` byte for byte, with a new
request id) until the result is complete.

Progress and log notifications reach the caller through ``on_progress`` (per
call) and ``on_log``.

Arguments nested deeper than a server can read (:data:`ARGUMENTS_DEPTH`) are
refused before they are sent: the server could not say which request it
could not read.

Tasks (2026-07-28 tasks extension): ``call_tool(task=True)`` follows the task
the server makes, telling ``on_task_created`` its id as soon as the server
has stored it; :meth:`Client.get_task`, :meth:`Client.follow_task` and
:meth:`Client.cancel_task` read, follow (answering its questions) and cancel
any task by its id, one this client did not start too. Following asks again
while the server cannot be reached (:mod:`bridge.client.tasks`).
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import logging
import shlex
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, cast, final

import trio

from bridge import telemetry
from bridge.jsonrpc.session import Session, Transport
from bridge.transports.framing import MAX_MESSAGE
from decoders import mcp as mcp_decode
from runtime.errors import (
    CapabilityError,
    LocalProtocolError,
    RemoteProtocolError,
)
from runtime.lowlevel import MAX_MESSAGE_DEPTH, nested_too_deep, nesting
from runtime.replies import Root

from ._rounds import gather_server_models, retry_params, with_server_models
from .answers import MAX_QUESTIONS, MODERN, Answers
from .answers import ElicitationHandler as ElicitationHandler
from .answers import LogCallback as LogCallback
from .answers import ProgressCallback as ProgressCallback
from .answers import Sampler as Sampler
from .handshake import Era as Era
from .handshake import Hello, checked_era, negotiate
from .headers import invalid_header_reason
from .oauth.config import OAuth
from .output_schemas import OutputSchemas
from .pages import MAX_LISTING, pages
from .tasks import (
    INTERNAL_PATIENCE,
    MAX_ROUNDS,
    TASKS_EXTENSION,
    StatusCallback,
    TaskInfo,
    UnreachableCallback,
    follow,
    follow_id,
    task_info,
    with_tasks,
)

__all__ = [
    "Client",
    "connect",
    "server_target",
    "ElicitationHandler",
    "LogCallback",
    "ProgressCallback",
    "Sampler",
]

log = logging.getLogger("yieldmcp.client")

PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
ARGUMENTS_DEPTH: Final = MAX_MESSAGE_DEPTH - 2
"""Levels a call's ``arguments`` may nest, the object itself the first: they
travel two levels down in a ``tools/call`` message (``params.arguments``)."""
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"


def _kind(result: Any) -> Any:
    """A 2026 result's ``resultType``: ``input_required`` (interim), ``task``
    (the tasks extension), else complete (also when missing)."""
    return (
        cast(dict[str, Any], result).get("resultType")
        if isinstance(result, dict)
        else None
    )


TaskCreatedCallback = Callable[[str], "Awaitable[None] | None"]
"""Told a task's id once the server has stored it (``call_tool(task=True)``)."""

telemetry.install()  # sessions get a tap when OpenTelemetry is configured


@final
class Client:
    """One connection to an MCP server. Build it with :meth:`connect`.

    Args:
        sampler: answers sampling (a provider); ``None`` declares no sampling.
        elicitation: answers elicitation; ``None`` declares no elicitation.
        roots: the roots to expose; ``None`` declares no roots.
        on_log: called with (level, data, logger) for server log messages.
        log_level: the minimum level to ask the server for.
        client_info: this client's ``clientInfo``.
        max_rounds: cap on 2026-07-28 ``input_required`` rounds per call,
            and on rounds of questions answered for a followed task.
        max_questions: cap on the questions (``inputRequests``) of one such
            round: a server asking more gets none answered.
        connect_timeout: seconds each handshake request may wait for its
            reply (``server/discover``, ``initialize``); ``None``: no limit.
        validate_output: check each result's ``structuredContent`` against
            the tool's ``outputSchema`` (:mod:`bridge.client.output_schemas`).
        max_listing: characters of JSON one paginated list (``tools/list``,
            ...) may take over all its pages (:mod:`bridge.client.pages`).
        internal_patience: seconds in a row a followed task's server may
            answer ``-32603`` (its store away a while) and be asked again
            before the error is raised (:mod:`bridge.client.tasks`); 0: not
            asked again.

    Raises:
        ValueError: ``internal_patience`` is negative or not a number.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        sampler: Sampler | None = None,
        elicitation: ElicitationHandler | None = None,
        roots: Sequence[Root] | None = None,
        on_log: LogCallback | None = None,
        log_level: str | None = "info",
        client_info: Mapping[str, Any] | None = None,
        max_rounds: int = MAX_ROUNDS,
        max_questions: int = MAX_QUESTIONS,
        connect_timeout: float | None = 10.0,
        validate_output: bool = True,
        max_listing: int = MAX_LISTING,
        internal_patience: float = INTERNAL_PATIENCE,
    ) -> None:
        if not internal_patience >= 0:  # NaN too
            raise ValueError(
                f"internal_patience must be seconds >= 0, not {internal_patience!r}"
            )
        self.internal_patience = internal_patience
        self.answers = Answers(
            sampler=sampler,
            elicitation=elicitation,
            roots=roots,
            on_log=on_log,
            max_questions=max_questions,
        )
        self.max_listing = max_listing
        self.outputs = OutputSchemas(max_listing) if validate_output else None
        if self.outputs is not None:
            self.answers.on_tools_changed = self.outputs.forget
        # Our calls wait: a reply it cannot match fails them, not hangs them.
        self.session = Session(transport, self.answers, fail_unmatched=True)
        self.log_level = log_level
        self.client_info = dict(client_info or {"name": "yieldmcp", "version": "0"})
        self.max_rounds = max_rounds
        self.connect_timeout = connect_timeout
        self._gone = trio.Event()  # set when the session has ended
        self.era: str | None = None
        self.server_info: Mapping[str, Any] = {}
        self.server_capabilities: Mapping[str, Any] = {}
        self.instructions: str | None = None
        self._tokens = itertools.count(1)

    # --- connecting ------------------------------------------------------------------

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls, transport: Transport, *, era: Era = "auto", **options: Any
    ) -> AsyncGenerator[Client]:
        """Open a client over ``transport`` and negotiate the era.

        Raises:
            ValueError: ``era`` names no era (:func:`checked_era`).
            PeerError: the server refused the handshake.
            BrokenSessionError: the connection ended first.
        """
        era = checked_era(era)
        client = cls(transport, **options)
        failure: Exception | None = None
        async with trio.open_nursery() as nursery:
            await nursery.start(client._run_session)
            try:
                await client._negotiate(era)
                yield client
            except Exception as exc:
                # Raised by the caller's block (or the handshake): re-raise it
                # as itself, not wrapped in the nursery's ExceptionGroup.
                failure = exc
            finally:
                nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure

    async def _run_session(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            await self.session.run(task_status=task_status)
        finally:
            self._gone.set()

    @property
    def capabilities(self) -> dict[str, Any]:
        """What this client can answer, as MCP client capabilities."""
        return self.answers.capabilities

    async def _negotiate(self, era: Era) -> None:
        hello = Hello(
            envelope=self._envelope(),
            capabilities=self.capabilities,
            client_info=self.client_info,
            log_level=self.log_level,
            timeout=self.connect_timeout,
        )
        negotiated = await negotiate(self.session, era, hello)
        self.era = negotiated.era
        self.server_capabilities = negotiated.capabilities
        self.server_info = negotiated.server_info
        self.instructions = negotiated.instructions

    @property
    def modern(self) -> bool:
        return self.era == MODERN

    def _envelope(self, **extra: Any) -> dict[str, Any]:
        meta: dict[str, Any] = {
            PROTOCOL_VERSION: MODERN,
            CLIENT_CAPABILITIES: self.capabilities,
            CLIENT_INFO: self.client_info,
        }
        if self.log_level is not None:
            meta[LOG_LEVEL] = self.log_level
        meta.update(extra)
        return meta

    # --- requests --------------------------------------------------------------------

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None
    ) -> Any:
        """Send ``method`` with ``params`` (adding the 2026 envelope when modern)."""
        body = dict(params or {})
        if self.modern:
            meta = dict(body.get("_meta") or {})
            body["_meta"] = {**self._envelope(), **meta}
        return await self.session.request(method, body)

    async def list_tools(self) -> list[dict[str, Any]]:
        """The server's tools, from every page of ``tools/list``
        (:func:`~.pages.pages`). In 2026-07-28, a tool whose
        ``x-mcp-header`` annotations are invalid is left out (the spec says
        clients MUST), and in either era an item that is not an object."""
        tools: list[Any] = []
        async for page, last in pages(
            self.request, "tools/list", "tools", max_listing=self.max_listing
        ):
            tools += page
            if self.outputs is not None:
                self.outputs.learn(page, complete=last)
        return [tool for tool in tools if not self._unusable(tool)]

    async def list_all(self, method: str, key: str) -> list[Any]:
        """Every item of a paginated list (``resources/list`` and
        ``resources``, ``prompts/list`` and ``prompts``, ...), read as
        :func:`~.pages.pages` reads it."""
        return [
            item
            async for page, _last in pages(
                self.request, method, key, max_listing=self.max_listing
            )
            for item in page
        ]

    def _unusable(self, tool: Any) -> bool:
        if not isinstance(tool, dict):
            log.warning("leaving out a tool that is not a JSON object: %.80r", tool)
            return True
        if not self.modern:
            return False
        entry = cast(dict[str, Any], tool)
        reason = invalid_header_reason(entry.get("inputSchema"))
        if reason is not None:
            log.warning("leaving out tool %r: %s", entry.get("name"), reason)
        return reason is not None

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        task: bool = False,
        on_status: StatusCallback | None = None,
        on_task_created: TaskCreatedCallback | None = None,
        on_unreachable: UnreachableCallback | None = None,
    ) -> mcp_decode.ToolCallResult:
        """Call tool ``name``; answers the server's questions until it completes.
        ``task``: in 2026-07-28, declare the tasks extension for the call, and
        follow the task the server may make (:mod:`bridge.client.tasks`:
        ``on_task_created`` is told its id once the server has stored it,
        ``on_status`` its status, ``on_unreachable`` each time the server
        cannot be reached and is asked again; cancelling the call cancels it).

        Raises:
            PeerError: the server answered with a JSON-RPC error.
            RemoteProtocolError: the result is malformed, its
                ``structuredContent`` breaks the tool's ``outputSchema``, or
                2026 rounds ran out.
            BrokenSessionError: the server went away (e.g. its process exited).
            LocalProtocolError: ``arguments`` nest deeper than
                :data:`ARGUMENTS_DEPTH`: the server could not read the call,
                nor say which request it could not read; it is not sent.
        """
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if nesting(params["arguments"], ARGUMENTS_DEPTH + 1) > ARGUMENTS_DEPTH:
            raise LocalProtocolError(
                nested_too_deep(f"the arguments of tool {name!r}", ARGUMENTS_DEPTH)
            )
        if self.outputs is not None:
            await self.outputs.fetch(name, self.request)
        if task and self.modern:
            params["_meta"] = {CLIENT_CAPABILITIES: with_tasks(self.capabilities)}
        result: Any = await self._until_complete("tools/call", params, on_progress)
        if _kind(result) == "task":
            task_id: Any = result.get("taskId")
            if on_task_created is not None and isinstance(task_id, str):
                told = on_task_created(task_id)
                if inspect.isawaitable(told):
                    await told
            result = await follow(
                self._task_request, self.answers, result, gone=self._gone,
                on_status=on_status, on_unreachable=on_unreachable,
                max_rounds=self.max_rounds,
                internal_patience=self.internal_patience,
            )  # fmt: skip
        decoded = mcp_decode.call_tool_result(result)
        if self.outputs is not None:
            await self.outputs.check_again(name, decoded, self.request)
        return decoded

    async def _task_request(self, method: str, params: Mapping[str, Any]) -> Any:
        meta = {CLIENT_CAPABILITIES: with_tasks(self.capabilities)}
        return await self.request(method, {**params, "_meta": meta})

    # --- tasks by id ---------------------------------------------------------------

    def _check_tasks(self) -> None:
        if not self.modern:
            raise CapabilityError(
                f"tasks need the 2026-07-28 era; this connection speaks {self.era}",
                required={"extensions": {TASKS_EXTENSION: {}}},
            )

    async def get_task(self, task_id: str) -> TaskInfo:
        """Task ``task_id`` as the server has it now (``tasks/get``).

        Raises:
            CapabilityError: the connection is not 2026-07-28.
            PeerError: the server refused (``-32602``: it does not know the task).
        """
        self._check_tasks()
        return task_info(
            task_id, await self._task_request("tasks/get", {"taskId": task_id})
        )

    async def follow_task(
        self,
        task_id: str,
        *,
        on_status: StatusCallback | None = None,
        on_unreachable: UnreachableCallback | None = None,
        cancel_on_exit: bool = False,
    ) -> mcp_decode.ToolCallResult:
        """Follow task ``task_id`` to its end, answering its questions as a
        call does (this client's sampler and elicitation handler), and return
        its result. It may be a task this client did not start. Leaving early
        (a cancelled caller) leaves the task running, unless
        ``cancel_on_exit``. The result is not checked against an
        ``outputSchema``: a task does not say which tool it runs.

        Raises:
            CapabilityError: the connection is not 2026-07-28.
            PeerError: the task failed (its error), or the server refused
                (``-32602``: it does not know the task).
            TaskCancelled: the task was cancelled.
            BrokenSessionError: the server could not be reached for the
                task's TTL, or the connection ended for good.
        """
        self._check_tasks()
        result = await follow_id(
            self._task_request, self.answers, task_id, gone=self._gone,
            on_status=on_status, on_unreachable=on_unreachable,
            cancel_on_exit=cancel_on_exit, max_rounds=self.max_rounds,
            internal_patience=self.internal_patience,
        )  # fmt: skip
        return mcp_decode.call_tool_result(result)

    async def cancel_task(self, task_id: str) -> TaskInfo:
        """Cancel task ``task_id`` (``tasks/cancel``) and return it as it is
        then: ``cancelled``, or as it ended if it had ended already.

        Raises:
            CapabilityError: the connection is not 2026-07-28.
            PeerError: the server refused (``-32602``: it does not know the task).
        """
        self._check_tasks()
        await self._task_request("tasks/cancel", {"taskId": task_id})
        return await self.get_task(task_id)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> Any:
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        return await self._until_complete("prompts/get", params, None)

    async def _until_complete(
        self, method: str, params: dict[str, Any], on_progress: ProgressCallback | None
    ) -> Any:
        token: str | None = None
        if on_progress is not None:
            token = f"p{next(self._tokens)}"
            params["_meta"] = {**params.get("_meta", {}), "progressToken": token}  # pyright: ignore[reportUnknownArgumentType]
            self.answers.progress[token] = on_progress
        try:
            with telemetry.rounds_span(method, params, self.modern) as rounds:
                named: tuple[str, ...] = ()  # the server's models, every round
                for count in range(1, self.max_rounds + 1):
                    rounds(count)  # every round's request is a child of one span
                    result: Any = await self.request(method, params)
                    named = gather_server_models(named, result)
                    if _kind(result) != "input_required":
                        return with_server_models(result, named)
                    params = await retry_params(
                        self.answers,
                        params,
                        cast(dict[str, Any], result),
                        gone=self._gone,
                    )
            raise RemoteProtocolError(
                f"{method} still needed input after {self.max_rounds} rounds"
            )
        finally:
            if token is not None:
                self.answers.progress.pop(token, None)


def server_target(target: str | Sequence[str]) -> str | list[str]:
    """What :func:`connect` reaches for ``target``: an ``http(s)://`` URL as
    is, once it names a host (and a port up to 65535), or a command's
    arguments (one string is split like a shell would).

    Raises:
        ValueError: one line: a URL that names no usable host or port, or a
            command that is empty or cannot be split (an unclosed quote).
    """
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        import httpx

        try:
            url = httpx.URL(target)
            port = url.port
        except (httpx.InvalidURL, ValueError) as exc:
            raise ValueError(f"not a URL: {target!r}: {exc}") from None
        if not url.host or "%" in url.host:
            raise ValueError(f"not a URL: {target!r} names no host")
        if port is not None and not 0 < port <= 65535:
            raise ValueError(f"not a URL: {target!r}: port {port} is not 1-65535")
        return target
    try:
        argv = shlex.split(target) if isinstance(target, str) else list(target)
    except ValueError as exc:  # an unclosed quote
        raise ValueError(f"cannot split the server command {target!r}: {exc}") from None
    if not argv:
        raise ValueError(
            "the server command is empty: give a command to run, or an http(s):// URL"
        )
    return argv


@contextlib.asynccontextmanager
async def connect(
    target: str | Sequence[str],
    *,
    era: Era = "auto",
    cwd: str | None = None,
    auth: OAuth | None = None,
    max_message: int = MAX_MESSAGE,
    **options: Any,
) -> AsyncGenerator[Client]:
    """A client for ``target``: an ``http(s)://`` URL, or a server command.

    A command is a list of arguments, or one string split like a shell would.
    ``auth`` authorizes with the URL's OAuth authorization server when it
    asks (:class:`~bridge.client.oauth.OAuth`); a spawned server gets its
    credentials from its environment instead. ``max_message`` bounds what
    one message from the server may take, in bytes: an HTTP answer's body,
    an SSE event or a stdio line. ``options`` go to :meth:`Client.connect`.

    Raises:
        ValueError: ``target`` is not a usable URL or command
            (:func:`server_target`), or ``era`` names no era, before
            anything is started.
    """
    era = checked_era(era)
    target = server_target(target)
    if isinstance(target, str):
        from .http import http_transport
        from .oauth.flow import oauth_session

        async with contextlib.AsyncExitStack() as stack:
            session = None
            if auth is not None:
                session = await stack.enter_async_context(oauth_session(auth, target))
            transport = await stack.enter_async_context(
                http_transport(target, auth=session, max_message=max_message)
            )
            yield await stack.enter_async_context(
                Client.connect(transport, era=era, **options)
            )
        return
    if auth is not None:
        raise ValueError("auth is for http(s) servers; a command gets its own")
    from .process import spawn

    async with (
        spawn(target, cwd=cwd, max_message=max_message) as (transport, _process),
        Client.connect(transport, era=era, **options) as client,
    ):
        yield client
