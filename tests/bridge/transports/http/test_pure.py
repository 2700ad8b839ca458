"""The sans-IO parts of the HTTP transport: SSE framing, event store, guard, ladder."""

from __future__ import annotations

import base64
import itertools
import json
import tracemalloc
from typing import Any

import pydantic_core
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from bridge.jsonrpc import Request
from bridge.transports.headers import (
    HEADER_MISMATCH,
    UNSUPPORTED_VERSION,
    check,
    decode_param,
    encode_param,
    header_params,
    http_status,
)
from bridge.transports.http.asgi import SseResponse, estimated_memory
from bridge.transports.http.events import (
    STANDALONE,
    EventsLost,
    EventStore,
    UnknownEvent,
    parse_event_id,
)
from bridge.transports.http.guard import Guard, Rejection, accepts, json_content_type
from bridge.transports.sse import SseEvent, SseEventTooLarge, SseParser, encode

# --- SSE ------------------------------------------------------------------------------

_field = st.text(
    st.characters(blacklist_characters="\r\n\0", blacklist_categories=("Cs",)),
    max_size=20,
)
_data = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@given(
    events=st.lists(
        st.tuples(
            _data,
            st.none() | _field,
            st.none() | _field,
            st.none() | st.integers(0, 10**6),
        ),
        max_size=5,
    ),
    cuts=st.lists(st.integers(0, 10**4), max_size=8),
)
def test_encoded_events_parse_back_from_any_chunking(
    events: list[tuple[str, str | None, str | None, int | None]], cuts: list[int]
) -> None:
    wire = b"".join(encode(d, event=e, id=i, retry=r) for d, e, i, r in events)
    parser = SseParser()
    parsed: list[SseEvent] = []
    for chunk in _chunks(wire, cuts):
        parsed.extend(parser.feed(chunk))
    expected = [
        SseEvent(d.replace("\r\n", "\n").replace("\r", "\n"), e, i, r)
        for d, e, i, r in events
    ]
    assert parsed == expected


_line = st.text(
    st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
    max_size=12,
).map(lambda text: text if ":" in text else f"data:{text}")


@given(
    lines=st.lists(
        st.tuples(_line | st.just(""), st.sampled_from(["\n", "\r", "\r\n"])),
        max_size=12,
    ),
    cuts=st.lists(st.integers(0, 10**4), max_size=8),
)
def test_every_line_ending_reads_as_a_newline_however_the_stream_is_cut(
    lines: list[tuple[str, str]], cuts: list[int]
) -> None:
    # A "\r" end, then an empty line ending in "\n", is one "\r\n" on the wire.
    assume(
        not any(
            end == "\r" and not line and next_end[0] == "\n"
            for (_line, end), (line, next_end) in itertools.pairwise(lines)
        )
    )
    wire = "".join(line + end for line, end in lines).encode()
    # "\r\n" cut between two chunks is still one line end, not two.
    parser = SseParser()
    parsed = [e for chunk in _chunks(wire, cuts) for e in parser.feed(chunk)]
    plain = "".join(line + "\n" for line, _end in lines).encode()
    assert parsed == SseParser().feed(plain)


def test_a_priming_event_has_an_id_a_retry_and_empty_data() -> None:
    assert encode("", id="1-2", retry=100) == b"id: 1-2\nretry: 100\ndata: \n\n"
    assert SseParser().feed(encode("", id="1-2", retry=100)) == [
        SseEvent("", None, "1-2", 100)
    ]


