"""How the built-in verifiers ask the issuer over HTTP, without letting it
hold them.

Only :mod:`.jwt` and :mod:`.introspection` import this (and so httpx): a
server that checks no tokens, or checks them its own way, never loads it.

* **One client per verifier** (:class:`IssuerClient`), made on first use and
  kept, so its connections are reused (a client costs tens of milliseconds of
  the event loop to make); :meth:`IssuerClient.aclose` closes it (the server
  does, when it stops) and the next use makes a new one. A client given by
  the caller is used as is and never closed here.
* **One deadline per exchange** (:func:`fetch`): connecting, sending and
  every read of the answer together, so an issuer that trickles a byte at a
  time fails at the deadline instead of resetting a timer per read.
* **Bodies read up to a limit** and no further: the answer is streamed, a
  declared length over the limit is refused before the body is read, and
  the read stops at the limit plus one chunk. ``Accept-Encoding: identity``
  keeps a compressed bomb out.

Every failure is an :class:`IssuerError` (an ``httpx.HTTPError``) whose
message is one line naming the URL and what went wrong.
"""

from __future__ import annotations

import json
from typing import Any, Final, final

import attrs
import httpx
import trio

__all__ = ["IssuerClient", "IssuerError", "Fetched", "fetch"]

_HEADERS: Final = {"Accept": "application/json", "Accept-Encoding": "identity"}


class IssuerError(httpx.HTTPError):
    """The issuer could not be asked, or answered something unusable."""


@final
class IssuerClient:
    """The HTTP client of one verifier (see the module doc)."""

    def __init__(self, given: httpx.AsyncClient | None, timeout: float) -> None:
        self._given = given
        self._timeout = timeout
        self._own: httpx.AsyncClient | None = None

    def get(self) -> httpx.AsyncClient:
        if self._given is not None:
            return self._given
        if self._own is None or self._own.is_closed:
            self._own = httpx.AsyncClient(timeout=self._timeout)
        return self._own

    async def aclose(self) -> None:
        own, self._own = self._own, None
        if own is not None:
            await own.aclose()


@final
@attrs.frozen
class Fetched:
    """An answer read whole: its status and body."""

    url: str
    status: int
    body: bytes

    def json_object(self, what: str) -> dict[str, Any]:
        """The body as a JSON object.

        Raises:
            IssuerError: it is not one (an HTML page, bad JSON, a list).
        """
        try:
            value: Any = json.loads(self.body)
        except ValueError:
            raise IssuerError(f"{what} at {self.url} is not JSON") from None
        if not isinstance(value, dict):
            raise IssuerError(f"{what} at {self.url} is not a JSON object")
        return value  # pyright: ignore[reportUnknownVariableType]


async def fetch(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    limit: int,
    seconds: float,
    what: str,
    **options: Any,
) -> Fetched:
    """One exchange with the issuer, within ``seconds``, reading at most
    ``limit`` bytes of the answer (see the module doc).

    Raises:
        IssuerError: unreachable, too slow, or an answer over the limit.
    """
    with trio.move_on_after(seconds):
        return await _exchange(http, method, url, limit, what, options)
    raise IssuerError(f"{what} at {url} did not come within {seconds:g} s")


async def _exchange(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    limit: int,
    what: str,
    options: dict[str, Any],
) -> Fetched:
    too_large = IssuerError(f"{what} at {url} is larger than {limit} bytes")
    headers = {**_HEADERS, **options.pop("headers", {})}
    try:
        async with http.stream(method, url, headers=headers, **options) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise too_large
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > limit:
                    raise too_large
            return Fetched(url, response.status_code, bytes(body))
    except IssuerError:
        raise
    except httpx.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        raise IssuerError(f"cannot ask {url} for {what}: {reason}") from exc
