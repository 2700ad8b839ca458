"""The two calls a durable round makes, on every backend: ``get_and_read``
(the document and its stream in one trip) and ``put_and_append`` (a
compare-and-swap and an append that happen together or not at all)."""

from __future__ import annotations

import threading

import pytest

from bridge.stores import JournalStore, StoreConflict

FUTURE = 4_000_000_000.0  # year 2096
LATER = 3_000_000_000.0  # before FUTURE, long after now


def test_get_and_read_of_nothing(store: JournalStore) -> None:
    assert store.get_and_read("call", "nope") == (None, [])


def test_put_and_append_writes_both(store: JournalStore) -> None:
    store.append("call", "c", [{"n": 0}])
    assert store.put_and_append("call", "c", {"round": 1}, [{"n": 1}, {"n": 2}]) == 1
    doc, records = store.get_and_read("call", "c")
    assert doc is not None
    assert (dict(doc.value), doc.version) == ({"round": 1}, 1)
    assert records == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert store.read("call", "c") == records
    expect = doc.version
    assert store.put_and_append("call", "c", {"round": 2}, [], expect=expect) == 2
    assert store.read("call", "c") == records  # an empty append adds nothing


def test_a_conflict_appends_nothing(store: JournalStore) -> None:
    store.put_and_append("call", "c", {"round": 1}, [{"n": 1}])
    store.put("call", "c", {"round": 2})
    with pytest.raises(StoreConflict) as caught:
        store.put_and_append("call", "c", {"round": 9}, [{"n": 9}], expect=1)
    assert (caught.value.expected, caught.value.found) == (1, 2)
    with pytest.raises(StoreConflict):
        store.put_and_append("call", "new", {"round": 9}, [{"n": 9}], expect=1)
    doc, records = store.get_and_read("call", "c")
    assert doc is not None
    assert (dict(doc.value), records) == ({"round": 2}, [{"n": 1}])
    assert store.get_and_read("call", "new") == (None, [])


def test_expect_zero_creates_with_records_once(store: JournalStore) -> None:
    assert store.put_and_append("task", "t", {"n": 1}, [{"r": 1}], expect=0) == 1
    with pytest.raises(StoreConflict):
        store.put_and_append("task", "t", {"n": 2}, [{"r": 2}], expect=0)
    assert store.read("task", "t") == [{"r": 1}]


def test_the_expiry_is_the_documents_and_the_streams(store: JournalStore) -> None:
    # The stream had a later expiry; even an empty append moves it with the
    # document's, so both go at the same sweep.
    store.append("call", "c", [{"n": 1}], expires_at=FUTURE)
    store.put_and_append("call", "c", {"round": 1}, [], expires_at=LATER)
    doc, records = store.get_and_read("call", "c")
    assert doc is not None
    assert (doc.expires_at, records) == (LATER, [{"n": 1}])
    assert store.sweep(LATER + 1) == 2
    assert store.get("call", "c") is None
    assert store.read("call", "c") == []


def test_an_empty_append_moves_a_streams_expiry_earlier(store: JournalStore) -> None:
    # How a finished 2025-11-25 call's questions expire with its document.
    store.append("asked", "c", [{"k": "a"}], expires_at=FUTURE)
    assert store.append("asked", "c", [], expires_at=LATER) == 1
    assert store.read("asked", "c") == [{"k": "a"}]
    assert store.sweep(LATER + 1) == 1
    assert store.read("asked", "c") == []


def test_expired_reads_as_nothing(store: JournalStore) -> None:
    store.put_and_append("call", "c", {"round": 1}, [{"n": 1}], expires_at=1_000.0)
    assert store.get_and_read("call", "c") == (None, [])


def test_threads_racing_rounds_lose_no_record_and_double_none(
    store: JournalStore,
) -> None:
    # Each thread reads the call and moves it on with its record, retrying
    # when another moved it first: every record lands exactly once.
    store.put("call", "c", {"round": 0})
    threads, each = 4, 10

    def rounds(name: int) -> None:
        for n in range(each):
            while True:
                doc, _ = store.get_and_read("call", "c")
                assert doc is not None
                try:
                    store.put_and_append(
                        "call", "c", {"round": doc.version}, [{"t": name, "n": n}],
                        expect=doc.version,
                    )  # fmt: skip
                except StoreConflict:
                    continue
                break

    workers = [threading.Thread(target=rounds, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    doc, records = store.get_and_read("call", "c")
    assert doc is not None
    assert doc.version == 1 + threads * each
    assert sorted((r["t"], r["n"]) for r in records) == sorted(
        (t, n) for t in range(threads) for n in range(each)
    )
