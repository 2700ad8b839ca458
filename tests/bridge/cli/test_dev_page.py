"""``yieldmcp dev`` in a real Chromium (issue 40, item 1).

A real ``yieldmcp dev FILE`` process, and the system Chromium driven by
Playwright through the page's ``data-testid`` hooks: list the tools, fill a
form, run a tool that runs a step on the server and asks a form, answer it,
see the result and the picture (the server's step in it), run the past call
again, edit FILE and see the new tool. Hostile text from the server (a tool's
description, a log, a form's title and message, a result, a typed model
reply) shows as text and runs no script. The token, Host and Origin are
checked on every request.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Dialog, Page, expect

from tests.helpers import ROOT

HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
TIMEOUT_MS = 60_000
expect.set_options(timeout=TIMEOUT_MS)  # CI's two cores are busy


@pytest.fixture
def served(tmp_path: Path) -> Path:
    target = tmp_path / "tools.py"
    shutil.copy(ROOT / "tests/fixtures/dev_tools.py", target)
    return target


@pytest.fixture
def dev(served: Path) -> Iterator[str]:
    """A running ``yieldmcp dev FILE``: the URL it printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bridge.cli", "dev", str(served)],
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stderr is not None
    try:
        deadline = time.monotonic() + 60
        logged = b""
        while not (
            found := re.search(
                rb"open (http://127\.0\.0\.1:\d+/\S+/\?token=\S+)", logged
            )
        ):
            assert time.monotonic() < deadline, logged.decode()
            line = process.stderr.readline()
            assert line, f"yieldmcp dev exited: {logged.decode()}"
            logged += line
        yield found[1].decode()
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


@pytest.fixture
def page(browser: Browser, dev: str) -> Iterator[Page]:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    dialogs: list[str] = []

    def dialog(shown: Dialog) -> None:
        dialogs.append(shown.message)
        shown.dismiss()

    page.on("dialog", dialog)
    page.goto(dev)
    yield page
    assert page.evaluate("window.pwned") is None, "a server's text ran as script"
    assert dialogs == []
    context.close()


def test_run_answer_see_the_picture_run_again_and_follow_an_edit(
    page: Page, served: Path
) -> None:
    assert "token" not in page.url  # exchanged for a cookie, and gone from the URL
    page.get_by_test_id("tool-book").click()
    page.get_by_test_id("arg-city").fill("Lisbon")
    page.get_by_test_id("run").click()

    question = page.get_by_test_id("question")
    expect(question).to_contain_text("Book Lisbon?")
    page.get_by_test_id("answer-ok").check()
    page.get_by_test_id("answer-seats").fill("2")
    page.get_by_test_id("accept").click()

    expect(page.get_by_test_id("result")).to_have_text("booked 2 to Lisbon")
    picture = page.get_by_test_id("picture")
    expect(picture.get_by_test_id("bar-step")).to_have_count(1)  # the server's step
    expect(picture.get_by_test_id("bar-elicit")).to_have_count(1)
    expect(picture.get_by_test_id("wire-elicit")).to_have_count(1)  # the client's
    expect(page.get_by_test_id("logs")).to_contain_text("flights to Lisbon")
    expect(page.get_by_test_id("progress")).to_have_text("1 / 2 looked up")
    expect(page.locator("#legend")).to_contain_text("step")
    expect(page.locator("#legend")).to_contain_text("replayed")

    # Again, from the past calls.
    page.locator("[data-testid^=again-]").first.click()
    expect(page.get_by_test_id("question")).to_contain_text("Book Lisbon?")
    page.get_by_test_id("decline").click()
    expect(page.get_by_test_id("result")).to_have_text("not booked")
    expect(page.locator("[data-testid^=past-]")).to_have_count(2)

    served.write_text(served.read_text() + "\n\ndef broken(:\n")
    expect(page.get_by_test_id("notices")).to_contain_text("reload failed")
    expect(page.get_by_test_id("tool-book")).to_be_visible()  # the old tools stay
    served.write_text(served.read_text().replace("\n\ndef broken(:\n", ""))
    added = '\n\n@tool\ndef added(ctx: Context) -> str:\n    return "new"\n'
    served.write_text(served.read_text() + added)
    expect(page.get_by_test_id("tool-added")).to_be_visible()
    page.get_by_test_id("tool-added").click()
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("result")).to_have_text("new")


def test_the_2026_era_replays_the_step_and_shows_it(page: Page) -> None:
    page.get_by_test_id("era").select_option("2026-07-28")
    page.get_by_test_id("tool-book").click()
    page.get_by_test_id("arg-city").fill("Porto")
    page.get_by_test_id("run").click()
    page.get_by_test_id("answer-ok").check()
    page.get_by_test_id("accept").click()
    expect(page.get_by_test_id("result")).to_have_text("booked 1 to Porto")
    # The second round ran the tool again: its step came from the journal.
    expect(page.locator(".bar.kind-step.replayed")).to_have_count(1)

    page.get_by_test_id("run").click()
    page.get_by_test_id("cancel").click()
    expect(page.get_by_test_id("result")).to_have_text("not booked")
    expect(page.get_by_test_id("question")).to_have_count(0)


