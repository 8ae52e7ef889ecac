"""report.html in headless Chromium: every image loads, no console error, nothing from the network.

Chromium is driven over the Chrome DevTools Protocol (a websocket; no Node). The test skips
when Chromium is absent, unless EVALSTATS_REQUIRE_BROWSER is set (CI sets it, so there it
fails instead). The screenshot is saved next to the report (and copied into
EVALSTATS_SCREENSHOT_DIR when that is set).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

#: Run in the page after load: every <img> decoded with a size, and what the page holds.
_CHECK_IMAGES = """
(() => {
  const imgs = Array.from(document.images);
  return JSON.stringify({
    n: imgs.length,
    broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt),
    external: imgs.filter(i => !i.src.startsWith("data:")).map(i => i.src),
    links: Array.from(document.querySelectorAll("link[href], script[src]")).length,
    title: document.title,
    height: document.documentElement.scrollHeight,
  });
})()
"""


def _chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and Path("/usr/bin/chromium").exists():
        found = "/usr/bin/chromium"
    return found


def _require_browser():
    """The chromium path and the websocket module, or skip (fail when required)."""
    required = bool(os.environ.get("EVALSTATS_REQUIRE_BROWSER"))
    path = _chromium()
    try:
        import websocket  # websocket-client, in the test extra
    except ImportError:
        websocket = None
    missing = []
    if path is None:
        missing.append("chromium (apt-get install chromium)")
    if websocket is None:
        missing.append("websocket-client (pip install 'evalstats[test]')")
    if missing:
        message = f"headless browser test needs {' and '.join(missing)}"
        if required:
            pytest.fail(f"{message}; EVALSTATS_REQUIRE_BROWSER is set")
        pytest.skip(message)
    return path, websocket


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _DevTools:
    """A minimal Chrome DevTools Protocol client: commands by id, events kept in a list."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events: list[dict] = []

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_for(self, method: str, timeout: float = 60.0) -> dict:
        for ev in self.events:
            if ev["method"] == method:
                return ev
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg
        raise TimeoutError(f"no {method} within {timeout} s")


@contextlib.contextmanager
def _browser(chromium: str, profile: Path, websocket):
    port = _free_port()
    proc = subprocess.Popen(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--remote-debugging-port={port}",
            "--remote-allow-origins=*",
            "--window-size=1280,1000",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        targets = None
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    targets = [t for t in json.load(r) if t.get("type") == "page"]
                if targets:
                    break
            except OSError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"chromium exited with status {proc.returncode}")
            time.sleep(0.2)
        if not targets:
            raise TimeoutError("chromium did not open its DevTools endpoint")
        ws = websocket.create_connection(
            targets[0]["webSocketDebuggerUrl"], timeout=60, suppress_origin=True
        )
        try:
            yield _DevTools(ws)
        finally:
            with contextlib.suppress(Exception):
                ws.send(json.dumps({"id": 10**6, "method": "Browser.close"}))
            ws.close()
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_report_renders_in_headless_chromium(demo_run, tmp_path):
    chromium, websocket = _require_browser()
    html = demo_run.out / "report.html"
    with _browser(chromium, tmp_path / "profile", websocket) as cdp:
        for domain in ("Page", "Runtime", "Log", "Network"):
            cdp.call(f"{domain}.enable")
        cdp.call("Page.navigate", url=html.resolve().as_uri())
        cdp.wait_for("Page.loadEventFired")
        page = json.loads(
            cdp.call("Runtime.evaluate", expression=_CHECK_IMAGES, returnByValue=True)["result"][
                "value"
            ]
        )
        height = min(int(page["height"]), 16000)
        cdp.call(
            "Emulation.setDeviceMetricsOverride",
            width=1280,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        shot = base64.b64decode(
            cdp.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        )
        events = list(cdp.events)

    screenshot = demo_run.out / "report-screenshot.png"
    screenshot.write_bytes(shot)
    if os.environ.get("EVALSTATS_SCREENSHOT_DIR"):
        target = Path(os.environ["EVALSTATS_SCREENSHOT_DIR"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(screenshot, target / screenshot.name)

    results = json.loads((demo_run.out / "results.json").read_text())
    assert page["n"] == len(results["figures"]) > 10
    assert page["broken"] == [], f"images that did not load: {page['broken']}"
    assert page["external"] == [] and page["links"] == 0
    assert page["title"].startswith("Audit report")

    errors = [
        e["params"]
        for e in events
        if (e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
        or e["method"] == "Runtime.exceptionThrown"
        or (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
        or e["method"] == "Network.loadingFailed"
    ]
    assert errors == [], f"console errors: {errors}"
    requests = [
        e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"
    ]
    assert all(u.startswith(("file:", "data:")) for u in requests), requests

    width, shot_height = _png_size(shot)
    assert width >= 1200 and shot_height >= 3000
