"""HTTP requests with a TOTAL deadline: name lookup, connect, TLS handshake, headers and body together.

urllib's `timeout` bounds each socket operation only, so a server sending one byte a second keeps a request alive
for ever. Here every receive of the request's sockets waits at most what is left of the request's deadline, and
past it raises `DeadlineExceeded`. The deadline is per thread (`request_deadline`), since each checker thread makes
one request at a time. The name lookup, which sockets do not bound, runs in a helper thread joined with the time
left. (Issue 15 moves the checker to httpx, whose `timeout` has the same total meaning: this module then goes.)
"""
from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
import urllib.request
from contextlib import contextmanager

_current = threading.local()


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

    def arm(self, sock: socket.socket) -> None:
        """Let the next operation on `sock` wait no longer than what is left."""
        sock.settimeout(self.left())


@contextmanager
def request_deadline(seconds: float):
    """Every HTTP request made by this thread inside the block ends within `seconds` in all."""
    previous = getattr(_current, "deadline", None)
    _current.deadline = deadline = Deadline(seconds)
    try:
        yield deadline
    finally:
        _current.deadline = previous


def current() -> Deadline | None:
    return getattr(_current, "deadline", None)


def _received(count: int) -> int:
    deadline = current()
    if deadline is not None and count:
        deadline.received += count
    return count


def _arm(sock) -> None:
    deadline = current()
    if deadline is not None:
        deadline.arm(sock)


def _timed_out(sock) -> None:
    """A socket timeout while a deadline runs: say it is the deadline when the deadline is what ran out."""
    deadline = current()
    if deadline is not None and deadline.end - time.monotonic() <= 0.01:
        raise DeadlineExceeded(deadline.seconds, deadline.received) from None


class _Timed:
    """Every receive waits at most what is left of the request's deadline (a mixin for plain and TLS sockets)."""

    def recv_into(self, *args):
        _arm(self)
        try:
            return _received(super().recv_into(*args))  # type: ignore[misc]
        except TimeoutError:
            _timed_out(self)
            raise

    def recv(self, *args):
        _arm(self)
        try:
            data = super().recv(*args)  # type: ignore[misc]
        except TimeoutError:
            _timed_out(self)
            raise
        _received(len(data))
        return data


class _TimedSocket(_Timed, socket.socket):
    pass


class _TimedSSLSocket(_Timed, ssl.SSLSocket):
    def do_handshake(self, block=False):
        _arm(self)
        try:
            return super().do_handshake(block)
        except TimeoutError:
            _timed_out(self)
            raise


def _lookup(host: str, port: int) -> list:
    """getaddrinfo, bounded by the deadline (the resolver has its own, much longer, timeouts)."""
    deadline = current()
    if deadline is None:
        return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    box: dict = {}

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
        raise box["error"]
    return box["infos"]


def _create_connection(address, timeout=None, source_address=None, *args, **kwargs) -> socket.socket:
    host, port = address
    error: OSError | None = None
    for family, kind, proto, _, where in _lookup(host, port):
        sock = _TimedSocket(family, kind, proto)
        try:
            deadline = current()
            sock.settimeout(min(timeout, deadline.left()) if deadline and timeout else (deadline.left() if deadline else timeout))
            if source_address:
                sock.bind(source_address)
            sock.connect(where)
            return sock
        except TimeoutError:
            sock.close()
            _timed_out(sock)
            raise
        except OSError as exc:
            sock.close()
            error = exc
    raise error or OSError(f"no address found for {host}")


class _TimedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _create_connection


class _TimedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _create_connection


class TimedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_TimedHTTPConnection, req)


class TimedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self) -> None:
        context = ssl.create_default_context()
        context.sslsocket_class = _TimedSSLSocket
        super().__init__(context=context)
        self.context = context  # the base class keeps it private

    def https_open(self, req):
        return self.do_open(_TimedHTTPSConnection, req, context=self.context)
