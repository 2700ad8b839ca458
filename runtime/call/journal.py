"""The journal: every answered question, keyed and pinned to its digest.

A journal makes a tool call replayable. Each entry maps an effect key (the
branch path plus yield ordinal, e.g. ``"3.1/0"``) to the digest of the question
asked there and the JSON of the reply. Re-running the tool against the journal
reaches the same point with no executor calls: a question whose key is recorded
with the same digest is answered from the journal; a question that *changed*
(same key, different digest) is asked again and its stale entry dropped.

Each entry also keeps the *label* of the question (its kind, and a step's
name): a replay that meets another kind of question at a recorded key raises
:class:`~runtime.errors.ReplayDivergence` instead of asking it afresh, since
the tool's code changed or is not deterministic between its yields. A journal
also carries the call's id (made when first read), which with a step's key is
the step's idempotency key, the same in every round.

Notices (log, progress) are recorded by key only, so a replay does not repeat
them. A branch's time limit is recorded as its *deadline* (seconds since the
epoch) under the branch's key, so a replay or a later round keeps the deadline
of the first run instead of starting the limit over; so is a sleep's
(``ctx.sleep``), under the sleep's key, and once the sleep is over it is
answered (with its deadline) like any question.

The journal has two forms. As one JSON value (:meth:`to_json` /
:meth:`from_json`), for a state that travels whole (sealing it is the bridge's
job). As *records*, small JSON objects appended one by one to a durable log as
the call goes (:func:`answer_record`, :func:`notice_record`,
:func:`timer_record`; read back with :meth:`Journal.from_records`):

- ``{"k": key, "d": digest, "r": reply}`` (plus ``"l": label`` when the
  question has one): an answered question or a step's result;
- ``{"n": key}``: a notice that was sent;
- ``{"t": key, "at": deadline}``: a branch's deadline, or a sleep's;
- ``{"p": name, "v": taken}``: the marker of patch point ``name``
  (``ctx.patched``), whether the call took the patched path there.

A patch marker is kept by name, not by key (a patch point takes no key, so
the keys around it are those of the code before the patch): the first
``ctx.patched(name)`` of a call records it and every later one reads it.
Whether a call already went past a point under older code is what recorded
keys say (:meth:`Journal.passed`).

A later record at the same key replaces an earlier one (the question changed
and was asked again).

A third form is a *document* (:class:`JournalDocument`): the records of one
call with what they are the journal of (the call's id, where it came from,
its tool and arguments when the store knows them, how it ended), as the JSON
object ``yieldmcp journal`` writes and :func:`runtime.testing.replay` reads.
Its ``"format"`` field (:data:`JOURNAL_FORMAT`) versions it: a reader refuses
a format it does not know, so a file kept under ``tests/`` keeps its meaning.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast, final

import attrs

from ..errors import ReplayDivergence

__all__ = [
    "JOURNAL_FORMAT",
    "Journal",
    "JournalDocument",
    "JournalEntry",
    "Record",
    "answer_record",
    "notice_record",
    "patch_record",
    "timer_record",
]

Record = dict[str, Any]
"""One entry of a journal as it is appended to a durable log (module doc)."""


def answer_record(
    key: str, digest: str, reply: Any, label: str | None = None
) -> Record:
    """The record of one answer (or step result) at ``key``."""
    if label is None:
        return {"k": key, "d": digest, "r": reply}
    return {"k": key, "d": digest, "r": reply, "l": label}


def notice_record(key: str) -> Record:
    """The record of a notice sent at ``key``."""
    return {"n": key}


def timer_record(key: str, deadline: float) -> Record:
    """The record of the deadline of the branch at ``key``."""
    return {"t": key, "at": deadline}


def patch_record(name: str, taken: bool) -> Record:
    """The marker of patch point ``name``: whether the call took the patch."""
    return {"p": name, "v": taken}


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

    __slots__ = (
        "_call_id",
        "_deadlines",
        "_entries",
        "_notices",
        "_patches",
        "_reached",
        "hits",
    )

    def __init__(
        self,
        entries: Mapping[str, JournalEntry] | None = None,
        notices: set[str] | None = None,
    ) -> None:
        # Loops, not comprehensions: a journal is made on every resumed round,
        # and a comprehension is a function made and called each time.
        self._entries: dict[str, tuple[str, Any, str | None]] = {}
        for key, entry in (entries or {}).items():
            self._entries[key] = (entry.digest, entry.reply, None)
        self._notices: set[str] = set(notices) if notices else set()
        self._deadlines: dict[str, float] | None = None  # made when first needed
        self._patches: dict[str, bool] | None = None  # made when first needed
        self._reached: set[str] | None = None  # asked, not answered: reach()
        self._call_id: str | None = None
        self.hits = 0  # questions answered from the journal, for tests and stats

    @property
    def call_id(self) -> str:
        """The call's id: random, made when first read, kept in the JSON."""
        if self._call_id is None:
            self._call_id = uuid.uuid4().hex
        return self._call_id

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    @property
    def entries(self) -> Mapping[str, JournalEntry]:
        return {
            key: JournalEntry(d, reply) for key, (d, reply, _l) in self._entries.items()
        }

    def keys(self) -> list[str]:
        """The recorded keys, in the order they were first recorded."""
        return list(self._entries)

    def lookup(self, key: str, digest: str, label: str | None = None) -> Any | None:
        """The reply JSON recorded at ``key`` for this digest, else None.

        A recorded entry whose digest differs is dropped: the question changed.

        Raises:
            ReplayDivergence: the entry at ``key`` records another kind of
                question than ``label`` (when both are known).
        """
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] != digest:
            recorded = entry[2]
            if label is not None and recorded is not None and recorded != label:
                raise ReplayDivergence(key, recorded, label)
            del self._entries[key]
            return None
        self.hits += 1
        return entry[1]

    def record(
        self, key: str, digest: str, reply: Any, label: str | None = None
    ) -> None:
        self._entries[key] = (digest, reply, label)

    def entry(self, key: str) -> tuple[str, Any, str | None] | None:
        """What is recorded at ``key``: its digest, reply JSON and label (None:
        no label), or None. A store keeps each new entry as it is recorded."""
        return self._entries.get(key)

    def note(self, key: str) -> bool:
        """Record notice ``key``; True if it is new (and so should be sent)."""
        if key in self._notices:
            return False
        self._notices.add(key)
        return True

    def deadline(self, key: str) -> float | None:
        """The deadline recorded for the branch at ``key``, or None."""
        return None if self._deadlines is None else self._deadlines.get(key)

    def deadlines(self) -> dict[str, float]:
        """Every deadline recorded (branches' and sleeps'), by key."""
        return dict(self._deadlines) if self._deadlines else {}

    def set_deadline(self, key: str, deadline: float) -> None:
        if self._deadlines is None:
            self._deadlines = {}
        self._deadlines[key] = deadline

    def patch(self, name: str) -> bool | None:
        """The marker of patch point ``name``: whether the call took the
        patch there; None if the call has not reached it yet."""
        return None if self._patches is None else self._patches.get(name)

    def mark_patch(self, name: str, taken: bool) -> None:
        if self._patches is None:
            self._patches = {}
        self._patches[name] = taken

    def reach(self, keys: Iterable[str]) -> None:
        """The call reached ``keys`` before this replay: questions it asked
        and that wait for their answers (a 2026-07-28 state's or a task's
        ``asked``, a 2025-11-25 call's questions sent). Not recorded here
        (whoever asked keeps them); counted by :meth:`passed`."""
        if self._reached is None:
            self._reached = set()
        self._reached.update(keys)

    def passed(self, prefix: str, ordinal: int) -> bool:
        """Whether the call went past yield ``ordinal`` of the frame whose keys
        start with ``prefix``: something is recorded (or was asked:
        :meth:`reach`) at that ordinal or a later one of the frame, or inside
        a branch started there."""
        recorded: list[str] = list(self._entries)
        recorded.extend(self._notices)
        if self._deadlines:
            recorded.extend(self._deadlines)
        if self._reached:
            recorded.extend(self._reached)
        size = len(prefix)
        for key in recorded:
            if not key.startswith(prefix):
                continue
            head = key[size:].partition(".")[0]
            if head.isdigit() and int(head) >= ordinal:
                return True
        return False

    def to_json(self) -> dict[str, Any]:
        answers: dict[str, list[Any]] = {}
        for k, (d, reply, label) in self._entries.items():
            answers[k] = [d, reply] if label is None else [d, reply, label]
        data: dict[str, Any] = {"answers": answers, "notices": sorted(self._notices)}
        if self._deadlines:
            data["timers"] = dict(self._deadlines)
        if self._patches:
            data["patches"] = dict(self._patches)
        if self._call_id is not None:
            data["call"] = self._call_id
        return data

    def records(self) -> list[Record]:
        """The journal as records (module doc), in the order they were made."""
        out: list[Record] = []
        for key, (d, reply, label) in self._entries.items():
            out.append(answer_record(key, d, reply, label))
        out.extend(notice_record(key) for key in sorted(self._notices))
        if self._deadlines:
            out.extend(timer_record(k, at) for k, at in self._deadlines.items())
        if self._patches:
            out.extend(patch_record(k, v) for k, v in self._patches.items())
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Journal:
        """A journal from :meth:`to_json` output (ValueError if malformed)."""
        journal = cls()
        entries = journal._entries
        try:
            answers: Mapping[Any, Any] = data["answers"]
            for key, value in answers.items():
                recorded, reply, *label = value
                entries[key] = (recorded, reply, str(label[0]) if label else None)
            journal._notices.update(map(str, data["notices"]))
            timers: Any = data.get("timers")
            if timers:
                journal._deadlines = {str(k): float(v) for k, v in timers.items()}
            patches: Any = data.get("patches")
            if patches:
                journal._patches = {str(k): _flag(v) for k, v in patches.items()}
            call: Any = data.get("call")
            journal._call_id = None if call is None else str(call)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"malformed journal: {exc!r}") from None
        for key, (recorded, _reply, _label) in entries.items():
            if type(key) is not str or type(recorded) is not str:
                raise ValueError(
                    f"malformed journal: keys and digests are strings, got {key!r}"
                )
        return journal

    @classmethod
    def from_records(
        cls, records: Iterable[Mapping[str, Any]], call_id: str
    ) -> Journal:
        """The journal a durable log's records describe, for call ``call_id``.

        Raises:
            ValueError: a record is malformed (the log was written by something
                else, or is corrupt).
        """
        journal = cls()
        journal._call_id = call_id
        entries = journal._entries
        for number, record in enumerate(records, 1):
            try:
                if "n" in record:
                    journal._notices.add(str(record["n"]))
                elif "t" in record:
                    journal.set_deadline(str(record["t"]), float(record["at"]))
                elif "p" in record:
                    journal.mark_patch(_text(record["p"]), _flag(record["v"]))
                else:
                    key, digest = _text(record["k"]), _text(record["d"])
                    label: Any = record.get("l")
                    entries.pop(key, None)  # a later record moves to the end
                    entries[key] = (digest, record["r"], label)
            except KeyError as exc:
                raise ValueError(
                    f"malformed journal record {number}: it has no {exc.args[0]!r}"
                ) from None
            except (TypeError, ValueError):
                # Never the record: a stranger's may be megabytes, or hold
                # terminal controls, and this message is logged.
                raise ValueError(
                    f"malformed journal record {number}: a field is not of its kind"
                ) from None
        return journal


