"""What a server offers its clients, and the settings it answers them under.

:class:`Offer` holds the tools, resources, resource templates and prompts, who
listens for changes to those lists, the ``serverInfo`` and capabilities, and
the settings every request is answered under (timeouts, the ``requestState``
sealer, the access-token checks of its HTTP endpoint: ``auth``). It is
everything a request handler reads; how connections are served is
:class:`~bridge.server.server.Server`'s, which extends it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import trio

from bridge import __version__
from bridge.durable import AsyncStore, JournalStore, StoreError
from bridge.durable.keys import store_state_key
from runtime import Tool
from runtime.errors import InvalidTool
from runtime.lowlevel import unsendable

from .catalog import Prompt, Resource, ResourceTemplate
from .changes import Change, ListKind, ResourceUpdated
from .limits import CallSlots, ServerLimits, StepThreads
from .state_token import KEY_ENV, Sealer, decode_key, new_key

if TYPE_CHECKING:
    from .auth.config import Auth
    from .fallback import Sampler

__all__ = [
    "DEFAULT_ELICITATION_TIMEOUT",
    "DEFAULT_SAMPLING_TIMEOUT",
    "ListKind",
    "Offer",
]


DEFAULT_SAMPLING_TIMEOUT = 60.0
"""Seconds a tool waits for the client's sampling answer by default."""
DEFAULT_ELICITATION_TIMEOUT = 600.0
"""Seconds a tool waits for an elicitation answer by default: a person answers."""


