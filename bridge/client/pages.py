"""Reading a paginated list (``tools/list``, ``resources/list``, ...).

The spec lets a server answer a list in pages (``nextCursor``). The client
reads them through :func:`pages`, bounded: at most :data:`MAX_PAGES` pages,
and never to a cursor it has seen before, so a server that pages without end
or in a loop cannot keep a call waiting. Both the listings
(:meth:`bridge.client.client.Client.list_tools`, ``list_all``) and the output
schemas looked up for a call (:mod:`.output_schemas`) read lists this way.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, Final, cast

__all__ = ["MAX_PAGES", "Request", "pages"]

log = logging.getLogger("yieldmcp.client")

MAX_PAGES: Final = 100
"""Pages of one list read at most."""

Request = Callable[[str, Mapping[str, Any]], Awaitable[Any]]


async def pages(
    request: Request, method: str, key: str
) -> AsyncGenerator[tuple[list[Any], bool]]:
    """Each page's items (what the page holds under ``key``), and whether
    it is the list's last page: one with no next cursor, or one whose cursor
    was seen before. After :data:`MAX_PAGES` pages none was the last, and a
    warning is logged. (A caller that stops early closes it: ``aclosing``.)"""
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        answer: Any = await request(
            method, {} if cursor is None else {"cursor": cursor}
        )
        page = cast("dict[str, Any]", answer) if isinstance(answer, dict) else {}
        listed: Any = page.get(key)
        items = cast("list[Any]", listed) if isinstance(listed, list) else []
        following: Any = page.get("nextCursor")
        last = not isinstance(following, str) or not following or following in seen
        yield items, last
        if last:
            return
        cursor = following
        seen.add(following)
    log.warning(
        "%s: more than %d pages; read the first %d", method, MAX_PAGES, MAX_PAGES
    )
