"""``HttpProvider``: one sampling request over HTTP, with retries and timeouts.

Owns the I/O of calling a provider: POSTing the encoded body with httpx (which
runs on trio through anyio), reading a whole JSON response or an SSE / NDJSON
stream into a stream accumulator, retrying 429 and 5xx answers and broken
connections with exponential backoff (honouring ``Retry-After``), and turning
every failure into a ``runtime.errors`` exception whose text never contains the
API key. Does not build or read wire JSON itself (``encoders``/``decoders``
do) and does not choose a provider (``_spec`` does).
"""

from __future__ import annotations

import base64
import email.utils
import functools
import html
import logging
import math
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Protocol, cast, final
from urllib.parse import unquote, urlsplit

import attrs
import httpx
import httpx_sse
import trio

from bridge.http_body import unwind
from bridge.http_clients import new_client
from bridge.printable import printable, unseen_class
from bridge.telemetry import span_event
from decoders.peer_json import loads
from runtime.errors import ProviderError, ProviderTimeout, RemoteProtocolError
from runtime.replies import SampleReply
from runtime.requests import SamplingRequest

from ._apis import Accumulator, Api

__all__ = ["DEFAULT_DEADLINE", "MAX_ANSWER", "HttpProvider", "Provider", "Retry"]

logger = logging.getLogger("yieldmcp.providers")

_MAX_RETRY_AFTER = 60.0

MAX_ANSWER = 32 * 1024 * 1024
"""Bytes of one answer read at most (whole or streamed, or an error page):
past it the request fails with :class:`ProviderError`, and is not retried."""

DEFAULT_DEADLINE = 600.0
"""Seconds one sample's whole answer may take by default, every try and
wait included (``yieldmcp call --model-timeout``): long enough for a long
generation, short enough that a provider that trickles cannot hold a call."""


class Provider(Protocol):
    """Anything that answers a sampling request with a model's reply."""

    async def complete(self, request: SamplingRequest) -> SampleReply:
        """The model's reply to ``request``."""
        ...


