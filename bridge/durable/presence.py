"""This process among the others sharing a store: its lease and its inbox.

Several processes may serve the same durable 2025-11-25 sessions (``serve
--workers N`` with a store, or any processes behind a load balancer). A call
runs in the process that took its ``tools/call`` on; the client's next POST
may reach another one. We *route* rather than replay on every request: the
process that holds a call keeps it running, and a client's answer POSTed to
another process is appended to the owner's *inbox*, a stream in the store
that the owner waits on (:meth:`bridge.stores.AsyncStore.wait`), and handed to
its session there. Replaying the call on whichever process an answer reaches
would rerun the generator up to that answer on every round and make two
processes race for one call; routing costs one append and one read per
answer, and only when the answer misses its call's process.

Each process has a random id and a *lease*: the document ``("worker", id)``,
rewritten every third of ``HttpLimits.session_lease`` (3 s) to expire a lease
later, and deleted when the process stops cleanly. A call whose process's lease is gone
is taken on by the next process the client reaches (:mod:`.durable`), which
also reads the answers left in the dead process's inbox.

**Whether the store answers** (:class:`Outage`). Each use of the store on a
2025-11-25 request's way waits up to ``--store-timeout`` (5 s) for an answer;
one request makes several in turn (its session, its call's document, its
journal, its response), and a store that stopped answering cost each of them
that deadline: a call took 35 s to fail. So once one of them (or this
process's beat) found the store away, the others fail at once until the store
answers again, which the beat, asking every third of a lease whatever
happens, finds out.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable, Generator, Mapping
from typing import Any, Final, Protocol, cast, final

import trio

from bridge.stores import AsyncStore, StoreError, StoreUnavailable

__all__ = ["INBOX", "INBOX_TTL", "WORKERS", "Outage", "Presence", "Reachable"]

log = logging.getLogger("yieldmcp.http")

WORKERS: Final = "worker"
"""Namespace of the processes' leases."""
INBOX: Final = "inbox"
"""Namespace of the processes' inboxes: messages for the calls they hold."""
INBOX_TTL: Final = 3600.0
"""Seconds an inbox outlives its owner's last beat (``--inbox-ttl``)."""


class Reachable(Protocol):
    """A session this process holds, as its inbox reaches it."""

    @property
    def closed(self) -> bool: ...

    async def deliver(self, data: bytes) -> None: ...


