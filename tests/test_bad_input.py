"""The bad-input battery (issue 14, item 8): well over 100 kinds of careless and hostile input, each run through
the real CLI in a subprocess on a tiny book with marker files outside its root.

Every case checks (tests/bad_input_harness.py): the exit code, the file (and line) named in the message, no
traceback, no hang (60 s deadline, the process group killed), the outside marker in no output (site files, PDF text
and images, EPUB members, caches, the command's output), the previous output and the sources byte-identical where
they must be, no temporary leftovers. The table cases are in tests/bad_input_cases_*.py; the cases that need a
server (serve, check-links --external), memory measurement or signals are below.

Run: PYTHONPATH=$PWD .venv/bin/python -m pytest -q -n 2 tests/test_bad_input.py
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bad_input_cases_build import CASES as BUILD_CASES, PDF  # noqa: E402
from bad_input_cases_common import GOOD, run_case  # noqa: E402
from bad_input_cases_content import CASES as CONTENT_CASES  # noqa: E402
from bad_input_cases_other import CASES as OTHER_CASES  # noqa: E402
from bad_input_harness import Bench  # noqa: E402

ALL_CASES = BUILD_CASES + CONTENT_CASES + OTHER_CASES


@pytest.fixture
def bench(tmp_path):
    bench = Bench(tmp_path)
    yield bench
    bench.close()


def _param(case):
    # PDF cases are the slow ones: one xdist group each pair, so that both workers share them.
    marks = [pytest.mark.xdist_group(f"bad-input-pdf-{zlib.crc32(case.id.encode()) % 2}")] if case.pdf else []
    return pytest.param(case, id=case.id, marks=marks)


def test_the_battery_is_large_and_distinct():
    ids = [case.id for case in ALL_CASES]
    assert len(ids) == len(set(ids)), "two cases share an id"
    assert len(ids) + len(SPECIAL) >= 110


@pytest.mark.parametrize("case", [_param(c) for c in ALL_CASES])
def test_bad_input(bench, case):
    run_case(bench, case)


# ---- serve: a port taken or out of range, bad output paths. A serve that starts anyway is killed at the deadline
# (and reported as HANG: it should have refused). Exit 2: these are command-line errors.

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_port_taken(bench):
    bench.write(GOOD)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        bench.expect("serve", "--book", bench.book, "--out", bench.out / "serve", "--port", port, code=2, names=(str(port),), outputs=(bench.out,), deadline=20)


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_serve_port_out_of_range(bench, port):
    bench.write(GOOD)
    bench.expect("serve", "--book", bench.book, "--out", bench.out / "serve", "--port", port, code=2, names=("--port",), outputs=(bench.out,), deadline=20)


@pytest.mark.parametrize("where", ["empty", "book-root", "user-file", "book-parent"])
def test_serve_bad_out(bench, where):
    bench.write(GOOD)
    out = {"empty": "", "book-root": bench.book, "user-file": bench.work / "notes.txt", "book-parent": bench.tmp}[where]
    bench.expect("serve", "--book", bench.book, "--out", out, "--port", _free_port(), code=2, deadline=20)


def test_serve_missing_book(bench):
    bench.expect("serve", "--book", bench.tmp / "nope", "--out", bench.out / "serve", "--port", _free_port(), code=2, names=("nope",), deadline=20)


# ---- check-links --external against local servers that misbehave. The book sets a 2-second timeout and no retry:
# each URL must end within a total deadline (connect plus the whole body), reported at file:line. The tool counts a
# URL it could not check (timeout, too many redirects) as a warning (exit 0) or an error (exit 1): both accepted.

class _Bad(BaseHTTPRequestHandler):
    stop: threading.Event

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        try:
            if self.path.startswith("/slow"):  # the answer one byte a second: every read is quick, the whole is not
                answer = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000
                for byte in answer:
                    if self.stop.wait(1):
                        break
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            elif self.path.startswith("/hang"):  # reads the request, never answers
                self.stop.wait(120)
            elif self.path.startswith("/redirect"):  # a new URL every time: no loop to detect, only a limit
                number = int(self.path.rsplit("/", 1)[-1] or 0) if self.path.count("/") > 1 else 0
                self.send_response(302)
                self.send_header("Location", f"/redirect/{number + 1}")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path.startswith("/headers"):  # headers that never end
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                while not self.stop.wait(0.2):
                    self.wfile.write(b"X-More: " + b"y" * 1000 + b"\r\n")
            elif self.path.startswith("/huge"):  # an endless body, fast
                self.send_response(200)
                self.send_header("Content-Length", str(10 ** 12))
                self.end_headers()
                block = b"z" * 65536
                while not self.stop.is_set():
                    self.wfile.write(block)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass


@pytest.fixture
def bad_server():
    stop = threading.Event()
    handler = type("Handler", (_Bad,), {"stop": stop})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("route,reported", [("/slow", True), ("/hang", True), ("/redirect/0", True), ("/headers", True), ("/huge", False)])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_external_server_misbehaves(bench, bad_server, route, reported, fmt):
    bench.write({**GOOD, "ext.md": f"# External\n\nSee\n[the site]({bad_server}{route}).\n",
                 "book.toml": "[links]\ntimeout = 2\nretries = 0\nhost_delay = 0\nbackoff = 0\n"})
    started = time.monotonic()
    result = bench.expect("check-links", "--book", bench.book, "--external", "--no-local", "--format", fmt, code=(0, 1),
                          names=("ext.md",) if reported else (), deadline=45)
    assert time.monotonic() - started < 30, f"HANG: a 2-second timeout took {time.monotonic() - started:.0f}s in all\n{result.shown()}"
    if reported and fmt == "text":
        assert "ext.md:4" in result.output, f"MESSAGE: the failing URL is not named at ext.md:4\n{result.shown()}"


# ---- check-programs keeps only a bounded tail of a script's output (the issue saw 1.5 GB for 300 MB of output).

def test_check_programs_script_prints_a_lot(bench):
    script = "#!/usr/bin/env python3\nimport sys\nif __name__ == '__main__':\n    line = 'y' * 1023 + '\\n'\n    for _ in range(150_000):\n        sys.stdout.write(line)\n"
    bench.write({**GOOD, "talk.md": "# Talk\n\n[run](loud.py)\n", "loud.py": script})
    result = bench.expect("check-programs", "--book", bench.book, "--no-shellcheck", "--timeout", "40", code=(0, 1), deadline=60, measure_memory=True)
    assert result.peak_rss < 300 << 20, f"MEMORY: the process tree held {result.peak_rss >> 20} MiB for 150 MB of script output\n{result.shown()}"


# ---- interrupted builds: the last good output stays byte-identical, no temporary file stays, exit 130/143.

def _many_chapters(count: int) -> dict:
    files = {f"c{i:02}.md": f"# Chapter {i}\n\n" + ("Some words of a paragraph. " * 40 + "\n\n") * 30 for i in range(count)}
    files["chapters-md.txt"] = "".join(f"c{i:02}.md\n" for i in range(count))
    return files


@pytest.mark.xdist_group("bad-input-pdf-0")
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_pdf_build_keeps_the_last_pdf(bench, sig, code):
    bench.write(_many_chapters(30))
    args = [a.format(book=bench.book, out=bench.out) for a in PDF] + ["--no-cache"]
    bench.good(*args, deadline=180)  # a real 30-chapter PDF, not the hang under test: a loaded machine may need long
    before = bench.state()
    process = bench.start(*args)
    lock = Path(args[args.index("--out") + 1]).parent / ".book.pdf.lock"  # taken once the command runs, not while Python starts
    deadline = time.monotonic() + 30
    while not lock.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(1.0)
    assert process.poll() is None, "harness: the build ended before the signal; make the book bigger"
    if sig == signal.SIGINT:
        os.killpg(process.pid, sig)  # Ctrl-C reaches the whole foreground group
    else:
        process.send_signal(sig)  # `kill PID` reaches the main process only: it must end its workers itself
    try:
        out, err = process.communicate(timeout=30)
    except Exception:  # noqa: BLE001
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError("HANG: the build did not end within 30 s of the signal") from None
    text = (out + err).decode("utf-8", "replace")
    assert "Traceback" not in text, f"TRACEBACK after {sig.name}\n{text[-3000:]}"
    assert process.returncode == code, f"EXIT: {process.returncode} after {sig.name}, expected {code}\n{text[-3000:]}"
    after = bench.state()
    changed = sorted(rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel))
    assert not changed, f"LOSS/LEFTOVER after {sig.name}: {changed[:12]}\n{text[-3000:]}"
    assert not os.listdir(bench.tmpdir), f"LEFTOVER in TMPDIR: {os.listdir(bench.tmpdir)}"
    time.sleep(0.5)
    left = _processes_in_group(process.pid)
    assert not left, f"LEAK: worker processes still running after {sig.name}: {left}"


def _processes_in_group(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    found.append(int(entry))
            except OSError:
                pass
    return found


SPECIAL = ["serve-taken", "serve-70000", "serve-minus-1", "serve-word", "serve-out-empty", "serve-out-root", "serve-out-file",
           "serve-out-parent", "serve-missing-book", "ext-slow", "ext-hang", "ext-redirect", "ext-headers", "ext-huge",
           "programs-loud", "sigint-pdf", "sigterm-pdf"]
