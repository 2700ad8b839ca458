"""What ``yieldmcp call`` shows: the server's offer, a tool's schemas, results."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from bridge.cli.console import CallOptions, host_parts
from decoders.mcp import ToolCallResult
from runtime import Message, Text
from runtime.codec import SERVER_MODELS_META_KEY
from runtime.lowlevel import SamplingRequest
from tests.bridge.cli.inprocess import Done, yieldmcp
from tests.fixtures.every_block import PNG, WAV
from tests.helpers import ROOT, STARTUP

CATALOG = "yieldmcp serve tests/fixtures/catalog_only.py"
BLOCKS = "yieldmcp serve tests/fixtures/every_block.py"
GAME = "yieldmcp serve examples/ttt.py"


def call(*args: str) -> Done:
    # The server's start, not the connect bound, is waited for
    # (tests/bridge/cli/test_client_bounds.py tests the bound).
    return yieldmcp("call", *args, "--connect-timeout", f"{STARTUP}")


def test_a_server_with_only_a_resource_and_a_prompt_lists_them() -> None:
    done = call(CATALOG)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "resources:",
        "  today <notes://today>: Today's notes",
        "",
        "prompts:",
        "  essay(topic, tone?): Write an essay",
    ]


def test_describe_shows_the_inputs_as_a_form_and_the_output_schema() -> None:
    done = call(GAME, "play_ttt", "--describe")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "play_ttt"
    assert "inputs (--arg NAME=VALUE):" in lines
    assert "  seed: Seed (optional) [default none]" in lines
    assert "output (structured):" in lines
    assert "  outcome: Outcome (required)" in lines
    assert "model:" not in done.stdout  # nothing was called


def test_describe_of_a_typod_tool_suggests_the_closest() -> None:
    done = call(GAME, "play_tt", "--describe")
    assert done.returncode == 1
    assert done.stderr == (
        "yieldmcp: error: the server has no tool 'play_tt' (did you mean play_ttt?)\n"
    )


def test_describe_of_an_unknown_tool_is_one_line() -> None:
    done = call(GAME, "nope", "--describe")
    assert done.returncode == 1
    assert done.stderr == (
        "yieldmcp: error: the server has no tool 'nope' (its tools: play_ttt)\n"
    )


def test_every_content_block_is_shown_and_media_is_saved(tmp_path: Path) -> None:
    done = call(BLOCKS, "every_block", "--save-media", str(tmp_path))
    assert done.returncode == 0, done.stderr
    image, audio = tmp_path / "image-3.png", tmp_path / "audio-4.wav"
    assert done.stdout.splitlines() == [  # no `model:` line: it never samples
        "first block",
        "second block",
        f"[image image/png, 4.2 KB] saved to {image}",
        f"[audio audio/wav, 104 B] saved to {audio}",
        "report <file:///r.pdf>",
        "[resource notes://a]",
        "  line one",
    ]
    assert image.read_bytes() == base64.b64decode(PNG)
    assert audio.read_bytes() == base64.b64decode(WAV)


def test_a_link_planted_in_a_shared_media_folder_is_not_followed(
    tmp_path: Path,
) -> None:
    """The names are ours (``image-3.png``), so in a folder others can write
    (``/tmp``) someone may have planted one: a symbolic link to the user's
    file, or a FIFO that would block. Neither is written through; the
    result is shown, says so, and the exit code is 1."""
    shared, victim = tmp_path / "shared", tmp_path / "victim.txt"
    shared.mkdir()
    victim.write_text("precious")
    (shared / "image-3.png").symlink_to(victim)
    os.mkfifo(shared / "audio-4.wav")
    done = call(BLOCKS, "every_block", "--save-media", str(shared))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[2] == (
        f"[image image/png, 4.2 KB] not saved: {shared / 'image-3.png'} "
        f"is not a regular file (not followed)"
    )
    assert lines[3] == (
        f"[audio audio/wav, 104 B] not saved: {shared / 'audio-4.wav'} "
        f"is not a regular file (not followed)"
    )
    assert lines[4:] == ["report <file:///r.pdf>", "[resource notes://a]", "  line one"]
    assert victim.read_text() == "precious"
    assert (shared / "image-3.png").is_symlink()


def test_a_hard_link_planted_in_a_shared_media_folder_is_not_written_through(
    tmp_path: Path,
) -> None:
    """A hard link is a regular file, opened with ``O_NOFOLLOW`` all the
    same: writing it wrote the file it links to, outside the folder."""
    shared, victim = tmp_path / "shared", tmp_path / "victim.txt"
    shared.mkdir()
    victim.write_text("precious")
    os.link(victim, shared / "image-3.png")
    done = call(BLOCKS, "every_block", "--save-media", str(shared))
    assert done.returncode == 1
    assert done.stdout.splitlines()[2] == (
        f"[image image/png, 4.2 KB] not saved: {shared / 'image-3.png'} "
        f"is a hard link (not written through)"
    )
    assert victim.read_text() == "precious"


def test_a_media_folder_that_cannot_be_one_is_refused_before_the_call(
    tmp_path: Path,
) -> None:
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("")
    done = call(BLOCKS, "every_block", "--save-media", str(a_file))
    assert done.returncode == 1
    assert done.stdout == ""  # nothing was called
    assert done.stderr == (
        f"yieldmcp: error: cannot use --save-media {a_file}: it is a file, "
        f"not a folder\n"
    )


BOOKING = [
    "yieldmcp serve examples/book_flight.py", "book_flight",
    "--arg", "destination=Oslo",
    "--answer", 'dates={"depart": "2027-01-05", "nights": 2}',
    "--answer", 'seat={"seat": "aisle"}',
]  # fmt: skip


def test_an_answer_key_no_form_of_a_yieldmcp_tool_can_ask_is_told_first() -> None:
    done = call(*BOOKING, "--json", "--answer", 'saet={"seat": "aisle"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["isError"] is False
    # Once, and from the tool's declared forms, not from what the call asked.
    assert done.stderr == (
        "yieldmcp: warning: book_flight has no form saet (its forms: dates, seat)\n"
    )


def test_an_argument_the_tools_schema_does_not_name_is_told_first() -> None:
    # A typo'd --arg was dropped (an optional one: the default ran instead)
    # or refused as a missing field, with no word of the typo.
    done = call(
        *BOOKING, "--json", "--arg", "destinaton=Lima", "--arg", "xyz=1",
        "--answer", 'seat={"seat": "aisle"}',
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "yieldmcp: warning: book_flight has no argument destinaton; "
        "did you mean destination?",
        "yieldmcp: warning: book_flight has no argument xyz; "
        "its arguments: destination",
    ]


def test_the_unknown_answer_key_is_told_before_the_call_runs() -> None:
    # Was told only after the call had gone on without it. Both streams in
    # one pipe: the warning comes before the call samples (`model:`).
    argv = [sys.executable, "-m", "bridge.cli", "call", *BOOKING]
    argv += ["--answer", 'saet={"seat": "aisle"}', "--connect-timeout", f"{STARTUP}"]
    done = subprocess.run(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    warning = next(i for i, line in enumerate(lines) if "has no form saet" in line)
    model = next(i for i, line in enumerate(lines) if line.startswith("model: "))
    assert warning < model


def test_another_servers_unused_key_is_told_after_the_call_with_the_star() -> None:
    # Another server's forms are known only when it asks; "*" answers any.
    done = call(
        SDK, "mrtr_elicit", "--arg", "message=ok",
        "--answer", 'confrim={"ok": true}', "--answer", 'confirm={"ok": true}',
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("yieldmcp: warning: no form asked for answer key(s) ")
    assert "confrim (keys asked: confirm)" in line
    assert '"*" answers any form' in line


def test_call_help_explains_the_star_key() -> None:
    done = yieldmcp("call", "--help")
    assert done.returncode == 0
    assert "* answers any form" in " ".join(done.stdout.split())


SDK = f"{sys.executable} tests/fixtures/sdk_server.py"


def test_answer_addresses_a_foreign_servers_2026_input_request_keys() -> None:
    done = call(
        SDK, "mrtr_elicit", "--arg", "message=ok", "--answer", 'confirm={"ok": true}'
    )
    assert done.returncode == 0, done.stderr
    assert "accept:{'ok': True}" in done.stdout
    assert "warning" not in done.stderr


def test_a_2025_back_channel_tool_under_era_auto_says_to_use_legacy() -> None:
    args = ["legacy_elicit", "--arg", "message=ok", "--answer", 'confirm={"ok": 1}']
    done = call(SDK, *args)
    assert done.returncode == 1
    assert done.stderr.strip().endswith("try --era legacy"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    legacy = call(SDK, *args, "--era", "legacy")
    assert legacy.returncode == 0, legacy.stderr


URL_TOOL = "yieldmcp serve tests/fixtures/url_required.py"


def test_a_url_step_is_shown_accepted_and_the_call_retried() -> None:
    done = call(URL_TOOL, "pay", "--era", "legacy", "--answer", '$url="accept"')
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "paid"


def test_a_declined_url_step_is_one_line_naming_the_url() -> None:
    done = call(URL_TOOL, "pay", "--era", "legacy", "--answer", '$url="decline"')
    assert done.returncode == 1
    assert done.stderr == (
        "yieldmcp: error: the server needs https://pay.example.com/ok?id=7 "
        "completed first, and that was declined\n"
    )


LIAR = f"{sys.executable} tests/fixtures/lying_server.py"


def test_a_result_that_breaks_its_output_schema_is_one_line_and_exit_1() -> None:
    done = call(LIAR, "weather")
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("yieldmcp: error: ")
    assert 'temp: "not a number" is not of type "integer"' in line
    assert "--no-validate-output" in line


def test_no_validate_output_shows_what_the_server_sent() -> None:
    done = call(LIAR, "weather", "--no-validate-output", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"] == {"temp": "not a number"}


SDK = f"{sys.executable} tests/fixtures/sdk_server.py"
FLIGHT = "yieldmcp serve examples/book_flight.py"


def test_the_listing_shows_each_tools_parameters() -> None:
    done = call(GAME)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "play_ttt(seed: int | None = None): Play a game of tic-tac-toe against the "
        "model; you pick cells."
    )


def test_a_signature_reads_types_defaults_and_optional_fields() -> None:
    from bridge.cli.show import tool_signature

    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "string", "default": "x"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"enum": ["fast", "slow"]},
            "point": {"$ref": "#/$defs/Point"},
            "flag": {"type": "boolean", "default": True},
        },
        "required": ["a", "point"],
    }
    assert tool_signature({"name": "t", "inputSchema": schema}) == (
        't(a: int, b: str = "x", tags?: list[str], mode?: Literal["fast", "slow"], '
        "point: Point, flag: bool = True)"
    )
    assert tool_signature({"name": "none"}) == "none()"


def test_the_listing_as_json_carries_each_tools_schemas() -> None:
    done = call(GAME, "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)  # stdout is the JSON, nothing else
    (tool,) = listing["tools"]
    assert tool["name"] == "play_ttt"
    assert tool["inputSchema"]["properties"]["seed"]["default"] is None
    assert "outcome" in tool["outputSchema"]["properties"]
    assert listing["resources"] == listing["prompts"] == []


def test_the_json_listing_has_resources_and_prompts_too() -> None:
    done = call(CATALOG, "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert listing["tools"] == []
    assert [r["uri"] for r in listing["resources"]] == ["notes://today"]
    assert [p["name"] for p in listing["prompts"]] == ["essay"]


def test_a_typod_tool_name_gets_our_servers_suggestion_once() -> None:
    done = call(FLIGHT, "book_flght")
    assert done.returncode == 1
    assert done.stderr == (
        "yieldmcp: error: the server refused: Unknown tool: book_flght; "
        "did you mean book_flight? (-32602)\n"
    )


def test_a_name_like_no_tool_is_told_what_tools_there_are() -> None:
    done = call(FLIGHT, "zzz")
    assert done.returncode == 1
    assert done.stderr == (
        "yieldmcp: error: the server refused: Unknown tool: zzz; "
        "its tools: book_flight (-32602)\n"
    )


def test_another_servers_unknown_tool_error_gets_a_suggestion_from_its_list() -> None:
    # The official SDK answers an unknown tool with a tool error, no hint.
    done = call(SDK, "legacy_smple", "--era", "legacy")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "yieldmcp: error: tool error: Unknown tool: legacy_smple; "
        "did you mean legacy_sample?"
    )


async def test_when_both_sides_models_answered_both_are_named() -> None:
    # The client's model answered one sample (named as it is first asked),
    # the server's own answered another (named by the result).
    out = io.StringIO()
    _forms, sampler, show = host_parts(CallOptions(target="unused", tool="t"), out)
    await sampler.complete(SamplingRequest(messages=[Message.user("hi")]))
    meta = {SERVER_MODELS_META_KEY: ["server-model"]}
    result = ToolCallResult(content=(Text("done"),), meta=meta)
    assert show.result(result, json_output=False) == 0
    assert out.getvalue().splitlines() == [
        "model: offline (the built-in offline model: no API key, no network)",
        "model: server-model (the server's own model)",
        "done",
    ]
    plain = io.StringIO()
    _forms, _sampler, show = host_parts(CallOptions(target="-", tool="t"), plain)
    assert show.result(ToolCallResult(content=(Text("done"),)), json_output=False) == 0
    assert plain.getvalue().splitlines() == ["done"]  # nobody sampled: no model


def test_the_listing_cuts_a_long_description_and_describing_shows_it_whole() -> None:
    from bridge.cli.show import SUMMARY_MAX, describe_tool, offer_lines

    # A hostile or careless server's description on one line, megabytes long.
    long = "word " * 200_000
    tool = {"name": "t", "description": long + "\nsecond line"}
    [line] = offer_lines([tool])
    assert line == "t(): " + long[: SUMMARY_MAX - 1].rstrip() + "…"
    assert describe_tool(tool)[1:3] == ["  " + long, "  second line"]
    short = {"name": "s", "description": "x" * SUMMARY_MAX}
    assert offer_lines([short]) == ["s(): " + "x" * SUMMARY_MAX]
