"""Slow clients against a served process: does ``/health/live`` still answer, and how
fast are trickling connections shed?

    .venv/bin/python bench/slow_clients.py                      # the defaults of serve
    .venv/bin/python bench/slow_clients.py --clients 1200       # more than the limit
    .venv/bin/python bench/slow_clients.py --serve-args="--connection-limit 100 \\
        --idle-timeout 120 --request-timeout 100000"             # waitress's defaults

``--clients`` connections each send the start of a request, then one more byte every
``--interval`` seconds and never finish it (a slow-loris client). Once all are open,
``/health/live`` is asked on a new connection (timeout ``--health-timeout``); then the
connections the server closes are counted until all are closed or ``--watch`` seconds
have passed. Reported: health's answer and latency, connections still open over time,
seconds until the last was closed, the server's resident memory while it held them.
Loopback only; bounded by the client count and ``--watch``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import socket
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.served import ServerProcess, memory_of, open_store  # noqa: E402

REQUEST_START = b"POST /v1/memory/search HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def health(url: str, timeout: float) -> tuple[str, float]:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url + "/health/live", timeout=timeout) as response:
            answer = str(response.status)
    except OSError as error:
        answer = type(error).__name__
    return answer, round(time.monotonic() - started, 2)


def run(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="pc-slow-bench-") as tmp:
        store = open_store("sqlite", Path(tmp) / "home")
        with ServerProcess(store, serve_args=tuple(shlex.split(args.serve_args))) as server:
            idle_kib = memory_of(server.pid)["VmRSS"]
            sockets = []
            started = time.monotonic()
            for _ in range(args.clients):
                sock = socket.create_connection((server.host, server.port), timeout=5)
                sock.setblocking(False)
                sock.send(REQUEST_START)
                sockets.append(sock)
            answer, seconds = health(server.url, args.health_timeout)
            held_kib = memory_of(server.pid)["VmRSS"]
            open_at: list[tuple[float, int]] = []
            closed: set[int] = set()
            last_trickle = 0.0
            while len(closed) < len(sockets) and time.monotonic() - started < args.watch:
                now = time.monotonic()
                trickle = now - last_trickle >= args.interval
                for index, sock in enumerate(sockets):
                    if index in closed:
                        continue
                    try:
                        if sock.recv(65536) == b"":
                            closed.add(index)
                            continue
                    except BlockingIOError:
                        pass
                    except OSError:
                        closed.add(index)
                        continue
                    if trickle:
                        try:
                            sock.send(b"a")
                        except BlockingIOError:
                            pass
                        except OSError:
                            closed.add(index)
                if trickle:
                    last_trickle = now
                    open_at.append((round(now - started, 1), len(sockets) - len(closed)))
                time.sleep(0.1)
            shed_after = round(time.monotonic() - started, 1)
            for sock in sockets:
                sock.close()
            after = health(server.url, args.health_timeout)
    return {
        "serve_args": args.serve_args,
        "clients": args.clients,
        "health_while_held": answer,
        "health_seconds": seconds,
        "still_open_over_time": open_at,
        "all_closed_after_seconds": shed_after if len(closed) == len(sockets) else None,
        "health_after": after[0],
        "rss_idle_mib": round(idle_kib / 1024, 1),
        "rss_holding_mib": round(held_kib / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=900)
    parser.add_argument("--interval", type=float, default=3.0)
    parser.add_argument("--health-timeout", type=float, default=30.0)
    parser.add_argument("--watch", type=float, default=40.0)
    parser.add_argument("--serve-args", default="")
    print(json.dumps(run(parser.parse_args(argv))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
