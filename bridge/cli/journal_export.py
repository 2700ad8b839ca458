"""``yieldmcp journal STORE_URL [ID]``: a call's journal, out of a store.

With ``ID``, writes the journal of that call or task as one JSON document on
stdout (:class:`runtime.lowlevel.JournalDocument`, format
``yieldmcp.journal/1``): what :func:`runtime.testing.replay` reads. ``ID``
is one of:

* a task's id (``call --task`` prints it; the ``taskId`` its ``tools/call``
  was answered with);
* a call's id in the store: a 2025-11-25 call on a durable session, or a
  2026-07-28 call whose rounds keep their journal there; the list below
  shows them;
* a 2026-07-28 ``requestState`` (``v1.…``), opened with the key the server
  seals with: ``YIELDMCP_STATE_KEY``, or else the key the store keeps for
  its servers (``docs/durable.md``). A state that refers to a call in the
  store gives that call's journal; a state of a server without a store
  carries the journal itself. A state is read whatever its age.

Without ``ID``, lists the calls and tasks the store holds, one a line: its
kind, id, tool (``-`` where the store does not keep it) and status.

Every store operation has a deadline (``--store-timeout``, 5 s, as
``serve``'s), opening and closing the store included. The verb's arguments
are parsed in :mod:`.commands`; this module is imported only to run it.
What a user can get wrong (an unknown id, a store that cannot be opened, a
state sealed under another key) is a :class:`JournalError`: one line, exit
status 1. So is a call or task whose rows in the store cannot be read
(written by a stranger, or damaged: :class:`~bridge.stores.StoreUnreadable`,
or a task document of no task's shape), and a journal holding NaN or
Infinity, which its JSON document cannot. The listing passes over a row
that cannot be read, and the store names it in one warning line: one such
row does not hide the others.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, cast

import trio

from bridge.durable.keys import ID as KEY_ID
from bridge.durable.keys import NAMESPACE as KEY_NAMESPACE
from bridge.durable.log import CALLS
from bridge.durable.tasks import TASKS, TaskDoc
from bridge.elicit import cut, printable_line
from bridge.server.state_token import KEY_ENV, Sealer, decode_key
from bridge.stores import AsyncStore, JournalStore, StoreError, StoreUnreadable
from bridge.stores.url import sqlite_options
from runtime.errors import RequestError
from runtime.lowlevel import Journal, JournalDocument

from .console import HostError, json_text
from .store_options import OpenTimedOut, open_within

__all__ = ["JournalError", "export"]

_CLOSE_TIMEOUT: Final = 5.0
_STATE_PREFIX: Final = "v1."
_PURPOSES: Final = ("tools/call", "prompts/get")  # what a state may be sealed for
_MOST_QUOTED: Final = 120  # characters of a decoder's words an error line keeps


class JournalError(Exception):
    """What the user asked cannot be done: one line, exit status 1."""


def export(url: str, call_id: str | None, timeout: float) -> str:
    """What ``journal`` prints: the document of ``call_id`` (JSON), or the
    list of calls and tasks.

    Raises:
        JournalError: the store cannot be opened or does not answer in time,
            the id is unknown, or a state does not open.
    """
    store = _open(url, timeout)
    return trio.run(_export, store, call_id, timeout)


def _open(url: str, timeout: float) -> JournalStore:
    """The store, opened to read within ``timeout`` (as ``serve`` opens one:
    :func:`.store_options.open_within`): nothing in it is created or
    changed, so a PostgreSQL role that may only ``SELECT``, and a SQLite
    file on a read-only filesystem, read it, and a database that is no
    store is refused, left as it was.

    Raises:
        JournalError: it does not open in time, or cannot be opened.
    """
    _check_exists(url)
    try:
        return open_within(url, timeout, read_only=True)
    except OpenTimedOut:
        raise JournalError(f"the store did not open within {timeout} s") from None
    except StoreError as exc:
        raise JournalError(str(exc)) from None


async def _export(blocking: JournalStore, call_id: str | None, timeout: float) -> str:
    store = AsyncStore(blocking, timeout=timeout)
    try:
        if call_id is None:
            return "\n".join(await _listing(store))
        return _json_of(await _document(store, call_id))
    except StoreUnreadable as exc:
        raise _unreadable(exc.namespace, exc) from None
    except StoreError as exc:
        raise JournalError(f"the store failed: {exc}") from None
    finally:
        await _close(blocking)


def _json_of(document: JournalDocument) -> str:
    """The document as JSON text, its controls as JSON escapes.

    Raises:
        JournalError: the journal holds NaN or Infinity (the store's writer
            keeps them, and gives them back), which JSON has not, or is
            nested too deep to write.
    """
    named = f"{document.source} {_named(document.id)}"
    try:
        return json_text(document.to_json())
    except HostError:  # its words are about a server's answer: none here
        raise JournalError(
            f"{named}: its journal holds NaN or Infinity, which JSON has not: "
            f"it cannot be written as a journal document"
        ) from None
    except RecursionError:
        raise JournalError(
            f"{named}: its journal is nested too deep to write"
        ) from None


def _unreadable(kind: str, exc: StoreUnreadable) -> JournalError:
    """The line for a row of ``kind``'s (``call``, ``task``) the store
    cannot read: which row, and why in the store's few words."""
    named = f"{kind} {_named(exc.id)}"
    return JournalError(
        f"{named}: its {exc.part} in the store cannot be read ({exc.why})"
    )


