"""A report page opened in a real headless browser: Chromium driven over its DevTools pipe.

``Page.open(path)`` starts ``chromium --headless --remote-debugging-pipe`` with a fresh profile
and speaks the Chrome DevTools Protocol to it over the two pipes the flag gives (file
descriptors 3 and 4: JSON messages ended by a NUL byte), so it needs no package beyond the
standard library and Debian's ``chromium``.  While the page loads it collects what a person
would see in the console as errors (uncaught exceptions, ``console.error``, failed loads: Log
entries of level error) and every URL the page requested; it evaluates JavaScript in the page
and saves screenshots (PNG) of the page or of one element.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


def chromium_path() -> str | None:
    """The Chromium binary on PATH (Debian's ``chromium``), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


# the page box of the first element a selector matches (%s: the selector as a JS string)
BOX_OF = (
    "(() => { const r = document.querySelector(%s).getBoundingClientRect();"
    " return {x: r.left + window.scrollX, y: r.top + window.scrollY,"
    " width: r.width, height: r.height}; })()"
)


class BrowserError(RuntimeError):
    """Chromium did not answer as the protocol says (it exited, or timed out)."""


class Page:
    """One page in a headless Chromium (use as a context manager: ``with Page.open(p) as page``).

    errors:   console errors, exceptions and failed loads seen so far (text).
    requests: every URL the page requested.
    """

    def __init__(self, process: subprocess.Popen, to_browser: int, from_browser: int, profile: str):
        self.process, self._out, self._in, self._profile = (
            process,
            to_browser,
            from_browser,
            profile,
        )
        self._buffer = b""
        self._next_id = 0
        self.session: str | None = None
        self.errors: list[str] = []
        self.requests: list[str] = []
        self._events: list[dict] = []

    # -- the protocol ----------------------------------------------------------------------------
    def _send(self, method: str, params: dict | None = None, session: bool = True) -> int:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer in time")
            ready, _, _ = select.select([self._in], [], [], left)
            if ready:
                chunk = os.read(self._in, 1 << 20)
                if not chunk:
                    raise BrowserError(f"chromium exited (status {self.process.poll()})")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(raw)
        if "method" in message:
            self._observe(message)
        return message

    def _observe(self, event: dict) -> None:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append(
                details.get("exception", {}).get("description") or details.get("text", "exception")
            )
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(
                " ".join(
                    str(a.get("value", a.get("description", ""))) for a in params.get("args", [])
                )
            )
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append(params["entry"].get("text", "log error"))
        elif method == "Network.requestWillBeSent":
            self.requests.append(params.get("request", {}).get("url", ""))
        self._events.append(event)

    def call(
        self, method: str, params: dict | None = None, timeout: float = 30.0, session: bool = True
    ) -> dict:
        """The result of one protocol command; BrowserError for an error answer."""
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            message = self._read(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})

    def wait_for(self, method: str, timeout: float = 30.0) -> dict:
        """The first event ``method`` (one seen already, or the next)."""
        for k, event in enumerate(self._events):
            if event["method"] == method:
                return self._events.pop(k)
        deadline = time.monotonic() + timeout
        while True:
            message = self._read(deadline)
            if message.get("method") == method:
                self._events.remove(message)
                return message

    # -- a page ------------------------------------------------------------------------------------
    @classmethod
    def open(
        cls, path: str | Path, width: int = 1280, height: int = 900, timeout: float = 60.0
    ) -> Page:
        """``path`` (an HTML file) loaded in a fresh headless Chromium."""
        binary = chromium_path()
        if binary is None:
            raise BrowserError("no chromium on PATH (Debian: apt-get install -y chromium)")
        profile = tempfile.mkdtemp(prefix="structperc-chromium-")
        cmd_r, cmd_w = os.pipe()  # we write commands, it reads them on fd 3
        ans_r, ans_w = os.pipe()  # it writes answers on fd 4

        def pipes_as_3_and_4() -> None:  # (copies first: either pipe may already be 3 or 4)
            commands, answers = os.dup(cmd_r), os.dup(ans_w)
            os.dup2(commands, 3)  # dup2 leaves the copies inheritable
            os.dup2(answers, 4)

        process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pipes_as_3_and_4,
            close_fds=False,
        )
        os.close(cmd_r)
        os.close(ans_w)
        page = cls(process, cmd_w, ans_r, profile)
        try:
            target = page.call(
                "Target.createTarget", {"url": "about:blank"}, timeout, session=False
            )
            attached = page.call(
                "Target.attachToTarget",
                {"targetId": target["targetId"], "flatten": True},
                timeout,
                session=False,
            )
            page.session = attached["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                page.call(f"{domain}.enable", timeout=timeout)
            page.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
            page.call("Page.navigate", {"url": Path(path).resolve().as_uri()}, timeout)
            page.wait_for("Page.loadEventFired", timeout)
        except BaseException:
            page.close()
            raise
        return page

    def evaluate(self, expression: str, timeout: float = 30.0):
        """The value of a JavaScript expression in the page (JSON-able values)."""
        result = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, timeout
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def screenshot(
        self, path: str | Path, selector: str | None = None, max_height: int = 4000
    ) -> Path:
        """A PNG of the viewport's width: the element ``selector`` (its first match), or the
        page from its top, at most ``max_height`` pixels tall."""
        if selector is None:
            box = {"x": 0, "y": 0}
            box["width"], box["height"] = self.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
        else:
            box = self.evaluate(BOX_OF % json.dumps(selector))
        clip = {**box, "height": min(box["height"], max_height), "scale": 1}
        shot = self.call(
            "Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True}
        )
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                try:
                    self.call("Browser.close", timeout=5.0, session=False)
                except (BrowserError, OSError):
                    pass
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            for fd in (self._out, self._in):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
