"""Reading a paginated list (``tools/list``, ``resources/list``, ...).

The spec lets a server answer a list in pages (``nextCursor``). The client
reads them through :func:`pages`, bounded: at most :data:`MAX_PAGES` pages,
never to a cursor it has seen before, and at most ``max_listing`` characters
of JSON in all, items and cursors (:data:`MAX_LISTING` unless the client
says), so a server that pages without end, in a loop, or in pages as large
as a message may be (their items or their cursors: each is sent back) cannot
keep a call waiting or fill the client's memory (a cursor seen is kept as
its digest, not itself). Both the listings
(:meth:`bridge.client.client.Client.list_tools`, ``list_all``) and the
output schemas looked up for a call (:mod:`.output_schemas`) read lists this
way.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, Final, cast

__all__ = ["MAX_LISTING", "MAX_PAGES", "Request", "pages"]

log = logging.getLogger("yieldmcp.client")

MAX_PAGES: Final = 100
"""Pages of one list read at most."""

MAX_LISTING: Final = 32 * 1024 * 1024
"""Characters of JSON that one list's items and cursors may take, over all
its pages (32 Mi, two of the client's largest messages): every page is one
message, and a list is held whole in memory."""

Request = Callable[[str, Mapping[str, Any]], Awaitable[Any]]


async def pages(
    request: Request, method: str, key: str, *, max_listing: int = MAX_LISTING
) -> AsyncGenerator[tuple[list[Any], bool]]:
    """Each page's items (what the page holds under ``key``), and whether
    it is the list's last page: one with no next cursor, or one whose cursor
    was seen before. After :data:`MAX_PAGES` pages none was the last, and a
    warning is logged; so it is when a page's items and next cursor would
    take the list past ``max_listing`` characters of JSON, and that page is
    left out. (A caller that stops early closes it: ``aclosing``.)"""
    cursor: str | None = None
    seen: set[bytes] = set()  # the digests of the cursors followed
    listed = 0
    for read in range(MAX_PAGES):
        answer: Any = await request(
            method, {} if cursor is None else {"cursor": cursor}
        )
        page = cast("dict[str, Any]", answer) if isinstance(answer, dict) else {}
        found: Any = page.get(key)
        items = cast("list[Any]", found) if isinstance(found, list) else []
        following: Any = page.get("nextCursor")
        if not isinstance(following, str) or not following:
            following = None
        listed += _size(items) + (0 if following is None else len(following))
        if listed > max_listing:
            log.warning(
                "%s: its pages take more than %d characters (the client's "
                "max_listing); read the first %d",
                method,
                max_listing,
                read,
            )
            return
        digest = None if following is None else _digest(following)
        last = digest is None or digest in seen
        yield items, last
        if last or digest is None:
            return
        cursor = following
        seen.add(digest)
        del page, found, items, answer  # only the cursor goes on
    log.warning(
        "%s: more than %d pages; read the first %d", method, MAX_PAGES, MAX_PAGES
    )


def _digest(cursor: str) -> bytes:
    return hashlib.sha256(cursor.encode(errors="surrogatepass")).digest()


def _size(items: list[Any]) -> int:
    """The characters of ``items`` as compact JSON: what the server sent
    for them, near enough (its spacing aside)."""
    return len(json.dumps(items, ensure_ascii=False, separators=(",", ":")))
