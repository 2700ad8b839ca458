"""What a server announces, and which client hears it, in both eras.

A server announces two kinds of change (:data:`Change`): one of its lists
changed (``"tools"``, ``"prompts"``, ``"resources"``: :meth:`Offer.add` and
``remove`` announce these), or a resource's content changed
(:class:`ResourceUpdated`: :meth:`Offer.notify_resource_updated`). Who hears
which is decided here, sans-IO, for every transport:

* **2025-11-25:** an initialized connection hears every list change
  (``tools.listChanged`` and the others are advertised), and an update of a URI
  it subscribed to with ``resources/subscribe`` (or of a sub-resource of it:
  ``file:///dir/a`` under ``file:///dir``) — :func:`legacy_notification`.
* **2026-07-28:** a ``subscriptions/listen`` request opts in to each kind
  (:class:`Listen`, from its ``notifications`` filter); only those are sent,
  each tagged with the subscription's id — :func:`modern_notification`.

The live side (a task relaying changes over a session or an SSE stream) is the
connection's (:mod:`.connection`) and the HTTP endpoint's; this module only maps.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, cast, final

import attrs

from bridge.jsonrpc.messages import INVALID_PARAMS
from runtime.errors import RequestError

from .limits import busy, check_size

if TYPE_CHECKING:
    from bridge.jsonrpc.messages import Request

    from .limits import ServerLimits

__all__ = [
    "SUBSCRIPTION_ID",
    "Change",
    "Listen",
    "ListKind",
    "ResourceUpdated",
    "legacy_notification",
    "modern_notification",
]

ListKind = Literal["tools", "prompts", "resources"]

SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

_FILTERS: Final[Mapping[str, str]] = {
    "tools": "toolsListChanged",
    "prompts": "promptsListChanged",
    "resources": "resourcesListChanged",
}


@final
@attrs.frozen
class ResourceUpdated:
    """The content of the resource at ``uri`` changed."""

    uri: str


Change = ListKind | ResourceUpdated
"""One announcement: a list changed, or a resource's content did."""


def _covers(subscribed: str, uri: str) -> bool:
    """Whether a subscription to ``subscribed`` hears an update of ``uri``
    (the spec allows a sub-resource of the subscribed one)."""
    return uri == subscribed or uri.startswith(subscribed.rstrip("/") + "/")


def legacy_notification(
    change: Change, subscriptions: Collection[str]
) -> tuple[str, dict[str, Any] | None] | None:
    """The 2025-11-25 notification for ``change`` on a connection subscribed to
    ``subscriptions``, or None when it hears nothing of it."""
    if isinstance(change, ResourceUpdated):
        if any(_covers(s, change.uri) for s in subscriptions):
            return "notifications/resources/updated", {"uri": change.uri}
        return None
    return f"notifications/{change}/list_changed", None


@final
@attrs.frozen
class Listen:
    """What one ``subscriptions/listen`` opted in to (and the server honours)."""

    subscription_id: Any
    lists: frozenset[str]
    uris: frozenset[str]

    @classmethod
    def from_request(cls, request: Request, limits: ServerLimits) -> Listen:
        """The subscription ``request`` asks for.

        Raises:
            RequestError: -32602 for a missing or malformed filter, or a URI
                too large; -32000 for more URIs than ``max_subscriptions``.
        """
        wanted: Any = (request.params or {}).get("notifications")
        if not isinstance(wanted, Mapping):
            raise RequestError(
                INVALID_PARAMS, "subscriptions/listen needs notifications"
            )
        wanted = cast("Mapping[str, Any]", wanted)
        lists = frozenset(k for k, name in _FILTERS.items() if wanted.get(name) is True)
        raw: Any = wanted.get("resourceSubscriptions", [])
        if not isinstance(raw, list) or not all(
            isinstance(u, str) for u in cast("list[Any]", raw)
        ):
            raise RequestError(
                INVALID_PARAMS, "notifications.resourceSubscriptions must be strings"
            )
        uris = frozenset(cast("list[str]", raw))
        if len(uris) > limits.max_subscriptions:
            raise busy("too many resource subscriptions", limits.max_subscriptions)
        for uri in uris:
            check_size("a subscribed uri", uri, limits)
        return cls(request.id, lists, uris)

    @property
    def tag(self) -> dict[str, Any]:
        return {SUBSCRIPTION_ID: self.subscription_id}

    def acknowledged(self) -> tuple[str, dict[str, Any]]:
        """The first notification of the subscription: what it honours."""
        honoured: dict[str, Any] = {_FILTERS[kind]: True for kind in sorted(self.lists)}
        if self.uris:
            honoured["resourceSubscriptions"] = sorted(self.uris)
        params = {"_meta": self.tag, "notifications": honoured}
        return "notifications/subscriptions/acknowledged", params


def modern_notification(
    change: Change, listen: Listen
) -> tuple[str, dict[str, Any]] | None:
    """The 2026-07-28 notification for ``change`` on ``listen``, or None when
    it did not opt in to it."""
    if isinstance(change, ResourceUpdated):
        if any(_covers(s, change.uri) for s in listen.uris):
            return "notifications/resources/updated", {
                "uri": change.uri,
                "_meta": listen.tag,
            }
        return None
    if change not in listen.lists:
        return None
    return f"notifications/{change}/list_changed", {"_meta": listen.tag}
