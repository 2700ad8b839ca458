"""Which era ``era="auto"`` picks (:mod:`bridge.client.handshake`) against a
real stdio server that refuses ``server/discover`` (and maybe ``initialize``)
with the errors real servers send. The slow and the silent probe are
``tests/bridge/cli/test_client_bounds.py``'s.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
import trio

from bridge.client import connect
from runtime.errors import PeerError
from tests.bridge.client.test_output_schemas import LIAR


@pytest.mark.parametrize("code", [-32601, -32602])
async def test_auto_uses_initialize_when_the_server_does_not_know_discover(
    code: int,
) -> None:
    # -32602 is what the Python SDK 1.x answers for a method it does not know.
    command = [*LIAR, "--refuse-discover", str(code)]
    with trio.fail_after(60):
        async with connect(command, era="auto") as client:
            assert client.era == "2025-11-25"
            assert (await client.call_tool("honest")).text == "lists: 1"


async def test_auto_raises_the_probes_error_when_initialize_is_refused_too() -> None:
    command = [*LIAR, "--refuse-discover", "-32602", "--refuse-initialize"]
    with trio.fail_after(60), pytest.raises(PeerError) as caught:
        async with connect(command, era="auto"):
            pass
    assert (caught.value.code, caught.value.message) == (-32602, "Not today")


async def test_auto_does_not_use_initialize_after_another_error() -> None:
    command = [*LIAR, "--refuse-discover", "-32603"]
    with trio.fail_after(60), pytest.raises(PeerError) as caught:
        async with connect(command, era="auto"):
            pass
    assert caught.value.code == -32603


async def test_a_refused_log_level_is_warned_of_and_the_call_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The server claims `logging` but never registered logging/setLevel: the
    # level the client asks for is a wish, not worth failing the connection.
    command = [*LIAR, "--claim-logging"]
    with trio.fail_after(60):
        async with connect(command, era="legacy", log_level="debug") as client:
            assert (await client.call_tool("honest")).text == "lists: 1"
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warned] == [
        "the server refused logging/setLevel (peer error -32601: Method not found:"
        " logging/setLevel); it logs at its own level"
    ]


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("meta_str", "the server's server/discover _meta is str, not an object"),
        ("versions_str", "the server does not speak 2026-07-28"),  # not a substring
        ("versions_int", "the server does not speak 2026-07-28"),
        ("caps_list", "the server's capabilities is list, not an object"),
        ("discover_list", "the server's server/discover answer is list, not an object"),
        ("info_str", "the server's serverInfo is str, not an object"),
        ("init_list", "the server's initialize answer is list, not an object"),
        ("init_null", "the server's initialize answer is null, not an object"),
        ("init_caps_str", "the server's capabilities is str, not an object"),
        (
            "init_modern",
            "the server answered initialize with protocolVersion '2026-07-28', "
            "which initialize does not negotiate",
        ),
        ("init_instructions_int", "the server's instructions is int, not a string"),
    ],
)
async def test_a_handshake_answer_of_the_wrong_shape_is_one_clear_error(
    kind: str, said: str
) -> None:
    # Each was an AttributeError or TypeError (a traceback at the terminal),
    # or, for init_modern, a 2025-11-25 connection sending 2026 envelopes.
    from runtime.errors import RemoteProtocolError
    from tests.fixtures import odd_handshake

    command = [sys.executable, odd_handshake.__file__, kind]
    with trio.fail_after(60), pytest.raises(RemoteProtocolError) as caught:
        async with connect(command, era="auto"):
            pass
    assert str(caught.value).startswith(said)


@pytest.mark.parametrize("era", ["2025-11-25", "modern", "", None])
async def test_an_era_that_names_none_is_refused_before_anything_starts(
    era: object, tmp_path: Path
) -> None:
    # A version string is the natural guess for the older era: it must not
    # quietly become "auto" (the server then picks, not the caller).
    started = tmp_path / "started"
    command = [sys.executable, "-c", f"open({str(started)!r}, 'w')"]
    with pytest.raises(ValueError, match=r"era must be 'auto', 'legacy'.*not "):
        async with connect(command, era=era):  # type: ignore[arg-type]
            pass
    assert not started.exists()