def _named(id: str) -> str:
    """An id the user gave, or a store holds, as an error line names it:
    quoted, its controls escaped, and cut (a pasted 100 KB one)."""
    return cut(repr(id), _MOST_QUOTED)


def _quoted(exc: Exception) -> str:
    """A decoder's words on one line, cut: they may quote a huge value."""
    return printable_line(str(exc), most=_MOST_QUOTED)


def _check_exists(url: str) -> None:
    """A reader never makes a store: opening ``sqlite:`` at a mistyped path
    would create an empty database there and list nothing."""
    if not url.startswith("sqlite:"):
        return
    try:
        path = sqlite_options(url)[0]
    except StoreError as exc:
        raise JournalError(str(exc)) from None
    if not path.is_file():
        raise JournalError(f"no SQLite store at {path} (check the path)")
    if not _sqlite_file(path):
        # An empty file is an empty database to SQLite: opened as a store,
        # it was given the store's tables.
        raise JournalError(f"no SQLite store at {path} (the file is not a database)")


_SQLITE_HEADER: Final = b"SQLite format 3\x00"


def _sqlite_file(path: Path) -> bool:
    """Whether ``path`` holds an SQLite database: its header, or (a store
    created a moment ago, its first pages still in its write-ahead log) an
    empty file beside a log that is not."""
    try:
        with path.open("rb") as file:
            head = file.read(len(_SQLITE_HEADER))
        if head == _SQLITE_HEADER:
            return True
        wal = path.with_name(path.name + "-wal")
        return head == b"" and wal.is_file() and wal.stat().st_size > 0
    except OSError:
        return True  # unreadable: opening it says why, in one line


async def _close(store: JournalStore) -> None:
    with trio.move_on_after(_CLOSE_TIMEOUT):
        await trio.to_thread.run_sync(store.close, abandon_on_cancel=True)


async def _document(store: AsyncStore, wanted: str) -> JournalDocument:
    try:
        wanted.encode()
    except UnicodeEncodeError:  # bytes the shell passed as they were
        raise JournalError(
            f"no call or task {_named(wanted)} in the store (it is not UTF-8 "
            "text, as every id is); `yieldmcp journal STORE_URL` lists them"
        ) from None
    if wanted.startswith(_STATE_PREFIX):
        return await _from_state(store, wanted)
    task = await store.get(TASKS, wanted)
    if task is not None:
        try:
            doc = TaskDoc.from_json(task.value)
        except ValueError as exc:  # JSON, but of no task's shape
            raise JournalError(
                f"task {_named(wanted)}: its document in the store cannot be read "
                f"({_quoted(exc)})"
            ) from None
        ended = _ended(doc.result, doc.error)
        try:
            records = await store.read(CALLS, wanted)
        except StoreUnreadable as exc:  # its rounds are under CALLS: a task's
            raise _unreadable("task", exc) from None
        return _made(wanted, "task", doc.tool, doc.arguments, records, ended)
    return await _from_call(store, wanted, None)


async def _from_call(
    store: AsyncStore, call_id: str, tool: str | None
) -> JournalDocument:
    doc, records = await store.get_and_read(CALLS, call_id)
    if doc is None:
        raise JournalError(
            f"no call or task {_named(call_id)} in the store (expired, or another "
            f"store); `yieldmcp journal STORE_URL` lists them"
        )
    value = doc.value
    params: Any = value.get("params")
    if isinstance(params, Mapping):  # a 2025-11-25 call (bridge.durable.live)
        fields = cast("Mapping[str, Any]", params)
        name: Any = fields.get("name")
        arguments: Any = fields.get("arguments") or {}
        done: Any = _object(value.get("done")) or {}  # the call's response
        ended = _ended(done.get("result"), done.get("error")) if done else None
        return _made(call_id, "call", name, arguments, records, ended)
    return _made(call_id, "round", tool, None, records, None)