@final
@attrs.frozen(kw_only=True)
class Retry:
    """Retry policy: ``max_retries`` after the first try, exponential backoff.

    The n-th retry waits ``base_delay * 2**n`` seconds, at most ``max_delay``,
    unless the provider sent ``Retry-After`` (or ``retry-after-ms``) of at most
    a minute, which is waited instead. No jitter, so tests are deterministic.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after is not None and 0 <= retry_after <= _MAX_RETRY_AFTER:
            return retry_after
        return min(self.base_delay * 2**attempt, self.max_delay)


class _Retryable(Exception):
    def __init__(self, error: Exception, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class _TooLarge(httpx.StreamError):
    """An answer longer than ``max_answer``."""


@final
class _Bounded(httpx.AsyncByteStream):
    """A response's byte stream that stops past ``limit`` bytes."""

    def __init__(self, inner: httpx.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        pieces = aiter(self._inner)
        async for chunk in pieces:
            read += len(chunk)
            if read > self._limit:
                break
            yield chunk
        else:
            return
        await unwind(pieces)  # not left to the garbage collector
        raise _TooLarge(f"over {self._limit} bytes")

    async def aclose(self) -> None:
        await self._inner.aclose()


@final
@attrs.frozen(kw_only=True)
class HttpProvider:
    """A :class:`Provider` speaking one provider API over HTTP.

    ``timeout`` bounds each network step (connecting, each read),
    ``deadline`` the whole answer (None: no bound), and ``max_answer`` its
    size in bytes. ``client`` lets callers share a connection pool (they then
    close it); otherwise each call opens and closes its own. ``sleep`` waits
    between retries (tests pass a recorder). ``api_key`` is never shown in
    ``repr``.
    """

    supports_tools: ClassVar[bool] = True  # every API here calls tools

    api: Api
    model: str
    base_url: str
    api_key: str | None = attrs.field(default=None, repr=False)
    stream: bool = False
    timeout: float = 60.0
    deadline: float | None = DEFAULT_DEADLINE
    max_answer: int = MAX_ANSWER
    retry: Retry = Retry()
    client: httpx.AsyncClient | None = attrs.field(default=None, repr=False, eq=False)
    sleep: Callable[[float], Awaitable[None]] = attrs.field(
        default=trio.sleep, repr=False, eq=False
    )

    async def complete(self, request: SamplingRequest) -> SampleReply:
        """The model's reply to ``request``.

        Raises:
            ProviderError: the provider refused or failed the request.
            ProviderTimeout: (a ``RequestTimeout``) no answer within
                ``timeout`` seconds, every try, or no whole answer within
                ``deadline``.
            RemoteProtocolError: the answer was malformed or cut short.
            InvalidMessages, LocalProtocolError: the request cannot be encoded
                for this API.
        """
        body = self.api.encode(request, self.model, self.stream)
        structured = request.schema_tool is not None
        # ``timeout`` bounds each network step, so a provider that trickles
        # (a byte every 59 s) would hold the sample for ever: the deadline
        # bounds the whole answer, every try and wait included.
        with trio.move_on_after(self.deadline or math.inf):
            async with self._open_client() as client:
                attempt = 0
                while True:
                    try:
                        return await self._attempt(client, body, structured)
                    except _Retryable as failure:
                        if attempt >= self.retry.max_retries:
                            raise failure.error from None
                        delay = self.retry.delay(attempt, failure.retry_after)
                        logger.warning(
                            "%s; retry %d in %.2fs",
                            _retry_reason(failure.error, self.api.name),
                            attempt + 1,
                            delay,
                        )
                        attempt += 1
                        span_event("gen_ai.retry", {"error.type": str(failure.error)})
                        await self.sleep(delay)
        raise ProviderTimeout(
            f"no whole answer within {self.deadline:g}s (its deadline, every "
            f"try included) from {self._redact(self.base_url)}",
            provider=self.api.name,
        )

    @asynccontextmanager
    async def _open_client(self) -> AsyncGenerator[httpx.AsyncClient, None]:
        if self.client is not None:
            yield self.client
            return
        name = self.api.name
        made = new_client(lambda why: ProviderError(why, provider=name))
        async with made as client:
            yield client

    async def _attempt(
        self, client: httpx.AsyncClient, body: Any, structured: bool
    ) -> SampleReply:
        url = self.base_url.rstrip("/") + self.api.path(self.model, self.stream)
        headers = {
            "Content-Type": "application/json",
            # Decoded by httpx after max_answer counts the raw bytes: a few
            # KB of gzip can be a GB. An answer is small; none is asked for.
            "Accept-Encoding": "identity",
            **self.api.headers(self.api_key),
        }
        logger.debug("%s: POST %s", self.api.name, self._redact(url))
        try:
            async with client.stream(
                "POST", url, json=body, headers=headers, timeout=self.timeout
            ) as response:
                # Every read below (whole, streamed, an error page) pulls
                # from this stream: the answer's size is bounded here once.
                raw = cast("httpx.AsyncByteStream", response.stream)
                response.stream = _Bounded(raw, self.max_answer)
                coding = response.headers.get("content-encoding", "").strip()
                if coding.lower() not in ("", "identity"):
                    raise ProviderError(
                        f"an answer in content coding {coding[:40]!r}, which was "
                        f"not asked for, from {self._redact(url)}",
                        provider=self.api.name,
                    )
                if response.status_code >= 400:
                    await response.aread()
                    raise self._status_error(response)
                if self.stream:
                    return await self._read_stream(response, structured)
                await response.aread()
                return self._decoded(response.content, structured)
        except _TooLarge:
            raise ProviderError(
                f"an answer over {self.max_answer:,} bytes (its max_answer) from "
                f"{self._redact(url)}",
                provider=self.api.name,
            ) from None
        except httpx.TimeoutException:
            error = ProviderTimeout(
                f"no answer within {self.timeout}s from {self._redact(url)}",
                provider=self.api.name,
            )
            raise _Retryable(error) from None
        except httpx.RemoteProtocolError:
            error = RemoteProtocolError(
                f"{self.api.name}: the connection closed in the middle of the answer"
            )
            raise _Retryable(error) from None
        except httpx.ConnectError:
            # Nothing listens there (a local server not started, a wrong
            # base URL): say so in words, not as the socket's error.
            error = ProviderError(
                f"cannot reach {self.api.name} at {self._redact(self.base_url)} "
                "(is it running?)",
                provider=self.api.name,
            )
            raise _Retryable(error) from None
        except httpx.TransportError as exc:
            error = ProviderError(
                f"connection to {self._redact(url)} failed: "
                f"{self._redact(type(exc).__name__ + ': ' + str(exc))}",
                provider=self.api.name,
            )
            raise _Retryable(error) from None

    async def _read_stream(
        self, response: httpx.Response, structured: bool
    ) -> SampleReply:
        accumulator = self.api.accumulator(structured)
        # unwind: a bad line or event raises out of the loop, and neither the
        # iterator nor the chain of httpx's below it may be left for the
        # garbage collector (closing the outer one leaves the others open).
        if self.api.framing == "ndjson":
            lines = response.aiter_lines()
            try:
                async for line in lines:
                    if line.strip():
                        self._feed(accumulator, line)
            finally:
                await unwind(lines)
            return self._finished(accumulator)
        try:
            events = httpx_sse.EventSource(response).aiter_sse()
            try:
                async for event in events:
                    if event.data:
                        self._feed(accumulator, event.data)
            finally:
                await unwind(events)
        except httpx_sse.SSEError as exc:
            raise RemoteProtocolError(f"{self.api.name}: {exc}") from None
        return self._finished(accumulator)

    def _finished(self, accumulator: Accumulator) -> SampleReply:
        try:
            return accumulator.finish()
        except (ProviderError, RemoteProtocolError) as exc:
            scrubbed = self._scrubbed(exc)
        raise scrubbed  # outside the handler: not chained to the key's words

    def _feed(self, accumulator: Accumulator, data: str) -> None:
        try:
            self.api.feed(accumulator, data)
        except (ProviderError, RemoteProtocolError) as exc:
            scrubbed = self._scrubbed(exc)
        except ValueError as exc:  # decoders.peer_json.loads's
            raise RemoteProtocolError(
                f"{self.api.name}: a stream event cannot be read ({exc}): "
                f"{self._redact(data[:200])}"
            ) from None
        else:
            return
        raise scrubbed  # outside the handler: not chained to the key's words

    def _decoded(self, content: bytes, structured: bool) -> SampleReply:
        try:
            value = loads(content)
        except ValueError as exc:
            raise RemoteProtocolError(
                f"{self.api.name}: the response cannot be read ({exc}): "
                f"{self._redact(content[:200].decode(errors='replace'))}"
            ) from None
        if not isinstance(value, dict):
            raise RemoteProtocolError(
                f"{self.api.name}: the response is not a JSON object: "
                f"{self._redact(content[:200].decode(errors='replace'))}"
            )
        try:
            return self.api.decode(cast("Mapping[str, Any]", value), structured)
        except (ProviderError, RemoteProtocolError) as exc:
            scrubbed = self._scrubbed(exc)
        raise scrubbed  # outside the handler: not chained to the key's words

    def _scrubbed(self, exc: ProviderError | RemoteProtocolError) -> Exception:
        """``exc`` again, in words without the API key (a provider's error
        may quote what it was sent) and cut to :data:`_ERROR_CHARS`."""
        said = self._redact(str(exc))
        if len(said) > _ERROR_CHARS:
            said = (
                f"{said[:_ERROR_CHARS]}… ({len(said) - _ERROR_CHARS:,} more characters)"
            )
        if isinstance(exc, ProviderError):
            return ProviderError(
                said.removeprefix(f"{exc.provider}: "),
                provider=exc.provider,
                status=exc.status,
                code=exc.code,
            )
        return RemoteProtocolError(said)

    def _status_error(self, response: httpx.Response) -> Exception:
        message, code = _error_fields(response)
        error = ProviderError(
            f"HTTP {response.status_code}: {self._redact(message)}",
            provider=self.api.name,
            status=response.status_code,
            code=code,
        )
        if response.status_code == 429 or response.status_code >= 500:
            return _Retryable(error, _retry_after(response.headers))
        return error

    def _redact(self, text: str) -> str:
        """``text`` without the API key, nor the base URL's user, password
        and query (a proxy's credentials: ``http://user:secret@proxy/v1``),
        nor the ``Basic`` credentials httpx makes of them; each also when
        control sequences or invisible characters were put between its
        characters (a provider echoing the key mangled: the terminal's
        cleaning, after this, joined it up again). The text comes back
        without control sequences (:func:`bridge.printable.printable`)."""
        secrets = _secrets(self.api_key, self.base_url)
        # Twice: a control sequence between two characters is taken out by
        # the cleaning (which joins the key up), a lone ESC may take the
        # character after it with it (so the raw text is looked at first).
        for secret, shown in secrets:
            text = secret.sub(shown, text)
        text = printable(text)
        for secret, shown in secrets:
            text = secret.sub(shown, text)
        return text


def _named_once(error: Exception, name: str) -> str:
    """The error's text without a leading ``name: `` its message repeats."""
    text = str(error)
    rest = text.removeprefix(f"{name}: ")
    return rest if name in rest else text


def _retry_reason(error: Exception, name: str) -> str:
    """What a retry's warning says of ``error``: an HTTP status, without the
    body the final error tells (once, not once per try); anything else as
    it is (a timeout, a broken connection: one short line already)."""
    if isinstance(error, ProviderError) and error.status is not None:
        return f"{name}: HTTP {error.status}"
    return _named_once(error, name)


_BODY_CHARS = 200  # of an error body that is not the provider's JSON
_ERROR_CHARS = 500  # of an error raised reading an answer
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_HIDDEN = re.compile(
    r"<(script|style|head)\b.*?</\1\s*>|<!--.*?-->", re.IGNORECASE | re.DOTALL
)
_TAG = re.compile(r"<[^>]*>")


def _short_body(text: str) -> str:
    """An error body that is not JSON (a gateway's or proxy's HTML page, most
    often) as one short line: the page's title, or its text without tags."""
    title = _TITLE.search(text)
    if title is not None and title.group(1).strip():
        text = title.group(1)
    elif "<" in text:
        text = _TAG.sub(" ", _HIDDEN.sub(" ", text))
    line = " ".join(html.unescape(text).split())
    if len(line) > _BODY_CHARS:
        line = line[: _BODY_CHARS - 1].rstrip() + "…"
    return line


def _error_fields(response: httpx.Response) -> tuple[str, str | None]:
    try:
        body: Any = loads(response.content)
    except ValueError:
        return _short_body(response.text) or response.reason_phrase, None
    error: Any = (
        cast("dict[str, Any]", body).get("error") if isinstance(body, dict) else None
    )
    if isinstance(error, str):
        return error, None
    if isinstance(error, dict):
        fields: dict[str, Any] = error  # pyright: ignore[reportUnknownVariableType]
        code = fields.get("code") or fields.get("type") or fields.get("status")
        message = str(fields.get("message") or response.reason_phrase)
        return message, None if code is None else str(code)
    return _short_body(response.text) or response.reason_phrase, None


def _retry_after(headers: httpx.Headers) -> float | None:
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return float(milliseconds) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


@functools.lru_cache(maxsize=16)
def _secrets(api_key: str | None, base_url: str) -> list[tuple[re.Pattern[str], str]]:
    """What :meth:`HttpProvider._redact` takes out of a text, and puts in."""
    found: list[tuple[str, str]] = [(api_key, "")] if api_key else []
    try:
        parts = urlsplit(base_url)
    except ValueError:  # no URL (a provider refuses it): nothing in it
        parts = None
    if parts is not None and "@" in parts.netloc:
        found.append((parts.netloc.rpartition("@")[0], "@"))  # user:password@
        if parts.password:
            found.append((parts.password, ""))
            plain = f"{unquote(parts.username or '')}:{unquote(parts.password)}"
            found.append((base64.b64encode(plain.encode()).decode(), ""))
    if parts is not None and parts.query:
        found.append((parts.query, ""))
    found.sort(key=lambda pair: len(pair[0]), reverse=True)  # the longest first
    return [
        (re.compile(_spread(secret) + re.escape(after)), f"[REDACTED]{after}")
        for secret, after in found
    ]


def _between() -> str:
    """What may stand between a secret's characters and go unseen on a
    terminal: any character :func:`bridge.printable.has_unseen` looks for,
    however many (possessive: a failed match never backtracks)."""
    return unseen_class() + "*+"


def _spread(secret: str) -> str:
    """A pattern of ``secret`` in a text, also with :func:`_between`
    between its characters. Its own unseen characters are left to
    :func:`_between` (which takes them, and never gives back: a key of
    tabs, read against a text of tabs, took hours backtracking)."""
    seen = re.sub(unseen_class(), "", secret)
    return _between().join(re.escape(char) for char in seen or secret)
