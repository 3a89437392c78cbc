"""`tools check-links --external`: every external URL of the book, checked politely and remembered.

- Many hosts at once, but never more than one request in flight to one host, and at least `host_delay` seconds
  between the end of one request to a host and the start of the next (a host that answers 429 or 503 with
  `Retry-After` is left alone for that long).
- HEAD first; GET when HEAD is refused or fails (many servers answer HEAD wrongly).
- Retries with exponential backoff on 429, 5xx, timeouts and dropped connections, honouring `Retry-After`.
- Redirects (HTTP 3xx and `<meta http-equiv="refresh">`) are followed and reported with their final URL.
- Definite answers are cached (`external.json` in the cache folder) for `cache_max_age_days`, so a rerun only
  fetches what is new or stale; failures that may be transient are never cached.
- `--changed-since REV` keeps only URLs on lines that `git diff REV` shows as added.
"""
from __future__ import annotations

import html
import re
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx

from tools import __version__
from tools.book.link_model import Link, Status, TargetKind
from tools.book.model import Book
from tools.checks.links.external_store import CACHEABLE, PERMANENT, ExternalCache, Outcome, added_lines  # noqa: F401 - PERMANENT: re-exported
from tools.checks.links.http_client import DeadlineExceeded, make_client, request_deadline
from tools.checks.links.polite import HostGate, host_of, meta_refresh, retry_after
from tools.core.errors import Diagnostic, Diagnostics, Severity

USER_AGENT = f"mlbook-tools/{__version__} (link checker; one request at a time per host)"
MAX_HOPS = 10  # redirects and meta refreshes followed from one URL
META_REFRESH_MAX_BYTES = 16 * 1024  # an HTML answer to HEAD at most this long is fetched again to look for a meta refresh
READ_LIMIT = 64 * 1024  # the body read of a GET: enough for a meta refresh; the rest is never read
FETCHED_SCHEMES = ("http", "https")


@dataclass
class _Answer:
    code: int | None
    headers: dict
    body: bytes = b""
    error: str = ""  # a sentence when no HTTP answer came
    transient: bool = False  # worth retrying: timeout, dropped connection
    unknown_host: bool = False
    gave_up: bool = False  # the answer was still trickling in at the deadline: neither retried nor asked again