async def _from_state(store: AsyncStore, token: str) -> JournalDocument:
    state = _open_state(token, await _keys(store))
    name: Any = state.get("name")
    tool = name if isinstance(name, str) else None
    referred: Any = state.get("call")
    if isinstance(referred, str):
        return await _from_call(store, referred, tool)
    carried: Any = state.get("journal")
    try:
        journal = Journal.from_json(carried or {"answers": {}, "notices": []})
    except ValueError as exc:
        raise JournalError(f"the requestState's journal is malformed: {exc}") from None
    return _made(journal.call_id, "state", tool, None, journal.records(), None)


async def _keys(store: AsyncStore) -> list[bytes]:
    """The keys the server opens states with: ``YIELDMCP_STATE_KEY``'s,
    else the one the store keeps for its servers."""
    configured = os.environ.get(KEY_ENV, "")
    try:
        keys = [decode_key(k) for k in configured.split(",") if k.strip()]
        if keys:
            return keys
        kept = await store.get(KEY_NAMESPACE, KEY_ID)
        if kept is None:
            raise JournalError(
                f"a requestState opens with the server's key: set {KEY_ENV} to "
                f"it (the store keeps none)"
            )
        return [decode_key(str(kept.value["key"]))]
    except ValueError as exc:
        raise JournalError(str(exc)) from None


def _open_state(token: str, keys: list[bytes]) -> dict[str, Any]:
    # A state is read whatever its age: the clock a sealer checks expiry
    # against stands at the epoch.
    sealer = Sealer(keys, clock=lambda: 0.0)
    for purpose in _PURPOSES:
        try:
            return sealer.open(token, purpose=purpose)
        except RequestError:
            continue
    raise JournalError(
        f"this requestState does not open with the key in use: set {KEY_ENV} to "
        f"the key of the server that sealed it, and pass the whole state"
    )


def _made(
    call_id: str,
    source: str,
    tool: Any,
    arguments: Any,
    records: Any,
    ended: Any,
) -> JournalDocument:
    document = JournalDocument(
        id=call_id,
        source=source,
        tool=tool if isinstance(tool, str) else None,
        arguments=_object(arguments),
        records=tuple(dict(r) for r in records),
        ended=_object(ended),
    )
    try:
        document.journal()
    except ValueError as exc:  # a record of no journal's shape: it may be huge
        raise JournalError(f"{source} {_named(call_id)}: {_quoted(exc)}") from None
    return document


def _ended(result: Any, error: Any) -> dict[str, Any] | None:
    """How a call ended, one shape for tasks and calls: ``{"result": ...}``
    (the MCP result), ``{"error": ...}`` (the JSON-RPC error), or None."""
    if isinstance(result, Mapping):
        return {"result": _object(result)}
    if isinstance(error, Mapping):
        return {"error": _object(error)}
    return None


def _object(value: Any) -> dict[str, Any] | None:
    """``value`` as a JSON object, or None if it is none."""
    if not isinstance(value, Mapping):
        return None
    return dict(cast("Mapping[str, Any]", value))


async def _listing(store: AsyncStore) -> list[str]:
    """One line per task and call in the store: kind, id, tool, status."""
    lines: list[str] = []
    tasks = await store.scan(TASKS)
    for task_id, found in sorted(tasks, key=lambda t: _created(t[1].value)):
        tool, status = found.value.get("tool", "-"), found.value.get("status")
        lines.append(_row("task", task_id, tool, status))
    task_ids = {task_id for task_id, _found in tasks}
    for call_id, found in sorted(await store.scan(CALLS)):
        if call_id in task_ids:
            continue  # a task's own rounds before it became one
        value = found.value
        params: Any = value.get("params")
        status = "done" if value.get("done") else "running"
        if isinstance(params, Mapping):
            name: Any = cast("Mapping[str, Any]", params).get("name", "-")
            lines.append(_row("call", call_id, name, status))
        else:
            if not value.get("done"):
                status = f"round {value.get('round')}"
            lines.append(_row("round", call_id, "-", status))
    return lines


def _created(task: Mapping[str, Any]) -> float:
    """When the task was made, to sort by: 0 if the store says no number
    (a string beside the numbers failed the sort, and the listing)."""
    created: Any = task.get("created")
    is_number = isinstance(created, int | float) and not isinstance(created, bool)
    return float(created) if is_number else 0.0


def _row(*fields: object) -> str:
    """One tab-separated line of the listing. Ids, tool names and statuses
    are what the store's writers (and their clients) chose: shown without
    terminal controls, and a tab or a line break in one is a space, so it
    cannot shift the columns or forge a row."""
    return "\t".join(printable_line(str(field)).replace("\t", " ") for field in fields)
