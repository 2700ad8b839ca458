"""What a ``yieldmcp`` process imports: what its verb needs, not the rest.

The suite and every user start many of these processes, and their start-up is
mostly imports: each era's ``mcp-types`` models (~150 pydantic classes each),
``jsonschema``, the server stack. So ``call`` does not import the server to
parse its flags, neither verb imports ``jsonschema`` before a schema is checked,
and an era's models are built by the first payload of that era. Asserted on
``sys.modules`` in a fresh interpreter, never on seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers import ROOT

V2025 = "mcp_types._v2025_11_25"
V2026 = "mcp_types._v2026_07_28"


def _imported(script: str) -> dict[str, list[str]]:
    """Run ``script`` in a fresh interpreter; it calls ``seen(label)`` to record
    which of the watched modules are imported at that point."""
    prelude = textwrap.dedent(
        """
        import json, sys
        WATCHED = ("mcp_types._v2025_11_25", "mcp_types._v2026_07_28",
                   "jsonschema", "jsonschema_rs", "bridge.server",
                   "bridge.transports.http", "bridge.client")
        SEEN = {}
        def seen(label):
            SEEN[label] = [m for m in WATCHED if m in sys.modules]
        """
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            prelude + textwrap.dedent(script) + "\nprint(json.dumps(SEEN))",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_each_verb_imports_only_its_side() -> None:
    seen = _imported(
        """
        import contextlib, io
        from bridge.cli import main
        def parse(*argv):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
                main(list(argv))
        parse("call", "--help")
        seen("call")
        parse("serve", "--help")
        seen("serve")
        """
    )
    assert seen["call"] == []  # neither the server, nor models, nor jsonschema
    assert seen["serve"] == ["bridge.server", "bridge.transports.http"]


def test_help_and_version_only_build_the_parser() -> None:
    """``yieldmcp --help`` and ``--version`` (and a usage error) are what a
    newcomer types first: they import no trio, no pydantic, no runtime."""
    script = """
        import contextlib, io, json, sys
        from bridge.cli import main
        heavy = ("trio", "pydantic", "runtime", "httpx", "bridge.elicit")
        for argv in (["--version"], ["--help"], ["call", "--help"], ["nope"]):
            with contextlib.redirect_stdout(io.StringIO()), \\
                    contextlib.redirect_stderr(io.StringIO()), \\
                    contextlib.suppress(SystemExit):
                main(argv)
        print(json.dumps([m for m in heavy if m in sys.modules]))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_an_eras_models_are_built_by_the_first_payload_that_needs_checking() -> None:
    seen = _imported(
        """
        from runtime import Context, Op, tool
        from encoders import mcp as mcp_encode
        from decoders import mcp as mcp_decode

        @tool
        def add(a: int, b: int, ctx: Context) -> Op[int]:
            return a + b
            yield

        @tool(annotations={"readOnlyHint": True})
        def look(ctx: Context) -> str:
            return "seen"

        seen("imported")
        # Spelled from a str, schemas and constants: valid by construction.
        mcp_encode.tool_definition(add, era="2026-07-28")
        mcp_encode.tool_result(3, add, era="2026-07-28")
        mcp_encode.tool_definition(add, era="2025-11-25")
        seen("by construction")
        # A form and a sample, asked and answered as most clients answer.
        from pydantic import BaseModel
        from runtime import Message
        from runtime.lowlevel import Elicit, Sample

        class Seat(BaseModel):
            seat: str = "aisle"
            nights: int = 2

        form = Elicit(key="seat", message="Which?", model=Seat)
        sample = Sample(messages=[Message.user("Say hi")], max_tokens=5)
        for era in ("2025-11-25", "2026-07-28"):
            mcp_encode.elicitation_params(form.request(), era=era)
            mcp_encode.sampling_params(sample.request(), era=era)
        mcp_decode.form_reply({"action": "accept", "content": {"seat": "x"}},
                              form.requested_schema)
        mcp_decode.sample_reply({"role": "assistant", "model": "m",
                                 "content": {"type": "text", "text": "hi"}})
        seen("forms and samples")
        # The client's side of the same: the questions read, the answers
        # written, a plain result read.
        from runtime.lowlevel import ElicitReply, SampleReply
        from runtime import Text

        for era in ("2025-11-25", "2026-07-28"):
            asked = mcp_encode.elicitation_params(form.request(), era=era)
            mcp_decode.elicitation_request(asked)
            mcp_decode.sampling_request(
                mcp_encode.sampling_params(sample.request(), era=era))
            mcp_encode.elicit_result(
                ElicitReply(action="accept", content={"seat": "x"}), era=era)
            mcp_encode.sample_result(
                SampleReply(content=(Text("hi"),), model="m"), era=era)
        mcp_decode.call_tool_result({"content": [{"type": "text", "text": "3"}]})
        seen("a client's forms, samples and results")
        # A peer's payload is always checked.
        mcp_decode.call_tool_result(
            {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}],
             "resultType": "complete"}
        )
        seen("2026-07-28")
        # The author's annotations are checked against the era's model.
        mcp_encode.tool_definition(look, era="2025-11-25")
        seen("2025-11-25")
        """
    )
    assert seen["imported"] == []
    assert seen["by construction"] == []
    assert seen["forms and samples"] == []
    assert seen["a client's forms, samples and results"] == []
    assert seen["2026-07-28"] == [V2026]  # the modern payload: modern models only
    assert seen["2025-11-25"] == [V2025, V2026]


