"""The JSON-RPC session: push delivery (in memory) keeps order, nesting, isolation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

from bridge.jsonrpc import Message, Notification, Request, RequestId, Response, dumps
from bridge.jsonrpc.session import Session
from bridge.transports.memory import memory_pair


class Recorder:
    """A handler that records what it sees; notifications take a checkpoint."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def handle_request(self, request: Request, session: Session) -> Any:
        self.seen.append(f"request {request.method}")
        return {}

    async def handle_notification(
        self, notification: Notification, session: Session
    ) -> None:
        await trio.sleep(0)
        self.seen.append(f"notification {notification.method}")

    def closed(self, session: Session) -> None:
        pass


async def test_a_reply_waits_for_the_notification_sent_before_it() -> None:
    client_end, server_end = memory_pair()
    recorder = Recorder()
    client = Session(client_end, recorder)
    async with trio.open_nursery() as nursery:
        await nursery.start(client.run)

        async def answer() -> None:
            request = await server_end.receive()
            assert b'"ping"' in request
            server_end.send_nowait(Notification("notifications/progress"))
            server_end.send_nowait(Response(1, {}))

        nursery.start_soon(answer)
        with trio.fail_after(5):
            await client.ping()
        assert recorder.seen == ["notification notifications/progress"]
        nursery.cancel_scope.cancel()


class Echo:
    """A push transport that answers every frame the session sends with a new
    request, pushed back at once, from inside the send."""

    def __init__(self) -> None:
        self.deliver: Callable[[bytes | None], None] | None = None
        self.sent: list[Message] = []
        self.depth = 0
        self.deepest = 0

    def attach(self, deliver: Callable[[bytes | None], None]) -> None:
        self.deliver = deliver

    def detach(self) -> None:
        self.deliver = None

    def send_nowait(
        self, message: Message, *, related: RequestId | None = None
    ) -> None:
        self.sent.append(message)
        if len(self.sent) < 5 and self.deliver is not None:
            self.push(dumps(Request(len(self.sent) + 1, "ping")))

    async def send(self, message: Message, *, related: RequestId | None = None) -> None:
        self.send_nowait(message)

    async def receive(self) -> bytes:
        raise AssertionError("a push transport is never read")

    def push(self, data: bytes | None) -> None:
        assert self.deliver is not None
        self.depth += 1
        self.deepest = max(self.deepest, self.depth)
        try:
            self.deliver(data)
        finally:
            self.depth -= 1


class Immediate(Recorder):
    """Answers pings at once, with no task."""

    def begin_request(self, request: Request, session: Session) -> bool:
        self.seen.append(f"begin {request.id}")
        session.respond_nowait(request.id, {})
        self.seen.append(f"end {request.id}")
        return True


async def test_frames_pushed_while_one_is_handled_are_handled_after_it() -> None:
    transport = Echo()
    handler = Immediate()
    async with trio.open_nursery() as nursery:
        await nursery.start(Session(transport, handler).run)
        transport.push(dumps(Request(1, "ping")))
        transport.push(None)
    # Each request's reply pushes the next request: it is handled after the
    # one in hand ends, never inside it.
    assert handler.seen == [
        f"{what} {n}" for n in range(1, 6) for what in ("begin", "end")
    ]
    assert [m.id for m in transport.sent if isinstance(m, Response)] == [1, 2, 3, 4, 5]


async def test_a_failure_while_handling_a_pushed_frame_fails_the_receiver() -> None:
    client_end, server_end = memory_pair()
    receiver = Session(server_end, Recorder())

    def bug(message: Any) -> bool:
        raise RuntimeError("a bug in the receiving session")

    receiver._feed._dispatch_now = bug  # type: ignore[method-assign]
    sent = False

    async def serve_and_send() -> None:
        nonlocal sent
        async with trio.open_nursery() as nursery:
            await nursery.start(receiver.run)
            await client_end.send(Request(1, "ping"))
            sent = True  # the sender is not hurt: its send returns normally

    with pytest.raises(BaseExceptionGroup) as caught:
        await serve_and_send()
    assert sent
    assert caught.group_contains(RuntimeError, match="bug in the receiving")


class Sleeper(Recorder):
    """Requests wait until cancelled; the test sees which were."""

    def __init__(self) -> None:
        super().__init__()
        self.cancelled: list[RequestId] = []

    async def handle_request(self, request: Request, session: Session) -> Any:
        try:
            await trio.sleep_forever()
        finally:
            self.cancelled.append(request.id)


