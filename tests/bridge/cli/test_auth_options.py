"""``yieldmcp serve --auth`` and ``yieldmcp call`` against it, as a user runs
them: real subprocesses, a loopback authorization server from the test kit,
and a 'browser' that follows the URL ``call`` prints."""

from __future__ import annotations

import argparse
import re
import socket
import stat
import subprocess
from pathlib import Path

import httpx
import pytest
import trio

from tests.bridge.auth_issuer import issuing
from tests.bridge.cli.test_cli import YIELDMCP, run
from tests.helpers import ROOT

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--auth", "https://as.example"], "--auth needs --http"),
        (["--http", "0", "--auth", "https://as.example"], "give --auth-resource"),
        (
            [
                "--http",
                "0",
                "--auth",
                "https://as.example",
                "--auth-resource",
                "http://mcp.example/mcp",
            ],
            "must use https",
        ),
        (["--http", "0", "--auth-scope", "x"], "need --auth ISSUER"),
        (
            [
                "--http",
                "127.0.0.1:8123",
                "--auth",
                "https://as.example",
                "--auth-inactive-ttl",
                "-1",
            ],
            "--auth-inactive-ttl must not be negative",
        ),
        (
            [
                "--http",
                "127.0.0.1:8123",
                "--auth",
                "https://as.example",
                "--auth-timeout",
                "0",
            ],
            "--auth-timeout must be positive",
        ),
        (
            [
                "--http",
                "127.0.0.1:8123",
                "--auth",
                "https://as.example",
                "--auth-leeway",
                "inf",
            ],
            "--auth-leeway must be at most 3600 seconds, got inf",
        ),
        (
            [
                "--http",
                "127.0.0.1:8123",
                "--auth",
                "https://as.example",
                "--auth-jwks-ttl",
                "1e300",
            ],
            "--auth-jwks-ttl must be at most 315360000 seconds",
        ),
        (
            [
                "--http",
                "127.0.0.1:8123",
                "--auth",
                "https://as.example",
                "--auth-timeout",
                "nan",
            ],
            "--auth-timeout must be positive, got nan",
        ),
    ],
    ids=[
        "no-http",
        "no-resource",
        "http-resource",
        "scope-without-auth",
        "negative-ttl",
        "zero-timeout",
        "inf-leeway",
        "huge-jwks-ttl",
        "nan-timeout",
    ],
)
def test_bad_auth_options_are_one_line_and_exit_1(
    args: list[str], message: str
) -> None:
    done = run("serve", "examples/protected.py", *args)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("yieldmcp: error:")
    assert message in line


def test_the_issuer_flags_reach_the_verifier() -> None:
    from bridge.cli.auth_options import add_serve_options, serve_auth

    parser = argparse.ArgumentParser()
    add_serve_options(parser)
    common = ["--auth", "https://as.example", "--auth-timeout", "3"]
    jwt_args = parser.parse_args(
        [*common, "--auth-jwks-refresh", "7", "--auth-unknown-kid-ttl", "9"]
    )
    jwt = serve_auth(jwt_args, ("127.0.0.1", 8123)).verifier
    assert (jwt.timeout, jwt.jwks_refresh, jwt.unknown_kid_ttl) == (3, 7, 9)
    introspect = parser.parse_args(
        [*common, "--auth-introspect", "https://as.example/i",
         "--auth-inactive-ttl", "0"]
    )  # fmt: skip
    checker = serve_auth(introspect, ("127.0.0.1", 8123)).verifier
    assert (checker.timeout, checker.inactive_ttl) == (3, 0)
    defaults = serve_auth(parser.parse_args(common[:2]), ("127.0.0.1", 8123))
    verifier = defaults.verifier
    assert (verifier.timeout, verifier.jwks_refresh) == (10, 30)
    assert verifier.unknown_kid_ttl == 60


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _lines_until(
    stream: trio.abc.ReceiveStream, pattern: bytes, seen: bytearray
) -> re.Match[bytes]:
    while not (found := re.search(pattern, seen)):
        chunk = await stream.receive_some()
        assert chunk, seen.decode()
        seen.extend(chunk)
    return found


async def _call(url: str, tokens: Path, *extra: str) -> tuple[int, str, str]:
    """``yieldmcp call URL whoami``, following the URL it prints, if any."""
    process = await trio.lowlevel.open_process(
        [YIELDMCP, "call", url, "whoami", "--oauth-no-browser",
         "--oauth-tokens", str(tokens), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )  # fmt: skip
    assert process.stdout is not None
    assert process.stderr is not None
    out, err = bytearray(), bytearray()

    async def read(stream: trio.abc.ReceiveStream, into: bytearray) -> None:
        while chunk := await stream.receive_some():
            into.extend(chunk)

    async def browser() -> None:
        assert process.stderr is not None
        found = await _lines_until(process.stderr, rb"browser: (\S+)\n", err)
        async with httpx.AsyncClient() as user_agent:
            page = await user_agent.get(found[1].decode(), follow_redirects=True)
        assert "close this window" in page.text
        await read(process.stderr, err)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read, process.stdout, out)
            if not extra:
                nursery.start_soon(browser)
            else:
                nursery.start_soon(read, process.stderr, err)
            code = await process.wait()
    return code, out.decode(), err.decode()


async def test_call_authorizes_in_the_browser_then_reuses_the_token_file(
    tmp_path: Path,
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    tokens = tmp_path / "tokens.json"
    async with issuing() as issuer:
        server = await trio.lowlevel.open_process(
            [YIELDMCP, "-v", "serve", "examples/protected.py", "--http", str(port),
             "--auth", issuer.url, "--auth-scope", "mcp:use"],
            stderr=subprocess.PIPE, cwd=ROOT,
        )  # fmt: skip
        assert server.stderr is not None
        try:
            with trio.fail_after(60):
                await _lines_until(server.stderr, rb"serving MCP at", bytearray())
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_drain, server.stderr)
                code, out, err = await _call(url, tokens)
                assert code == 0, err
                assert out.strip().endswith("alice via client-1 ['mcp:use']")
                assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
                # Again: the file's token is used; no browser, no new consent.
                code, out, err = await _call(url, tokens, "--json")
                assert code == 0, err
                assert "alice via client-1" in out
                assert "browser" not in err
                nursery.cancel_scope.cancel()
            assert len(issuer.authorizations) == 1
            for secret in issuer.issued:
                assert secret not in out + err
        finally:
            with trio.CancelScope(shield=True):
                server.terminate()
                await server.wait()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some():
        pass
