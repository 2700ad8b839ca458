"""The page: a :class:`~runtime.picture.Timeline` as one self-contained HTML
file (inline SVG, CSS and JS; nothing fetched).

One lane per branch child (the root lane first, children under their
branch), one bar per effect on a shared time axis, coloured by kind; replayed
effects dimmed, failed ones red. Hovering a bar shows the question and the
answer as they travelled, and nothing more. Each bar's ``rect`` carries
``data-lane``, ``data-kind`` and ``data-key`` (tests read them back); the
page opened at ``#hover=N`` shows bar N's tip at once.

Nothing in a timeline is written as HTML: its kinds, keys, titles, questions
and answers may come from a hostile server (``yieldmcp call --trace``), and
the page is opened by whoever a trace is sent to. Python lays the picture
out as numbers and strings in one JSON data island (every ``<``, ``>`` and
``&`` escaped, so nothing in it can close the ``<script>``); the page's own
script draws it with ``textContent`` and ``setAttribute`` only, and a bar's
kind picks its colour from a fixed list of classes. The content security
policy runs that one script and that one stylesheet by hash and nothing
else: no inline handler, no fetch, no form, no ``<base>``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Any

from .timeline import Bar, Timeline

__all__ = ["page"]

LABEL_W, PLOT_W, LANE_H, BAR_H, TOP = 230, 780, 34, 20, 34
MIN_W = 6  # an instant effect (a notice, a replay) is still something to hover

_CSS = """
body{font:13px system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:16px;margin:0 0 4px} .sub{color:#666;margin:0 0 10px}
.lane-bg{fill:#f6f7f9} .lane-bg.odd{fill:#eceef2}
.lane-label{font-size:12px;fill:#333;white-space:pre}
.axis{stroke:#bbb} .tick{font-size:10px;fill:#777}
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
'use strict';
const SVG = 'http://www.w3.org/2000/svg';
// A kind picks its colour from this list; any other kind is drawn as 'other'.
const KIND_CLASSES = new Map([
  ['sample', 'kind-sample'], ['elicit', 'kind-elicit'],
  ['elicit_url', 'kind-elicit_url'], ['step', 'kind-step'],
  ['log', 'kind-log'], ['progress', 'kind-progress'],
]);
const data = JSON.parse(document.getElementById('data').textContent);
const plot = document.getElementById('plot');
const tip = document.getElementById('tip');
const bars = new Map(data.bars.map(bar => [bar.i, bar]));

function node(namespace, tag, attributes, text) {
  const made = namespace === null ?
    document.createElement(tag) : document.createElementNS(namespace, tag);
  for (const [name, value] of Object.entries(attributes)) {
    made.setAttribute(name, String(value));
  }
  if (text !== undefined) made.textContent = text;
  return made;
}

document.title = data.title;
document.getElementById('title').textContent = data.title;
document.getElementById('summary').textContent = data.summary;
plot.setAttribute('width', String(data.width));
plot.setAttribute('height', String(data.height));
for (const lane of data.lanes) {
  const group = node(SVG, 'g', {'class': 'lane', 'data-lane': lane.lane});
  const background = node(SVG, 'rect', {
    'class': lane.odd ? 'lane-bg odd' : 'lane-bg', 'x': 0, 'y': lane.y,
    'width': data.width, 'height': data.laneHeight,
  });
  background.append(node(SVG, 'title', {}, lane.hint));
  group.append(background,
    node(SVG, 'text', {'class': 'lane-label', 'x': 6, 'y': lane.y + 21}, lane.text));
  plot.append(group);
}
for (const tick of data.ticks) {
  plot.append(
    node(SVG, 'line', {'class': 'axis', 'x1': tick.x, 'x2': tick.x,
                       'y1': data.top - 6, 'y2': data.height}),
    node(SVG, 'text', {'class': 'tick', 'x': tick.labelX, 'y': data.top - 10,
                       'text-anchor': tick.anchor}, tick.label));
}
for (const bar of data.bars) {
  const classes = ['bar', KIND_CLASSES.get(bar.kind) || 'other'];
  if (bar.replayed) classes.push('replayed');
  if (bar.failed) classes.push('error');
  const rect = node(SVG, 'rect', {
    'class': classes.join(' '), 'data-i': bar.i, 'data-lane': bar.lane,
    'data-kind': bar.kind, 'data-key': bar.key, 'x': bar.x, 'y': bar.y,
    'width': bar.width, 'height': data.barHeight, 'rx': 3,
  });
  rect.addEventListener('mousemove', e => show(rect, e.clientX, e.clientY));
  rect.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
  plot.append(rect);
  if (bar.text !== null) {
    plot.append(node(SVG, 'text',
      {'class': 'bar-text', 'x': bar.x + 4, 'y': bar.y + 14}, bar.text));
  }
}

function show(rect, x, y) {
  const bar = bars.get(Number(rect.dataset.i));
  const answer = bar.error !== null ? bar.error : JSON.stringify(bar.answer, null, 2);
  tip.replaceChildren(
    node(null, 'b', {}, bar.title),
    node(null, 'div', {}, 'question'),
    node(null, 'pre', {'class': 'q'}, JSON.stringify(bar.question, null, 2)),
    node(null, 'div', {}, 'answer'),
    node(null, 'pre', {'class': 'a'}, answer));
  tip.style.display = 'block';
  tip.style.left = Math.min(x + 12, innerWidth - 580) + 'px';
  tip.style.top = (y + 12) + 'px';
}
// "#hover=N" shows bar N's tip at once (what a test reads back, headless).
const asked = /^#hover=(\d+)$/.exec(location.hash);
if (asked) {
  const rect = document.querySelector(`rect.bar[data-i="${asked[1]}"]`);
  if (rect) {
    const box = rect.getBoundingClientRect();
    show(rect, box.left, box.bottom);
  }
}
document.body.classList.add('ready');
"""

_KINDS = ("sample", "elicit", "elicit_url", "step", "log", "progress")


def _sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


_CSP = (
    f"default-src 'none'; script-src {_sha256(_JS)}; style-src {_sha256(_CSS)}; "
    "form-action 'none'; base-uri 'none'"
)
_LEGEND = "".join(
    f'<span><i class="swatch kind-{k}"></i>{k}</span>' for k in _KINDS
) + (
    '<span><i class="swatch kind-sample replayed"></i>replayed</span>'
    '<span><i class="swatch error"></i>error</span>'
)


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


def _bar(i: int, bar: Bar, row: int, t0: float, span: float) -> dict[str, Any]:
    end = bar.end if bar.end is not None else bar.start
    x = _x(bar.start, t0, span)
    width = max(_x(end, t0, span) - x, MIN_W)
    x = min(x, LABEL_W + PLOT_W - width)  # an instant at the very end still shows
    y = TOP + row * LANE_H + (LANE_H - BAR_H) / 2
    title = f"{bar.label} (key {bar.key})" + (" — replayed" if bar.replayed else "")
    return {
        "i": i,
        "lane": bar.lane,
        "kind": bar.kind,
        "key": bar.key,
        "x": round(x, 1),
        "y": round(y, 1),
        "width": round(width, 1),
        "text": None if width < 48 else bar.label[: int(width // 6)],
        "replayed": bar.replayed,
        "failed": bar.error is not None,
        "title": title,
        "question": _finite(bar.question),
        "answer": _finite(bar.answer),
        "error": bar.error,
    }


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as strings (``"NaN"``, ``"Infinity"``):
    JSON has no word for them, and a page whose data does not parse draws
    nothing."""
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _island(data: dict[str, Any]) -> str:
    """``data`` as the text of a ``<script type="application/json">``: ASCII
    JSON in which no ``<``, ``>`` or ``&`` can end the element or start a
    comment, whatever the strings in it say."""
    text = json.dumps(data, default=repr, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _duration(seconds: float, scale: float) -> str:
    if scale < 1:
        return f"{seconds * 1000:.3g} ms"
    return f"{seconds:.3g} s"


def _drawing(timeline: Timeline) -> dict[str, Any]:
    """The picture as data: geometry in pixels, and the strings to show."""
    lanes = timeline.lanes()
    rows = {lane: i for i, lane in enumerate(lanes)}
    t0 = timeline.started
    ends = [b.end for b in timeline.bars if b.end is not None]
    t1 = max([timeline.ended or t0, *ends])
    span = max(t1 - t0, 1e-6)
    height = TOP + len(lanes) * LANE_H + 8
    lane_rows: list[dict[str, Any]] = []
    for lane, row in rows.items():
        text, hint = _lane_label(lane, timeline)
        lane_rows.append(
            {"lane": lane, "y": TOP + row * LANE_H, "odd": row % 2 == 1,
             "text": text, "hint": hint}
        )  # fmt: skip
    ticks: list[dict[str, Any]] = []
    for tick in range(5):
        x = LABEL_W + tick * PLOT_W / 4
        ticks.append(
            {"x": x, "labelX": x + (-2 if tick == 4 else 2),
             "anchor": "end" if tick == 4 else "start",
             "label": _duration(span * tick / 4, span)}
        )  # fmt: skip
    # Instants (notices, replays) last, on top of the bars they happen during.
    drawn = sorted(enumerate(timeline.bars), key=lambda b: b[1].end != b[1].start)
    outcome = "failed: " + timeline.error if timeline.error else "returned"
    return {
        "title": timeline.title,
        "summary": f"{len(timeline.bars)} effects in {len(lanes)} lanes, "
        f"{_duration(span, span)}; {outcome}",
        "width": LABEL_W + PLOT_W,
        "height": height,
        "top": TOP,
        "laneHeight": LANE_H,
        "barHeight": BAR_H,
        "lanes": lane_rows,
        "ticks": ticks,
        "bars": [
            _bar(i, bar, rows.get(bar.lane, 0), t0, span) for i, bar in reversed(drawn)
        ],
    }


def page(timeline: Timeline) -> str:
    """The HTML page of ``timeline`` (see the module doc)."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<title>yieldmcp trace</title><style>{_CSS}</style></head>
<body><h1 id="title"></h1><p class="sub" id="summary"></p>
<p class="legend">{_LEGEND}</p>
<svg xmlns="http://www.w3.org/2000/svg" id="plot" role="img"></svg>
<div id="tip"></div>
<script type="application/json" id="data">{_island(_drawing(timeline))}</script>
<script>{_JS}</script></body></html>
"""
