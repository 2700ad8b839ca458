"""Every provider over real HTTP on loopback, against a fake provider server."""

from __future__ import annotations

import base64
import logging
import re
import sys
import traceback
from typing import Any

import attrs
import pytest
import trio

from bridge.elicit import printable
from bridge.printable import has_unseen, unseen_class
from bridge.providers import HttpProvider, Retry, provider_from_spec
from runtime.errors import (
    ProviderConfigError,
    ProviderError,
    RemoteProtocolError,
    RequestTimeout,
)
from tests.bridge.providers.cases import CASES, MODELS, encode, load
from tests.bridge.providers.fake_server import CONTENT_TYPES, FakeProvider, Reply
from tests.bridge.providers.recordings import (
    APIS,
    PROVIDERS,
    as_json,
    expected,
    stream_path,
)

KEY = "sk-test-SECRET-0123456789"
PATHS = {
    "openai": ("/v1/chat/completions", "/v1/chat/completions"),
    "openai_responses": ("/v1/responses", "/v1/responses"),
    "anthropic": ("/v1/messages", "/v1/messages"),
    "ollama": ("/api/chat", "/api/chat"),
    "gemini": (
        "/v1beta/models/gemini-2.5-flash:generateContent",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
    ),
}


class Sleeps:
    """Records the backoff delays instead of waiting them."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def provider(
    name: str,
    server: FakeProvider,
    *,
    stream: bool = False,
    retries: int = 0,
    sleep: Sleeps | None = None,
    timeout: float = 5.0,
) -> HttpProvider:
    openai_like = name in ("openai", "openai_responses")
    return HttpProvider(
        api=APIS[name],
        model=MODELS[name],
        base_url=server.url + ("/v1" if openai_like else ""),
        api_key=None if name == "ollama" else KEY,
        stream=stream,
        timeout=timeout,
        retry=Retry(max_retries=retries, base_delay=0.5),
        sleep=sleep or Sleeps(),
    )


def stream_reply(name: str, recording: str, chunk_size: int | None = None) -> Reply:
    kind = "ndjson" if name == "ollama" else "sse"
    body = stream_path(name, recording).read_bytes()
    return Reply(body=body, content_type=CONTENT_TYPES[kind], chunk_size=chunk_size)


def auth_headers(name: str, headers: dict[str, str]) -> dict[str, str]:
    keys = ("authorization", "x-goog-api-key", "anthropic-version", "x-api-key")
    return {k: v for k, v in headers.items() if k in keys}


EXPECTED_AUTH = {
    "openai": {"authorization": f"Bearer {KEY}"},
    "openai_responses": {"authorization": f"Bearer {KEY}"},
    "anthropic": {"authorization": f"Bearer {KEY}", "anthropic-version": "2026-10-21"},
    "ollama": {},
    "gemini": {"x-goog-api-key": KEY},
}


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_whole_response_round_trips_over_http(
    name: str, fake: FakeProvider
) -> None:
    fake.script.append(Reply.json(load(name, "response_tool_calls")))
    request = CASES["tool_history"]
    with trio.fail_after(5):
        reply = await provider(name, fake).complete(request)
    assert as_json(reply) == expected(name, "response_tool_calls")
    [seen] = fake.seen
    assert (seen.method, seen.path) == ("POST", PATHS[name][0])
    assert seen.body == encode(name, request)
    assert auth_headers(name, seen.headers) == EXPECTED_AUTH[name]


@pytest.mark.parametrize("name", PROVIDERS)
@pytest.mark.parametrize("chunk_size", [None, 1, 7])
async def test_a_stream_round_trips_over_http(
    name: str, chunk_size: int | None, fake: FakeProvider
) -> None:
    fake.script.append(stream_reply(name, "stream_tool_calls", chunk_size))
    request = CASES["choice_auto"]
    # A hang guard: a stream sent one byte at a time is thousands of writes,
    # and with every core busy they took more than 5 s.
    with trio.fail_after(30):
        reply = await provider(name, fake, stream=True).complete(request)
    assert as_json(reply) == expected(name, "stream_tool_calls")
    [seen] = fake.seen
    assert seen.path == PATHS[name][1]
    assert seen.query == ("alt=sse" if name == "gemini" else "")
    assert seen.body == encode(name, request, stream=True)


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_structured_request_comes_back_as_a_schema_call(
    name: str, fake: FakeProvider
) -> None:
    fake.script.append(Reply.json(load(name, "response_structured")))
    with trio.fail_after(5):
        reply = await provider(name, fake).complete(CASES["structured"])
    [use] = reply.tool_uses
    assert (use.name, dict(use.input)) == (
        "__schema__",
        {"city": "Paris", "celsius": 18.5},
    )


@pytest.mark.parametrize("name", PROVIDERS)
async def test_429_and_5xx_are_retried_with_backoff_honouring_retry_after(
    name: str, fake: FakeProvider
) -> None:
    fake.script += [
        Reply.json(
            {"error": {"message": "slow down"}}, 429, headers=[("retry-after", "3")]
        ),
        Reply.json({"error": {"message": "oops"}}, 500),
        Reply.json({"error": {"message": "oops"}}, 503),
        Reply.json(load(name, "response_text")),
    ]
    sleeps = Sleeps()
    with trio.fail_after(5):
        reply = await provider(name, fake, retries=3, sleep=sleeps).complete(
            CASES["text"]
        )
    assert as_json(reply) == expected(name, "response_text")
    assert sleeps.delays == [3.0, 1.0, 2.0]
    assert len(fake.seen) == 4


async def test_retry_after_ms_and_http_dates_are_understood(fake: FakeProvider) -> None:
    fake.script += [
        Reply.json({}, 429, headers=[("retry-after-ms", "250")]),
        Reply.json({}, 429, headers=[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]),
        Reply.json(load("openai", "response_text")),
    ]
    sleeps = Sleeps()
    with trio.fail_after(5):
        await provider("openai", fake, retries=2, sleep=sleeps).complete(CASES["text"])
    # A date in the past is not a sensible wait: plain backoff is used instead.
    assert sleeps.delays == [0.25, 1.0]


@pytest.mark.parametrize("name", PROVIDERS)
async def test_retries_give_up_with_the_last_provider_error(
    name: str, fake: FakeProvider
) -> None:
    fake.script += [Reply.json({"error": {"message": "down", "code": "busy"}}, 503)] * 3
    with trio.fail_after(5), pytest.raises(ProviderError) as caught:
        await provider(name, fake, retries=2).complete(CASES["text"])
    assert (caught.value.status, caught.value.code) == (503, "busy")
    assert len(fake.seen) == 3


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_client_error_is_not_retried(name: str, fake: FakeProvider) -> None:
    error = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "bad"},
    }
    fake.script.append(Reply.json(error, 400))
    with trio.fail_after(5), pytest.raises(ProviderError) as caught:
        await provider(name, fake, retries=2).complete(CASES["text"])
    assert (caught.value.status, caught.value.code) == (400, "invalid_request_error")
    assert len(fake.seen) == 1


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_slow_provider_times_out(name: str, fake: FakeProvider) -> None:
    fake.script.append(Reply(hang=True))
    with trio.fail_after(5), pytest.raises(RequestTimeout):
        await provider(name, fake, timeout=0.2).complete(CASES["text"])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_provider_that_trickles_is_cut_at_the_deadline(
    name: str, stream: bool, fake: FakeProvider
) -> None:
    # A byte every 50 ms never trips the per-step timeout (1 s): without the
    # deadline this answer would take minutes; a retry would start it again.
    reply = stream_reply(name, "stream_text") if stream else Reply.json({"x": 1})
    reply.chunk_size, reply.trickle = 1, 0.05
    reply.body = reply.body * 50
    fake.script += [reply, reply]
    slow = attrs.evolve(
        provider(name, fake, stream=stream, retries=1, timeout=1.0), deadline=0.5
    )
    with trio.fail_after(5), pytest.raises(RequestTimeout) as caught:
        await slow.complete(CASES["text"])
    assert "no whole answer within 0.5s" in str(caught.value)
    assert len(fake.seen) == 1  # cut mid-answer: no retry past the deadline


@pytest.mark.parametrize("kind", ["whole", "stream", "error-page"])
@pytest.mark.parametrize("name", PROVIDERS)
async def test_an_answer_over_max_answer_is_refused_unread(
    name: str, kind: str, fake: FakeProvider
) -> None:
    # An endless body (a proxy gone wrong) was read into memory whole.
    if kind == "stream":
        reply = stream_reply(name, "stream_text")
        reply.body *= 500
    else:
        reply = Reply(
            status=500 if kind == "error-page" else 200,
            body=b"<html>" + b"x" * 300_000,
            content_type="text/html" if kind == "error-page" else "application/json",
        )
    reply.chunk_size = 65536
    fake.script += [reply, reply]
    bounded = attrs.evolve(
        provider(name, fake, stream=kind == "stream", retries=1), max_answer=100_000
    )
    with trio.fail_after(10), pytest.raises(ProviderError) as caught:
        await bounded.complete(CASES["text"])
    assert "an answer over 100,000 bytes (its max_answer) from " in str(caught.value)
    assert len(fake.seen) == 1  # not retried


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_compressed_answer_is_refused_not_inflated(
    name: str, fake: FakeProvider
) -> None:
    # max_answer counts the bytes read; httpx inflated them afterwards, so
    # 1 MB of gzip made a GB in memory before anything counted it.
    import gzip

    bomb = gzip.compress(b" " * 50_000_000)
    reply = Reply(body=bomb, headers=[("content-encoding", "gzip")])
    fake.script += [reply, reply]
    bounded = attrs.evolve(provider(name, fake, retries=1), max_answer=100_000)
    with trio.fail_after(10), pytest.raises(ProviderError) as caught:
        await bounded.complete(CASES["text"])
    assert "an answer in content coding 'gzip', which was not asked for" in str(
        caught.value
    )
    assert fake.seen[0].headers["accept-encoding"] == "identity"
    assert len(fake.seen) == 1  # not retried


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_stream_that_ends_early_raises_remote_protocol_error(
    name: str, fake: FakeProvider
) -> None:
    fake.script.append(stream_reply(name, "stream_truncated"))
    with trio.fail_after(5), pytest.raises(RemoteProtocolError):
        await provider(name, fake, stream=True, retries=2).complete(CASES["text"])
    assert len(fake.seen) == 1


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_connection_cut_mid_stream_is_retried_then_raised(
    name: str, fake: FakeProvider
) -> None:
    cut = stream_reply(name, "stream_text")
    cut.body, cut.cut = cut.body[: len(cut.body) // 2], True
    fake.script += [cut, cut]
    with trio.fail_after(5), pytest.raises(RemoteProtocolError):
        await provider(name, fake, stream=True, retries=1).complete(CASES["text"])
    assert len(fake.seen) == 2


async def test_a_non_json_body_raises_remote_protocol_error(fake: FakeProvider) -> None:
    fake.script.append(Reply(body=b"<html>gateway</html>", content_type="text/html"))
    with trio.fail_after(5), pytest.raises(RemoteProtocolError):
        await provider("anthropic", fake).complete(CASES["text"])


_GATEWAY_PAGE = (
    b"<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title>\n"
    b"<style>body { font-family: sans-serif; }</style></head>\n<body>\n"
    + b"<p>The upstream server is not answering. Try again later.</p>\n" * 20
    + b"</body>\n</html>\n"
)


async def test_an_html_error_page_is_told_once_and_short(
    fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    # Was: the page's first 500 characters, tags and newlines, in each retry's
    # warning and again in the final error, three times in all.
    page = Reply(status=502, body=_GATEWAY_PAGE, content_type="text/html")
    fake.script += [page, page, page]
    caplog.set_level(logging.DEBUG)
    with trio.fail_after(5), pytest.raises(ProviderError) as caught:
        await provider("openai", fake, retries=2).complete(CASES["text"])
    assert len(fake.seen) == 3
    final = str(caught.value)
    assert final.startswith("openai: HTTP 502: 502 Bad Gateway")
    assert "<" not in final
    assert "\n" not in final
    assert len(final) <= 240
    logged = [r.getMessage() for r in caplog.records]
    retries = [m for m in logged if "retry" in m]
    assert len(retries) == 2
    assert all("HTTP 502" in m for m in retries)
    told = [*logged, final]
    assert sum("Bad Gateway" in m for m in told) == 1
    assert sum("upstream server" in m for m in told) <= 1


async def test_a_stream_answered_without_sse_raises_remote_protocol_error(
    fake: FakeProvider,
) -> None:
    fake.script.append(Reply.json(load("anthropic", "response_text")))
    with trio.fail_after(5), pytest.raises(RemoteProtocolError):
        await provider("anthropic", fake, stream=True).complete(CASES["text"])


def _chain(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _texts(exc: BaseException) -> str:
    parts = [f"{e!s} {e!r}" for e in _chain(exc)]
    parts.append("".join(traceback.format_exception(exc)))
    return "\n".join(parts)


@pytest.mark.parametrize("name", ["openai", "openai_responses", "anthropic", "gemini"])
async def test_the_api_key_never_leaks_into_errors_or_logs(
    name: str, fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    echo: dict[str, Any] = {"error": {"message": f"Incorrect API key provided: {KEY}."}}
    fake.script += [Reply.json(echo, 500), Reply.json(echo, 401)]
    caplog.set_level(logging.DEBUG)
    p = provider(name, fake, retries=1)
    with trio.fail_after(5), pytest.raises(ProviderError) as caught:
        await p.complete(CASES["text"])
    assert caught.value.status == 401
    assert KEY not in _texts(caught.value)
    assert "[REDACTED]" in str(caught.value)
    assert KEY not in repr(p)
    assert all(KEY not in r.getMessage() for r in caplog.records)
    assert caplog.records  # the retry was logged, without the key


@pytest.mark.parametrize(
    "between",
    # The last four show as nothing too, though they are no control: a soft
    # hyphen, a variation selector, a tag character and a Hangul filler.
    ["\x1b", "\x00", "\u202e", "\u200b", "\x1b[2J", *"\u00ad\ufe0f\U000e0041\u3164"],
)
async def test_a_key_echoed_with_characters_between_is_redacted_too(
    between: str, fake: FakeProvider
) -> None:
    # Redacted before the terminal's cleaning, which then took the inserted
    # character out: the whole key was shown, and sent to the MCP server.
    mangled = KEY[:6] + between + KEY[6:]
    echo: dict[str, Any] = {"error": {"message": f"Incorrect API key: {mangled}."}}
    fake.script.append(Reply.json(echo, 401))
    with trio.fail_after(5), pytest.raises(ProviderError) as caught:
        await provider("openai", fake, retries=0).complete(CASES["text"])
    assert KEY not in printable(str(caught.value))
    assert str(caught.value).endswith("Incorrect API key: [REDACTED].")


def test_what_may_stand_between_a_secrets_characters_is_all_that_is_unseen() -> None:
    # One list of what a reader cannot see: the redaction's is made from it.
    between = re.compile(unseen_class())
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert bool(between.fullmatch(char)) == has_unseen(char), hex(code)


async def test_the_basic_credentials_of_a_base_url_are_redacted(
    fake: FakeProvider,
) -> None:
    # httpx sends a base URL's user:password as Authorization: Basic ...; a
    # provider echoing its headers showed them, base64 but readable.
    basic = base64.b64encode(b"proxyuser:PROXYSECRET").decode()
    echo: dict[str, Any] = {"error": {"message": f"headers: Basic {basic}"}}
    fake.script.append(Reply.json(echo, 400))
    plain = provider("openai", fake, retries=0)
    p = attrs.evolve(
        plain,
        base_url=plain.base_url.replace("http://", "http://proxyuser:PROXYSECRET@"),
    )
    with trio.fail_after(5), pytest.raises(ProviderError) as caught:
        await p.complete(CASES["text"])
    assert basic not in str(caught.value)
    assert str(caught.value).endswith("headers: Basic [REDACTED]")


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"OPENAI_BASE_URL": "puser:PSECRET@127.0.0.1:1"}, "OPENAI_BASE_URL is not"),
        ({"OPENAI_BASE_URL": "http://puser:PSECRET@[::1/v1"}, "OPENAI_BASE_URL is not"),
        ({"OPENAI_BASE_URL": "ftp://127.0.0.1/v1"}, "OPENAI_BASE_URL is not"),
        ({"OLLAMA_HOST": "[::1"}, "OLLAMA_HOST is not"),
    ],
)
def test_a_base_url_that_is_no_http_url_is_refused_unshown(
    env: dict[str, str], said: str
) -> None:
    # Without a scheme it was not redacted at all ("connection to
    # puser:PSECRET@... failed", sent to the server too); [::1 was a traceback.
    spec = "ollama:m" if "OLLAMA_HOST" in env else "openai:m"
    with pytest.raises(ProviderConfigError) as caught:
        provider_from_spec(spec, env={**env, "OPENAI_API_KEY": KEY})
    assert str(caught.value).startswith(said)
    assert "PSECRET" not in str(caught.value)


@pytest.mark.parametrize(
    ("userinfo", "query"),
    [("", ""), ("proxyuser:PROXYSECRET@", "?token=QSECRET")],
    ids=["plain", "credentials-in-the-url"],
)
async def test_an_unreachable_provider_fails_without_leaking_the_key(
    userinfo: str, query: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A proxy's user and password in OPENAI_BASE_URL were printed whole in
    # "cannot reach openai at http://user:secret@...", and sent to the MCP
    # server with the error.
    caplog.set_level(logging.DEBUG)
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there any more
    p = HttpProvider(
        api=APIS["openai"],
        model="gpt-4o-mini",
        base_url=f"http://{userinfo}127.0.0.1:{port}/v1{query}",
        api_key=KEY,
        retry=Retry(max_retries=1),
        sleep=Sleeps(),
    )
    with trio.fail_after(5), pytest.raises(ProviderError) as caught:
        await p.complete(CASES["text"])
    assert caught.value.status is None
    said = [_texts(caught.value), *(r.getMessage() for r in caplog.records)]
    for secret in (KEY, "PROXYSECRET", "proxyuser", "QSECRET"):
        assert all(secret not in text for text in said), secret
    shown = "[REDACTED]@" if userinfo else ""
    assert f"cannot reach openai at http://{shown}127.0.0.1:{port}" in str(caught.value)


_REDACT_TABS = """
from bridge.providers import HttpProvider
from tests.bridge.providers.test_http import APIS
key = "sk-\\t\\t\\tZ"
p = HttpProvider(api=APIS["openai"], model="m", base_url="http://x", api_key=key)
print(p._redact("sk-" + "\\t" * 5000).count("\\t"), p._redact("a sk-\\t\\t\\tZ b"))
"""


def test_redacting_a_key_of_unseen_characters_never_backtracks() -> None:
    # Each secret's pattern lets unseen characters sit between its own: a
    # key with several (tabs) against a text of them backtracked for hours
    # (500 tabs: 9 s; 5,000: past any timeout). In a process of its own.
    import subprocess
    import sys

    from tests.helpers import ROOT

    done = subprocess.run(
        [sys.executable, "-c", _REDACT_TABS],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["5000", "a", "[REDACTED]", "b"]  # no key: kept
