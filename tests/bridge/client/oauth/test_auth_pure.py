"""The sans-IO pieces of authorization: challenges, scopes, discovery URLs,
the authorization answer's checks, client authentication, principals."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.client.oauth import scopes
from bridge.client.oauth.discovery import (
    auth_server_metadata_urls,
    check_resource,
    resource_metadata_urls,
)
from bridge.client.oauth.redirect import Pkce, authorization_url, check_callback
from bridge.client.oauth.store import ClientInfo
from bridge.client.oauth.tokens import authenticate_client
from bridge.client.oauth.wire import AuthServerMetadata
from bridge.server.auth import Auth
from bridge.server.auth.binding import bind, bound_to
from bridge.transports.www_authenticate import (
    Challenge,
    bearer_params,
    format_challenge,
    parse_challenges,
)
from runtime import Principal, tool
from runtime.errors import AuthorizationError, InvalidTool

# --- WWW-Authenticate ---------------------------------------------------------------

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
VALUES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


@given(st.dictionaries(NAMES, VALUES, max_size=5), st.sampled_from(["Bearer", "DPoP"]))
def test_a_written_challenge_reads_back_as_written(
    params: dict[str, str], scheme: str
) -> None:
    header = format_challenge(scheme, params.items())
    assert parse_challenges(header) == [Challenge(scheme.lower(), params)]


@given(st.dictionaries(NAMES, VALUES, min_size=1, max_size=3))
def test_the_bearer_challenge_is_found_among_others(params: dict[str, str]) -> None:
    header = ", ".join(
        [
            'Basic realm="x"',
            format_challenge("Bearer", params.items()),
            "Negotiate abc==",
        ]
    )
    assert bearer_params(header) == params


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Bearer", [Challenge("bearer")]),
        ("Basic dXNlcjpwdw==", [Challenge("basic", token68="dXNlcjpwdw==")]),
        (
            "BEARER Scope=mcp:read, error=insufficient_scope",
            [Challenge("bearer", {"scope": "mcp:read", "error": "insufficient_scope"})],
        ),
        (
            'Bearer resource_metadata=https://h/.well-known/x, scope="a b"',
            [
                Challenge(
                    "bearer",
                    {"resource_metadata": "https://h/.well-known/x", "scope": "a b"},
                )
            ],
        ),
        (
            'Bearer scope="a", scope="b",, Basic',
            [Challenge("bearer", {"scope": "a"}), Challenge("basic")],
        ),
    ],
)
def test_sloppy_challenges_are_read_leniently(
    header: str, expected: list[Challenge]
) -> None:
    assert parse_challenges(header) == expected


# --- scopes -------------------------------------------------------------------------


def test_the_first_scopes_come_from_the_challenge_then_the_metadata() -> None:
    assert scopes.initial("files:read", ["a", "b"]) == "files:read"
    assert scopes.initial(None, ["a", "b"]) == "a b"
    assert scopes.initial(None, None) is None
    assert scopes.initial("  ", []) is None


def test_step_up_asks_for_the_union_in_order() -> None:
    assert scopes.step_up("a b", "b c", "d a") == "a b c d"
    assert scopes.step_up(None, None, "d") == "d"


def test_offline_access_only_when_the_server_lists_it() -> None:
    assert scopes.with_offline_access("a", ["a", "offline_access"]) == (
        "a offline_access"
    )
    assert scopes.with_offline_access("a", ["a"]) == "a"
    assert scopes.with_offline_access(None, ["offline_access"]) is None


# --- discovery ----------------------------------------------------------------------


def test_resource_metadata_urls_follow_the_challenge_then_path_then_root() -> None:
    assert resource_metadata_urls("https://m/custom.json", "https://m/public/mcp") == [
        "https://m/custom.json",
        "https://m/.well-known/oauth-protected-resource/public/mcp",
        "https://m/.well-known/oauth-protected-resource",
    ]
    assert resource_metadata_urls(None, "https://m") == [
        "https://m/.well-known/oauth-protected-resource"
    ]


def test_auth_server_metadata_urls_follow_the_spec_order() -> None:
    assert auth_server_metadata_urls("https://a/tenant1") == [
        "https://a/.well-known/oauth-authorization-server/tenant1",
        "https://a/.well-known/openid-configuration/tenant1",
        "https://a/tenant1/.well-known/openid-configuration",
    ]
    assert auth_server_metadata_urls("https://a") == [
        "https://a/.well-known/oauth-authorization-server",
        "https://a/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    "resource", ["https://m/mcp", "https://m", "https://m/", "HTTPS://M/mcp"]
)
def test_metadata_for_the_server_or_a_parent_is_accepted(resource: str) -> None:
    check_resource(resource, "https://m/mcp")


@pytest.mark.parametrize(
    "resource",
    ["https://evil/mcp", "https://m/other", "https://m/mc", "http://m/mcp",
     "https://m:8443/mcp", "https://m/mcp/deeper"],
)  # fmt: skip
def test_metadata_for_another_resource_is_refused(resource: str) -> None:
    with pytest.raises(AuthorizationError):
        check_resource(resource, "https://m/mcp")


# --- the authorization answer ---------------------------------------------------------


def metadata(**changes: Any) -> AuthServerMetadata:
    document = {
        "issuer": "https://as.example",
        "authorization_endpoint": "https://as.example/authorize?tenant=1",
        "token_endpoint": "https://as.example/token",
        **changes,
    }
    return AuthServerMetadata.model_validate(document)


# RFC 9207 as the 2026-07-28 spec tabulates it: (advertised, iss sent, accepted)
ISS_TABLE = [
    (True, "https://as.example", True),
    (True, "https://as.example/", False),  # no normalization
    (True, None, False),
    (False, "https://evil.example", False),
    (False, "https://as.example", True),
    (False, None, True),
]


@pytest.mark.parametrize(("advertised", "iss", "accepted"), ISS_TABLE)
def test_the_iss_of_an_answer_is_checked_as_the_spec_tabulates(
    advertised: bool, iss: str | None, accepted: bool
) -> None:
    server = metadata(authorization_response_iss_parameter_supported=advertised)
    answer = {"code": "c", "state": "s", **({"iss": iss} if iss else {})}
    if accepted:
        assert check_callback(answer, state="s", metadata=server) == "c"
    else:
        with pytest.raises(AuthorizationError):
            check_callback(answer, state="s", metadata=server)


def test_an_answer_with_another_state_or_an_error_is_refused() -> None:
    server = metadata()
    with pytest.raises(AuthorizationError, match="state"):
        check_callback({"code": "c", "state": "other"}, state="s", metadata=server)
    with pytest.raises(AuthorizationError, match="access_denied"):
        check_callback({"error": "access_denied", "state": "s"}, state="s",
                       metadata=server)  # fmt: skip


def test_the_authorization_url_keeps_the_endpoints_query_and_uses_s256() -> None:
    pkce = Pkce.new()
    url = authorization_url(
        metadata(), client_id="c", redirect_uri="http://127.0.0.1:9/callback",
        state="s", pkce=pkce, resource="https://m/mcp", scope="a offline_access",
    )  # fmt: skip
    assert url.startswith("https://as.example/authorize?tenant=1&response_type=code")
    assert "code_challenge_method=S256" in url
    assert "resource=https%3A%2F%2Fm%2Fmcp" in url
    assert "prompt=consent" in url
    assert pkce.verifier not in url
    assert 43 <= len(pkce.verifier) <= 128


# --- client authentication ----------------------------------------------------------


def test_client_secret_basic_form_encodes_the_credentials() -> None:
    client = ClientInfo(client_id="a:b", client_secret="s p%",
                        auth_method="client_secret_basic")  # fmt: skip
    form, headers = authenticate_client(client, {"grant_type": "x"})
    assert "client_secret" not in form
    pair = base64.b64decode(headers["Authorization"].removeprefix("Basic "))
    assert pair == b"a%3Ab:s%20p%25"


def test_client_secret_post_and_none() -> None:
    post = ClientInfo(client_id="a", client_secret="s",
                      auth_method="client_secret_post")  # fmt: skip
    form, headers = authenticate_client(post, {})
    assert form == {"client_id": "a", "client_secret": "s"}
    assert "Authorization" not in headers
    public = ClientInfo(client_id="a", client_secret="s", auth_method="none")
    assert authenticate_client(public, {})[0] == {"client_id": "a"}


def test_client_secrets_are_not_in_reprs() -> None:
    client = ClientInfo(client_id="a", client_secret="hunter2")
    assert "hunter2" not in repr(client)


# --- the server side's pure parts ---------------------------------------------------


def test_a_state_is_bound_to_its_principals_identity_not_its_token() -> None:
    alice = Principal(subject="alice", issuer="https://as", scopes={"a"})
    alice_again = Principal(subject="alice", issuer="https://as", scopes={"a", "b"})
    other_issuer = Principal(subject="alice", issuer="https://other")
    payload: dict[str, Any] = {}
    bind(payload, alice)
    assert bound_to(payload, alice_again)
    assert not bound_to(payload, other_issuer)
    assert not bound_to(payload, None)
    assert bound_to({}, None)
    assert not bound_to({}, alice)


def test_auth_refuses_a_resource_that_is_no_https_url() -> None:
    verifier: Any = object()
    for resource in ("mcp.example.com", "http://mcp.example.com/mcp",
                     "https://mcp.example.com/mcp#x"):  # fmt: skip
        with pytest.raises(ValueError, match="resource"):
            Auth(resource=resource, authorization_servers=["https://as"],
                 verifier=verifier)  # fmt: skip
    auth = Auth(resource="https://m.example/a/mcp", authorization_servers="https://as",
                verifier=verifier)  # fmt: skip
    assert auth.metadata_url() == (
        "https://m.example/.well-known/oauth-protected-resource/a/mcp"
    )


def test_tool_scopes_must_be_scope_tokens() -> None:
    with pytest.raises(InvalidTool, match="OAuth scope"):

        @tool(scopes=["has space"])
        def bad(ctx: Any) -> str:
            return ""

    @tool(scopes="files:read")
    def good(ctx: Any) -> str:
        return ""

    assert good.scopes == {"files:read"}


# --- sealed states and principals, as a property -------------------------------------

IDENTITIES = st.tuples(
    st.one_of(st.none(), st.sampled_from(["https://as.one", "https://as.two"])),
    st.text(min_size=1, max_size=8),
)


def _round(server: Any, principal: Principal | None, **params: Any) -> Any:
    from bridge.jsonrpc.messages import Request
    from bridge.server import modern

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    request = Request(1, "tools/call", {"name": "ask_name", "arguments": {},
                                        "_meta": meta, **params})  # fmt: skip
    return modern.respond_now(server, request, lambda *_: None, principal=principal)


@given(IDENTITIES, IDENTITIES, st.booleans())
def test_a_state_is_accepted_exactly_from_the_principal_it_was_made_for(
    maker: tuple[str | None, str], other: tuple[str | None, str], same: bool
) -> None:
    from bridge.server import Server
    from runtime.errors import RequestError
    from tests.fixtures.http_tools import ask_name

    sender = maker if same else other
    server = Server([ask_name])
    made = Principal(issuer=maker[0], subject=maker[1])
    sent = Principal(issuer=sender[0], subject=sender[1], scopes={"any"})
    state = _round(server, made)["requestState"]
    answer = {"name": {"action": "accept", "content": {"name": "Zed"}}}
    retry = {"requestState": state, "inputResponses": answer}
    if made.identity == sent.identity:
        assert _round(server, sent, **retry)["content"][0]["text"] == "hi Zed"
    else:
        with pytest.raises(RequestError) as refused:
            _round(server, sent, **retry)
        assert refused.value.data == {"reason": "invalid_request_state"}
        with pytest.raises(RequestError):
            _round(server, None, **retry)  # nor from no one
