"""The ``--trace`` page is opened by whoever gets a bug report: nothing a peer
sent may run in it or make it send anything.

Pages are built from hostile kinds, keys, labels, titles, questions, answers
and errors (what a hostile server's ``inputRequests[*].method``, ``_meta``
keys, logs and answers become), opened in headless Chromium at a bar's tip,
with a loopback listener that must hear nothing; the DOM is read back for
injected nodes and for the hostile text, shown as text.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
from pathlib import Path

import pytest

from bridge.cli.trace_record import MAX_KEY
from runtime.picture import Bar, Timeline, page
from tests.bridge.cli.inprocess import yieldmcp

from .browser import Elements, Listener, dump_dom

HOSTILE_SERVER = f"{sys.executable} tests/fixtures/hostile_server.py"

# What an injected script would do: mark the page, and send to the listener.
RUN = (
    "document.documentElement.setAttribute('data-pwned','1');"
    "fetch('{url}/fetch');new Image().src='{url}/image';location='{url}/go'"
)
PAYLOADS = {
    "attribute": '"><img src="{url}/img" onerror="' + RUN + '">',
    "single quotes": "' onmouseover='" + RUN + "' x='",
    "script": "<script>" + RUN + "</script>",
    "closing script": "</script><script>" + RUN + "</script>",
    "comment and script": "<!--<script>",
    "javascript url": "javascript:" + RUN,
    "svg": '<svg onload="' + RUN + '"></svg>]]><script>' + RUN + "</script>",
    "css": (
        'x" style="background:url({url}/inline-css)" y="'
        "</style><style>*{{background:url({url}/css)}}</style>"
        '<link rel="stylesheet" href="{url}/link">'
    ),
    "navigation": (
        '<meta http-equiv="refresh" content="0;url={url}/meta">'
        '<base href="{url}/base/"><iframe src="{url}/frame"></iframe>'
        '<a id="pwned" href="{url}/a">a</a>'
        '<form action="{url}/form"><button>go</button></form>'
    ),
    "entities and separators": "&lt;script&gt;\u2028\u2029&amp;#x3c;&#60;",
}
# Every element the page itself makes; anything else was injected.
PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "p", "span", "i",
    "svg", "g", "rect", "text", "line", "div", "script", "b", "pre",
}  # fmt: skip


def hostile_timeline(text: str) -> Timeline:
    timeline = Timeline(text, started=0.0, branches={"1": text})
    timeline.open(Bar(text, text, text, 0.1, 0.6, question={text: text}, answer=[text]))
    timeline.open(Bar(f"1.0/{text}", "sample", text, 0.2, 0.3, error=text))
    timeline.open(Bar("2", text, "log", 0.4, 0.4, question=text))
    timeline.finish(1.0, error=text)
    return timeline


def assert_inert(dom_text: str, listener: Listener) -> Elements:
    """No request left, no script of the peer's ran, no node was injected."""
    assert listener.heard == []
    dom = Elements(dom_text)
    tags = [tag for tag, _ in dom.found]
    assert set(tags) <= PAGE_TAGS, set(tags) - PAGE_TAGS
    assert tags.count("script") == 2  # the data island and the page's script
    assert tags.count("style") == 1
    assert tags.count("svg") == 1
    assert tags.count("meta") == 2  # charset and the CSP
    for _tag, attributes in dom.found:
        assert "data-pwned" not in attributes
        assert not any(name.startswith("on") for name in attributes)
        if attributes.get("id") != "tip":  # placed by the page's script
            assert "style" not in attributes
    (body,) = [a for t, a in dom.found if t == "body"]
    assert "ready" in body.get("class", "")  # the page's own script did run
    return dom


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_a_page_of_hostile_strings_runs_nothing_and_sends_nothing(
    tmp_path: Path, name: str
) -> None:
    with Listener() as listener:
        text = PAYLOADS[name].format(url=listener.url)
        path = tmp_path / "hostile.html"
        path.write_text(page(hostile_timeline(text)), encoding="utf-8")
        dom_text = dump_dom(path, "#hover=0", settle_ms=1500)
    dom = assert_inert(dom_text, listener)
    heading = re.search(r"<h1[^>]*>(.*?)</h1>", dom_text, re.DOTALL)
    assert heading is not None
    assert html.unescape(heading.group(1)) == text  # shown as text, whole
    kinds = [bar["data-kind"] for bar in dom.all("rect", "bar")]
    assert sorted(kinds) == sorted([text, "sample", text])
    keys = {bar["data-key"] for bar in dom.all("rect", "bar")}
    assert keys == {text, f"1.0/{text}", "2"}
    assert text in "".join(dom.tip)  # the hovered bar's question and answer
    for bar in dom.all("rect", "bar"):  # an unknown kind gets the neutral colour
        classes = bar["class"].split()
        assert all(re.fullmatch(r"[a-z_-]+", c) for c in classes), classes
        if bar["data-kind"] == text:
            assert "other" in classes


