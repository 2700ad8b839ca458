"""The picture of one call: its effects on a timeline, as one HTML page.

Owns the timeline of a call (:class:`Timeline`: one :class:`Bar` per effect,
in lanes by branch, from the effect keys), the runtime's recorder of it
(:class:`Recorder`, an observer of the stepper: :mod:`runtime.call.observe`), and
the self-contained page that shows it (:func:`page`: inline SVG, CSS and JS;
no network).

It does not record a call over the wire: ``yieldmcp call --trace`` fills a
:class:`Timeline` from the messages it sees (:mod:`bridge.cli.trace_record`).
``runtime.testing.picture`` is the test-run helper.
"""

from .page import page as page
from .recorder import Recorder as Recorder
from .timeline import Bar as Bar
from .timeline import Timeline as Timeline
from .timeline import lane_of as lane_of

__all__ = ["Bar", "Recorder", "Timeline", "lane_of", "page"]
