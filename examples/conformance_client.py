"""Our MCP client as the official conformance suite's client.

The harness runs ``python examples/conformance_client.py <server-url>`` once per
scenario, naming it in ``MCP_CONFORMANCE_SCENARIO`` (plus
``MCP_CONFORMANCE_PROTOCOL_VERSION`` and, for some, ``MCP_CONFORMANCE_CONTEXT``);
the URL is the last argument. Run the suite with::

    .ci/run-conformance-client-all      # both legs, every scored scenario

Each scenario below does what notes/conformance-fixtures.md §8.2 asks, through
the public :func:`bridge.client.connect` (which picks the Streamable HTTP
transport for an ``http://`` URL). On a handshake-era leg (2025-11-25) the client
uses ``initialize``; on 2026-07-28 it uses ``server/discover`` and the ``_meta``
envelope.

The scored ``auth/*`` scenarios all run :func:`authorized`: connect with
:class:`bridge.client.oauth.OAuth`, list the tools and call the first. The
harness plays the authorization server, which approves at once, so the
consent step is :class:`~bridge.client.oauth.HeadlessRedirect` (the
authorization URL is fetched and its redirect read, as the official SDK's
conformance client does); a pre-registered client comes from
``MCP_CONFORMANCE_CONTEXT``, and the client ID metadata document URL is the
one the suite expects. The unscored extensions (client credentials,
enterprise-managed authorization, DPoP, workload identity) are not
implemented: they, and any unknown scenario, exit with status 2.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

import trio

from bridge.client import Client, Era, connect
from bridge.client.oauth import HeadlessRedirect, OAuth
from bridge.elicit import Always, ScriptedAnswers
from bridge.providers import provider_from_spec
from runtime.errors import AuthorizationError

log = logging.getLogger("conformance-client")

HANDSHAKE_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
CLIENT_INFO = {"name": "yieldmcp-conformance-client", "version": "0.1.0"}

Scenario = Callable[[str], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str) -> Callable[[Scenario], Scenario]:
    def register(run: Scenario) -> Scenario:
        SCENARIOS[name] = run
        return run

    return register


def leg_era() -> Era:
    """``legacy`` on a handshake-era leg, else 2026-07-28."""
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2026-07-28")
    return "legacy" if version in HANDSHAKE_VERSIONS else "2026-07-28"


def context() -> dict[str, Any]:
    return json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")


@contextlib.asynccontextmanager
async def connected(
    url: str, *, era: Era | None = None, **options: Any
) -> AsyncGenerator[Client]:
    async with connect(
        url, era=era or leg_era(), client_info=CLIENT_INFO, **options
    ) as client:
        log.info("connected: era %s, server %s", client.era, client.server_info)
        yield client


STUBS: dict[str, Any] = {
    "string": "x",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "object": {},
    "array": [],
    "null": None,
}


def stub_arguments(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The least arguments meeting a tool's ``required`` list."""
    schema: dict[str, Any] = tool.get("inputSchema") or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    required: list[str] = schema.get("required") or []
    types: dict[str, Any] = {
        name: prop.get("type") for name, prop in properties.items() if prop
    }
    return {name: STUBS.get(str(types.get(name)), "x") for name in required}


# --- scenarios ----------------------------------------------------------------------


@scenario("initialize")
async def initialize(url: str) -> None:
    async with connected(url) as client:
        await client.list_tools()


@scenario("tools_call")
async def tools_call(url: str) -> None:
    async with connected(url) as client:
        await client.list_tools()
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        log.info("add_numbers: %s", result.text)


@scenario("elicitation-sep1034-client-defaults")
async def elicitation_defaults(url: str) -> None:
    # Always("accept") accepts every form with each field's default.
    async with connected(url, elicitation=Always("accept")) as client:
        await client.list_tools()
        result = await client.call_tool("test_client_elicitation_defaults")
        log.info("test_client_elicitation_defaults: %s", result.text)


@scenario("sse-retry")
async def sse_retry(url: str) -> None:
    async with connected(url) as client:
        await client.list_tools()
        result = await client.call_tool("test_reconnection")
        log.info("test_reconnection: %s", result.text)


@scenario("json-schema-2020-12-preservation")
async def json_schema_preservation(url: str) -> None:
    async with connected(url) as client:
        tools = await client.list_tools()
        focal = next(t for t in tools if t["name"] == "json_schema_2020_12_tool")
        await client.call_tool("json_schema_echo", {"schema": focal["inputSchema"]})