def _cause(exc: BaseException) -> BaseException:
    """The error at the bottom of an exception chain (httpx <- httpcore <- the socket's OSError)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


class Fetcher:
    """Fetches one URL to its end: redirects followed, HEAD then GET, retries with backoff, all through the gate.

    One httpx client for every URL, so that the requests to one host reuse its connection (HTTP keep-alive)."""

    def __init__(self, gate: HostGate, timeout: float = 15.0, retries: int = 3, backoff: float = 1.0, max_wait: float = 120.0, user_agent: str = USER_AGENT) -> None:
        self.gate = gate
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_wait = max_wait
        self.client = make_client(user_agent, timeout)

    def close(self) -> None:
        self.client.close()

    def _late(self, exc: DeadlineExceeded) -> _Answer:
        if not exc.received:
            return _Answer(None, {}, error=f"no answer within {self.timeout:g}s", transient=True)
        return _Answer(None, {}, error=f"timed out after {self.timeout:g}s with the answer still arriving ({exc.received:,} bytes)", gave_up=True)

    def _once(self, method: str, url: str) -> _Answer:
        try:
            with request_deadline(self.timeout):
                return self._fetch(method, url)
        except DeadlineExceeded as exc:
            return self._late(exc)

    def _fetch(self, method: str, url: str) -> _Answer:
        """One request under the thread's deadline (connect, headers and the bounded body together)."""
        body = bytearray()
        try:
            with self.client.stream(method, url) as response:
                headers = {name.lower(): value for name, value in response.headers.items()}
                try:
                    for chunk in response.iter_raw():  # to the end of a short answer (HEAD's is empty): then the connection is reused
                        body += chunk
                        if len(body) >= READ_LIMIT:
                            break  # the rest is never read: the connection is closed instead
                except httpx.TransportError as exc:
                    return _Answer(None, {}, error=f"the connection failed ({type(_cause(exc)).__name__})", transient=True)
                return _Answer(response.status_code, headers, bytes(body[:READ_LIMIT]))
        except socket.gaierror as exc:
            return _Answer(None, {}, error=f"the host is unknown ({exc.strerror or exc})", unknown_host=True)
        except httpx.TimeoutException:
            return _Answer(None, {}, error=f"no answer within {self.timeout:g}s", transient=True)
        except httpx.ConnectError as exc:
            reason = _cause(exc)
            if isinstance(reason, ssl.SSLError):
                return _Answer(None, {}, error=f"TLS error: {reason}")
            if isinstance(reason, ConnectionRefusedError):
                return _Answer(None, {}, error="the connection was refused", transient=True)
            return _Answer(None, {}, error=f"connection error: {reason}", transient=True)
        except httpx.RemoteProtocolError as exc:
            if "disconnected" in str(exc) or "closed" in str(exc):
                return _Answer(None, {}, error="the connection failed (the server closed it without an answer)", transient=True)
            return _Answer(None, {}, error=f"the server sent malformed or endless headers ({exc})", gave_up=True)
        except httpx.TransportError as exc:  # read and write errors, a refusing proxy
            return _Answer(None, {}, error=f"the connection failed ({type(_cause(exc)).__name__})", transient=True)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, httpx.LocalProtocolError, ValueError) as exc:
            return _Answer(None, {}, error=f"the request failed: {exc}")

    def _should_retry(self, method: str, answer: _Answer) -> bool:
        if answer.gave_up:
            return False
        if answer.code == 429:
            return True
        if method == "HEAD":
            return False  # a HEAD that fails is followed by a GET, which has the retries
        return answer.transient or (answer.code is not None and answer.code >= 500 and answer.code != 501)

    def request(self, method: str, url: str, counter: list[int]) -> _Answer:
        host = host_of(url)
        attempt = 0
        while True:
            answer = self.gate.call(host, lambda: self._once(method, url))
            counter[0] += 1
            if not self._should_retry(method, answer) or attempt >= self.retries:
                return answer
            wait = retry_after(answer.headers.get("retry-after")) if answer.code in (429, 503) else None
            if wait is None:
                wait = self.backoff * (2 ** attempt)
            if wait > self.max_wait:
                answer.error = f"the server asks to wait {wait:.0f}s before retrying (more than {self.max_wait:g}s)"
                return answer
            self.gate.back_off(host, wait)
            attempt += 1

    def check(self, url: str) -> Outcome:
        counter = [0]
        hops: list = []
        current = url
        seen = {url}
        for _ in range(MAX_HOPS + 1):
            answer = self.request("HEAD", current, counter)
            method = "HEAD"
            refused = answer.code is not None and answer.code >= 400 and answer.code != 429
            if refused or (answer.code is None and not answer.unknown_host and not answer.gave_up):
                answer = self.request("GET", current, counter)  # many servers answer HEAD wrongly
                method = "GET"
            code = answer.code
            if code is not None and 300 <= code < 400 and answer.headers.get("location"):
                current = urljoin(current, answer.headers["location"].strip())
                hops.append([code, current])
                if current in seen:
                    return self._outcome(url, Status.FAILED, code, current, "the redirects loop", hops, counter)
                seen.add(current)
                continue
            if code is not None and 200 <= code < 300:
                content_type = answer.headers.get("content-type", "").lower()
                if "html" in content_type:
                    body = answer.body
                    if method == "HEAD":
                        length = answer.headers.get("content-length", "")
                        if length.isdigit() and int(length) <= META_REFRESH_MAX_BYTES:
                            again = self.request("GET", current, counter)
                            body = again.body if again.code is not None and 200 <= again.code < 300 else b""
                        else:
                            body = b""
                    target = meta_refresh(body) if body else None
                    if target:
                        target = urljoin(current, html.unescape(target))
                        if target != current:
                            hops.append(["meta", target])
                            if target in seen:
                                return self._outcome(url, Status.FAILED, code, target, "the meta refreshes loop", hops, counter)
                            seen.add(target)
                            current = target
                            continue
                status = Status.REDIRECTED if hops else Status.OK
                message = self._redirect_message(hops, current) if hops else ""
                return self._outcome(url, status, code, current, message, hops, counter, cacheable=True)
            return self._failure(url, answer, current, hops, counter)
        return self._outcome(url, Status.FAILED, None, current, f"more than {MAX_HOPS} redirects", hops, counter)

    @staticmethod
    def _redirect_message(hops: list, final: str) -> str:
        codes = ", ".join("meta refresh" if code == "meta" else str(code) for code, _ in hops)
        return f"redirects ({codes}) to {final}"

    def _failure(self, url: str, answer: _Answer, current: str, hops: list, counter: list[int]) -> Outcome:
        code = answer.code
        if code is None:
            status = Status.BROKEN if answer.unknown_host else Status.FAILED
            return self._outcome(url, status, None, current, answer.error, hops, counter)
        reason = f"HTTP {code}" + (f" ({answer.error})" if answer.error else "")
        if code in (401, 403):
            return self._outcome(url, Status.FORBIDDEN, code, current, f"{reason}: the server refuses the checker", hops, counter, cacheable=True)
        if code == 429 or code >= 500:
            tries = counter[0]
            return self._outcome(url, Status.FAILED, code, current, f"{reason} after {tries} request{'s' if tries != 1 else ''}", hops, counter)
        return self._outcome(url, Status.BROKEN, code, current, reason, hops, counter, cacheable=True)

    @staticmethod
    def _outcome(url, status, code, final, message, hops, counter, cacheable=False) -> Outcome:
        return Outcome(url, status, code, final, message, hops, time.time(), counter[0], cacheable and status in CACHEABLE)


