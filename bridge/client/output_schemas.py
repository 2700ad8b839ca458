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
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, cast, final

import attrs

from decoders.mcp import ToolCallResult
from runtime.errors import (
    PeerError,
    RemoteProtocolError,
    RequestError,
    RequestTimeout,
)
from runtime.lowlevel import Unresolvable, offline_validator

from .pages import MAX_LISTING, Request, pages

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaMismatch
    from jsonschema.protocols import Validator
    from jsonschema_rs import Validator as FastValidator

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
        # Each schema's validator, made at its first check (None: the schema
        # itself is invalid, so it checks nothing).
        self._validators: dict[str, _Check | None] = {}
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
        ``outputSchema`` or one the server never listed.

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
            check = self._validators[name] = _validator_of(schema)
        value = result.structured_content
        found = None if check is None else _problem(check, value)
        if found is not None:
            field, what = found
            raise InvalidStructuredContent(
                f"tool {name!r} sent structuredContent that does not match its "
                f"outputSchema: {field}: {what}",
                tool=name,
                field=field,
            )


def structured_problem(schema: Mapping[str, Any], value: Any) -> tuple[str, str] | None:
    """The field (a ``/`` path) and what is wrong with it, or None if
    ``value`` matches ``schema``. A schema that is itself invalid, or that
    refers (``$ref``) to a document elsewhere, which is never fetched, checks
    nothing: the server's mistake is not the result's."""
    check = _validator_of(schema)
    return None if check is None else _problem(check, value)


@final
@attrs.frozen
class _Check:
    """One schema's check: ``fast`` answers whether a value is valid (a
    compiled validator, offline: it never fetches a ``$ref``); ``full``, the
    reference implementation, decides whenever ``fast`` says no (or cannot
    say), and names the field."""

    full: Validator
    fast: FastValidator | None


def _problem(check: _Check, value: Any) -> tuple[str, str] | None:
    """Where ``value`` breaks the schema, and how; None if it does not.

    jsonschema-rs says so whenever it can read both: in time linear in the
    value (a server's ``pattern`` such as ``^(a+)+$``, or ``uniqueItems``
    over thousands of objects, held Python's jsonschema for minutes, on the
    event loop, where no ``--timeout`` could end it). Python's jsonschema
    checks only what jsonschema-rs cannot read."""
    if check.fast is not None:
        try:
            first = next(iter(check.fast.iter_errors(value)), None)
        except ValueError:  # a value it cannot read: the full check decides
            pass
        else:
            if first is None:
                return None
            where = "/".join(str(part) for part in first.instance_path)
            return where or "<root>", first.message
    try:
        errors = list(check.full.iter_errors(value))
    except Unresolvable:  # a $ref elsewhere (never fetched): like an invalid schema
        return None
    from jsonschema.exceptions import best_match  # pyright: ignore[reportUnknownVariableType]

    error = cast("SchemaMismatch | None", best_match(errors))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "<root>"
    return where, error.message


def _validator_of(schema: Mapping[str, Any]) -> _Check | None:
    """The check of ``schema``, or None if the schema is invalid."""
    # Imported by the first output schema checked, not by every client.
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for
    from jsonschema_rs import validator_for as fast_validator_for

    cls = validator_for(schema)
    try:
        cls.check_schema(dict(schema))
    except SchemaError:
        return None
    try:
        fast = fast_validator_for(dict(schema), validate_formats=False, offline=True)
    except ValueError:  # e.g. a $ref it may not fetch: the full check only
        fast = None
    return _Check(full=offline_validator(schema), fast=fast)