def test_a_form_from_an_input_schema_sends_every_kind_of_field(page: Page) -> None:
    page.get_by_test_id("tool-plan").click()
    page.get_by_test_id("arg-traveller").fill("Ada")
    page.get_by_test_id("arg-budget").fill("99.5")
    page.get_by_test_id("arg-mode").select_option(label="plane")
    page.get_by_test_id("arg-tags").fill("sea\nsun")
    page.get_by_test_id("arg-insured").check()
    page.get_by_test_id("arg-stay.city").fill("Faro")
    page.get_by_test_id("arg-stay.nights").fill("3")
    page.get_by_test_id("arg-extra").fill('{"seat": "window"}')  # JSON fallback
    page.get_by_test_id("run").click()
    result = page.get_by_test_id("result")
    expect(result).to_contain_text('"traveller":"Ada"')
    expected = {
        "traveller": "Ada",
        "budget": 99.5,
        "mode": "plane",
        "tags": ["sea", "sun"],
        "insured": True,
        "stay": {"city": "Faro", "nights": 3},
        "extra": {"seat": "window"},
    }
    assert json.loads(result.inner_text()) == expected


def test_a_sample_is_answered_by_the_model_picked(page: Page) -> None:
    expect(page.locator("#resources")).to_contain_text("notes://today")
    expect(page.locator("#prompts")).to_contain_text("Greet someone")
    page.get_by_test_id("tool-pitch").click()
    page.get_by_test_id("arg-topic").fill("tea")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("question")).to_contain_text("Pitch tea in one line.")
    page.get_by_test_id("model").select_option("offline")
    page.get_by_test_id("accept").click()
    expect(page.get_by_test_id("result")).to_contain_text("model offline: ")
    expect(page.get_by_test_id("picture").get_by_test_id("bar-sample")).to_have_count(1)


def test_hostile_text_is_shown_as_text(page: Page) -> None:
    expect(page.get_by_test_id("tools")).to_contain_text(HOSTILE)
    expect(page.locator("#resources")).to_contain_text(HOSTILE)
    page.get_by_test_id("tool-shout").click()
    page.get_by_test_id("run").click()
    question = page.get_by_test_id("question")
    expect(question).to_contain_text(HOSTILE)  # the message, and the field's title
    expect(page.get_by_test_id("logs")).to_contain_text(HOSTILE)
    page.get_by_test_id("answer-note").fill(HOSTILE)
    page.get_by_test_id("accept").click()
    page.get_by_test_id("answer-text").fill(HOSTILE)  # a model's reply, typed
    page.get_by_test_id("send-text").click()
    expect(page.get_by_test_id("result")).to_have_text(" ".join([HOSTILE] * 3))
    assert page.locator("img").count() == 0
    assert page.locator("section script, nav script").count() == 0


def test_bidi_controls_are_not_drawn(page: Page) -> None:
    # The terminal strips them (bridge.elicit's printable); the page drew
    # them, so a description could read in another order than it is.
    tools = page.get_by_test_id("tools")
    expect(tools).to_contain_text("invoicegnp.exe")
    assert "\u202e" not in tools.inner_text()
    page.get_by_test_id("tool-spoof").click()
    # A default is shown without them too, and sent whole while left as shown.
    assert page.get_by_test_id("arg-name").input_value() == "invoicegnp.exe"
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("result")).to_have_text("invoicegnp.exe (15 characters)")


def test_every_request_needs_the_token_host_and_origin(dev: str) -> None:
    base, _, token = dev.partition("/?token=")
    port = httpx.URL(base).port
    path = httpx.URL(base).path  # every path is under a random one
    with httpx.Client(base_url=base) as http:
        assert http.get("/").status_code == 403  # no cookie
        assert http.get("/api/events").status_code == 403  # streams too
        assert http.get("/?token=wrong").status_code == 403
        exchanged = http.get(f"/?token={token}")
        assert exchanged.status_code == 303
        assert exchanged.headers["location"] == f"{path}/"
        assert token not in exchanged.headers["set-cookie"]  # another secret
        assert f"Path={path}/" in exchanged.headers["set-cookie"]
        page = http.get("/")
        assert page.status_code == 200
        assert "'unsafe-inline'" not in page.headers["content-security-policy"]
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert (
            http.get("/", headers={"host": f"evil.example:{port}"}).status_code == 421
        )
        evil = {"origin": "http://evil.example", "content-type": "application/json"}
        assert http.post("/api/run", headers=evil, json={}).status_code == 421
        form = {"content-type": "text/plain"}  # what a cross-site form can send
        assert http.post("/api/run", headers=form, content=b"{}").status_code == 415
        outside = httpx.get(f"http://127.0.0.1:{port}/api/state", cookies=http.cookies)
        assert outside.status_code == 404  # nothing is served outside the path
    with httpx.Client(base_url=base) as other:
        assert other.get(f"/?token={token}").status_code == 403  # one time only


