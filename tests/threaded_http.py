"""A tiny HTTP server in a thread, on 127.0.0.1, for tests whose peer
misbehaves at the HTTP level (trickles, never ends, answers oddly): the
handler class says how; this serves it for the block."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A handler that logs nothing to the test's stderr."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on a free loopback port; yields its base URL."""
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        server.daemon_threads = True  # a handler that never ends ends with us
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()


@contextlib.contextmanager
def wordy_openai(characters: int) -> Iterator[str]:
    """An OpenAI-like base URL (``…/v1``) whose every chat answer is a text
    of ``characters`` characters: a model answering at length."""

    class Wordy(QuietHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            message = {"role": "assistant", "content": "w" * characters}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            answer = {"id": "1", "model": "gpt-test", "choices": [choice]}
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Wordy) as base:
        yield f"{base}/v1"
