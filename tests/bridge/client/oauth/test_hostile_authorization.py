"""What a hostile authorization server sends our client: refused in one line.

Each case was a traceback, or worse, before (a review against a hostile
server, /tmp/hQ): a token that cannot be a header value was kept and failed
every later call; ``expires_in`` of 10**400 overflowed the clock; a URL
``urlsplit`` cannot read in the resource metadata, a token refusal nested
5,000 deep, and a busy ``--oauth-port`` ended in tracebacks.
"""

from __future__ import annotations

import socket

import pytest
from pydantic import ValidationError

from bridge.client.oauth.discovery import auth_server_metadata_urls, check_resource
from bridge.client.oauth.loopback import listen
from bridge.client.oauth.wire import TokenAnswer
from runtime.errors import AuthorizationError
from tests.threaded_http import QuietHandler, serving

GOOD = {"access_token": "at-1", "token_type": "Bearer"}


@pytest.mark.parametrize(
    "field",
    [
        {"access_token": "tok-\u00e9"},
        {"access_token": "tok-a\r\nX-Injected: 1"},
        {"access_token": "tok a"},
        {"access_token": "tok\x00"},
        {"expires_in": 10**400},
        {"expires_in": "1" * 400},
        {"expires_in": 315_360_001},
    ],
)
def test_a_token_no_request_can_carry_is_no_usable_token(
    field: dict[str, object],
) -> None:
    with pytest.raises(ValidationError):
        TokenAnswer.model_validate({**GOOD, **field})


@pytest.mark.parametrize(
    "field",
    [
        {},
        {"access_token": "eyJhbGciOiJFUzI1NiJ9.e30.sig-_~+/="},
        {"expires_in": 3600},
        {"expires_in": "3600"},
        {"expires_in": 315_360_000},
    ],
)
def test_ordinary_tokens_are_taken(field: dict[str, object]) -> None:
    assert TokenAnswer.model_validate({**GOOD, **field}).access_token


@pytest.mark.parametrize("url", ["http://[::1", "https://[nope]/x"])
def test_a_url_that_cannot_be_read_in_the_metadata_is_refused(url: str) -> None:
    with pytest.raises(AuthorizationError, match="it is not a URL"):
        check_resource(url, "http://127.0.0.1:1/mcp")
    with pytest.raises(AuthorizationError, match="it is not a URL"):
        auth_server_metadata_urls(url)


async def test_a_busy_redirect_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(AuthorizationError) as caught:
            async with listen(port):
                pass
    assert str(caught.value) == (
        f"cannot listen on 127.0.0.1:{port} for the login's redirect: "
        "address already in use"
    )


class _DeepRefusal(QuietHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b"[" * 5000
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


async def test_a_token_refusal_nested_too_deep_is_a_refusal() -> None:
    import httpx

    from bridge.client.oauth.store import ClientInfo
    from bridge.client.oauth.tokens import _post
    from bridge.client.oauth.wire import AuthServerMetadata

    with serving(_DeepRefusal) as base:
        metadata = AuthServerMetadata.model_validate(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
            }
        )
        async with httpx.AsyncClient() as client:
            refused = await _post(
                client, metadata, ClientInfo(client_id="c"), {"grant_type": "x"}
            )
    assert refused == (400, {})