@final
class Outage:
    """Whether this process knows the store to be away: an operation found it
    unreachable or timed out (:class:`~bridge.stores.StoreUnavailable`), and
    this process's beat has not had an answer since (see the module doc).
    Only the beat, which writes whatever happens, says the store is back: a
    request that used no store, or only read it, proves nothing."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: StoreUnavailable | None = None

    def check(self) -> None:
        """Raise at once while the store is known to be away.

        Raises:
            StoreUnavailable: it is, saying why.
        """
        if self.error is not None:
            raise StoreUnavailable(f"{self.error} (it has not answered since)")

    def saw(self, exc: BaseException) -> None:
        """An operation failed with ``exc``: an unreachable store is away."""
        if isinstance(exc, StoreUnavailable) and self.error is None:
            self.error = exc  # the first: what check() names

    @contextlib.contextmanager
    def watching(self) -> Generator[None]:
        """Around some use of the store: raise at once while it is known to
        be away, and make it known away if it is unreachable.

        Raises:
            StoreUnavailable: the store is known to be away, or was found so.
        """
        self.check()
        try:
            yield
        except StoreUnavailable as exc:
            self.saw(exc)
            raise

    @contextlib.contextmanager
    def probing(self) -> Generator[None]:
        """Around the beat: asks whatever is known; its answer makes the
        store known back, its failure known away."""
        try:
            yield
        except StoreUnavailable as exc:
            self.saw(exc)
            raise
        self.error = None


@final
class Presence:
    """This process's id, lease and inbox in the store (see the module doc)."""

    def __init__(
        self,
        store: AsyncStore,
        sessions: Callable[[str], Reachable | None],
        lease: float = 3.0,
        inbox_ttl: float = INBOX_TTL,
    ) -> None:
        self.store = store
        self.lease = lease  # seconds it counts as alive after a beat
        self.beat = lease / 3
        self.inbox_ttl = inbox_ttl
        self.id = secrets.token_hex(8)
        self.outage = Outage()  # whether the store answers (module doc)
        self._sessions = sessions
        self._position = 0  # of the inbox's next record to read

    async def run(self) -> None:
        """Beat and read the inbox until cancelled; then give the lease up."""
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._beat)
                nursery.start_soon(self._read_inbox)
        finally:
            with trio.move_on_after(2) as cleanup:
                cleanup.shield = True
                # On failure the lease runs out on its own.
                with contextlib.suppress(StoreError):
                    await self.store.delete(WORKERS, self.id)

    async def alive(self, worker: Any) -> bool:
        """Whether process ``worker`` holds its lease."""
        if worker == self.id:
            return True
        if not isinstance(worker, str):
            return False
        return await self.store.get(WORKERS, worker) is not None

    async def route(self, worker: str, session_id: str, data: bytes) -> None:
        """Leave a client's message for process ``worker``'s session."""
        await self._leave(worker, {"s": session_id, "m": json.loads(data)})

    async def keep(self, session_id: str, data: bytes) -> None:
        """Write down a client's answer to a question of a call this process
        runs, before it is delivered here and acknowledged (202): the client
        will not send it again, so if this process dies before the call has
        recorded it, the process that takes the call on reads it here
        (:meth:`left_for`). This process's own reader skips it."""
        record = {"s": session_id, "m": json.loads(data), "kept": True}
        await self._leave(self.id, record)

    async def _leave(self, worker: str, record: Mapping[str, Any]) -> None:
        expires = time.time() + self.inbox_ttl
        await self.store.append(INBOX, worker, [record], expires_at=expires)

    async def left_for(self, worker: str, session_id: str, prefix: str) -> list[bytes]:
        """Responses left in ``worker``'s inbox for a call's questions (their
        ids start with ``prefix``)."""
        found: list[bytes] = []
        for record in await self.store.read(INBOX, worker):
            message: Any = record.get("m")
            if record.get("s") != session_id or not isinstance(message, dict):
                continue
            message_id = cast("dict[str, Any]", message).get("id")
            if isinstance(message_id, str) and message_id.startswith(prefix):
                found.append(json.dumps(message).encode())
        return found

    async def _beat(self) -> None:
        while True:
            try:
                now = time.time()
                with self.outage.probing():
                    await self.store.put(
                        WORKERS, self.id, {"at": now}, expires_at=now + self.lease
                    )
                    # The inbox lives while its owner does, however idle: an
                    # empty append moves its expiry (and says how long it is).
                    length = await self.store.append(
                        INBOX, self.id, [], expires_at=now + self.inbox_ttl
                    )
                if length < self._position:
                    # It expired anyway (the store was away longer than its
                    # lifetime) and a router started it again: read it from
                    # its start, or the answers it holds are never read.
                    self._position = 0
            except StoreError as exc:
                log.warning("could not renew this process's lease: %s", exc)
            await trio.sleep(self.beat)

    async def _read_inbox(self) -> None:
        while True:
            position = self._position
            try:
                # Bounded by a beat: a restarted inbox is read from its start
                # soon after the beat notices (_beat).
                records = await self.store.wait(INBOX, self.id, position, self.beat)
            except StoreError as exc:
                self.outage.saw(exc)  # only the beat, which writes, says it is back
                log.warning("could not read this process's inbox: %s", exc)
                await trio.sleep(self.beat)
                continue
            if self._position != position:
                continue  # restarted while this read waited: read it again
            self._position = position + len(records)
            for record in records:
                if not record.get("kept"):  # delivered here when it came
                    await self._deliver(record)

    async def _deliver(self, record: Mapping[str, Any]) -> None:
        session_id, message = record.get("s"), record.get("m")
        http = self._sessions(session_id) if isinstance(session_id, str) else None
        if http is None or http.closed:
            return  # the session ended here: the message has no one to reach
        with contextlib.suppress(trio.ClosedResourceError):
            await http.deliver(json.dumps(message).encode())
