"""The HTTP client the built-in verifiers ask the issuer with.

Only :mod:`.jwt` and :mod:`.introspection` import this (and so httpx): a
server that checks no tokens, or checks them its own way, never loads it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator

import httpx

__all__ = ["http_client"]


@contextlib.asynccontextmanager
async def http_client(
    given: httpx.AsyncClient | None, timeout: float
) -> AsyncGenerator[httpx.AsyncClient]:
    """``given``, or a client of our own for the block (closed after it)."""
    if given is not None:
        yield given
        return
    async with httpx.AsyncClient(timeout=timeout) as own:
        yield own
