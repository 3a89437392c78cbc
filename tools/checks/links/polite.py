"""Politeness and URL helpers of `check-links --external`: one request at a time per host with a delay between
two (`HostGate`), `Retry-After`, meta refresh targets, the host of a URL."""
from __future__ import annotations

import email.utils
import re
import threading
import time
from html.parser import HTMLParser
from urllib.parse import urlsplit


class HostGate:
    """At most one request in flight per host, `delay` seconds between two, and back-off times set by the host."""

    def __init__(self, delay: float, clock=time.monotonic, sleep=time.sleep) -> None:
        self.delay = delay
        self.clock = clock
        self.sleep = sleep
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._last_end: dict[str, float] = {}
        self._not_before: dict[str, float] = {}

    def _lock(self, host: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(host, threading.Lock())

    def back_off(self, host: str, seconds: float) -> None:
        with self._guard:
            self._not_before[host] = max(self._not_before.get(host, 0.0), self.clock() + seconds)

    def call(self, host: str, request):
        with self._lock(host):
            while True:
                with self._guard:
                    ready = max(self._last_end.get(host, float("-inf")) + self.delay, self._not_before.get(host, float("-inf")))
                wait = ready - self.clock()
                if wait <= 0:
                    break
                self.sleep(wait)
            try:
                return request()
            finally:
                with self._guard:
                    self._last_end[host] = self.clock()


class _MetaRefresh(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.target: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag != "meta" or self.target is not None:
            return
        values = {name.lower(): (value or "") for name, value in attrs}
        if values.get("http-equiv", "").lower() != "refresh":
            return
        _, _, rest = values.get("content", "").partition(";")
        rest = rest.strip()
        match = re.match(r"(?i)url\s*=\s*(.*)", rest)
        if match:
            rest = match.group(1)
        rest = rest.strip().strip("'\"").strip()
        if rest:
            self.target = rest


def meta_refresh(body: bytes) -> str | None:
    """The target of a `<meta http-equiv="refresh" content="0; url=...">` in the first bytes of a page."""
    parser = _MetaRefresh()
    try:
        parser.feed(body.decode("utf-8", "replace"))
        parser.close()
    except Exception:  # noqa: BLE001 - a page we cannot parse has no refresh we can follow
        return None
    return parser.target


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (now if now is not None else time.time()))


def host_of(url: str) -> str:
    parts = urlsplit(url)
    return (parts.netloc or "").lower()