FIRST_REQUESTS = {
    "2025-11-25": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    },
    "2026-07-28": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    },
}


def test_a_stdio_server_answers_its_first_request_with_what_it_needs(
    tmp_path: Path,
) -> None:
    """A host gives a spawned server about a second to answer (the Vercel AI
    SDK's client waits 1 s for ``server/discover``, then falls back to the
    older era), so what a stdio server imports before its first answer is
    what that answer needs: not the SDK's models (a quarter of the start-up
    they would cost), the HTTP app, OpenTelemetry with nothing configured,
    ``importlib.metadata`` for the version, ``cryptography`` before a state is
    sealed, or ``referencing`` before a schema is checked. Read from
    ``-X importtime``."""
    served = tmp_path / "one.py"
    served.write_text(
        "from runtime import Context, tool\n\n"
        "@tool\ndef echo(text: str, ctx: Context) -> str:\n    return text\n"
    )
    unwanted = (
        "mcp_types",
        "bridge.transports.http.app",
        "opentelemetry",
        "jsonschema",
        "cryptography",
        "referencing",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    for era, request in FIRST_REQUESTS.items():
        done = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "-m",
                "bridge.cli",
                "serve",
                str(served),
            ],
            input=json.dumps(request) + "\n",  # then end of input: the server stops
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert '"result"' in done.stdout.splitlines()[0], done.stdout
        imported = {
            line.rsplit("|", 1)[-1].strip()
            for line in done.stderr.splitlines()
            if line.startswith("import time:")
        }
        assert "bridge.server" in imported  # the read is of the server's imports
        loaded = sorted(
            m for m in imported if m.split(".")[0] in unwanted or m in unwanted
        )
        assert loaded == [], f"{era}: {loaded}"


def test_a_resource_a_tool_returns_is_content_once_the_sdk_is_imported() -> None:
    """The SDK's models are not imported for the check of what a tool
    returned, yet a ``ResourceLink`` made by a tool that imported them later
    (after other results were encoded) is still content, not data."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import json, sys
                from runtime import Context, Op, tool
                from encoders import mcp as mcp_encode

                @tool
                def link(ctx: Context) -> Op[object]:
                    return None
                    yield

                before = mcp_encode.tool_result({"a": 1}, link, era="2026-07-28")
                loaded = "mcp_types" in sys.modules
                import mcp_types  # as a tool's own code would, at call time
                made = mcp_types.ResourceLink(
                    type="resource_link", uri="file:///x", name="x"
                )
                after = mcp_encode.tool_result(made, link, era="2026-07-28")
                print(json.dumps([loaded, before["content"], after["content"]]))
                """
            ),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded, before, after = json.loads(done.stdout.splitlines()[-1])
    assert loaded is False
    assert before == [{"type": "text", "text": '{"a":1}'}]
    assert after == [{"type": "resource_link", "uri": "file:///x", "name": "x"}]
