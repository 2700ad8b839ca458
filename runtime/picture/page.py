"""The page: a :class:`~runtime.picture.Timeline` as one self-contained HTML
file (inline SVG, CSS and JS; nothing fetched).

One lane per branch child (the root lane first, children under their
branch), one bar per effect on a shared time axis, coloured by kind; replayed
effects dimmed, failed ones red. Hovering a bar shows the question and the
answer as they travelled, and nothing more. Each bar's ``rect`` carries
``data-lane``, ``data-kind`` and ``data-key`` (tests read them back); the
page opened at ``#hover=N`` shows bar N's tip at once.
"""

from __future__ import annotations

import html
import json
from typing import Any

from .timeline import Bar, Timeline

__all__ = ["page"]

LABEL_W, PLOT_W, LANE_H, BAR_H, TOP = 230, 780, 34, 20, 34
MIN_W = 6  # an instant effect (a notice, a replay) is still something to hover

_CSS = """
body{font:13px system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:16px;margin:0 0 4px} .sub{color:#666;margin:0 0 10px}
.lane-bg{fill:#f6f7f9} .lane-bg.odd{fill:#eceef2}
.lane-label{font-size:12px;fill:#333} .axis{stroke:#bbb} .tick{font-size:10px;fill:#777}
.bar{stroke:#0003;cursor:pointer} .bar:hover{stroke:#000;stroke-width:2}
.kind-sample{fill:#3b82f6;background:#3b82f6}
.kind-elicit,.kind-elicit_url{fill:#f59e0b;background:#f59e0b}
.kind-step{fill:#8b5cf6;background:#8b5cf6} .kind-log{fill:#9ca3af;background:#9ca3af}
.kind-progress{fill:#10b981;background:#10b981} .other{fill:#14b8a6;background:#14b8a6}
.replayed{opacity:.3} .error{fill:#dc2626;background:#dc2626}
.bar-text{font-size:10px;fill:#fff;pointer-events:none}
#tip{position:fixed;display:none;max-width:560px;background:#fffff8;
border:1px solid #999;box-shadow:0 2px 8px #0003;padding:6px 8px;font-size:12px}
#tip pre{margin:2px 0 6px;white-space:pre-wrap;max-height:220px;overflow:auto;
background:#f3f3f3;padding:4px} .legend span{display:inline-block;margin-right:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;
vertical-align:-2px}
"""

_JS = r"""
const bars = JSON.parse(document.getElementById('bars').textContent);
const tip = document.getElementById('tip');
function show(bar, x, y) {
  const b = bars[bar.dataset.i];
  tip.innerHTML = '<b></b><div>question</div><pre class="q"></pre>' +
    '<div>answer</div><pre class="a"></pre>';
  tip.querySelector('b').textContent = b.title;
  tip.querySelector('.q').textContent = JSON.stringify(b.question, null, 2);
  tip.querySelector('.a').textContent = b.error !== null ? b.error :
    JSON.stringify(b.answer, null, 2);
  tip.style.display = 'block';
  tip.style.left = Math.min(x + 12, innerWidth - 580) + 'px';
  tip.style.top = (y + 12) + 'px';
}
for (const bar of document.querySelectorAll('rect.bar')) {
  bar.addEventListener('mousemove', e => show(bar, e.clientX, e.clientY));
  bar.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
}
// "#hover=N" shows bar N's tip at once (what a test reads back, headless).
const asked = /^#hover=(\d+)$/.exec(location.hash);
if (asked) {
  const bar = document.querySelector(`rect.bar[data-i="${asked[1]}"]`);
  if (bar) {
    const box = bar.getBoundingClientRect();
    show(bar, box.left, box.bottom);
  }
}
document.body.classList.add('ready');
"""

_KINDS = ("sample", "elicit", "elicit_url", "step", "log", "progress")


def _lane_label(lane: str, timeline: Timeline) -> tuple[str, str]:
    """A lane's text and its tooltip (the branch's limits)."""
    if not lane:
        return timeline.title, "the call"
    branch, _dot, child = lane.rpartition(".")
    depth = lane.count("/") + 1
    return (
        f"{'  ' * depth}branch {branch} · child {child}",
        timeline.branches.get(branch, ""),
    )


def _x(at: float, t0: float, span: float) -> float:
    return LABEL_W + (at - t0) / span * PLOT_W