def _flag(value: Any) -> bool:
    if type(value) is not bool:
        raise TypeError(f"a patch marker is true or false, not {value!r}")
    return value


def _text(value: Any) -> str:
    if type(value) is not str:
        raise TypeError(f"keys and digests are strings, not {value!r}")
    return value


JOURNAL_FORMAT: Final = "yieldmcp.journal/1"
"""The ``"format"`` of a journal document this version writes and reads."""

_FORMAT_FAMILY: Final = "yieldmcp.journal/"
_SOURCES: Final = frozenset({"task", "call", "round", "state"})


@final
@attrs.frozen(kw_only=True)
class JournalDocument:
    """One call's journal with what it is the journal of (module doc).

    ``source`` says where it came from: ``"task"`` (a task of the tasks
    extension), ``"call"`` (a 2025-11-25 call on a durable session),
    ``"round"`` (a 2026-07-28 call whose rounds keep their journal in a
    store) or ``"state"`` (a 2026-07-28 ``requestState`` that carries its
    journal). ``tool`` and ``arguments`` are None where the store does not
    keep them (a round's arguments travel with each request); ``ended`` is
    how the call ended as the store keeps it, ``{"result": ...}`` (the MCP
    result) or ``{"error": ...}`` (a JSON-RPC error), None while it runs or
    where the store does not keep it (a 2026-07-28 call). ``records`` are the
    journal's records in the order they were written.
    """

    id: str
    source: str
    tool: str | None
    arguments: Mapping[str, Any] | None
    records: tuple[Record, ...]
    ended: Mapping[str, Any] | None = None

    def journal(self) -> Journal:
        """The journal the records describe (ValueError if one is malformed)."""
        return Journal.from_records(self.records, self.id)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": JOURNAL_FORMAT,
            "id": self.id,
            "source": self.source,
            "tool": self.tool,
            "arguments": None if self.arguments is None else dict(self.arguments),
            "ended": None if self.ended is None else dict(self.ended),
            "records": [dict(record) for record in self.records],
        }

    @classmethod
    def from_json(cls, data: Any) -> JournalDocument:
        """The document ``data`` holds (the JSON :meth:`to_json` makes).

        Raises:
            ValueError: one line saying what is wrong: not a journal document,
                a format this version does not read (a newer yieldmcp wrote
                it), or a malformed field or record.
        """
        if not isinstance(data, Mapping):
            raise ValueError(  # noqa: TRY004 - a bad document, not a bad argument
                "not a yieldmcp journal document: not a JSON object"
            )
        fields = cast("Mapping[str, Any]", data)
        found: Any = fields.get("format")
        if not isinstance(found, str) or not found.startswith(_FORMAT_FAMILY):
            raise ValueError(
                f"not a yieldmcp journal document: its format is {found!r}, "
                f"expected {JOURNAL_FORMAT!r}"
            )
        if found != JOURNAL_FORMAT:
            raise ValueError(
                f"a journal document in format {found!r}, which this yieldmcp "
                f"does not read (it reads {JOURNAL_FORMAT!r}): a newer "
                f"yieldmcp wrote it"
            )
        call_id: Any = fields.get("id")
        source: Any = fields.get("source")
        tool: Any = fields.get("tool")
        arguments: Any = fields.get("arguments")
        ended: Any = fields.get("ended")
        records: Any = fields.get("records")
        problem = None
        if not isinstance(call_id, str) or not call_id:
            problem = "'id' must be a non-empty string"
        elif not isinstance(source, str) or source not in _SOURCES:
            problem = f"'source' must be one of {sorted(_SOURCES)}, not {source!r}"
        elif tool is not None and not isinstance(tool, str):
            problem = "'tool' must be a string or null"
        elif arguments is not None and not isinstance(arguments, Mapping):
            problem = "'arguments' must be an object or null"
        elif ended is not None and not isinstance(ended, Mapping):
            problem = "'ended' must be an object or null"
        elif not isinstance(records, list) or not all(
            isinstance(r, Mapping) for r in cast("list[Any]", records)
        ):
            problem = "'records' must be a list of objects"
        if problem is not None:
            raise ValueError(f"malformed journal document: {problem}")
        document = cls(
            id=call_id,
            source=source,
            tool=tool,
            arguments=None
            if arguments is None
            else dict(cast("Mapping[str, Any]", arguments)),
            records=tuple(dict(r) for r in cast("list[Mapping[str, Any]]", records)),
            ended=None if ended is None else dict(cast("Mapping[str, Any]", ended)),
        )
        document.journal()  # every record is checked here, not at replay
        return document
