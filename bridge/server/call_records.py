"""How a call's journal is kept in a store: one stream of records per call.

With a store (``Server(store=...)``), every answer, step result and notice
key of a call is appended to the stream ``(CALLS, call_id)`` *before* the
call moves past it (write-ahead), in both eras. Replaying a call on any
process reads the stream back into a :class:`~runtime.lowlevel.Journal`.

Records are small JSON objects:

- ``{"k": key, "d": digest, "r": reply}`` (plus ``"l": label`` when the
  question has one): an answered question or a step's result, exactly as
  :meth:`Journal.record <runtime.lowlevel.Journal.record>` takes it;
- ``{"n": key}``: a notice (log, progress) that was sent, so a replay does
  not send it again.

A later record at the same key replaces an earlier one (the question
changed and was asked again). The call's own document ``(CALLS, call_id)``
is the owner's business (a 2026 round's one-time state, a 2025 session's
call, a task): this module only reads and writes the stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from runtime.lowlevel import Journal

__all__ = ["CALLS", "answer_record", "journal_from_records", "notice_record"]

CALLS: Final = "call"
"""The store namespace of calls: a document and a stream per call id."""


def answer_record(
    key: str, digest: str, reply: Any, label: str | None = None
) -> dict[str, Any]:
    """The record of one answer (or step result) at ``key``."""
    record: dict[str, Any] = {"k": key, "d": digest, "r": reply}
    if label is not None:
        record["l"] = label
    return record


def notice_record(key: str) -> dict[str, Any]:
    """The record of a notice sent at ``key``."""
    return {"n": key}


def journal_from_records(records: Iterable[Mapping[str, Any]], call_id: str) -> Journal:
    """The journal a call's stream describes, with the call's id.

    Raises:
        ValueError: a record is malformed (the store was written by something
            else, or is corrupt).
    """
    answers: dict[str, list[Any]] = {}
    notices: list[str] = []
    for record in records:
        if "n" in record:
            notices.append(record["n"])
        elif "k" in record and "d" in record and "r" in record:
            label = record.get("l")
            entry = [record["d"], record["r"]]
            answers[record["k"]] = entry if label is None else [*entry, label]
        else:
            raise ValueError(f"malformed journal record: {dict(record)!r}")
    return Journal.from_json({"answers": answers, "notices": notices, "call": call_id})
