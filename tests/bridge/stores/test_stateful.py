"""Each durable backend behaves like the in-memory reference under any
sequence of operations (Hypothesis stateful testing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from bridge.stores import JournalStore, MemoryStore, StoreConflict, open_store

NAMESPACES = st.sampled_from(["call", "task", "séssion"])
IDS = st.sampled_from(["a", "b", "c/d", "ü 1"])
# Expiries far from now, so wall-clock time passing never changes an answer.
EXPIRIES = st.sampled_from([None, 1_000.0, 4_000_000_000.0])
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
OBJECTS = st.dictionaries(st.text(max_size=5), JSON, max_size=3)


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return ("ok", fn(*args, **kwargs))
    except StoreConflict as exc:
        return ("conflict", exc.expected, exc.found)


class SameAsMemory(RuleBasedStateMachine):
    url: str = ""

    def __init__(self) -> None:
        super().__init__()
        self.model = MemoryStore()
        self.real: JournalStore = open_store(self.url)
        self.touched: set[tuple[str, str]] = set()

    def both(self, method: str, *args: Any, **kwargs: Any) -> Any:
        want = _outcome(getattr(self.model, method), *args, **kwargs)
        got = _outcome(getattr(self.real, method), *args, **kwargs)
        assert got == want, method
        return got

    @rule(ns=NAMESPACES, id=IDS, value=OBJECTS, expires=EXPIRIES, data=st.data())
    def put(
        self,
        ns: str,
        id: str,
        value: Mapping[str, Any],
        expires: float | None,
        data: st.DataObject,
    ) -> None:
        expect = data.draw(st.none() | st.integers(0, 4))
        self.touched.add((ns, id))
        self.both("put", ns, id, value, expect=expect, expires_at=expires)

    @rule(ns=NAMESPACES, id=IDS)
    def get(self, ns: str, id: str) -> None:
        self.both("get", ns, id)

    @rule(ns=NAMESPACES, id=IDS)
    def delete(self, ns: str, id: str) -> None:
        self.both("delete", ns, id)

    @rule(
        ns=NAMESPACES, id=IDS, records=st.lists(OBJECTS, max_size=3), expires=EXPIRIES
    )
    def append(
        self, ns: str, id: str, records: list[Mapping[str, Any]], expires: float | None
    ) -> None:
        self.touched.add((ns, id))
        self.both("append", ns, id, records, expires_at=expires)

    @rule(ns=NAMESPACES, id=IDS, start=st.integers(0, 5))
    def read(self, ns: str, id: str, start: int) -> None:
        self.both("read", ns, id, start)

    @rule(ns=NAMESPACES, id=IDS)
    def get_and_read(self, ns: str, id: str) -> None:
        self.both("get_and_read", ns, id)

    @rule(
        ns=NAMESPACES,
        id=IDS,
        value=OBJECTS,
        records=st.lists(OBJECTS, max_size=3),
        expires=EXPIRIES,
        expect=st.none() | st.integers(0, 4),
    )
    def put_and_append(
        self,
        ns: str,
        id: str,
        value: Mapping[str, Any],
        records: list[Mapping[str, Any]],
        expires: float | None,
        expect: int | None,
    ) -> None:
        self.touched.add((ns, id))
        self.both(
            "put_and_append", ns, id, value, records, expect=expect, expires_at=expires
        )

    @rule(ns=NAMESPACES)
    def scan(self, ns: str) -> None:
        want = sorted((id, d) for id, d in self.model.scan(ns))
        got = sorted((id, d) for id, d in self.real.scan(ns))
        assert got == want

    @rule(now=st.sampled_from([2_000.0, 2_000_000_000.0]))
    def sweep(self, now: float) -> None:
        self.both("sweep", now)

    @invariant()
    def same_documents(self) -> None:
        for ns, id in self.touched:
            assert self.real.get(ns, id) == self.model.get(ns, id)

    def teardown(self) -> None:
        # A server-backed store outlives the example: leave it empty.
        for ns, id in self.touched:
            self.real.delete(ns, id)
        self.real.close()


def test_durable_backend_matches_memory(durable_url: str) -> None:
    machine = type("Machine", (SameAsMemory,), {"url": durable_url})
    run = machine.TestCase
    run.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)
    run().runTest()


def test_the_reference_is_deterministic() -> None:
    # Guard the guard: two memory stores given the same operations agree.
    machine = type("Machine", (SameAsMemory,), {"url": "memory:"})
    run = machine.TestCase
    run.settings = settings(max_examples=10, stateful_step_count=10, deadline=None)
    run().runTest()
