"""A call's write-ahead log: its journal in the store, bounded.

Every driver of a call writes ahead through one log: the stream
``("call", call_id)`` of the call's journal records (answers, step results,
notice keys, deadlines: :func:`runtime.lowlevel.answer_record` and its
kin), appended *before* the call shows anything that follows them (the
machine's ``Persist`` barrier), read back with
:meth:`runtime.lowlevel.Journal.from_records` by whichever process takes the
call on. The call's own document ``("call", call_id)`` is its owner's: a
2026-07-28 round's one-time claim (:mod:`.rounds`), a live 2025-11-25
call's (:mod:`.live`); a task keeps its document under ``("task", id)``
(:mod:`.tasks`) and its journal here, under the same id.

The journal is bounded in bytes (``ServerLimits.max_journal_bytes``), in
every era and with every store: :meth:`CallLog.charge` counts what is
written (and what was read when the call was taken on), and refuses, with
:class:`~runtime.errors.JournalTooLarge`, records that would pass the bound,
so a 30 MB step result fails its call instead of filling the store.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final, final

import pydantic_core

from bridge.stores import AsyncStore, StoreUnreadable
from runtime.errors import JournalTooLarge
from runtime.lowlevel import Journal

__all__ = ["CALLS", "CallLog", "size_of"]

log = logging.getLogger("yieldmcp.durable")

CALLS: Final = "call"
"""The store namespace of calls: a document and a journal stream per call id."""


def size_of(records: Sequence[Mapping[str, Any]]) -> int:
    """The bytes ``records`` take as the store keeps them (their JSON)."""
    return len(pydantic_core.to_json(records))


@final
class CallLog:
    """The journal stream of call ``call_id`` in ``store`` (module doc).

    Args:
        store: the server's store.
        call_id: the call (a task's id for a task).
        max_bytes: the journal's bound (``ServerLimits.max_journal_bytes``).
        written: bytes of the journal already in the store (read when the
            call was taken on).
    """

    __slots__ = ("call_id", "max_bytes", "store", "written")

    def __init__(
        self, store: AsyncStore, call_id: str, *, max_bytes: int, written: int = 0
    ) -> None:
        self.store = store
        self.call_id = call_id
        self.max_bytes = max_bytes
        self.written = written

    def charge(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Count ``records`` against the bound before they are written.

        Raises:
            JournalTooLarge: they would take the journal past its bound (and
                are not counted: nothing of them is written).
        """
        if not records:
            return
        size = self.written + size_of(records)
        if size > self.max_bytes:
            raise JournalTooLarge(
                f"the call's journal would be {size} bytes, over the server's "
                f"limit of {self.max_bytes} (--max-journal-bytes); record less "
                f"in steps, or raise the limit"
            )
        if size * 5 >= self.max_bytes * 4 > self.written * 5:
            percent = size * 100 // self.max_bytes
            log.warning(
                "call %s: its journal is %d bytes, %d%% of its limit",
                self.call_id,
                size,
                percent,
            )
        self.written = size

    async def append(
        self,
        records: Sequence[Mapping[str, Any]],
        *,
        expires_at: float,
        charged: bool = False,
    ) -> None:
        """Append ``records`` (charged first, unless ``charged``: they were
        when they were kept, :meth:`charge`)."""
        if not records:
            return
        if not charged:
            self.charge(records)
        await self.store.append(CALLS, self.call_id, records, expires_at=expires_at)

    async def read(self) -> Journal:
        """The journal as the store holds it (and its bytes, counted).

        Raises:
            StoreUnreadable: a record is malformed (no writer of ours wrote it).
        """
        records = await self.store.read(CALLS, self.call_id)
        self.written = size_of(records)
        try:
            return Journal.from_records(records, self.call_id)
        except ValueError as exc:
            why = str(exc).removeprefix("malformed journal ")
            call_id = self.call_id
            raise StoreUnreadable("the store", CALLS, call_id, "journal", why) from None