class Offer:
    """What a server offers, and the settings every request is answered under.

    :class:`~bridge.server.Server` is the public face; this base holds what its
    request handlers read, so that they need not know how connections are
    served.
    """

    def __init__(
        self,
        items: Iterable[Any] = (),
        *,
        name: str = "yieldmcp",
        version: str | None = None,
        title: str | None = None,
        instructions: str | None = None,
        sampling_timeout: float | None = DEFAULT_SAMPLING_TIMEOUT,
        elicitation_timeout: float | None = DEFAULT_ELICITATION_TIMEOUT,
        state_keys: Sequence[bytes] | None = None,
        state_ttl: float = 600.0,
        auth: Auth | None = None,
        limits: ServerLimits | None = None,
        debug: bool = False,
        sampler: Sampler | None = None,
        sample_always: bool = False,
        store: JournalStore | None = None,
    ) -> None:
        self.name = name
        self.auth = auth
        self.version = version or __version__
        self.title = title
        found = None if instructions is None else unsendable(instructions)
        if found is not None:  # initialize could not be answered at all
            raise InvalidTool(f"the server's instructions: {found.describe()}")
        self.instructions = instructions
        self.sampling_timeout = sampling_timeout
        self.elicitation_timeout = elicitation_timeout
        self.sealer = Sealer(state_keys, ttl=state_ttl)
        self.limits = limits or ServerLimits()
        self.calls = CallSlots(self.limits)
        # Sync steps of every call share these threads (trio's own default
        # limiter would be shared with everything else in the process).
        self.step_threads = StepThreads(
            self.limits.step_threads, self.limits.caller_step_threads
        )
        self.debug = debug
        self.sampler = sampler
        self.sample_always = sample_always
        self.store: AsyncStore | None = None
        if store is not None:
            self.set_store(store)
        self.tools: dict[str, Tool[Any, Any]] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: list[ResourceTemplate] = []
        self.prompts: dict[str, Prompt] = {}
        self._listeners: set[trio.MemorySendChannel[Change]] = set()
        # The tasks extension's state (bridge.server.tasks.tasks_of), and the
        # nursery of the server's run scope (Server.running).
        self.tasks: Any = None
        self.run_nursery: trio.Nursery | None = None
        self.add(*items)

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in the server's run scope: background work that
        outlives a request (a task's runner), cancelled when the server stops.

        Raises:
            RuntimeError: the server is not running: serve it
                (``Server.serve``, ``serve_http``) or enter
                ``Server.running()`` around the code that uses it.
        """
        if self.run_nursery is None:
            raise RuntimeError(
                "the server is not running: serve it, or enter "
                "`async with server.running():` first"
            )
        self.run_nursery.start_soon(fn, *args)

    def set_limits(self, limits: ServerLimits) -> None:
        """Serve under ``limits`` from now on (calls in flight stay counted)."""
        in_flight = self.calls.in_flight
        self.limits = limits
        self.calls = CallSlots(limits)
        self.calls.in_flight = in_flight
        self.step_threads.resize(limits.step_threads, limits.caller_step_threads)
        if self.store is not None:
            self.store.timeout = limits.store_timeout

    def set_store(self, store: JournalStore | None) -> None:
        """Keep calls, tasks and sessions in ``store`` (None: in memory only).

        Set it before serving: calls in flight keep the store they began with.
        """
        self.store = (
            None
            if store is None
            else AsyncStore(store, timeout=self.limits.store_timeout)
        )
        if store is not None and self.sealer.generated:
            # No key configured: a key of this process alone would make every
            # state it sealed invalid after a restart, the very case a store
            # is for. Share the store's key instead.
            try:
                shared = decode_key(store_state_key(store, new_key))
            except ValueError as exc:  # (decode_key names the variable)
                why = str(exc).removeprefix(f"{KEY_ENV}: ")
                raise StoreError(
                    f"the store's request-state key cannot be used ({why}): "
                    f"remove it (a new one is made), or set {KEY_ENV}"
                ) from None
            self.sealer = Sealer([shared], ttl=self.sealer.ttl, clock=self.sealer.clock)

    def add(self, *items: Any) -> None:
        """Offer tools, resources, resource templates and prompts.

        Listeners (see :meth:`listen`) hear which lists changed.
        """
        for item in items:
            _file(self, item)
            self._changed(_kind_of(item))

    def remove(self, *items: Any) -> None:
        """Stop offering these items; listeners hear which lists changed."""
        for item in items:
            match item:
                case Tool():
                    self.tools.pop(item.name, None)
                case Resource():
                    self.resources.pop(item.uri, None)
                case ResourceTemplate():
                    self.templates = [t for t in self.templates if t is not item]
                case Prompt():
                    self.prompts.pop(item.name, None)
                case _:
                    raise TypeError(f"cannot remove {item!r}")
            self._changed(_kind_of(item))

    def replace(self, *items: Any) -> None:
        """Offer exactly ``items`` from now on, in place of what was offered
        (a reloaded file's new definitions: ``serve --reload``).

        All or nothing: two tools of one name leave the offer as it was. Each
        list that had or has an item is announced once. Calls in flight keep
        the tool they started with.

        Raises:
            InvalidTool: two tools share a name.
            ValueError: two resources or prompts share a name.
            TypeError: an item is not a tool, resource, template or prompt.
        """
        fresh = _Listing()
        for item in items:
            fresh.file(item)
        kinds = {
            kind
            for kind, before, after in (
                ("tools", self.tools, fresh.tools),
                ("resources", [*self.resources, *self.templates],
                 [*fresh.resources, *fresh.templates]),
                ("prompts", self.prompts, fresh.prompts),
            )
            if before or after
        }  # fmt: skip
        self.tools = fresh.tools
        self.resources = fresh.resources
        self.templates = fresh.templates
        self.prompts = fresh.prompts
        for kind in ("tools", "resources", "prompts"):
            if kind in kinds:
                self._changed(kind)

    def notify_resource_updated(self, uri: str) -> None:
        """Announce that the resource at ``uri`` changed: every client
        subscribed to it (``resources/subscribe`` in 2025-11-25,
        ``resourceSubscriptions`` of ``subscriptions/listen`` in 2026-07-28) is
        sent ``notifications/resources/updated``, on stdio and HTTP.

        Call it from the server's trio thread (a tool, a task beside
        ``serve``); delivery is best effort, as the spec allows.
        """
        self._changed(ResourceUpdated(uri))

    @contextlib.contextmanager
    def listen(self) -> Generator[trio.MemoryReceiveChannel[Change]]:
        """Within the block, a channel of changes: a list (``"tools"``, ...)
        or a resource (:class:`~bridge.server.changes.ResourceUpdated`).

        Changes are dropped, not queued without bound, for a listener that has
        fallen 64 behind.
        """
        send, receive = trio.open_memory_channel[Change](64)
        self._listeners.add(send)
        try:
            yield receive
        finally:
            self._listeners.discard(send)
            send.close()

    def _changed(self, kind: Change) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
                listener.send_nowait(kind)

    def server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        return info

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {"logging": {}, "completions": {}}
        caps["tools"] = {"listChanged": True}
        caps["resources"] = {"subscribe": True, "listChanged": True}
        caps["prompts"] = {"listChanged": True}
        return caps


class _Listing:
    """What a server offers, before it is offered (:meth:`Offer.replace`)."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool[Any, Any]] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: list[ResourceTemplate] = []
        self.prompts: dict[str, Prompt] = {}

    def file(self, item: Any) -> None:
        _file(self, item)


def _file(listing: Offer | _Listing, item: Any) -> None:
    """Add ``item`` to the table of its kind; names are unique per kind."""
    match item:
        case Tool():
            _unique(listing.tools, item.name, "tool")[item.name] = item
        case Resource():
            _unique(listing.resources, item.uri, "resource")[item.uri] = item
        case ResourceTemplate():
            listing.templates.append(item)
        case Prompt():
            _unique(listing.prompts, item.name, "prompt")[item.name] = item
        case _:
            raise TypeError(
                f"a Server offers Tool, Resource, ResourceTemplate and Prompt "
                f"values, got {item!r}"
            )


def _unique(table: dict[str, Any], key: str, kind: str) -> dict[str, Any]:
    if key in table and kind == "tool":
        raise InvalidTool(
            f"two tools are named {key!r}: a server offers one tool per name "
            f"(give one another with @tool(name=...))"
        )
    if key in table:
        raise ValueError(f"two {kind}s are named {key!r}")
    return table


def _kind_of(item: Any) -> ListKind:
    if isinstance(item, Tool):
        return "tools"
    return "prompts" if isinstance(item, Prompt) else "resources"
