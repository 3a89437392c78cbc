#!/usr/bin/env python3
"""Time `tools check-links --external` over N URLs on one local keep-alive HTTP server, and count the TCP
connections the server accepted. With one client keeping connections alive, N HEAD requests to one host should
cost about one connection, not N.

    python scripts/bench_external.py [--urls 200] [--repeat 3] [--code-root DIR] [--connect-delay 0.02]

`--connect-delay S` makes the server wait S seconds before serving each new connection, standing for the round
trips of a TCP and TLS handshake to a distant host (on 127.0.0.1 a new connection is nearly free).
`--code-root` runs the `tools` found in another checkout (e.g. the main branch) in the same session, for a
before/after comparison on the same machine. Nothing leaves 127.0.0.1.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class Counting(ThreadingHTTPServer):
    daemon_threads = True
    connections = 0
    requests = 0
    connect_delay = 0.0

    def process_request(self, request, client_address):
        with LOCK:
            Counting.connections += 1
        time.sleep(self.connect_delay)  # the handshake's round trips, paid once per connection
        super().process_request(request, client_address)


LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def log_message(self, *args):
        pass

    def _answer(self, body: bool) -> None:
        with LOCK:
            Counting.requests += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()
        if body:
            self.wfile.write(b"ok")

    def do_HEAD(self):
        self._answer(False)

    def do_GET(self):
        self._answer(True)


def run(code_root: Path, urls: int, connect_delay: float) -> tuple[float, int, int]:
    server = Counting(("127.0.0.1", 0), Handler)
    server.connect_delay = connect_delay
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    Counting.connections = Counting.requests = 0
    with tempfile.TemporaryDirectory() as temp:
        book = Path(temp) / "book"
        book.mkdir()
        links = "\n".join(f"- [{n}]({base}/page/{n})" for n in range(urls))
        (book / "README.md").write_text(f"# URLs\n\n{links}\n", encoding="utf-8")
        (book / "chapters-md.txt").write_text("README.md\n", encoding="utf-8")
        (book / "book.toml").write_text('[book]\nrepository_path = ""\n\n[links]\nhost_delay = 0.0\ntimeout = 5\n', encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(code_root), "no_proxy": "127.0.0.1"}
        command = [sys.executable, "-m", "tools", "check-links", "--book", str(book), "--external", "--no-local", "--cache-dir", str(Path(temp) / "cache")]
        started = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=code_root, capture_output=True, text=True, check=False)  # -m puts the cwd first
        elapsed = time.perf_counter() - started
    server.shutdown()
    server.server_close()
    if done.returncode != 0:
        raise SystemExit(f"check-links failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, Counting.connections, Counting.requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--connect-delay", type=float, default=0.0, help="seconds the server waits per new connection")
    parser.add_argument("--code-root", type=Path, default=REPO, help="the checkout whose tools to run")
    args = parser.parse_args()
    runs = [run(args.code_root.resolve(), args.urls, args.connect_delay) for _ in range(args.repeat)]
    best = min(runs)
    print(f"{args.code_root}: {args.urls} URLs on one host, {args.connect_delay * 1000:g} ms per new connection: best {best[0]:.2f}s of {args.repeat} (all: {', '.join(f'{r[0]:.2f}' for r in runs)}), {best[1]} connections for {best[2]} requests")


if __name__ == "__main__":
    main()
