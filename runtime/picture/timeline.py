"""The timeline of a call: one bar per effect, in lanes by branch.

A bar's lane is its effect key's branch path: ``"2"`` is in the root lane
(``""``), ``"1.0/1"`` in the lane of child 0 of the branch at key 1
(``"1.0"``), ``"1.0/2.1/0"`` in ``"1.0/2.1"``. Times are seconds on any
clock; questions and answers are JSON as they travelled.
"""

from __future__ import annotations

from typing import Any, final

import attrs

__all__ = ["Bar", "Timeline", "lane_of"]


def lane_of(key: str) -> str:
    """The lane of effect ``key``: its branch path (``""`` for the root)."""
    return key.rpartition("/")[0]


@final
@attrs.define
class Bar:
    """One effect: when it started and ended, what was asked and answered."""

    key: str
    kind: str
    label: str
    start: float
    end: float | None = None
    question: Any = None
    answer: Any = None
    replayed: bool = False
    error: str | None = None

    @property
    def lane(self) -> str:
        return lane_of(self.key)


@final
@attrs.define
class Timeline:
    """The effects of one call, as they happened (see the module doc)."""

    title: str
    started: float
    bars: list[Bar] = attrs.Factory(list[Bar])
    branches: dict[str, str] = attrs.Factory(dict[str, str])  # key -> limits
    ended: float | None = None
    error: str | None = None

    def open(self, bar: Bar) -> Bar:
        self.bars.append(bar)
        return bar

    def last_open(self, key: str) -> Bar | None:
        """The latest bar at ``key`` that has not ended."""
        return next(
            (b for b in reversed(self.bars) if b.key == key and b.end is None), None
        )

    def close(
        self, key: str, at: float, answer: Any = None, error: str | None = None
    ) -> None:
        bar = self.last_open(key)
        if bar is not None:
            bar.end, bar.answer, bar.error = at, answer, error

    def finish(self, at: float, error: str | None = None) -> None:
        """The call ended (with ``error``): bars still open end here."""
        self.ended, self.error = at, error
        for bar in self.bars:
            if bar.end is None:
                bar.end = at

    def lanes(self) -> list[str]:
        """Every lane, parents before children, siblings in key order."""
        found = {""} | {b.lane for b in self.bars}
        for lane in list(found):
            while lane:  # the lanes of enclosing branches too
                lane = lane_of(lane.rpartition(".")[0])
                found.add(lane)
        return sorted(found, key=_lane_order)


def _lane_order(lane: str) -> list[int]:
    order: list[int] = []
    for part in lane.replace("/", ".").split("."):
        order.append(int(part) if part.isdigit() else -1)
    return order if lane else []