@dataclass
class ExternalResult:
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # by the URL fetched (without its fragment)
    uses: dict[str, list[Link]] = field(default_factory=dict)
    not_changed: int = 0  # external links left out by --changed-since

    @property
    def from_cache(self) -> int:
        return sum(1 for outcome in self.outcomes.values() if outcome.from_cache)

    def counts(self) -> dict[str, int]:
        counts = {status.value: 0 for status in Status}
        for outcome in self.outcomes.values():
            counts[outcome.status.value] += 1
        return counts

    def as_json(self) -> list[dict]:
        rows = []
        for url, outcome in sorted(self.outcomes.items()):
            row = asdict(outcome)
            row["status"] = outcome.status.value
            row["locations"] = [link.location for link in self.uses.get(url, [])]
            rows.append(row)
        return rows


def _report(outcome: Outcome, links: list[Link], diagnostics: Diagnostics) -> None:
    for link in links:
        shown = link.raw or link.href
        where = dict(col=link.col)
        if outcome.status is Status.BROKEN:
            diagnostics.error(link.source, link.line, f"the URL '{shown}' is broken: {outcome.message}.", suggestion="Fix the URL or remove the link.", code="external-broken", **where)
        elif outcome.status is Status.FORBIDDEN:
            diagnostics.warning(link.source, link.line, f"the URL '{shown}' answered {outcome.message}.", suggestion="Check it in a browser; exclude it in book.toml if it is fine.", code="external-forbidden", **where)
        elif outcome.status is Status.FAILED:
            diagnostics.warning(link.source, link.line, f"the URL '{shown}' could not be checked: {outcome.message}.", suggestion="It may be a passing outage; the next run checks it again.", code="external-failed", **where)
        elif outcome.status is Status.REDIRECTED:
            permanent = outcome.permanent_target
            if permanent:
                hint = f"Link to '{permanent}' instead." if permanent == outcome.final_url else f"Link to '{permanent}' instead (it then redirects to {outcome.final_url})."
                diagnostics.warning(link.source, link.line, f"the URL '{shown}' {outcome.message}.", suggestion=hint, code="external-redirect", **where)
            else:
                diagnostics.add(Diagnostic(Severity.INFO, link.source, link.line, f"the URL '{shown}' {outcome.message} (temporary).", col=link.col, code="external-redirect-temporary"))


