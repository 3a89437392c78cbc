"""The one httpx client of `check-links --external`: connections kept alive per host, a TOTAL deadline per request.

httpx's timeouts bound each phase (connect, each read), so a server sending one byte a second keeps a request
alive for ever (encode/httpx#1450). httpcore, under httpx, takes a network backend as a public parameter: ours
wraps the standard one so that every connect, TLS handshake, read and write waits at most what is left of the
request's deadline, and past it raises `DeadlineExceeded` with the bytes received so far. The deadline is per
thread (`request_deadline`): each checker thread makes one request at a time. The name lookup, which sockets do
not bound, runs in a helper thread joined with the time left.

`DeadlineTransport` is the small httpx transport over httpcore's pool that plugs the backend in. Proxies come
from the environment as urllib reads them (`http_proxy`, `https_proxy`, `no_proxy`), as before httpx; redirects,
cookies and content decoding are left to the checker (none followed, kept or asked for).
"""
from __future__ import annotations

import socket
import ssl
import threading
import time
import typing
import urllib.request
from contextlib import contextmanager
from http.cookiejar import CookieJar, DefaultCookiePolicy
from urllib.parse import unquote, urlsplit

import httpcore
import httpx

_current = threading.local()
KEEPALIVE_SECONDS = 5.0  # an idle connection is closed after this long (a host's next URL comes much sooner)
MAX_CONNECTIONS = 100  # httpx's defaults; the checker has at most one request in flight per host anyway
MAX_IDLE_CONNECTIONS = 20


class DeadlineExceeded(TimeoutError):
    """The request's total deadline passed; `received` says how many bytes the server had sent by then."""

    def __init__(self, seconds: float, received: int) -> None:
        super().__init__(f"timed out after {seconds:g}s")
        self.seconds = seconds
        self.received = received


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.received = 0

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded(self.seconds, self.received)
        return left

    def expired(self) -> bool:
        return self.end - time.monotonic() <= 0.01


@contextmanager
def request_deadline(seconds: float) -> typing.Iterator[Deadline]:
    """Every request this thread makes inside the block ends within `seconds` in all."""
    previous = getattr(_current, "deadline", None)
    _current.deadline = deadline = Deadline(seconds)
    try:
        yield deadline
    finally:
        _current.deadline = previous


