"""What the PostgreSQL store adds to the contract (``test_contract.py``):
tables and rows changed behind its back (by hand, by another program, a
damaged restore) are refused in one line naming the store and the problem,
as damage, not taken for an outage and retried for ever."""

from __future__ import annotations

import psycopg
import pytest

from bridge.stores import StoreError, StoreUnavailable, open_store
from tests.bridge.stores.helpers import assert_stream_unreadable


def _sql(url: str, statement: str, *args: object) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement, args)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE yieldmcp_streams SET length = 0",
        "UPDATE yieldmcp_streams SET length = 1",
        "DELETE FROM yieldmcp_streams",
    ],
)
def test_a_stream_shorter_than_its_records_is_unreadable_not_an_outage(
    postgres_url: str, damage: str
) -> None:
    """Its length lowered below the records present, or its row deleted
    while they remain: every append met a record already there (a unique
    violation), a plain StoreError the task runner takes for an outage, so
    it retried the task every 1.5 s for ever. It is a damaged stream."""
    store = open_store(postgres_url)
    try:
        store.put("call", "c1", {"params": {}})
        store.append("call", "c1", [{"k": "0"}, {"k": "1"}])
        store.append("call", "c2", [{"k": "0"}])
        _sql(postgres_url, damage + " WHERE id = 'c1'")
        calls = (
            lambda: store.append("call", "c1", [{"k": "2"}]),
            lambda: store.put_and_append("call", "c1", {"n": 1}, [{"k": "2"}]),
        )
        assert_stream_unreadable(calls, "the call 'c1': its stream cannot be read")
        # put_and_append is one transaction: the document did not move on.
        found = store.get("call", "c1")
        assert found is not None
        assert found.version == 1
        # The records stay as they were (without its row, a stream reads
        # empty); other streams are not touched, and a batch holding the
        # damaged stream fails (the runner then runs each append alone).
        kept = [] if damage.startswith("DELETE") else ["0", "1"]
        assert [r["k"] for r in store.read("call", "c1")] == kept
        assert store.append("call", "c2", [{"k": "1"}]) == 2
        with pytest.raises(StoreError):
            store.append_many(
                [("call", "c2", [{"k": "2"}], None), ("call", "c1", [{"k": "2"}], None)]
            )
        assert len(store.read("call", "c2")) == 2  # the batch wrote nothing
        store.delete("call", "c1")  # removable, and then usable again
        assert store.append("call", "c1", [{"k": "0"}]) == 1
    finally:
        store.close()


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (
            "UPDATE yieldmcp_meta SET value = 'abc' WHERE key = 'schema_version'",
            "store layout version (yieldmcp_meta 'schema_version') is not a number",
        ),
        (
            "UPDATE yieldmcp_meta SET value = repeat('9', 5000)"
            " WHERE key = 'schema_version'",
            "store layout version (yieldmcp_meta 'schema_version') is not a number",
        ),
        (
            "ALTER TABLE yieldmcp_docs ALTER COLUMN value TYPE jsonb"
            " USING value::jsonb",
            "the table yieldmcp_docs is not a yieldmcp store's (its column value"
            " is 'jsonb', not text)",
        ),
        (
            "ALTER TABLE yieldmcp_records ALTER COLUMN record TYPE jsonb"
            " USING record::jsonb",
            "the table yieldmcp_records is not a yieldmcp store's (its column"
            " record is 'jsonb', not text)",
        ),
        (
            "ALTER TABLE yieldmcp_streams DROP COLUMN length",
            "the table yieldmcp_streams is not a yieldmcp store's (it has no"
            " column length)",
        ),
    ],
)
def test_a_layout_changed_behind_the_stores_back_is_one_line_naming_it(
    postgres_url: str, damage: str, said: str
) -> None:
    """A layout version that is no number was a ValueError (the journal
    verb's 39-line traceback; serve's one line named neither the store nor
    the cause), and a ``jsonb`` value column a TypeError deep in the codec
    at serve's start. Opening the store checks both, as it refuses a newer
    layout: one line, naming the store (never its password) and the cause."""
    store = open_store(postgres_url)
    store.put("task", "t", {"n": 1})
    store.append("call", "c", [{"k": "0"}])
    store.close()
    _sql(postgres_url, damage)
    with_password = postgres_url.replace("://", "://postgres:sekrit@", 1)
    if "@" in postgres_url.split("://", 1)[1].split("/", 1)[0]:
        with_password = postgres_url  # the URL names its user already
    with pytest.raises(StoreUnavailable) as raised:
        open_store(with_password)
    message = str(raised.value)
    assert said in message
    assert message.startswith(with_password.split("://")[0] + "://")
    assert postgres_url.rsplit("/", 1)[1] in message  # the database, named
    assert "sekrit" not in message
    assert "\n" not in message
    assert len(message) < 400, message


def test_a_column_added_after_ours_is_no_harm(postgres_url: str) -> None:
    open_store(postgres_url).close()
    _sql(postgres_url, "ALTER TABLE yieldmcp_docs ADD COLUMN note text")
    store = open_store(postgres_url)
    try:
        assert store.put("task", "t", {"n": 1}) == 1
        found = store.get("task", "t")
        assert found is not None
        assert found.value == {"n": 1}
    finally:
        store.close()