def test_another_server_on_127_0_0_1_is_never_sent_the_pages_cookie(
    page: Page,
) -> None:
    # Browsers send a host's cookies to all its ports: with the cookie at
    # Path=/, any listener on 127.0.0.1 the browser visited got it, and
    # could drive the page's tools with it.
    import http.server
    import threading

    heard: list[str | None] = []

    class Other(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            heard.append(self.headers.get("cookie"))
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.end_headers()
            self.wfile.write(b"another server")

        def log_message(self, format: str, *args: object) -> None:
            pass

    other = http.server.HTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        expect(page.get_by_test_id("tool-book")).to_be_visible()
        assert page.context.cookies()  # the page holds its cookie
        port = other.server_address[1]
        for path in ("/", "/api/state"):  # (the page's own path is a secret)
            page.goto(f"http://127.0.0.1:{port}{path}")
    finally:
        other.shutdown()
        other.server_close()
    assert len(heard) >= 2  # (and the browser may ask for a favicon)
    assert set(heard) == {None}


def test_a_form_keeps_property_names_with_dots_and_proto_as_spelled(
    page: Page,
) -> None:
    # "user.name" was sent as "name", and "__proto__" set the prototype of
    # the arguments object instead of becoming one of its keys.
    expect(page.get_by_test_id("tool-book")).to_be_visible()
    schema = {
        "properties": {
            "user.name": {"type": "string", "default": "ada"},
            "__proto__": {"type": "string", "default": "kept"},
            "plain": {
                "type": "object",
                "properties": {"a.b": {"type": "integer", "default": 3}},
            },
        }
    }
    sent = page.evaluate(
        """(text) => {
            const schema = JSON.parse(text);  // as a server's schema arrives
            return JSON.stringify(objectForm("probe.", schema, schema, 0).read());
        }""",
        json.dumps(schema),
    )
    assert json.loads(sent) == {
        "user.name": "ada",
        "__proto__": "kept",
        "plain": {"a.b": 3},
    }


def test_a_long_unbroken_text_shows_at_once_and_the_whole_downloads(
    page: Page,
) -> None:
    # 100 KB without a space took 9 s to appear, 1 MB 203 s: laid out in
    # system-ui, a long word is slow to break. The page shows the start of a
    # long text, counts the rest, and offers the whole as a download.
    page.get_by_test_id("tool-unbroken").click()
    page.get_by_test_id("arg-n").fill("200000")
    page.get_by_test_id("run").click()
    logs, result = page.get_by_test_id("logs"), page.get_by_test_id("result")
    expect(logs).to_contain_text(
        "B" * 4096 + "… (195,904 more characters)", timeout=5000
    )
    expect(result).to_contain_text(
        "A" * 4096 + "… (195,904 more characters)", timeout=5000
    )
    with page.expect_download() as downloading:
        result.get_by_test_id("whole").click()
    assert Path(downloading.value.path()).read_text() == "A" * 200_000
    with page.expect_download() as downloading:
        logs.get_by_test_id("whole").click()
    assert Path(downloading.value.path()).read_text() == "B" * 200_000


def test_a_long_text_is_cut_between_characters_and_counted_in_them(
    page: Page,
) -> None:
    # Cut at 4,096 UTF-16 units, an emoji across the cut became a lone
    # surrogate (drawn as U+FFFD), and the rest was counted in units.
    page.get_by_test_id("tool-unbroken").click()
    page.get_by_test_id("arg-n").fill("5000")
    page.get_by_test_id("arg-lead").fill("x")
    page.get_by_test_id("arg-char").fill("\N{GRINNING FACE}")
    page.get_by_test_id("run").click()
    shown = "x" + "\N{GRINNING FACE}" * 4095 + "… (905 more characters)"
    result = page.get_by_test_id("result")
    expect(result).to_contain_text(shown, timeout=5000)
    assert "\ufffd" not in result.inner_text()


def test_a_long_unbroken_description_still_lists_the_tools(
    page: Page, served: Path
) -> None:
    # With a 1 MB description the page never showed its tools.
    expect(page.get_by_test_id("tool-book")).to_be_visible()
    wide = (
        '\n\n@tool(description="D" * 1_000_000)\ndef wide() -> str:\n    return "w"\n'
    )
    served.write_text(served.read_text() + wide)
    expect(page.get_by_test_id("tool-wide")).to_be_visible(timeout=10_000)
    expect(page.get_by_test_id("tools")).to_contain_text(
        "D" * 4096 + "… (995,904 more characters)", timeout=5000
    )
    page.get_by_test_id("tool-wide").click()
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("result")).to_have_text("w", timeout=5000)


def test_a_chatty_tool_shows_its_last_logs_and_its_result(page: Page) -> None:
    # 3,000 logs: the page showed the result after more than a minute.
    page.get_by_test_id("tool-flood").click()
    page.get_by_test_id("arg-n").fill("3000")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("result")).to_have_text(
        "done after 3000", timeout=20_000
    )
    logs = page.get_by_test_id("logs")
    expect(logs).to_contain_text("2,800 earlier lines not shown")
    expect(logs.locator("li").last).to_have_text("info: line 2999")
    expect(page.get_by_test_id("progress")).to_have_text("3000 / 3000 all logged")
