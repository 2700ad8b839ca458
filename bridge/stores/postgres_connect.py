"""How the PostgreSQL store opens a connection, bounded against a hung server.

Reaching the server takes at most ``connect_timeout`` seconds. Every session
then has ``statement_timeout`` and ``lock_timeout`` set to ``timeout`` (unless
the URL's ``options`` set them), and the connection uses TCP keepalives
(after ``timeout`` idle seconds) and ``tcp_user_timeout``, so a connection to
a partitioned server fails instead of hanging. Whatever the URL gives
(``?keepalives_idle=30``) wins over these defaults. A server stopped while
its kernel still acknowledges fools TCP: what bounds a request then is the
trio side's own deadline (:class:`~bridge.stores.running.AsyncStore`).
"""

from __future__ import annotations

from typing import Any, Final, final

import psycopg
import psycopg.conninfo

from .base import StoreUnavailable

__all__ = ["Connector", "first_line"]

_SESSION: Final = (  # a NULL keeps the setting as the connection made it
    "SELECT set_config('statement_timeout',"
    " coalesce(%s, current_setting('statement_timeout')), false),"
    " set_config('lock_timeout', coalesce(%s, current_setting('lock_timeout')), false)"
)


def first_line(exc: BaseException) -> str:
    """An error's first line (psycopg's messages run to several)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@final
class Connector:
    """Opens connections to ``url``, shown in errors as ``shown``.

    Raises:
        StoreUnavailable: the URL cannot be read.
    """

    def __init__(
        self, url: str, shown: str, *, connect_timeout: float, timeout: float
    ) -> None:
        self.url = url
        self.shown = shown
        try:
            given = psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.Error as exc:
            reason = first_line(exc)
            raise StoreUnavailable(f"bad store URL {shown}: {reason}") from None
        defaults = {
            "connect_timeout": max(1, int(connect_timeout)),
            "keepalives": 1,
            "keepalives_idle": max(1, int(timeout)),
            "keepalives_interval": 1,
            "keepalives_count": 3,
            "tcp_user_timeout": max(1, int(timeout * 1000)),
        }
        self.arguments: dict[str, Any] = {"autocommit": True}
        self.arguments |= {k: v for k, v in defaults.items() if k not in given}
        options = str(given.get("options") or "")
        bound = f"{max(1, int(timeout * 1000))}ms"
        # None: the URL's options set it, and it stays as they say.
        self.session = tuple(
            None if name in options else bound
            for name in ("statement_timeout", "lock_timeout")
        )

    def connect(self) -> psycopg.Connection[Any]:
        """A new connection, its session's timeouts set (one round trip).

        Raises:
            StoreUnavailable: the server cannot be reached, or refused us.
        """
        try:
            conn = psycopg.connect(self.url, **self.arguments)
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot reach {self.shown}: {first_line(exc)}"
            ) from None
        try:
            if any(self.session):
                conn.execute(_SESSION, self.session)
        except psycopg.Error as exc:
            conn.close()
            raise StoreUnavailable(f"{self.shown}: {first_line(exc)}") from None
        return conn
