"""The run report in a real browser: Debian's Chromium, headless, loads the page with no console
message and shows every plot's image decoded, and renders it to a screenshot.

``make test`` installs the ``chromium`` package when it is missing. The page is served on
127.0.0.1 beside a test-only wrapper page whose script looks into the report (which has none).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image
from tests.report_runs import busy_steps, write_run

from elastream.report import PLOTS, render

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--virtual-time-budget=10000"]
WRAPPER = """<!DOCTYPE html><html><head><script>
window.addEventListener("load", () => {
  const doc = document.getElementById("report").contentDocument;
  const plots = [...doc.querySelectorAll("figure[data-plot]")].map(figure => {
    const img = figure.querySelector("img");
    return [figure.dataset.plot, Boolean(img && img.complete && img.naturalWidth > 0)];
  });
  document.getElementById("seen").textContent = JSON.stringify(plots);
});
</script></head><body><pre id="seen"></pre><iframe id="report" src="report.html"></iframe>
</body></html>
"""


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    """A report of a run that uses every feature, served with the wrapper page: the base URL."""
    out = write_run(tmp_path / "out", busy_steps(), reasons=["key: missing key"],
                    ledger="1 4 0 1 2 3\n")
    render(out, html=tmp_path / "site" / "report.html")
    (tmp_path / "site" / "wrapper.html").write_text(WRAPPER)
    handler = partial(SimpleHTTPRequestHandler, directory=str(tmp_path / "site"))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    browser = shutil.which("chromium")
    assert browser, "no chromium on PATH: `make test` installs Debian's chromium package"
    return subprocess.run([browser, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=300, check=False)


def test_every_plot_loads_with_no_console_message(site: str, tmp_path: Path) -> None:
    done = chromium(tmp_path, "--dump-dom", f"{site}/wrapper.html")
    assert done.returncode == 0, done.stderr[-3000:]
    seen = re.search(r'<pre id="seen">(.*?)</pre>', done.stdout, re.S)
    assert seen, done.stdout[-3000:]
    plots = dict(json.loads(seen.group(1)))
    assert plots == {plot.id: True for plot in PLOTS}  # each present, its image decoded
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []


def test_the_page_renders_to_a_screenshot(site: str, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    done = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1000,3000",
                    f"{site}/report.html")
    assert done.returncode == 0 and shot.exists(), done.stderr[-3000:]
    pixels = image.imread(shot)
    assert pixels.shape[:2] == (3000, 1000)
    assert np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0).shape[0] > 50  # not blank