async def _written(steps: str) -> list[bytes]:
    """The body writes an SseResponse makes for ``steps``: p(rime), e(vent),
    f(lush), x (end)."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    sse = SseResponse(send)
    for step in steps:
        if step == "p":
            sse.prime("0-1", 500)
        elif step == "e":
            await sse.event('{"n":1}', id="0-2")
        elif step == "f":
            await sse.flush()
        else:
            await sse.end()
    assert sent[0]["type"] == "http.response.start"
    assert all(m["type"] == "http.response.body" for m in sent[1:])
    return [m["body"] for m in sent[1:]]


PRIMING = encode("", id="0-1", retry=500)
MESSAGE = encode('{"n":1}', event="message", id="0-2")


async def test_a_held_priming_event_goes_first_in_the_next_events_write() -> None:
    assert await _written("pex") == [PRIMING + MESSAGE, b""]


async def test_a_flushed_priming_event_is_written_alone_and_only_once() -> None:
    assert await _written("pfex") == [PRIMING, MESSAGE, b""]
    assert await _written("pfx") == [PRIMING, b""]


async def test_ending_a_response_sends_a_held_priming_event_first() -> None:
    assert await _written("px") == [PRIMING, b""]


def test_the_parser_skips_comments_and_understands_every_line_ending() -> None:
    stream = b": keep-alive\r\nid: 7\revent: message\r\ndata: a\ndata:b\n\n"
    assert SseParser().feed(stream) == [SseEvent("a\nb", "message", "7")]


@pytest.mark.parametrize(
    "wire",
    [
        b"data: " + b"x" * 100,  # one line that never ends, in one chunk
        b"data: x\n" * 40,  # an event of many lines that never ends
    ],
    ids=["endless-line", "endless-event"],
)
def test_an_event_over_max_event_is_refused_however_it_comes(wire: bytes) -> None:
    parser = SseParser(max_event=64)

    def feed_all() -> None:
        for start in range(0, len(wire), 7):
            parser.feed(wire[start : start + 7])

    with pytest.raises(SseEventTooLarge, match="over 64 characters"):
        feed_all()


def test_max_event_counts_each_event_afresh() -> None:
    parser = SseParser(max_event=64)
    events = [e for _ in range(100) for e in parser.feed(encode("y" * 40, id="1"))]
    assert [e.data for e in events] == ["y" * 40] * 100


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\0"])
def test_ids_and_names_cannot_smuggle_fields(bad: str) -> None:
    with pytest.raises(ValueError, match="line break"):
        encode("x", id=bad)
    with pytest.raises(ValueError, match="line break"):
        encode("x", event=bad)


# --- the event store ------------------------------------------------------------------


class StoreMachine(RuleBasedStateMachine):
    """The store against a model: every event of a stream, in order, forever,
    except droppable ones, which may be missing (never out of order)."""

    streams = Bundle("streams")

    @initialize(capacity=st.integers(1, 8), max_bytes=st.none() | st.integers(1, 16))
    def start(self, capacity: int, max_bytes: int | None) -> None:
        self.store = EventStore(capacity, max_bytes)
        self.model: dict[int, list[tuple[int, bytes, bool, bool]]] = {STANDALONE: []}
        self.ids: set[str] = set()

    @rule(target=streams)
    def open_stream(self) -> int:
        number = self.store.open_stream()
        assert number not in self.model
        self.model[number] = []
        return number

    @rule(
        stream=streams,
        data=st.binary(max_size=4),
        final=st.booleans(),
        droppable=st.booleans(),
    )
    def append(self, stream: int, data: bytes, final: bool, droppable: bool) -> None:
        if self.model[stream] and self.model[stream][-1][2]:
            with pytest.raises((ValueError, UnknownEvent)):
                self.store.append(stream, data, final=final, droppable=droppable)
            return
        stored = self.store.append(stream, data, final=final, droppable=droppable)
        assert stored.id not in self.ids
        self.ids.add(stored.id)
        self.model[stream].append((stored.seq, data, final, stored.droppable))

    @rule(stream=streams)
    def mark(self, stream: int) -> None:
        try:
            mark = self.store.mark(stream)
        except UnknownEvent:
            assert self.model[stream]
            assert self.model[stream][-1][2]
            return
        assert mark not in self.ids
        self.ids.add(mark)

    @rule(stream=streams, start=st.integers(0, 40))
    def read(self, stream: int, start: int) -> None:
        expected = [(s, d, f, r) for s, d, f, r in self.model[stream] if s > start]
        try:
            got = self.store.read(stream, start)
        except EventsLost:
            return  # allowed only if something after `start` was evicted
        except UnknownEvent:
            assert self.model[stream][-1][2]  # a finished stream, forgotten
            return
        got_events = [(e.seq, e.data, e.final, e.droppable) for e in got]
        # Only droppable events may be missing; what is there is in order.
        assert [e for e in expected if e in got_events or not e[3]] == got_events

    @invariant()
    def bounded(self) -> None:
        store = self.store
        assert len(store) <= store.capacity
        if store.max_bytes is not None and len(store) > 1:
            assert store.bytes <= store.max_bytes


TestEventStore = StoreMachine.TestCase


def test_a_reader_behind_the_bound_is_told_events_were_lost() -> None:
    store = EventStore(2)
    stream = store.open_stream()
    first = store.append(stream, b"1")
    store.append(stream, b"2")
    store.append(stream, b"3")
    with pytest.raises(EventsLost):
        store.read(stream, first.seq - 1)
    assert [e.data for e in store.read(stream, first.seq)] == [b"2", b"3"]


def test_a_burst_of_notices_drops_old_notices_first_never_a_request() -> None:
    store = EventStore(4)
    stream = store.open_stream()
    question = store.append(stream, b"request")
    for number in range(100):
        store.append(stream, b"notice %d" % number, droppable=True)
    store.append(stream, b"response", final=True)
    got = [e.data for e in store.read(stream, question.seq - 1)]
    assert got == [b"request", b"notice 98", b"notice 99", b"response"]
    assert store.dropped == 98


@pytest.mark.parametrize(
    "bad",
    [
        *["", "x", "1-", "-1", "1-2-3", "\u0661-\u0662", "99-1"],
        pytest.param("1-" + "9" * 5000, id="past-int-digits"),
    ],
)
def test_foreign_event_ids_are_unknown(bad: str) -> None:
    store = EventStore()
    with pytest.raises(UnknownEvent):
        store.locate(bad)


def test_event_ids_name_their_stream() -> None:
    store = EventStore()
    stream = store.open_stream()
    stored = store.append(stream, b"x")
    assert parse_event_id(stored.id) == (stream, stored.seq)
    assert store.locate(stored.id) == (stream, stored.seq)


# --- the guard ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "127.0.0.1:8000"}, None),
        ({"host": "localhost"}, None),
        ({"host": "[::1]:9"}, None),
        ({"host": "LOCALHOST:1", "origin": "http://127.0.0.1:8000"}, None),
        ({"host": "localhost", "origin": "https://[::1]:8000"}, None),
        # Another local web app (another port) is another origin.
        ({"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:5173"}, 403),
        ({"host": "localhost", "origin": "https://[::1]"}, 403),
        ({"host": "localhost", "origin": "http://localhost"}, 403),
        ({}, 421),
        ({"host": "evil.example.com"}, 421),
        ({"host": "127.0.0.1.evil.com:80"}, 421),
        ({"host": "evil.example.com", "origin": "http://evil.example.com"}, 421),
        ({"host": "127.0.0.1", "origin": "http://evil.example.com"}, 403),
        ({"host": "127.0.0.1", "origin": "http://localhost.evil.com"}, 403),
        ({"host": "127.0.0.1", "origin": "null"}, 403),
        ({"host": "127.0.0.1", "origin": "http://127.0.0.1:bad"}, 403),
        ({"host": "127.0.0.1", "origin": "file://localhost"}, 403),
    ],
)
def test_only_loopback_hosts_and_the_servers_own_origins_pass_by_default(
    headers: dict[str, str], status: int | None
) -> None:
    rejection = Guard(port=8000).check(headers)
    assert (rejection and rejection.status) == status


def test_no_origin_is_the_servers_own_until_it_knows_its_port() -> None:
    guard = Guard()
    headers = {"host": "127.0.0.1:80", "origin": "http://127.0.0.1"}
    assert guard.check({"host": "127.0.0.1:80"}) is None
    assert guard.check(headers) == Rejection(403, "Invalid Origin header")
    guard.serve_at(80)
    assert guard.check(headers) is None


def test_operators_can_allow_more_hosts_and_origins() -> None:
    guard = Guard(allowed_hosts=["mcp.lan"], allowed_origins=["https://app.example/"])
    assert (
        guard.check({"host": "mcp.lan:8000", "origin": "https://app.example"}) is None
    )
    assert guard.check({"host": "other.lan"}) is not None


def test_media_type_checks() -> None:
    assert json_content_type({"content-type": "application/json; charset=utf-8"})
    assert not json_content_type({"content-type": "text/plain"})
    assert not json_content_type({})
    assert accepts({}, "text/event-stream")
    assert accepts({"accept": "application/*"}, "application/json")
    assert not accepts({"accept": "text/html"}, "application/json")


# --- the modern header ladder ---------------------------------------------------------

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
GOOD = {"mcp-protocol-version": "2026-07-28"}


def _request(method: str, **params: Any) -> Request:
    return Request(7, method, {"_meta": META, **params})


def _lookup(tool: str) -> dict[str, str]:
    return {"region": "Region", "count": "Count"} if tool == "t" else {}


def _check(headers: dict[str, str], request: Request) -> int | None:
    error = check(headers, request, ("2026-07-28",), _lookup)
    return None if error is None else error.code


def test_a_request_with_matching_headers_passes() -> None:
    request = _request("tools/call", name="t", arguments={"region": "eu", "count": 3})
    headers = {
        **GOOD,
        "mcp-method": "tools/call",
        "mcp-name": " t\t",
        "mcp-param-region": "eu",
        "mcp-param-count": "3",
    }
    assert _check(headers, request) is None


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        (
            {"mcp-protocol-version": "2025-11-25", "mcp-method": "tools/list"},
            HEADER_MISMATCH,
        ),
        ({"mcp-method": "tools/list"}, HEADER_MISMATCH),
        ({**GOOD}, HEADER_MISMATCH),
        ({**GOOD, "mcp-method": "TOOLS/LIST"}, HEADER_MISMATCH),
        ({**GOOD, "mcp-method": "tools/list, tools/list"}, HEADER_MISMATCH),
    ],
)
def test_version_and_method_headers_must_match(
    headers: dict[str, str], code: int
) -> None:
    assert _check(headers, _request("tools/list")) == code


def test_an_unsupported_version_names_what_is_supported() -> None:
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "v999"}
    request = Request("a", "server/discover", {"_meta": meta})
    error = check({"mcp-protocol-version": "v999"}, request, ("2026-07-28",), _lookup)
    assert error is not None
    assert error.code == UNSUPPORTED_VERSION
    assert error.data == {"supported": ["2026-07-28"], "requested": "v999"}


@pytest.mark.parametrize(
    "meta",
    [None, {}, {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}],
)
def test_an_incomplete_envelope_is_left_to_the_handler(meta: Any) -> None:
    params = {} if meta is None else {"_meta": meta}
    assert (
        check({}, Request(1, "server/discover", params), ("2026-07-28",), _lookup)
        is None
    )


@pytest.mark.parametrize("name", [None, "wrong", "  other  "])
def test_mcp_name_must_match(name: str | None) -> None:
    headers = {**GOOD, "mcp-method": "resources/read"}
    if name is not None:
        headers["mcp-name"] = name
    assert (
        _check(headers, _request("resources/read", uri="test://x")) == HEADER_MISMATCH
    )


@pytest.mark.parametrize(
    ("sent", "arguments", "ok"),
    [
        ({"region": "=?base64?SGVsbG8=?="}, {"region": "Hello"}, True),
        ({"region": "=?base64?SGVsbG8?="}, {"region": "Hello"}, False),
        ({"region": "=?base64?SGVs!!!bG8=?="}, {"region": "Hello"}, False),
        ({"region": "SGVsbG8="}, {"region": "SGVsbG8="}, True),
        ({"region": "=?base64?SGVsbG8="}, {"region": "=?base64?SGVsbG8="}, True),
        ({"region": "=?base64?/w==?="}, {"region": "\xff"}, False),
        ({"region": ""}, {"region": ""}, True),
        ({}, {"region": "test-value"}, False),
        ({"region": "x"}, {}, False),
        ({}, {}, True),
        ({}, {"region": None}, True),
        ({"count": "true"}, {"count": True}, True),
        ({"count": "3"}, {"count": 3}, True),
        ({"count": "4"}, {"count": 3}, False),
    ],
)
def test_param_headers_carry_the_argument(
    sent: dict[str, str], arguments: dict[str, Any], ok: bool
) -> None:
    headers = {**GOOD, "mcp-method": "tools/call", "mcp-name": "t"}
    headers.update({f"mcp-param-{k}": v for k, v in sent.items()})
    code = _check(headers, _request("tools/call", name="t", arguments=arguments))
    assert (code is None) == ok


@given(st.text(st.characters(blacklist_categories=("Cs",))))
def test_encoded_params_decode_to_the_same_text(text: str) -> None:
    encoded = encode_param(text)
    assert decode_param(encoded) == text
    assert all(" " <= c <= "~" for c in encoded)
    assert encoded == encoded.strip(" \t")


@given(st.binary())
def test_decoding_accepts_only_canonical_base64(data: bytes) -> None:
    wrapped = f"=?base64?{base64.b64encode(data).decode()}?="
    try:
        text = data.decode()
    except UnicodeDecodeError:
        with pytest.raises(ValueError, match="base64"):
            decode_param(wrapped)
    else:
        assert decode_param(wrapped) == text


def test_header_params_come_from_x_mcp_header_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
            "bad": {"type": "string", "x-mcp-header": ""},
        },
    }
    assert header_params(schema) == {"region": "Region"}
    assert header_params({"type": "object"}) == {}


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (-32700, 400),
        (-32600, 400),
        (-32602, 400),
        (-32020, 400),
        (-32021, 400),
        (-32022, 400),
        (-32601, 404),
        (-32603, 200),
        (-32042, 200),
    ],
)
def test_error_codes_map_to_http_statuses(code: int, status: int) -> None:
    assert http_status(code) == status


@given(
    region=st.text(st.characters(blacklist_categories=("Cs",))),
    count=st.integers() | st.booleans(),
)
def test_whatever_a_client_mirrors_passes_the_ladder(region: str, count: int) -> None:
    arguments = {"region": region, "count": count}
    headers = {
        **GOOD,
        "mcp-method": "tools/call",
        "mcp-name": "t",
        "mcp-param-region": encode_param(region),
        "mcp-param-count": encode_param(
            str(count).lower() if isinstance(count, bool) else str(count)
        ),
    }
    assert (
        _check(headers, _request("tools/call", name="t", arguments=arguments)) is None
    )


@given(region=st.text(max_size=10), sent=st.text(max_size=10))
def test_a_header_that_decodes_to_another_value_is_refused(
    region: str, sent: str
) -> None:
    headers = {**GOOD, "mcp-method": "tools/call", "mcp-name": "t"}
    headers["mcp-param-region"] = encode_param(sent)
    code = _check(
        headers, _request("tools/call", name="t", arguments={"region": region})
    )
    assert (code is None) == (region == sent)


def test_a_bodies_budget_below_the_largest_body_is_refused() -> None:
    from bridge.transports.http import HttpLimits

    with pytest.raises(ValueError, match="a body of max_body could never be read"):
        HttpLimits(max_body=1000, bodies_bytes=999)
    assert HttpLimits(max_body=1000, bodies_bytes=1000).body_budget == 1000
    # A larger max_body alone raises the default with it.
    assert HttpLimits().body_budget == 64 * 1024 * 1024
    assert HttpLimits(max_body=100 << 20).body_budget == 1600 << 20


_SHAPES = {
    "empty objects": "{}",
    "empty arrays": "[]",
    "small ints": "1",
    "large ints": "123456789",
    "floats": "1.5",
    "nulls": "null",
    "one-letter strings": '"a"',
    "one-member objects": '{"a":1}',
    "two-member objects": '{"a":1,"b":"x"}',
    "arrays of one": "[1]",
}


_TEXTS = {
    "ASCII": "a" * 2_000_000,
    # One character past U+00FF, or past U+FFFF (raw, or as an escape): the
    # whole string takes 2 or 4 bytes a character (PEP 393).
    "Latin-1 and one U+0100": "a" * 2_000_000 + "\u0100",
    "ASCII and one emoji": "a" * 2_000_000 + "\U0001f600",
}
_BODIES = {
    **{name: "[" + ",".join([item] * 50_000) + "]" for name, item in _SHAPES.items()},
    **{name: json.dumps(text, ensure_ascii=False) for name, text in _TEXTS.items()},
    "ASCII and one escaped emoji": json.dumps("a" * 2_000_000 + "\U0001f600"),
}


@pytest.mark.parametrize("body", _BODIES.values(), ids=list(_BODIES))
def test_a_requests_memory_is_reckoned_near_what_reading_it_takes(body: str) -> None:
    # The budget of requests_memory counts this, before the JSON is read:
    # never much below what the body and reading it take (a shape it
    # undercounts a lot would let a client past the bound: a string ending
    # in an emoji took 5 times its estimate), never absurdly above.
    data = body.encode()
    tracemalloc.start()
    try:
        value = pydantic_core.from_json(data)
        taken, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del value
    held = len(data) + taken  # the body is kept beside what is read from it
    assert 0.8 * held <= estimated_memory(data) <= 10 * held + 64 * 1024
