"""Which era a new connection speaks: ``server/discover``, ``initialize``.

* ``"2026-07-28"``: ``server/discover`` must answer, listing that version.
* ``"legacy"``: the ``initialize`` handshake (2025-11-25).
* ``"auto"``: ``server/discover`` first, and 2026-07-28 when the server lists
  it. ``initialize`` follows on the same connection only when the server
  answered the probe with an error saying it does not know the method:
  ``-32601``, or ``-32602``, which is what the Python SDK 1.x answers for any
  method it does not know (and if that ``initialize`` is refused, the probe's
  error is the one raised). Nothing else falls back: a probe that gets no
  answer within ``connect_timeout`` fails the connection with
  :class:`~runtime.errors.RequestTimeout`, since a late answer means the
  server now serves 2026-07-28 on this connection and refuses ``initialize``
  there (the official SDK does); only a fresh connection could try again.

Every handshake request waits at most ``connect_timeout`` seconds. A refused
``logging/setLevel`` (asked of a 2025-11-25 server that declares ``logging``)
is warned of, not fatal: the server then logs at its own level. A server
that refuses the probe's version (``-32022``) while listing 2026-07-28 among
those it supports is asked once more.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final, Literal, cast, final, get_args

import attrs

from bridge.jsonrpc.messages import INVALID_PARAMS, METHOD_NOT_FOUND
from bridge.jsonrpc.session import Session
from runtime.errors import PeerError, RemoteProtocolError, RequestTimeout

from .answers import LEGACY, MODERN
from .headers import visible_ascii

__all__ = [
    "DISCOVER",
    "UNSUPPORTED_VERSION",
    "Era",
    "Negotiated",
    "checked_era",
    "negotiate",
]

log = logging.getLogger("yieldmcp.client")

Era = Literal["auto", "legacy", "2026-07-28"]
ERAS: Final[tuple[Era, ...]] = get_args(Era)
DISCOVER: Final = "server/discover"
UNSUPPORTED_VERSION: Final = -32022
UNKNOWN_METHOD: Final = frozenset({METHOD_NOT_FOUND, INVALID_PARAMS})
"""Answers to ``server/discover`` that mean the server does not know it."""


def checked_era(era: object) -> Era:
    """``era`` if it names one, before anything is started.

    Raises:
        ValueError: it names none (``"2025-11-25"`` is ``"legacy"``: every
            version ``initialize`` negotiates).
    """
    if era in ERAS:
        return era
    raise ValueError(
        f"era must be 'auto', 'legacy' (2025-11-25 and before, by initialize) "
        f"or '2026-07-28', not {era!r}"
    )


@final
@attrs.frozen(kw_only=True)
class Negotiated:
    """What the handshake learnt of the server."""

    era: str
    capabilities: Mapping[str, Any]
    server_info: Mapping[str, Any]
    instructions: str | None


@final
@attrs.frozen(kw_only=True)
class Hello:
    """What the client says of itself, and how long it waits for each answer."""

    envelope: Mapping[str, Any]  # the 2026-07-28 ``_meta``
    capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any]
    log_level: str | None
    timeout: float | None


async def negotiate(session: Session, era: Era, hello: Hello) -> Negotiated:
    """Negotiate ``era`` (see the module's rules).

    Raises:
        PeerError: the server refused the handshake.
        RequestTimeout: a handshake request got no answer in time.
        RemoteProtocolError: the server does not speak the era asked for.
    """
    if era == "legacy":
        return await _initialize(session, hello)
    try:
        result = await _probe(session, hello)
    except PeerError as exc:
        if era != "auto" or exc.code not in UNKNOWN_METHOD:
            raise
        log.debug("%s failed (%s); using initialize", DISCOVER, exc)
        try:
            return await _initialize(session, hello)
        except PeerError:
            if exc.code == METHOD_NOT_FOUND:
                raise
            raise exc from None  # -32602 was the server's answer, not "unknown"
    answer = _object(result, f"the server's {DISCOVER} answer")
    versions: Any = answer.get("supportedVersions", [])
    if not isinstance(versions, list) or MODERN not in cast(list[Any], versions):
        shown = repr(cast(object, versions))
        shown = shown if len(shown) <= 200 else f"{shown[:200]}…"
        raise RemoteProtocolError(
            f"the server does not speak {MODERN} (its {DISCOVER} lists "
            f"{shown}); a fresh connection may use initialize"
        )
    meta = _object(answer.get("_meta") or {}, f"the server's {DISCOVER} _meta")
    return Negotiated(
        era=MODERN,
        capabilities=_object(
            answer.get("capabilities", {}), "the server's capabilities"
        ),
        server_info=_object(
            meta.get("io.modelcontextprotocol/serverInfo", {}),
            "the server's serverInfo",
        ),
        instructions=_text(answer.get("instructions"), "the server's instructions"),
    )


async def _probe(session: Session, hello: Hello) -> Any:
    """``server/discover``, asked again if refused for a version we speak."""
    params = {"_meta": dict(hello.envelope)}
    try:
        return await _request(session, DISCOVER, params, hello.timeout)
    except PeerError as exc:
        data: Any = exc.data
        supported: Any = (
            cast(dict[str, Any], data).get("supported")
            if isinstance(data, dict)
            else None
        )
        if exc.code != UNSUPPORTED_VERSION or not isinstance(supported, list):
            raise
        if MODERN not in cast(list[Any], supported):
            raise
        log.debug("%s: retrying with %s", DISCOVER, MODERN)
    return await _request(session, DISCOVER, params, hello.timeout)


async def _initialize(session: Session, hello: Hello) -> Negotiated:
    params = {
        "protocolVersion": LEGACY,
        "capabilities": dict(hello.capabilities),
        "clientInfo": dict(hello.client_info),
    }
    answer = _object(
        await _request(session, "initialize", params, hello.timeout),
        "the server's initialize answer",
    )
    version: Any = answer.get("protocolVersion", LEGACY)
    if not isinstance(version, str) or version == MODERN or not visible_ascii(version):
        # 2026-07-28 is never negotiated by initialize: its requests carry
        # an envelope this connection's server did not ask for. A version
        # goes out in a header (MCP-Protocol-Version): visible ASCII only.
        raise RemoteProtocolError(
            f"the server answered initialize with protocolVersion "
            f"{version!r:.100}, which initialize does not negotiate"
        )
    negotiated = Negotiated(
        era=version,
        capabilities=_object(
            answer.get("capabilities", {}), "the server's capabilities"
        ),
        server_info=_object(answer.get("serverInfo", {}), "the server's serverInfo"),
        instructions=_text(answer.get("instructions"), "the server's instructions"),
    )
    await session.notify("notifications/initialized")
    if hello.log_level is not None and "logging" in negotiated.capabilities:
        level = {"level": hello.log_level}
        try:
            await _request(session, "logging/setLevel", level, hello.timeout)
        except PeerError as exc:  # a server that never registered the handler
            log.warning(
                "the server refused logging/setLevel (%s); it logs at its own level",
                exc,
            )
    return negotiated


def _object(value: Any, what: str) -> dict[str, Any]:
    """``value``, which the spec says is a JSON object.

    Raises:
        RemoteProtocolError: it is not (``what`` names it).
    """
    if not isinstance(value, dict):
        raise RemoteProtocolError(
            f"{what} is "
            f"{type(value).__name__ if value is not None else 'null'}, not an object"
        )
    return cast(dict[str, Any], value)


def _text(value: Any, what: str) -> str | None:
    """``value``, an optional string (else RemoteProtocolError, as above)."""
    if value is not None and not isinstance(value, str):
        raise RemoteProtocolError(f"{what} is {type(value).__name__}, not a string")
    return value


async def _request(
    session: Session, method: str, params: Mapping[str, Any], timeout: float | None
) -> Any:
    if timeout is None:
        return await session.request(method, params)
    try:
        return await session.request(method, params, timeout=timeout)
    except RequestTimeout:
        raise RequestTimeout(f"{method} got no reply within {timeout:g} s") from None
