"""A live view of a running job: its report served on 127.0.0.1, drawn anew at every request.

``elastream report OUTPUT --serve`` starts :func:`serve`; the page reloads itself every
``refresh_seconds`` (an HTML ``refresh`` meta tag: no script), and each load draws the report of
what the output folder holds then, so it follows the job batch by batch. Until the job writes
its first metrics the page says so and reloads.
"""

from __future__ import annotations

import os
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from elastream.core.errors import DataError
from elastream.report.page import document


def serve(output: str | os.PathLike[str], port: int = 8000, refresh_seconds: int = 5,
          host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A server of ``output``'s report on ``host:port`` (``port`` 0: a free one), not started.

    Call ``serve_forever()`` on it; ``server_address`` tells the port.
    """
    folder = Path(output)

    class Report(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path not in ("/", "/report.html"):
                self.send_error(404, "the report is at /")
                return
            body = live_page(folder, refresh_seconds).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: no line per request."""

    return ThreadingHTTPServer((host, port), Report)


def live_page(folder: Path, refresh_seconds: int) -> str:
    """The report of ``folder`` now, reloading itself; a waiting page before any metrics."""
    from elastream.report import page_of

    try:
        return page_of(folder, refresh_seconds)[0]
    except DataError as waiting:
        return document("waiting", f'<p data-waiting="1">Waiting for the run: '
                                   f"{escape(str(waiting))}</p>", refresh_seconds)
