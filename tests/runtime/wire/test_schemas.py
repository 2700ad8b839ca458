"""runtime.wire.schemas: a validator of a peer's JSON Schema fetches nothing.

Given no registry, ``jsonschema`` fetches a ``$ref`` to a URL with a blocking
``urlopen``: a hostile peer's schema could make a process request any URL.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from runtime.lowlevel import Unresolvable, offline_validator


@pytest.fixture
def listener() -> Iterator[tuple[str, list[object]]]:
    """A loopback listener that counts who connects (and hangs up on them)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    connected: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                peer, _ = server.accept()
            except TimeoutError:
                continue
            connected.append(peer)
            peer.close()

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/schema.json", connected
    finally:
        stop.set()
        thread.join()
        server.close()


def test_a_reference_elsewhere_is_unresolvable_and_never_fetched(
    listener: tuple[str, list[object]],
) -> None:
    url, connected = listener
    validator = offline_validator({"$ref": url})
    with pytest.raises(Unresolvable):
        list(validator.iter_errors({"a": 1}))
    nested = offline_validator({"type": "object", "properties": {"a": {"$ref": url}}})
    with pytest.raises(Unresolvable):
        nested.is_valid({"a": 1})
    assert connected == []


def test_a_reference_within_the_schema_resolves() -> None:
    schema = {
        "$defs": {"n": {"type": "integer"}},
        "properties": {"n": {"$ref": "#/$defs/n"}},
    }
    validator = offline_validator(schema)
    assert validator.is_valid({"n": 1})
    assert [e.message for e in validator.iter_errors({"n": "x"})] == [
        "'x' is not of type 'integer'"
    ]


def test_the_schema_s_own_draft_is_used() -> None:
    # Draft 7's "dependencies" means nothing in 2020-12, the default.
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "dependencies": {"a": ["b"]},
    }
    assert not offline_validator(schema).is_valid({"a": 1})
    assert offline_validator({"dependencies": {"a": ["b"]}}).is_valid({"a": 1})
