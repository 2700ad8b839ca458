"""The journal: every answered question, keyed and pinned to its digest.

A journal makes a tool call replayable. Each entry maps an effect key (the
branch path plus yield ordinal, e.g. ``"3.1/0"``) to the digest of the question
asked there and the JSON of the reply. Re-running the tool against the journal
reaches the same point with no executor calls: a question whose key is recorded
with the same digest is answered from the journal; a question that *changed*
(same key, different digest) is asked again and its stale entry dropped.

Notices (log, progress) are recorded by key only, so a replay does not repeat
them. The journal is plain JSON (:meth:`to_json` / :meth:`from_json`); sealing it
for transport is the bridge's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, final

import attrs

__all__ = ["Journal", "JournalEntry"]


@final
@attrs.frozen
class JournalEntry:
    """One answered question: the digest of what was asked and the reply JSON."""

    digest: str
    reply: Any


@final
class Journal:
    """Answers recorded during a call, for replay. Not thread-safe; one per call.

    Entries are kept as ``(digest, reply)`` pairs (a replay reads them once
    each); :attr:`entries` shows them as :class:`JournalEntry` values.
    """

    __slots__ = ("_entries", "_notices", "hits")

    def __init__(
        self,
        entries: Mapping[str, JournalEntry] | None = None,
        notices: set[str] | None = None,
    ) -> None:
        # Loops, not comprehensions: a journal is made on every resumed round,
        # and a comprehension is a function made and called each time.
        self._entries: dict[str, tuple[str, Any]] = {}
        for key, entry in (entries or {}).items():
            self._entries[key] = (entry.digest, entry.reply)
        self._notices: set[str] = set(notices) if notices else set()
        self.hits = 0  # questions answered from the journal, for tests and stats

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    @property
    def entries(self) -> Mapping[str, JournalEntry]:
        return {
            key: JournalEntry(d, reply) for key, (d, reply) in self._entries.items()
        }

    def keys(self) -> list[str]:
        """The recorded keys, in the order they were first recorded."""
        return list(self._entries)

    def lookup(self, key: str, digest: str) -> Any | None:
        """The reply JSON recorded at ``key`` for this digest, else None.

        A recorded entry whose digest differs is dropped: the question changed.
        """
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] != digest:
            del self._entries[key]
            return None
        self.hits += 1
        return entry[1]

    def record(self, key: str, digest: str, reply: Any) -> None:
        self._entries[key] = (digest, reply)

    def note(self, key: str) -> bool:
        """Record notice ``key``; True if it is new (and so should be sent)."""
        if key in self._notices:
            return False
        self._notices.add(key)
        return True

    def to_json(self) -> dict[str, Any]:
        return {
            "answers": {k: [d, reply] for k, (d, reply) in self._entries.items()},
            "notices": sorted(self._notices),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Journal:
        """A journal from :meth:`to_json` output (ValueError if malformed)."""
        journal = cls()
        entries = journal._entries
        try:
            answers: Mapping[Any, Any] = data["answers"]
            for key, value in answers.items():
                recorded, reply = value
                entries[key] = (recorded, reply)
            journal._notices.update(map(str, data["notices"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"malformed journal: {exc!r}") from None
        for key, (recorded, _reply) in entries.items():
            if type(key) is not str or type(recorded) is not str:
                raise ValueError(
                    f"malformed journal: keys and digests are strings, got {key!r}"
                )
        return journal