@scenario("json-schema-ref-no-deref")
async def json_schema_ref_no_deref(url: str) -> None:
    # The mock speaks only the handshake era; listing must never fetch a $ref.
    async with connected(url, era="legacy") as client:
        await client.list_tools()


@scenario("request-metadata")
async def request_metadata(url: str) -> None:
    # Declare every capability (sampling, elicitation, roots): each is checked.
    async with connected(
        url,
        sampler=provider_from_spec("offline"),
        elicitation=Always("accept"),
        roots=[],
    ) as client:
        await client.list_tools()
        await client.call_tool("add_numbers", {"a": 5, "b": 3})


@scenario("sep-2322-client-request-state")
async def client_request_state(url: str) -> None:
    confirm = ScriptedAnswers({"*": {"confirmed": True}})
    async with connected(url, elicitation=confirm) as client:
        await client.list_tools()
        for name in (
            "test_mrtr_echo_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_state",
            "test_mrtr_no_result_type",
        ):
            log.info("%s: %s", name, (await client.call_tool(name)).text)


@scenario("http-standard-headers")
async def http_standard_headers(url: str) -> None:
    async with connected(url) as client:
        tools = await client.list_tools()
        if tools:
            await client.call_tool(tools[0]["name"], stub_arguments(tools[0]))
        resources = (await client.request("resources/list")).get("resources", [])
        if resources:
            await client.request("resources/read", {"uri": resources[0]["uri"]})
        prompts = (await client.request("prompts/list")).get("prompts", [])
        if prompts:
            await client.get_prompt(prompts[0]["name"])


@scenario("http-custom-headers")
async def http_custom_headers(url: str) -> None:
    calls: list[dict[str, Any]] = context().get("toolCalls", [])
    async with connected(url) as client:
        listed = {tool["name"] for tool in await client.list_tools()}
        for call in calls:
            if call["name"] in listed:
                await client.call_tool(call["name"], call.get("arguments") or {})


@scenario("http-invalid-tool-headers")
async def http_invalid_tool_headers(url: str) -> None:
    async with connected(url) as client:
        for tool in await client.list_tools():  # the invalid ones are left out
            await client.call_tool(tool["name"], stub_arguments(tool))


# --- authorization (the harness is the authorization server) ------------------------

CIMD_URL = "https://conformance-test.local/client-metadata.json"
AUTH_SCENARIOS = (
    "metadata-default",
    "metadata-var1",
    "metadata-var2",
    "metadata-var3",
    "basic-cimd",
    "scope-from-www-authenticate",
    "scope-from-scopes-supported",
    "scope-omitted-when-undefined",
    "scope-step-up",
    "scope-retry-limit",
    "token-endpoint-auth-basic",
    "token-endpoint-auth-post",
    "token-endpoint-auth-none",
    "pre-registration",
    "resource-mismatch",
    "offline-access-scope",
    "offline-access-not-supported",
    "authorization-server-migration",
    "iss-supported",
    "iss-not-advertised",
    "iss-supported-missing",
    "iss-wrong-issuer",
    "iss-unexpected",
    "iss-normalized",
    "metadata-issuer-mismatch",
)


async def authorized(url: str) -> None:
    """List the tools of a protected server and call the first.

    Scenarios that must refuse (a wrong ``iss``, another resource, endless
    step-up) end in AuthorizationError: the harness allows that failure.
    """
    given = context()
    oauth = OAuth(
        redirect=HeadlessRedirect(),
        client_id=given.get("client_id"),
        client_secret=given.get("client_secret"),
        client_metadata_url=CIMD_URL,
        client_name=CLIENT_INFO["name"],
    )
    async with connected(url, auth=oauth, elicitation=Always("accept")) as client:
        tools = await client.list_tools()
        if tools:
            result = await client.call_tool(tools[0]["name"], stub_arguments(tools[0]))
            log.info("%s: %s", tools[0]["name"], result.text)


for _name in AUTH_SCENARIOS:
    SCENARIOS[f"auth/{_name}"] = authorized


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = SCENARIOS.get(name)
    if run is None or len(argv) < 2:
        print(f"scenario {name!r} is not implemented")
        return 2
    try:
        trio.run(run, argv[-1])
    except AuthorizationError as exc:  # the refusals some auth scenarios expect
        print(f"authorization failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
