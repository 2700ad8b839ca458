"""A form answerer for restart tests: answers one question at once, then parks
on the next until the test releases it (after killing the server under it)."""

from __future__ import annotations

from typing import Any

import trio

from runtime.replies import ElicitReply
from runtime.requests import ElicitationRequest


class Parking:
    """Accepts ``first_key`` with ``first`` at once; any other question sets
    :attr:`parked` and waits for :attr:`release`, then accepts with ``then``."""

    def __init__(
        self, first_key: str, first: dict[str, Any], then: dict[str, Any]
    ) -> None:
        self.first_key, self.first, self.then = first_key, first, then
        self.asked: list[str | None] = []
        self.parked = trio.Event()
        self.release = trio.Event()

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        self.asked.append(request.key)
        if request.key == self.first_key:
            return ElicitReply(action="accept", content=self.first)
        self.parked.set()
        await self.release.wait()
        return ElicitReply(action="accept", content=self.then)
