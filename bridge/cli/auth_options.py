"""The command line's authorization options, both sides.

``yieldmcp serve FILE --http PORT --auth ISSUER`` makes the endpoint a
resource server (:func:`add_serve_options`, :func:`serve_auth`): tokens from
ISSUER, checked as JWTs against its keys (``--auth-jwks``, or the
``jwks_uri`` of its metadata) or by introspection (``--auth-introspect``),
for the resource ``--auth-resource`` (default: the ``--http`` URL), with the
scopes ``--auth-scope`` requires of every request. A client secret for
introspection comes from ``YIELDMCP_AUTH_CLIENT_SECRET``, never from the
command line (other users can read it there).

``yieldmcp call URL`` authorizes when the server asks (:func:`add_call_options`,
:func:`call_auth`): the user consents in their browser (``--oauth-no-browser``
only prints the URL), tokens are kept in memory or in ``--oauth-tokens FILE``
(mode 0600, in a directory of the user's that no one else may write: checked
before anything is sent), and the client is the one given (``--oauth-client-id``; secret
from ``YIELDMCP_OAUTH_CLIENT_SECRET``), the ``--oauth-client-metadata-url``
document, or one registered dynamically.

A bad combination is a ``ValueError`` with a one-line message (the caller
prints it).
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Final

from .host_options import port

__all__ = ["add_call_options", "add_serve_options", "call_auth", "serve_auth"]

SERVER_SECRET_ENV: Final = "YIELDMCP_AUTH_CLIENT_SECRET"
CLIENT_SECRET_ENV: Final = "YIELDMCP_OAUTH_CLIENT_SECRET"


def add_serve_options(serve: argparse.ArgumentParser) -> None:
    """``--auth`` and its companions, on ``yieldmcp serve``."""
    group = serve.add_argument_group("authorization (with --http)")
    group.add_argument(
        "--auth",
        metavar="ISSUER",
        help="require OAuth access tokens from this authorization server (its "
        "issuer URL); see docs/auth.md",
    )
    group.add_argument(
        "--auth-resource",
        metavar="URL",
        help="this server's URL as clients name it, and tokens' audience "
        "(default: http://HOST:PORT/mcp from --http)",
    )
    group.add_argument(
        "--auth-jwks", metavar="URL", help="the issuer's JWKS (default: its jwks_uri)"
    )
    group.add_argument(
        "--auth-introspect",
        metavar="URL",
        help="check tokens at this RFC 7662 endpoint instead of as JWTs (client "
        f"secret from ${SERVER_SECRET_ENV})",
    )
    group.add_argument(
        "--auth-client-id", metavar="ID", help="this server's client id, to introspect"
    )
    group.add_argument(
        "--auth-scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="a scope every request needs (repeatable)",
    )
    group.add_argument(
        "--auth-audience",
        action="append",
        default=[],
        metavar="AUD",
        help="accept tokens for this audience instead of the resource (repeatable)",
    )
    group.add_argument(
        "--auth-leeway",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="clock skew allowed on token expiry, at most 3600 (default 60)",
    )
    group.add_argument(
        "--auth-jwks-ttl",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long fetched keys are used before fetching again; 0 fetches "
        "them for every request (default 300)",
    )
    group.add_argument(
        "--auth-jwks-refresh",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="least time between fetches of the keys for unknown key ids, or "
        "after a failed fetch (default 30)",
    )
    group.add_argument(
        "--auth-unknown-kid-ttl",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long a key id still unknown after a fetch is refused without "
        "another (default 60)",
    )
    group.add_argument(
        "--auth-inactive-ttl",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="with --auth-introspect: how long a refused token is refused again "
        "without asking; 0 asks every time (default 5)",
    )
    group.add_argument(
        "--auth-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time for a whole exchange with the issuer: fetching its keys "
        "(metadata included) or one introspection (default 10)",
    )


def serve_auth(args: argparse.Namespace, http: tuple[str, int] | None) -> Any:
    """The :class:`~bridge.server.auth.Auth` the options ask for, or None.

    Raises:
        ValueError: an unusable combination (the message says which).
    """
    issuer: str | None = args.auth
    if issuer is None:
        extras = [name for name in ("auth_resource", "auth_jwks", "auth_introspect")
                  if getattr(args, name)]  # fmt: skip
        if extras or args.auth_scope:
            raise ValueError("the --auth-* options need --auth ISSUER")
        return None
    if http is None:
        raise ValueError("--auth needs --http: over stdio, credentials come "
                         "from the environment")  # fmt: skip
    from bridge.server.auth import Auth, IntrospectionVerifier, JwtVerifier

    _check_times(args)
    resource = args.auth_resource or _default_resource(*http)
    audience = args.auth_audience or None
    verifier: Any
    if args.auth_introspect:
        verifier = IntrospectionVerifier(
            args.auth_introspect, client_id=args.auth_client_id,
            client_secret=os.environ.get(SERVER_SECRET_ENV), issuer=issuer,
            audience=audience, leeway=args.auth_leeway,
            inactive_ttl=args.auth_inactive_ttl, timeout=args.auth_timeout,
        )  # fmt: skip
    else:
        verifier = JwtVerifier(
            issuer=issuer, jwks_url=args.auth_jwks, audience=audience,
            leeway=args.auth_leeway, jwks_ttl=args.auth_jwks_ttl,
            jwks_refresh=args.auth_jwks_refresh,
            unknown_kid_ttl=args.auth_unknown_kid_ttl, timeout=args.auth_timeout,
        )  # fmt: skip
    return Auth(
        resource=resource, authorization_servers=[issuer], verifier=verifier,
        scopes=args.auth_scope,
    )  # fmt: skip


def _check_times(args: argparse.Namespace) -> None:
    """Refuse a time out of its range, naming the flag (the verifiers'
    own check: ``check_seconds``)."""
    from bridge.server.auth.verifiers import check_seconds

    names = ("leeway", "jwks_ttl", "jwks_refresh", "unknown_kid_ttl",
             "inactive_ttl", "timeout")  # fmt: skip
    check_seconds(
        {name: getattr(args, f"auth_{name}") for name in names},
        named=lambda name: "--auth-" + name.replace("_", "-"),
    )


def _default_resource(host: str, port: int) -> str:
    if port == 0 or host in ("", "0.0.0.0", "::"):
        raise ValueError(
            "give --auth-resource: the URL clients use cannot be told from "
            f"--http {host}:{port}"
        )
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"


def add_call_options(call: argparse.ArgumentParser) -> None:
    """The ``--oauth-*`` options, on ``yieldmcp call``."""
    group = call.add_argument_group("authorization (for an http(s) SERVER)")
    group.add_argument(
        "--oauth-tokens",
        metavar="FILE",
        help="keep tokens in FILE (created with mode 0600, in a directory of "
        "yours that no one else may write) instead of memory",
    )
    group.add_argument(
        "--oauth-no-browser",
        action="store_true",
        help="print the authorization URL instead of opening a browser",
    )
    group.add_argument(
        "--oauth-port",
        type=port,
        default=0,
        metavar="PORT",
        help="the loopback port of the redirect (default: any free one)",
    )
    group.add_argument(
        "--oauth-client-id",
        metavar="ID",
        help=f"a pre-registered client id (secret from ${CLIENT_SECRET_ENV})",
    )
    group.add_argument(
        "--oauth-client-metadata-url",
        metavar="URL",
        help="this client's metadata document (https), used as its client id",
    )


def call_auth(args: argparse.Namespace) -> Any:
    """The :class:`~bridge.client.oauth.OAuth` the options ask for.

    Raises:
        ValueError: an unusable option value.
    """
    from bridge.client.oauth import BrowserRedirect, FileTokenStore, OAuth
    from runtime.errors import AuthorizationError

    redirect = BrowserRedirect(
        port=args.oauth_port, open_browser=not args.oauth_no_browser
    )
    options: dict[str, Any] = {"redirect": redirect}
    if args.oauth_tokens:
        store = FileTokenStore(args.oauth_tokens)
        try:
            store.check()  # an unsafe place is refused before anything is sent
        except AuthorizationError as exc:
            raise ValueError(str(exc)) from None
        options["store"] = store
    return OAuth(
        client_id=args.oauth_client_id,
        client_secret=os.environ.get(CLIENT_SECRET_ENV)
        if args.oauth_client_id
        else None,
        client_metadata_url=args.oauth_client_metadata_url,
        **options,
    )
