"""Mounting :class:`~.app.McpHttpApp` in another ASGI server: the lifespan
protocol's answers, and hypercorn's settings.

The app needs nothing set up or torn down (its sessions live in the nursery
it is given), so :func:`lifespan` only acknowledges; :func:`hypercorn_config`
is what ``hypercorn.trio.serve`` needs to serve it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .asgi import Receive, Send

if TYPE_CHECKING:
    from hypercorn.config import Config

__all__ = ["bind_address", "hypercorn_config", "lifespan"]


async def lifespan(receive: Receive, send: Send) -> None:
    # Nothing to set up or tear down: sessions live in the caller's nursery.
    while True:
        event = await receive()
        if event["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif event["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def bind_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def hypercorn_config(host: str, port: int) -> Config:
    """hypercorn's settings for serving :class:`McpHttpApp` at ``host:port``
    (``hypercorn.trio.serve(app, config)``): errors to the ``hypercorn.error``
    logger, no access log."""
    from hypercorn.config import Config

    config = Config()
    config.bind = [bind_address(host, port)]
    config.errorlog = logging.getLogger("hypercorn.error")
    config.accesslog = None
    return config
