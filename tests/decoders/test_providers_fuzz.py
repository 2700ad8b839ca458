"""Provider decoders never crash on junk: a reply, or the documented error.

For each of the five provider APIs, Hypothesis feeds the whole-response decoder
(``Api.decode``) and the stream accumulator (``Api.feed``, then ``finish``), as
``bridge.providers._http`` drives them:

(a) random JSON, spelled with the provider's own field names and values;
(b) recorded responses (and stream events) with one node, at a random path,
    dropped, retyped or replaced, or a number or string set to an extreme;
(c) recorded streams cut at a random point, or with events dropped or
    repeated; and, through ``HttpProvider`` on a mock transport, streams and
    bodies cut at any byte.

The invariant: the decoder returns a valid reply — its MCP form validates as a
2025-11-25 ``CreateMessageResult`` and usage is counted in non-negative
integers — or raises ``RemoteProtocolError`` or ``ProviderError``
(``runtime.errors``), never ``KeyError``, ``TypeError`` and the like. A stream
that lost its last event was cut short: it raises, so a partial tool call is
never returned.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Any, cast

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.providers import HttpProvider, Retry
from runtime.errors import ProviderError, RemoteProtocolError
from runtime.messages import RAW_ARGUMENTS_KEY
from runtime.replies import SampleReply
from tests.bridge.providers.cases import CASES, DATA, MODELS, load
from tests.bridge.providers.recordings import (
    APIS,
    PROVIDERS,
    as_json,
    expected,
    recordings,
    stream_path,
    stream_payloads,
    structured,
)
from tests.helpers import fewer_examples
from tests.mcp_schema import validate

DOCUMENTED = (RemoteProtocolError, ProviderError)
# Each property below runs once per provider or per recording (dozens): a
# quarter of the profile's examples each still gives every decoder hundreds.
PER_CASE = fewer_examples(0.25)
Path = tuple[str | int, ...]


def check(reply: SampleReply) -> None:
    """``reply`` is one a caller can use (see the module doc)."""
    assert isinstance(reply, SampleReply)
    validate("2025-11-25", "CreateMessageResult", as_json(reply))
    if reply.usage is not None:
        for count in (reply.usage.input_tokens, reply.usage.output_tokens):
            assert type(count) is int, reply.usage
            assert count >= 0, reply.usage


def outcome(decode: Callable[[], SampleReply]) -> SampleReply | None:
    """The reply ``decode`` returns (checked), or None if it raised as documented."""
    try:
        reply = decode()
    except ProviderError as exc:
        check_error(exc)
        return None
    except RemoteProtocolError:
        return None
    check(reply)
    return reply


def check_error(exc: ProviderError) -> None:
    """``exc`` has the fields its type documents, whatever the provider sent."""
    assert isinstance(exc.code, str | None), exc.code
    assert isinstance(exc.status, int | None), exc.status


def accumulate(provider: str, payloads: list[str], is_structured: bool) -> SampleReply:
    api = APIS[provider]
    accumulator = api.accumulator(is_structured)
    for data in payloads:
        api.feed(accumulator, data)
    return accumulator.finish()


# --- recordings ---------------------------------------------------------------------


RESPONSES = [(p, n) for p in PROVIDERS for n in recordings(p, "response")]
STREAMS = [(p, n) for p in PROVIDERS for n in recordings(p, "stream")]


@cache
def payloads_of(provider: str, name: str) -> tuple[str, ...]:
    text = stream_path(provider, name).read_text()
    return tuple(stream_payloads(provider, text))


def is_whole(provider: str, name: str) -> bool:
    """A recording that decodes to a reply (a stream that ends as it should)."""
    return (DATA / provider / f"reply_{name}.json").exists()


@cache
def vocabulary(provider: str) -> tuple[list[str], list[str]]:
    """The field names and (short) string values ``provider`` uses."""
    keys: set[str] = set()
    strings: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in cast("dict[str, Any]", value).items():
                keys.add(key)
                walk(item)
        elif isinstance(value, list):
            for item in cast("list[Any]", value):
                walk(item)
        elif isinstance(value, str) and len(value) <= 40:
            strings.add(value)

    for name in recordings(provider, "response"):
        walk(load(provider, name))
    for name in recordings(provider, "stream"):
        for data in payloads_of(provider, name):
            if data != "[DONE]":
                walk(json.loads(data))
    return sorted(keys), sorted(strings)


# --- strategies ---------------------------------------------------------------------


def json_values(provider: str) -> st.SearchStrategy[Any]:
    """Random JSON, mostly in ``provider``'s own words so it gets past the
    first lookup."""
    keys, strings = vocabulary(provider)
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**63),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.sampled_from(strings),
    )
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(keys) | st.text(max_size=4), inner, max_size=5
            )
        ),
        max_leaves=15,
    )


def json_objects(provider: str) -> st.SearchStrategy[dict[str, Any]]:
    keys, _ = vocabulary(provider)
    return st.dictionaries(
        st.sampled_from(keys) | st.text(max_size=4), json_values(provider), max_size=6
    )


def paths(value: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every path into ``value`` (the root included)."""
    yield prefix
    steps: Iterable[tuple[str | int, Any]] = ()
    if isinstance(value, dict):
        steps = cast("dict[str, Any]", value).items()
    elif isinstance(value, list):
        steps = enumerate(cast("list[Any]", value))
    for step, item in steps:
        yield from paths(item, (*prefix, step))


