"""The ``outputSchema`` of each tool a client has seen, and the check of a
result's ``structuredContent`` against it.

The spec says a server MUST send structured results that conform to a tool's
``outputSchema``, and that clients SHOULD validate them; the TypeScript SDK's
client does. :class:`OutputSchemas` is the per-connection cache of those
schemas (from the last ``tools/list``: refreshed whenever the caller lists the
tools, dropped on ``notifications/tools/list_changed``, and read again for a
result that breaks one) and :meth:`check` says what is wrong with a result,
naming the field (:class:`InvalidStructuredContent`). Sans-IO: fetching the list
is the client's (:mod:`bridge.client.client`).

The server picks both the schema and the value, and the check runs on the
event loop, where no ``--timeout`` or Ctrl-C can end it: so only
jsonschema-rs checks, in time linear in the value (its ``pattern`` engine
needs no backtracking, or stops at a bound: a pattern that reaches it fails
the check, naming the field). Python's ``jsonschema`` is no fallback: its
``re`` took minutes on a 30-character string against ``^(a+)+$``. A schema
jsonschema-rs cannot compile (a ``$ref`` to a document elsewhere, which is
never fetched; a pattern that is not an ECMA-262 regex; an invalid schema)
checks nothing: the result is accepted, with a warning. A value that breaks
the schema somewhere nested too deep for jsonschema-rs to describe is
refused at ``<root>``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Final, cast, final

import attrs

from decoders.mcp import ToolCallResult
from runtime.errors import (
    PeerError,
    RemoteProtocolError,
    RequestError,
    RequestTimeout,
)

from .pages import MAX_LISTING, Request, pages

if TYPE_CHECKING:
    from jsonschema_rs import Validator

__all__ = [
    "InvalidStructuredContent",
    "OutputSchemas",
    "structured_problem",
]

log = logging.getLogger("yieldmcp.client")


class InvalidStructuredContent(RemoteProtocolError):
    """A tool's ``structuredContent`` breaks its ``outputSchema`` (or is
    missing although the tool declares one). ``tool`` names the tool,
    ``field`` the part of the value that is wrong (a ``/`` path; ``<root>``
    for the whole value, None when there is none)."""

    def __init__(self, message: str, *, tool: str, field: str | None) -> None:
        super().__init__(message)
        self.tool = tool
        self.field = field


@final
class OutputSchemas:
    """What one connection knows of its tools' output schemas."""

    def __init__(self, max_listing: int = MAX_LISTING) -> None:
        self.max_listing = max_listing  # what one tools/list may take (.pages)
        self._schemas: dict[str, Mapping[str, Any] | None] = {}
        # Each schema's validator, made at its first check (None: it cannot
        # be compiled, so it checks nothing; said once, when it was made).
        self._validators: dict[str, Validator | None] = {}
        self.complete = False  # every page of the last tools/list was seen

    def forget(self) -> None:
        """The server's tools changed: ask again before the next check."""
        self._schemas.clear()
        self._validators.clear()
        self.complete = False

    def learn(self, tools: Iterable[Any], *, complete: bool) -> None:
        """Keep the ``outputSchema`` of each tool in one page of ``tools/list``."""
        for tool in tools:
            if not isinstance(tool, dict):
                continue
            entry = cast(dict[str, Any], tool)
            name = entry.get("name")
            if isinstance(name, str):
                schema = entry.get("outputSchema")
                self._schemas[name] = (
                    cast(dict[str, Any], schema) if isinstance(schema, dict) else None
                )
                self._validators.pop(name, None)
        self.complete = self.complete or complete

    async def fetch(self, name: str, request: Request) -> None:
        """Read ``tools/list`` (following its pages) until tool ``name`` is
        known, unless it is already or the last full list lacked it. A list
        the server will not give leaves the tool unchecked. What an earlier,
        partial read learned is read again, so a server that lists new tools
        each time cannot make the client keep more than one list."""
        if name in self._schemas or self.complete:
            return
        self.forget()
        try:
            async with aclosing(
                pages(request, "tools/list", "tools", max_listing=self.max_listing)
            ) as listing:
                async for tools, last in listing:
                    self.learn(tools, complete=last)
                    if name in self._schemas:
                        break
        except (PeerError, RequestError, RequestTimeout) as exc:
            log.warning("cannot check %r's output: tools/list failed: %s", name, exc)

    async def check_again(
        self, name: str, result: ToolCallResult, request: Request
    ) -> None:
        """:meth:`check` ``result``; if it fails, read the tool's schema
        again and check once more. The tool may have changed since it was
        listed (a reloaded server), and a 2026-07-28 client hears no
        ``list_changed`` without a listen stream.

        Raises:
            InvalidStructuredContent: it breaks the schema read again.
        """
        try:
            self.check(name, result)
        except InvalidStructuredContent:
            self._schemas.pop(name, None)
            self._validators.pop(name, None)
            self.complete = False
            await self.fetch(name, request)
            self.check(name, result)

    def check(self, name: str, result: ToolCallResult) -> None:
        """Raise if ``result`` breaks tool ``name``'s ``outputSchema``.

        An error result (``isError``) is not checked, nor is a tool with no
        ``outputSchema`` or one the server never listed; nor, with a warning,
        one whose schema or value cannot be checked (see the module doc).

        Raises:
            InvalidStructuredContent: it does (the message names the field).
        """
        schema = self._schemas.get(name)
        if schema is None or result.is_error:
            return
        if result.structured_content is None:
            raise InvalidStructuredContent(
                f"tool {name!r} declares an outputSchema but sent no structuredContent",
                tool=name,
                field=None,
            )
        if name in self._validators:
            check = self._validators[name]
        else:
            check = self._validators[name] = _validator_of(schema, name)
        found = None if check is None else _problem(check, result.structured_content)
        if isinstance(found, _Unreadable):
            log.warning(
                "tool %r: the client cannot check this structuredContent "
                "against its outputSchema (%.160r); it is accepted unchecked",
                name,
                found.why,
            )
        elif found is not None:
            field, what = found
            raise InvalidStructuredContent(
                f"tool {name!r} sent structuredContent that does not match its "
                f"outputSchema: {field}: {what}",
                tool=name,
                field=field,
            )