def _bar_svg(i: int, bar: Bar, row: int, t0: float, span: float) -> str:
    end = bar.end if bar.end is not None else bar.start
    x = _x(bar.start, t0, span)
    width = max(_x(end, t0, span) - x, MIN_W)
    x = min(x, LABEL_W + PLOT_W - width)  # an instant at the very end still shows
    y = TOP + row * LANE_H + (LANE_H - BAR_H) / 2
    classes = ["bar", f"kind-{bar.kind}"]
    if bar.kind not in _KINDS:
        classes.append("other")
    if bar.replayed:
        classes.append("replayed")
    if bar.error is not None:
        classes.append("error")
    rect = (
        f'<rect class="{" ".join(classes)}" data-i="{i}" '
        f'data-lane="{html.escape(bar.lane)}" data-kind="{html.escape(bar.kind)}" '
        f'data-key="{html.escape(bar.key)}" x="{x:.1f}" y="{y:.1f}" '
        f'width="{width:.1f}" height="{BAR_H}" rx="3"></rect>'
    )
    if width < 48:
        return rect
    return rect + (
        f'<text class="bar-text" x="{x + 4:.1f}" y="{y + 14:.1f}">'
        f"{html.escape(bar.label[: int(width // 6)])}</text>"
    )


def _data(bars: list[Bar]) -> str:
    rows: list[dict[str, Any]] = [
        {
            "title": f"{b.label} (key {b.key})" + (" — replayed" if b.replayed else ""),
            "question": b.question,
            "answer": b.answer,
            "error": b.error,
        }
        for b in bars
    ]
    text = json.dumps(rows, default=repr)
    # Inside <script>: no "</script>" may appear, whatever the answers say.
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def _duration(seconds: float, scale: float) -> str:
    if scale < 1:
        return f"{seconds * 1000:.3g} ms"
    return f"{seconds:.3g} s"


def page(timeline: Timeline) -> str:
    """The HTML page of ``timeline`` (see the module doc)."""
    lanes = timeline.lanes()
    rows = {lane: i for i, lane in enumerate(lanes)}
    t0 = timeline.started
    ends = [b.end for b in timeline.bars if b.end is not None]
    t1 = max([timeline.ended or t0, *ends])
    span = max(t1 - t0, 1e-6)
    height = TOP + len(lanes) * LANE_H + 8
    parts: list[str] = []
    for lane, row in rows.items():
        text, hint = _lane_label(lane, timeline)
        y = TOP + row * LANE_H
        odd = " odd" if row % 2 else ""
        parts.append(
            f'<g class="lane" data-lane="{html.escape(lane)}">'
            f'<rect class="lane-bg{odd}" x="0" y="{y}" width="{LABEL_W + PLOT_W}" '
            f'height="{LANE_H}"><title>{html.escape(hint)}</title></rect>'
            f'<text class="lane-label" x="6" y="{y + 21}" xml:space="preserve">'
            f"{html.escape(text)}</text></g>"
        )
    for tick in range(5):
        x = LABEL_W + tick * PLOT_W / 4
        label = _duration(span * tick / 4, span)
        anchor = "end" if tick == 4 else "start"
        parts.append(
            f'<line class="axis" x1="{x}" x2="{x}" y1="{TOP - 6}" y2="{height}"/>'
            f'<text class="tick" x="{x + (-2 if tick == 4 else 2)}" y="{TOP - 10}" '
            f'text-anchor="{anchor}">{label}</text>'
        )
    # Instants (notices, replays) last, on top of the bars they happen during.
    drawn = sorted(enumerate(timeline.bars), key=lambda b: b[1].end != b[1].start)
    for i, bar in reversed(drawn):
        parts.append(_bar_svg(i, bar, rows.get(bar.lane, 0), t0, span))
    outcome = "failed: " + timeline.error if timeline.error else "returned"
    legend = "".join(
        f'<span><i class="swatch kind-{k}"></i>{k}</span>' for k in _KINDS
    ) + (
        '<span><i class="swatch kind-sample replayed"></i>replayed</span>'
        '<span><i class="swatch error"></i>error</span>'
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; \
style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{html.escape(timeline.title)}</title><style>{_CSS}</style></head>
<body><h1>{html.escape(timeline.title)}</h1>
<p class="sub">{len(timeline.bars)} effects in {len(lanes)} lanes, \
{_duration(span, span)}; {html.escape(outcome)}</p>
<p class="legend">{legend}</p>
<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL_W + PLOT_W}" \
height="{height}" role="img">{"".join(parts)}</svg>
<div id="tip"></div>
<script type="application/json" id="bars">{_data(timeline.bars)}</script>
<script>{_JS}</script></body></html>
"""