_KINDS: dict[type, str] = {
    type(None): "null",
    bool: "bool",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def retyped(value: Any) -> st.SearchStrategy[Any]:
    """JSON of another type than ``value``'s."""
    others = {
        "null": st.none(),
        "bool": st.booleans(),
        "number": st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False),
        "string": st.text(max_size=6),
        "array": st.lists(st.integers(-1, 1) | st.text(max_size=2), max_size=2),
        "object": st.dictionaries(st.text(max_size=3), st.integers(-1, 1), max_size=2),
    }
    del others[_KINDS[type(value)]]
    return st.one_of(*others.values())


# Values at the edges: an index or a count far out of range, a long string.
EXTREME_NUMBERS = st.sampled_from([-1, 2**31, 2**63, -(2**63), 1e308, 0.5])
EXTREME_STRINGS = st.sampled_from(["", "x" * 10_000, "\x00", "\ud800"])


def mutate(provider: str, value: Any, data: st.DataObject) -> Any:
    """A copy of ``value`` with one node dropped, retyped or replaced with any
    JSON; or one number or string replaced with one at the edges."""
    how = data.draw(
        st.sampled_from(["drop", "retype", "replace", "extreme"]), label="how"
    )
    every = list(paths(value))
    scalars = [p for p in every if isinstance(_at(value, p), int | float | str)]
    if how == "extreme" and scalars:
        every = scalars
    path = data.draw(st.sampled_from(every), label="path")
    mutated = copy.deepcopy(value)
    if not path:
        return {} if how == "drop" else data.draw(json_values(provider))
    parent = _at(mutated, path[:-1])
    last = path[-1]
    if how == "drop":
        del parent[last]
    elif how == "retype":
        parent[last] = data.draw(retyped(parent[last]), label="new value")
    elif how == "replace" or not scalars:
        parent[last] = data.draw(json_values(provider), label="new value")
    else:
        edge = EXTREME_STRINGS if isinstance(parent[last], str) else EXTREME_NUMBERS
        parent[last] = data.draw(edge, label="new value")
    return mutated


def _at(value: Any, path: Path) -> Any:
    for step in path:
        value = value[step]
    return value


def edited(
    provider: str, payloads: tuple[str, ...], data: st.DataObject
) -> tuple[list[str], bool]:
    """``payloads`` with events dropped, repeated or mutated (at least one
    edit), and whether an event was mutated."""
    out = list(payloads)
    mutated = False
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        if not out:
            break
        index = data.draw(st.integers(0, len(out) - 1), label="at")
        how = data.draw(st.sampled_from(["drop", "repeat", "mutate"]), label="edit")
        if how == "drop":
            del out[index]
        elif how == "repeat":
            out.insert(index, out[index])
        elif out[index] != "[DONE]":
            event = mutate(provider, json.loads(out[index]), data)
            mutated = True
            out[index] = json.dumps(event)
    return out, mutated


def calls(reply: SampleReply) -> list[tuple[str, str]]:
    return [(u.name, json.dumps(u.input, sort_keys=True)) for u in reply.tool_uses]


# --- (a) random JSON ----------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@PER_CASE
@given(data=st.data(), is_structured=st.booleans())
def test_random_json_bodies_decode_or_raise_the_documented_error(
    provider: str, data: st.DataObject, is_structured: bool
) -> None:
    body = data.draw(json_objects(provider), label="body")
    outcome(lambda: APIS[provider].decode(body, is_structured))


@pytest.mark.parametrize("provider", PROVIDERS)
@PER_CASE
@given(data=st.data(), is_structured=st.booleans())
def test_random_json_events_accumulate_or_raise_the_documented_error(
    provider: str, data: st.DataObject, is_structured: bool
) -> None:
    event = json_values(provider).map(json.dumps)
    if provider == "openai":
        event = event | st.just("[DONE]")
    payloads = data.draw(st.lists(event, max_size=8), label="events")
    outcome(lambda: accumulate(provider, payloads, is_structured))


# --- (b) recorded responses, mutated ------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@PER_CASE
@given(data=st.data())
def test_a_mutated_recorded_response_decodes_or_raises_the_documented_error(
    provider: str, data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(recordings(provider, "response")), label="name")
    body = mutate(provider, load(provider, name), data)
    if isinstance(body, dict):  # what HttpProvider hands a decoder
        outcome(lambda: APIS[provider].decode(body, structured(name)))


