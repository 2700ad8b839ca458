"""Making an httpx client: where a proxy the environment names is met.

httpx reads ``ALL_PROXY``, ``HTTPS_PROXY`` and ``HTTP_PROXY`` when a client
is made, and a ``socks5://`` proxy needs the ``socksio`` package: without
it httpx raises ``ImportError`` there, which reached the user as a 90-line
traceback (the MCP client, the model providers, the OAuth flow).
:func:`new_client` raises the caller's own error instead, in one line.

It sends nothing and knows no protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

__all__ = ["new_client"]


def new_client(error: Callable[[str], Exception], **options: Any) -> httpx.AsyncClient:
    """``httpx.AsyncClient(**options)``, or ``error(why)`` raised in its
    place when the proxy the environment names cannot be used."""
    try:
        return httpx.AsyncClient(**options)
    except ImportError as exc:  # httpx's words name the package, no secret
        raise error(
            f"cannot use the proxy the environment names (ALL_PROXY, "
            f"HTTPS_PROXY or HTTP_PROXY): {exc}"
        ) from None