def _bounded(timeout: float | None) -> float | None:
    """`timeout` cut to what is left of this thread's deadline (none running: unchanged)."""
    deadline: Deadline | None = getattr(_current, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline.left()
    return left if timeout is None else min(timeout, left)


@contextmanager
def _deadline_named() -> typing.Iterator[None]:
    """A timeout at the deadline is the deadline, with the bytes received; an earlier one stays a timeout."""
    try:
        yield
    except httpcore.TimeoutException:
        deadline: Deadline | None = getattr(_current, "deadline", None)
        if deadline is not None and deadline.expired():
            raise DeadlineExceeded(deadline.seconds, deadline.received) from None
        raise


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _deadline_named():
            data = self._stream.read(max_bytes, _bounded(timeout))
        deadline: Deadline | None = getattr(_current, "deadline", None)
        if deadline is not None:
            deadline.received += len(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with _deadline_named():
            self._stream.write(buffer, _bounded(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.NetworkStream:
        with _deadline_named():
            return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, _bounded(timeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)


def _lookup(host: str, port: int) -> list[str]:
    """The host's addresses, the lookup bounded by the deadline (the resolver has its own, much longer, timeouts)."""
    deadline: Deadline | None = getattr(_current, "deadline", None)
    if deadline is None:
        return [str(info[4][0]) for info in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)]
    box: dict[str, typing.Any] = {}

    def run() -> None:
        try:
            box["infos"] = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        except OSError as exc:
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True, name="dns-lookup")
    worker.start()
    worker.join(deadline.left())
    if worker.is_alive():
        raise DeadlineExceeded(deadline.seconds, 0)
    if "error" in box:
        raise box["error"]  # socket.gaierror: the checker reports an unknown host
    return [str(info[4][0]) for info in box["infos"]]


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's standard backend, each step bounded by the thread's deadline."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None, socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None) -> httpcore.NetworkStream:
        failure: Exception | None = None
        for address in _lookup(host, port):
            try:
                with _deadline_named():
                    stream = self._backend.connect_tcp(address, port, _bounded(timeout), local_address, socket_options)
                return _DeadlineStream(stream)
            except httpcore.ConnectError as exc:  # the next address may answer
                failure = exc
        raise failure or httpcore.ConnectError(f"no address found for {host}")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


@contextmanager
def _as_httpx() -> typing.Iterator[None]:
    """httpcore's exceptions as httpx's classes of the same name (what httpx's own transport does)."""
    try:
        yield
    except httpcore.ConnectionNotAvailable as exc:
        raise httpx.TransportError(str(exc)) from exc
    except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError, httpcore.UnsupportedProtocol) as exc:
        raise getattr(httpx, type(exc).__name__, httpx.TransportError)(str(exc)) from exc


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: typing.Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> typing.Iterator[bytes]:
        with _as_httpx():
            yield from self._stream

    def close(self) -> None:
        closer = getattr(self._stream, "close", None)
        if closer is not None:
            with _as_httpx():
                closer()


def _proxy_pool(url: str, ssl_context: ssl.SSLContext, backend: httpcore.NetworkBackend) -> httpcore.HTTPProxy | None:
    """An httpcore proxy pool for a proxy URL from the environment (urllib's forms: with or without scheme)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None  # urllib sends http(s) requests through http(s) proxies only
    auth = (unquote(parts.username), unquote(parts.password or "")) if parts.username else None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return httpcore.HTTPProxy(proxy_url=httpcore.URL(scheme=parts.scheme.encode(), host=parts.hostname.encode(), port=port, target=b"/"), proxy_auth=auth, ssl_context=ssl_context, network_backend=backend,
                              max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_IDLE_CONNECTIONS, keepalive_expiry=KEEPALIVE_SECONDS)


class DeadlineTransport(httpx.BaseTransport):
    """httpcore's connection pool (keep-alive, HTTP/1.1) over the deadline backend, and the environment's proxies."""

    def __init__(self) -> None:
        backend = _DeadlineBackend()
        ssl_context = ssl.create_default_context()  # the system's certificates, as urllib used
        self._direct = httpcore.ConnectionPool(ssl_context=ssl_context, network_backend=backend, max_connections=MAX_CONNECTIONS,
                                               max_keepalive_connections=MAX_IDLE_CONNECTIONS, keepalive_expiry=KEEPALIVE_SECONDS)
        self._environment = urllib.request.getproxies()
        self._proxies: dict[str, httpcore.HTTPProxy] = {}
        for scheme in ("http", "https"):
            pool = _proxy_pool(self._environment[scheme], ssl_context, backend) if self._environment.get(scheme) else None
            if pool is not None:
                self._proxies[scheme] = pool

    def _pool_for(self, url: httpx.URL) -> httpcore.ConnectionPool | httpcore.HTTPProxy:
        proxy = self._proxies.get(url.scheme)
        if proxy is None or urllib.request.proxy_bypass(url.host):  # no_proxy, read as urllib reads it
            return self._direct
        return proxy

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port, target=request.url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx():
            answer = self._pool_for(request.url).handle_request(core)
        assert isinstance(answer.stream, typing.Iterable)
        return httpx.Response(status_code=answer.status, headers=answer.headers, stream=_Body(answer.stream), extensions=answer.extensions)

    def close(self) -> None:
        for pool in (self._direct, *self._proxies.values()):
            pool.close()


def make_client(user_agent: str, timeout: float) -> httpx.Client:
    """One client for a whole check: no redirects followed, no cookies kept, the body as sent (no compression)."""
    no_cookies = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
    headers = {"User-Agent": user_agent, "Accept": "*/*", "Accept-Encoding": "identity"}
    return httpx.Client(transport=DeadlineTransport(), headers=headers, cookies=no_cookies, timeout=timeout, follow_redirects=False, trust_env=False)