# --- (c) recorded streams, cut and edited -------------------------------------------


@pytest.mark.parametrize(("provider", "name"), STREAMS)
@given(data=st.data())
def test_a_recorded_stream_cut_short_raises(
    provider: str, name: str, data: st.DataObject
) -> None:
    payloads = payloads_of(provider, name)
    cut = data.draw(st.integers(0, len(payloads) - 1), label="cut")
    with pytest.raises(DOCUMENTED):
        accumulate(provider, list(payloads[:cut]), structured(name))


@pytest.mark.parametrize(("provider", "name"), STREAMS)
@PER_CASE
@given(data=st.data())
def test_an_edited_recorded_stream_accumulates_or_raises_the_documented_error(
    provider: str, name: str, data: st.DataObject
) -> None:
    recorded = payloads_of(provider, name)
    payloads, mutated = edited(provider, recorded, data)
    reply = outcome(lambda: accumulate(provider, payloads, structured(name)))
    if mutated:
        return  # a changed event may say anything, as long as it says it validly
    if recorded[-1] not in payloads:
        assert reply is None, "a stream without its last event gave a reply"
    if reply is not None:
        # Events lost or repeated, none changed: every call is one the model
        # made, or its arguments are flagged raw (never a part passed as
        # whole). Only arguments lost entirely cannot be told from none at all.
        whole = calls(accumulate(provider, list(recorded), structured(name)))
        names = {called for called, _ in whole}
        for call in calls(reply):
            assert (
                call in whole
                or RAW_ARGUMENTS_KEY in call[1]
                or (call[0] in names and call[1] == "{}")
            ), call


def numbers(provider: str, name: str) -> list[tuple[int, Path]]:
    """Where the integers are in a recorded stream: (event, path) pairs."""
    found: list[tuple[int, Path]] = []
    for at, payload in enumerate(payloads_of(provider, name)):
        if payload != "[DONE]":
            event = json.loads(payload)
            found += [(at, p) for p in paths(event) if type(_at(event, p)) is int]
    return found


@pytest.mark.parametrize(
    ("provider", "name"), [(p, n) for p, n in STREAMS if numbers(p, n)]
)
@PER_CASE
@given(data=st.data())
def test_a_recorded_stream_with_numbers_at_the_edge_accumulates_or_raises(
    provider: str, name: str, data: st.DataObject
) -> None:
    # Indices and counts far out of range must be refused or borne, never
    # padded up to (a part index of 2**63 would fill the memory).
    payloads = list(payloads_of(provider, name))
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        at, path = data.draw(st.sampled_from(numbers(provider, name)), label="at")
        event = json.loads(payloads[at])
        _at(event, path[:-1])[path[-1]] = data.draw(EXTREME_NUMBERS, label="to")
        payloads[at] = json.dumps(event)
    outcome(lambda: accumulate(provider, payloads, structured(name)))


def _http(provider: str, stream: bool, content: bytes) -> HttpProvider:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=content)

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    return HttpProvider(
        api=APIS[provider],
        model=MODELS[provider],
        base_url="http://provider.test",
        stream=stream,
        retry=Retry(max_retries=0),
        client=client,
    )


def _raw_cases() -> list[tuple[str, str]]:
    return [(p, n) for p, n in STREAMS + RESPONSES if not structured(n)]


# httpx 0.28 nests async generators (aiter_lines over aiter_text over
# aiter_bytes...) without closing the inner ones when the outer one is closed
# early, as a decoding error does; trio then warns as the garbage collector
# finds them (encode/httpx#3593). Only those are ignored: the generators we
# iterate ourselves must be closed by us.
HTTPX_GENERATORS = (
    r"ignore:Async generator 'httpx\._(models\.Response\.aiter_(text|bytes|raw)"
    r"|content\.\w+\.__aiter__|client\.\w+\.__aiter__)'.*:ResourceWarning"
)


@pytest.mark.filterwarnings(HTTPX_GENERATORS)
@pytest.mark.parametrize(("provider", "name"), _raw_cases())
@PER_CASE
@given(data=st.data())
async def test_an_answer_cut_at_any_byte_raises_or_is_whole(
    provider: str, name: str, data: st.DataObject
) -> None:
    stream = name.startswith("stream_")
    path = stream_path(provider, name) if stream else None
    raw = path.read_bytes() if path else json.dumps(load(provider, name)).encode()
    cut = data.draw(st.integers(0, len(raw)), label="cut")
    http = _http(provider, stream, raw[:cut])
    try:
        reply = await http.complete(CASES["text"])
    except DOCUMENTED:
        return
    finally:
        assert http.client is not None
        await http.client.aclose()
    check(reply)
    assert is_whole(provider, name), "a stream that never ended gave a reply"
    assert as_json(reply) == expected(provider, name), "a partial answer was returned"