def test_the_csp_allows_no_inline_script_no_navigation_and_no_fetch() -> None:
    text = page(hostile_timeline("x"))
    match = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text)
    assert match is not None
    policy = {
        directive.split()[0]: directive.split()[1:]
        for directive in match.group(1).split(";")
        if directive.strip()
    }
    assert policy["default-src"] == ["'none'"]
    assert policy["form-action"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    for directive in ("script-src", "style-src"):
        sources = policy[directive]
        assert "'unsafe-inline'" not in sources
        assert all(s.startswith("'sha256-") for s in sources), sources
    for directive in ("connect-src", "img-src", "frame-src", "font-src"):
        assert directive not in policy  # default-src 'none' covers them


def test_nan_and_infinity_in_an_answer_do_not_break_the_page(tmp_path: Path) -> None:
    timeline = Timeline("odd numbers", started=0.0)
    weird = {"nan": float("nan"), "inf": float("inf"), "neg": float("-inf")}
    timeline.open(Bar("0", "sample", "sample", 0.0, 1.0, answer=weird))
    timeline.finish(1.0)
    path = tmp_path / "nan.html"
    path.write_text(page(timeline), encoding="utf-8")
    with Listener() as listener:
        dom = assert_inert(dump_dom(path, "#hover=0"), listener)
    assert "Infinity" in "".join(dom.tip)


@pytest.mark.parametrize(
    ("era", "tool"), [("legacy", "result"), ("2026-07-28", "method")]
)
def test_call_trace_of_a_hostile_server_is_inert(
    tmp_path: Path, era: str, tool: str
) -> None:
    """Its logs and progress (legacy: effect keys from their ``_meta``), and
    an ``inputRequests`` method (2026-07-28: the bar's kind)."""
    with Listener() as listener:
        text = "".join(PAYLOADS.values()).format(url=listener.url)
        # Each payload an effect key (a lane); the whole text is one too long
        # to draw as lanes, which goes in the root lane.
        keys = [payload.format(url=listener.url) for payload in PAYLOADS.values()]
        path = tmp_path / "trace.html"
        # In this process (an uncaught exception fails the test itself);
        # the hostile server is a real process.
        done = yieldmcp(
            "call", HOSTILE_SERVER, tool, "--era", era, "--trace", str(path),
            env={**os.environ, "YIELDMCP_HOSTILE_TEXT": text,
                 "YIELDMCP_HOSTILE_KEYS": json.dumps(keys),
                 "OTEL_TRACES_EXPORTER": ""},
        )  # fmt: skip
        assert "Traceback" not in done.stderr, done.stderr
        dom_text = dump_dom(path, "#hover=0", settle_ms=1500)
    dom = assert_inert(dom_text, listener)
    bars = dom.all("rect", "bar")
    if tool == "method":
        assert [bar["data-kind"] for bar in bars] == [text]  # the method, verbatim
    else:
        # A key too long or deep to draw as lanes (a URL's slashes count)
        # is in the root lane; its text is still in the bar's question.
        drawable = {k for k in keys if len(k) <= MAX_KEY and k.count("/") <= 16}
        assert len(drawable) >= 7
        assert {bar["data-key"] for bar in bars} >= drawable
    # The first bar: the question's method as it is; or the log's, whose key
    # is the whole text, too long to draw, and whose question the page
    # writes as JSON.stringify does (its quotes escaped).
    shown = text if tool == "method" else json.dumps(text, ensure_ascii=False)[1:-1]
    assert shown in "".join(dom.tip)
