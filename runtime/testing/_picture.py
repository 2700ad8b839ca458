"""``picture``: the timeline of the calls a test makes, as an HTML page."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Generator
from pathlib import Path

from ..call.observe import OBSERVING
from ..picture import Recorder, Timeline, page

__all__ = ["picture"]


@contextlib.contextmanager
def picture(
    path: str | os.PathLike[str] | None = None, *, title: str = "tool call"
) -> Generator[Timeline]:
    """Record the effects of the calls run inside the block
    (``runtime.lowlevel.run``, ``run_scripted``: any stepper made here) and,
    at the end, write the page (:func:`runtime.picture.page`) to ``path``.

    Yields the :class:`~runtime.picture.Timeline` being filled, for a test to
    read. Replayed answers (a journal) show dimmed, failures red::

        with picture("debate.html", title="debate") as timeline:
            await run(debate, {"topic": "tea"}, ScriptedPeer(samples=...))
    """
    recorder = Recorder(title)
    token = OBSERVING.set(recorder)
    try:
        yield recorder.timeline
    finally:
        OBSERVING.reset(token)
        timeline = recorder.timeline
        if timeline.ended is None:
            timeline.finish(time.monotonic())
        if path is not None:
            Path(path).write_text(page(timeline), encoding="utf-8")
