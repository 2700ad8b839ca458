"""``yieldmcp serve``'s flags for every limit, made from the limits themselves.

Each field of :class:`~bridge.server.limits.ServerLimits` and
:class:`~bridge.transports.http.HttpLimits` is a flag (``max_calls`` is
``--max-calls``), typed and documented from the field, so a new limit gets its
flag with no code here. Also: ``--state-ttl``, ``--debug``,
``--allow-origin`` and ``--allow-host``. What a flag does not set keeps the
value the served code chose (or the default).
"""

from __future__ import annotations

import argparse
import math
import re
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from bridge.server.server import Server
    from bridge.transports.http.config import HttpLimits

__all__ = ["Positive", "add_limit_flags", "apply_limits", "http_limits", "http_options"]

# The limits' classes are imported when a function here needs them:
# :class:`Positive` alone (``journal --store-timeout``) imports no server.


def _limits() -> tuple[type[Any], ...]:
    from bridge.server.limits import ServerLimits
    from bridge.transports.http.config import HttpLimits

    return (ServerLimits, HttpLimits)


def _described(cls: type[Any]) -> dict[str, str]:
    """The ``Attributes:`` section of ``cls``'s docstring, by name."""
    text = (cls.__doc__ or "").split("Attributes:", 1)[-1]
    found: dict[str, str] = {}
    for name, body in re.findall(r"\n {8}(\w+): (.*?)(?=\n {8}\w+: |\Z)", text, re.S):
        found[name] = " ".join(body.split())
    return found


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_limit_flags(command: argparse.ArgumentParser) -> None:
    """Add a flag for every limit, and the server's own settings, to ``serve``."""
    from bridge.server.limits import MAX_SECONDS, duration

    group = command.add_argument_group(
        "limits", "what one client can make the server hold (docs/deploying.md)"
    )
    for cls in _limits():
        described = _described(cls)
        fields: tuple[attrs.Attribute[Any], ...] = attrs.fields(cls)
        for field in fields:
            default: object = field.default
            kind: type[Any] = type(default)
            if default is None:  # a limit whose default is worked out
                kind = float if "float" in str(field.type) else int
            at_most = MAX_SECONDS if field.validator is duration else math.inf
            options: dict[str, Any] = {
                "type": Positive(kind, at_most=at_most)
                if kind in (int, float)
                else kind,
                "metavar": kind.__name__.upper(),
            }
            if kind is str:  # a choice
                options = {"choices": _choices(field)}
            group.add_argument(
                _flag(field.name),
                dest=field.name,
                default=None,
                help=f"{described.get(field.name, '')} (default: {_shown(field)})",
                **options,
            )
    group.add_argument(
        "--state-ttl",
        type=Positive(float, at_most=MAX_SECONDS),
        metavar="SECONDS",
        help="seconds a 2026-07-28 requestState stays valid (default: 600)",
    )
    command.add_argument(
        "--debug",
        action="store_true",
        help=(
            "development only: tell clients what an unexpected exception in a "
            "tool said (by default they get an error id; the log has the rest)"
        ),
    )
    command.add_argument(
        "--allow-origin",
        action="append",
        type=_origin,
        default=[],
        metavar="ORIGIN",
        help=(
            "a browser origin (scheme://host[:port]) allowed besides the "
            "server's own; repeatable"
        ),
    )
    command.add_argument(
        "--allow-host",
        action="append",
        type=_host,
        default=[],
        metavar="HOST",
        help="a Host name accepted besides loopback ones and HOST; repeatable",
    )


def _origin(value: str) -> str:
    """A browser origin, ``scheme://host[:port]``: anything else would never
    match an ``Origin`` header, and the browser's requests would get 403."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value.strip())
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise argparse.ArgumentTypeError(
            f"expected an origin, scheme://host[:port], got {value!r}"
        )
    return value


def _host(value: str) -> str:
    """A Host name: a name or an address, without a scheme, path or space."""
    if not value or any(c.isspace() or c in "/\\@?#" for c in value):
        raise argparse.ArgumentTypeError(f"expected a host name, got {value!r}")
    return value


class Positive:
    """A limit flag's type: a number above 0, refused by argparse as a usage
    error (exit 2, naming the flag) rather than by the limit when the server
    is built. Every limit is positive (``bridge.server.limits.positive``)."""

    def __init__(
        self, kind: type[int] | type[float], *, at_most: float = math.inf
    ) -> None:
        self.kind = kind
        self.at_most = at_most
        self.__name__ = kind.__name__  # argparse: "invalid int value: 'x'"

    def __call__(self, text: str) -> int | float:
        value = self.kind(text)
        if not value > 0:  # NaN too
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        if not value <= self.at_most:  # a time: ten years at most (inf too)
            raise argparse.ArgumentTypeError(
                f"must be at most {self.at_most:.0f} seconds (ten years), got {text}"
            )
        return value


def _shown(field: attrs.Attribute[Any]) -> str:
    return "see above" if field.default is None else str(field.default)


def _choices(field: attrs.Attribute[Any]) -> list[str]:
    validator: Any = field.validator
    return sorted(getattr(validator, "options", ()))


def _chosen(args: argparse.Namespace, cls: type[Any]) -> dict[str, Any]:
    return {
        f.name: getattr(args, f.name)
        for f in attrs.fields(cls)
        if getattr(args, f.name, None) is not None
    }


def apply_limits(server: Server, args: argparse.Namespace) -> None:
    """Apply the server-side flags to the loaded ``server``.

    Raises:
        ValueError: a value a limit refuses (not positive).
    """
    from bridge.server.limits import ServerLimits

    chosen = _chosen(args, ServerLimits)
    if chosen:
        server.set_limits(attrs.evolve(server.limits, **chosen))
    if args.state_ttl is not None:
        server.sealer.ttl = args.state_ttl
    if args.debug:
        server.debug = True


def http_limits(args: argparse.Namespace) -> HttpLimits:
    """The HTTP limits the flags set (the rest at their defaults).

    Raises:
        ValueError: a value a limit refuses.
    """
    from bridge.transports.http.config import HttpLimits

    return HttpLimits(**_chosen(args, HttpLimits))


def http_options(args: argparse.Namespace) -> dict[str, Any]:
    """``serve_http``'s keyword arguments from the flags."""
    return {
        "limits": http_limits(args),
        "allowed_origins": list(args.allow_origin),
        "allowed_hosts": list(args.allow_host),
    }
