"""The live 2025-11-25 call in a task: questions become requests, and wait.

:class:`LiveExecutor` is the runtime executor of a 2025-11-25 call run in a
task (``runtime.lowlevel.run``): each question becomes a server→client request related
to the call (:func:`~bridge.server.questions.ask`), sent over the session
under the server's sampling or elicitation timeout, and the task waits for the
answer, unless the server's own model answers a sample
(:mod:`bridge.server.fallback`). Notices become notifications on the call's
stream.
:mod:`bridge.server.live_calls` delivers the same requests for a call with no
task, when the session can send without waiting.
"""

from __future__ import annotations

from typing import Any, final

from bridge.jsonrpc.session import Session
from runtime.lowlevel import Notice, PeerQuestion, ReleaseStream

from .fallback import Sampler, answer_here, sample_here
from .questions import CallScope, ask, decode_answer, notice_notification

__all__ = ["LiveExecutor"]


@final
class LiveExecutor:
    """Answers a tool's questions by asking the client over ``session``."""

    def __init__(
        self,
        session: Session,
        scope: CallScope,
        *,
        sampling_timeout: float | None = None,
        elicitation_timeout: float | None = None,
        sampler: Sampler | None = None,
        sample_always: bool = False,
    ) -> None:
        self.session = session
        self.scope = scope
        self.sampling_timeout = sampling_timeout
        self.elicitation_timeout = elicitation_timeout
        self.sampler = sampler  # the server's own model (bridge.server.fallback)
        self.sample_always = sample_always

    async def perform(self, key: str, question: PeerQuestion[Any]) -> Any:
        sampler = self.sampler
        if sampler is not None and answer_here(
            question, self.scope, sampler, always=self.sample_always
        ):
            return await sample_here(question, sampler, self.sampling_timeout)
        method, params = ask(question, self.scope, key)
        timeout = (
            self.sampling_timeout
            if method == "sampling/createMessage"
            else self.elicitation_timeout
        )
        result = await self.session.request(
            method, params, related=self.scope.request_id, timeout=timeout
        )
        return decode_answer(question, result)

    async def notify(self, key: str, notice: Notice) -> None:
        if isinstance(notice, ReleaseStream):
            await self.session.release_stream(self.scope.request_id)
            return
        notification = notice_notification(notice, self.scope, key)
        if notification is not None:
            method, params = notification
            await self.session.notify(method, params, related=self.scope.request_id)