def collect_urls(book: Book, exclude: list[str], changed: dict[str, set[int] | None] | None) -> tuple[dict[str, list[Link]], dict[str, Status], int]:
    """External links grouped by the URL to fetch; which ones are excluded or skipped; how many --changed-since left out."""
    patterns = [re.compile(pattern) for pattern in exclude]
    uses: dict[str, list[Link]] = {}
    fixed: dict[str, Status] = {}
    left_out = 0
    for link in book.links():
        if link.target is None or link.target.kind is not TargetKind.EXTERNAL:
            continue
        if changed is not None:
            lines = changed.get(link.source, set())
            if lines is not None and link.line not in lines:
                left_out += 1
                continue
        url = link.target.url or link.href
        if url.startswith("//"):
            url = "https:" + url
        fetch = urldefrag(url)[0]
        uses.setdefault(fetch, []).append(link)
        if fetch in fixed:
            continue
        scheme = urlsplit(fetch).scheme.lower()
        if scheme not in FETCHED_SCHEMES:
            fixed[fetch] = Status.SKIPPED
        elif any(pattern.search(url) for pattern in patterns):
            fixed[fetch] = Status.EXCLUDED
    return uses, fixed, left_out


def check_external(book: Book, diagnostics: Diagnostics, cache_dir: Path | None = None, changed_since: str | None = None, extra_exclude: list[str] | None = None, max_hosts: int | None = None, backoff: float | None = None, progress: bool = True) -> ExternalResult:
    """Check every external URL of the book (or those on lines added since `changed_since`); add the findings."""
    settings = book.config.links
    changed = added_lines(book.root, changed_since) if changed_since else None
    uses, fixed, left_out = collect_urls(book, list(settings.exclude) + list(extra_exclude or []), changed)
    result = ExternalResult(uses=uses, not_changed=left_out)
    cache = ExternalCache(cache_dir, settings.cache_max_age_days)
    todo: dict[str, list[str]] = {}
    for url in uses:
        if url in fixed:
            result.outcomes[url] = Outcome(url, fixed[url], message=fixed[url].value)
            continue
        cached = cache.get(url)
        if cached is not None:
            result.outcomes[url] = cached
            continue
        todo.setdefault(host_of(url), []).append(url)
    lock = threading.Lock()
    total = sum(len(urls) for urls in todo.values())

    def run_host(urls: list[str], advance) -> None:
        for url in urls:
            outcome = fetcher.check(url)
            with lock:
                result.outcomes[url] = outcome
                cache.put(outcome)
                advance(url)

    if todo:
        from contextlib import nullcontext

        from tools.core.report import progress as progress_bar

        fetcher = Fetcher(HostGate(settings.host_delay), timeout=settings.timeout, retries=settings.retries, backoff=settings.backoff if backoff is None else backoff)
        bar = progress_bar("external URLs", total) if progress else nullcontext(lambda item: None)
        with bar as advance:
            hosts = sorted(todo.items(), key=lambda item: -len(item[1]))
            try:
                with ThreadPoolExecutor(max_workers=max(1, min(max_hosts or 8, len(hosts)))) as pool:
                    for future in [pool.submit(run_host, urls, advance) for _, urls in hosts]:
                        future.result()
            finally:
                fetcher.close()
        cache.save()
    found = Diagnostics()
    for url, outcome in result.outcomes.items():
        _report(outcome, uses[url], found)
    for diag in sorted(found.items, key=lambda d: (d.file, d.line, d.col)):
        diagnostics.add(diag)
    return result