def structured_problem(schema: Mapping[str, Any], value: Any) -> tuple[str, str] | None:
    """The field (a ``/`` path) and what is wrong with it, or None if
    ``value`` matches ``schema``, or if either cannot be checked (see the
    module doc: a schema that refers (``$ref``) to a document elsewhere,
    which is never fetched, checks nothing: the server's mistake is not the
    result's)."""
    check = _validator_of(schema, None)
    found = None if check is None else _problem(check, value)
    return None if isinstance(found, _Unreadable) else found


_TOO_DEEP: Final = "it breaks the schema somewhere nested too deep to name"


@final
@attrs.frozen
class _Unreadable:
    """A value the validator cannot read, and why."""

    why: str


def _problem(check: Validator, value: Any) -> tuple[str, str] | _Unreadable | None:
    """Where ``value`` breaks the schema, and how; None if it does not.

    jsonschema-rs decides, in time linear in the value: a server's
    ``pattern`` such as ``^(a+)+$``, or ``uniqueItems`` over thousands of
    objects, held Python's jsonschema for minutes, on the event loop."""
    try:
        first = next(iter(check.iter_errors(value)), None)
    except ValueError:  # an error it cannot describe: nested too deep to print
        try:
            valid = check.is_valid(value)
        except ValueError as exc:
            return _Unreadable(_first_line(exc))
        return None if valid else ("<root>", _TOO_DEEP)
    if first is None:
        return None
    where = "/".join(str(part) for part in first.instance_path)
    return where or "<root>", first.message


def _validator_of(schema: Mapping[str, Any], name: str | None) -> Validator | None:
    """The check of ``schema`` (tool ``name``'s), or None, with a warning,
    if jsonschema-rs cannot compile it."""
    # Imported by the first output schema checked, not by every client.
    from jsonschema_rs import validator_for

    try:
        return validator_for(dict(schema), validate_formats=False, offline=True)
    except ValueError as exc:  # invalid, a $ref it may not fetch, a pattern
        if name is not None:
            log.warning(
                "tool %r: the client cannot check results against its "
                "outputSchema (%.160r); they are accepted unchecked",
                name,
                _first_line(exc),
            )
        return None


def _first_line(exc: Exception) -> str:
    """jsonschema-rs's reason, without the schema and instance it adds."""
    text = str(exc)
    return text.split("\n", 1)[0] if text else type(exc).__name__