@pytest.mark.parametrize(
    ("request_id", "named_as", "cancels"),
    [
        (0, "0", True),  # "0" once fell back to the string and matched nothing
        (7, "7", True),
        ("7", 7, True),
        ("x", "x", True),
        (1, True, False),  # True == 1 in Python, but not in JSON-RPC
        (0, False, False),
        (7, 7.0, False),
        ("07", 7, False),
    ],
)
async def test_a_cancellation_names_a_request_by_its_id_as_json_rpc_reads_it(
    request_id: RequestId, named_as: Any, cancels: bool
) -> None:
    client_end, server_end = memory_pair()
    handler = Sleeper()
    receiver = Session(server_end, handler)
    async with trio.open_nursery() as nursery:
        await nursery.start(receiver.run)
        await client_end.send(Request(request_id, "slow"))
        await trio.testing.wait_all_tasks_blocked()
        assert receiver.in_flight == 1
        await client_end.send(
            Notification("notifications/cancelled", {"requestId": named_as})
        )
        await trio.testing.wait_all_tasks_blocked()
        assert handler.cancelled == ([request_id] if cancels else [])
        assert receiver.in_flight == (0 if cancels else 1)
        nursery.cancel_scope.cancel()


class Finisher(Recorder):
    """``slow`` requests take a second; the test sees which finished."""

    def __init__(self) -> None:
        super().__init__()
        self.finished: list[RequestId] = []

    async def handle_request(self, request: Request, session: Session) -> Any:
        if request.method == "slow":
            await trio.sleep(1)
        self.finished.append(request.id)
        return {}


async def _leave_after(handler: Recorder, methods: list[str]) -> float:
    """Send requests 1, 2, ... one by one, then leave; how long the drain of
    a session with a 5 s drain timeout took."""
    client_end, server_end = memory_pair()
    receiver = Session(server_end, handler, drain_timeout=5)
    async with trio.open_nursery() as nursery:
        await nursery.start(receiver.run)
        for request_id, method in enumerate(methods, 1):
            await client_end.send(Request(request_id, method))
            await trio.testing.wait_all_tasks_blocked()
        await client_end.aclose()
        start = trio.current_time()
    return trio.current_time() - start


async def test_after_the_peer_leaves_a_call_that_needs_nothing_from_it_may_finish(
    autojump_clock: trio.testing.MockClock,
) -> None:
    handler = Finisher()
    # One call before, answered: the session has been idle once already.
    took = await _leave_after(handler, ["quick", "slow"])
    assert handler.finished == [1, 2]
    assert took == pytest.approx(1)


async def test_after_the_peer_leaves_the_drain_ends_at_its_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    handler = Sleeper()
    took = await _leave_after(handler, ["slow"])
    assert handler.cancelled == [1]
    assert took == pytest.approx(5)


class Gated(Recorder):
    """Notifications wait at a gate the test opens."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = trio.Event()

    async def handle_notification(
        self, notification: Notification, session: Session
    ) -> None:
        await self.gate.wait()
        self.seen.append(notification.method)


async def _backlogged(session: Session, transport: Echo, count: int) -> None:
    """Push ``count`` notifications, which wait behind the gate."""
    for n in range(count):
        transport.push(dumps(Notification(f"notifications/n{n}")))
    await trio.testing.wait_all_tasks_blocked()


async def test_a_pusher_waits_while_the_limit_of_frames_waits_for_the_session() -> None:
    transport, handler = Echo(), Gated()
    session = Session(transport, handler)
    handled_when_passed: list[int] = []

    async def push_when_below_two() -> None:
        await session.backlog_below(2)
        handled_when_passed.append(len(handler.seen))

    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        await _backlogged(session, transport, 3)
        nursery.start_soon(push_when_below_two)
        await trio.testing.wait_all_tasks_blocked()
        assert handled_when_passed == []  # three wait, one of them in hand
        handler.gate.set()
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    # It went on once at most one frame was left waiting.
    assert handled_when_passed[0] >= 2
    assert handler.seen == [f"notifications/n{n}" for n in range(3)]


async def test_a_pusher_waiting_for_room_goes_on_when_the_session_ends() -> None:
    transport, handler = Echo(), Gated()
    session = Session(transport, handler)
    passed = trio.Event()
    async with trio.open_nursery() as outer:

        async def push_when_below_one() -> None:
            await session.backlog_below(1)
            passed.set()

        async with trio.open_nursery() as inner:
            await inner.start(session.run)
            await _backlogged(session, transport, 1)
            outer.start_soon(push_when_below_one)
            await trio.testing.wait_all_tasks_blocked()
            assert not passed.is_set()
            inner.cancel_scope.cancel()  # the session ends, its frame unhandled
        with trio.fail_after(5):
            await passed.wait()
    assert handler.seen == []
