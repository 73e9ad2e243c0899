"""Do the agents' routes keep answering while the admin login is flooded?

One real ``manage.py serve`` (4 threads, 127.0.0.1, SQLite) with a staff user. A client
posts ``/v1/context/prepare`` in a loop, first alone, then while ``--clients`` threads
post wrong passwords to ``/admin/login/`` (each with its own session and CSRF token, as a
script would). Prints prepare's latencies in both phases and what the login clients got.

    .venv/bin/python bench/login_flood.py [--clients 8] [--seconds 10] [--repo PATH]
                                          [--without-lockout]

``--repo`` serves another checkout's code (e.g. before a fix); this script and its
client stay the same.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import served

SCOPE = "bench:login-flood"
USERNAME = "flood-admin"
PASSWORD = "the-right-password-8"  # noqa: S105  (a throwaway user in a throwaway store)
PREPARE_BUDGET_SECONDS = 1.5  # the hook's timeout
_CSRF_FIELD = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


def start(
    home: Path, repo: Path | None = None, *, without_lockout: bool = False
) -> served.ServerProcess:
    """A served store in ``home`` with a staff user and a few memories."""
    if repo is not None:
        served.REPO_ROOT = repo.resolve()
    store = served.open_store("sqlite", home)
    if without_lockout:
        store.extra_env["DJANGO_SETTINGS_MODULE"] = "bench.settings_no_lockout"
    done = served.manage(store, "migrate", "--verbosity", "0")
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    create = (
        "from django.contrib.auth import get_user_model; "
        f"get_user_model().objects.create_user({USERNAME!r}, password={PASSWORD!r}, "
        "is_staff=True)"
    )
    done = served.manage(store, "shell", "-c", create)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    server = served.ServerProcess(store).start()
    client = server.client()
    for n in range(20):
        client.ok(
            "/v1/memory/remember",
            {"scope_id": SCOPE, "kind": "note", "text": f"Retry the importer with backoff {n}."},
        )
    client.close()
    return server


def prepare_latencies(server: served.ServerProcess, seconds: float) -> tuple[list[float], int]:
    """Sequential prepares for ``seconds``: (latencies of the answered ones, unanswered)."""
    client = server.client(timeout=30)
    latencies: list[float] = []
    unanswered = 0
    deadline = time.monotonic() + seconds
    body = {"scope_id": SCOPE, "query": "How do we retry the flaky importer?", "max_bytes": 8000}
    while time.monotonic() < deadline:
        try:
            latencies.append(client.timed("/v1/context/prepare", body)[1])
        except served.Unanswered:
            unanswered += 1
    client.close()
    return latencies, unanswered


def _login_client(host: str, port: int, stop: threading.Event, statuses: Counter, n: int) -> None:
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        connection.request("GET", "/admin/login/")
        page = connection.getresponse()
        html = page.read()
        cookie = page.getheader("Set-Cookie", "").split(";", 1)[0]
        token = _CSRF_FIELD.search(html).group(1).decode()
        attempt = 0
        while not stop.is_set():
            attempt += 1
            form = urlencode(
                {
                    "csrfmiddlewaretoken": token,
                    "username": USERNAME,
                    "password": f"guess-{n}-{attempt}",
                }
            )
            try:
                connection.request(
                    "POST",
                    "/admin/login/",
                    form,
                    {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie},
                )
                response = connection.getresponse()
                response.read()
                statuses[response.status] += 1
            except (OSError, http.client.HTTPException):
                statuses["unanswered"] += 1
                connection.close()
                connection = http.client.HTTPConnection(host, port, timeout=60)
    finally:
        connection.close()


def flood(server: served.ServerProcess, clients: int, seconds: float) -> dict:
    """Prepare's latencies while ``clients`` threads post wrong passwords."""
    stop = threading.Event()
    statuses: Counter = Counter()
    threads = [
        threading.Thread(
            target=_login_client, args=(server.host, server.port, stop, statuses, n), daemon=True
        )
        for n in range(clients)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # the flood is under way before the clock starts
    try:
        latencies, unanswered = prepare_latencies(server, seconds)
    finally:
        stop.set()
        for thread in threads:
            thread.join(70)
    return {"latencies": latencies, "unanswered": unanswered, "login_statuses": dict(statuses)}


def summary(latencies: list[float], unanswered: int) -> dict:
    within = sum(1 for seconds in latencies if seconds <= PREPARE_BUDGET_SECONDS)
    return {
        "answered": len(latencies),
        "unanswered": unanswered,
        "within_budget": within,
        "p50_ms": round(served.percentile(latencies, 0.5) * 1000, 1),
        "p90_ms": round(served.percentile(latencies, 0.9) * 1000, 1),
        "max_ms": round(max(latencies, default=0.0) * 1000, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repo", type=Path, default=None, help="serve this checkout's code")
    parser.add_argument(
        "--without-lockout",
        action="store_true",
        help="django-axes' lockout off: the hashing gate alone (bench/settings_no_lockout.py)",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pc-login-flood-") as home:
        server = start(Path(home), args.repo, without_lockout=args.without_lockout)
        try:
            quiet = summary(*prepare_latencies(server, args.seconds))
            flooded = flood(server, args.clients, args.seconds)
        finally:
            server.stop()
    result = {
        "clients": args.clients,
        "seconds": args.seconds,
        "quiet": quiet,
        "flooded": summary(flooded["latencies"], flooded["unanswered"]),
        "login_statuses": flooded["login_statuses"],
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    header = ("phase", "prepares", "within 1.5 s", "p50 ms", "p90 ms", "max ms")
    rows = [
        (
            name,
            str(s["answered"]),
            str(s["within_budget"]),
            str(s["p50_ms"]),
            str(s["p90_ms"]),
            str(s["max_ms"]),
        )
        for name, s in (("alone", quiet), (f"{args.clients} login clients", result["flooded"]))
    ]
    print(served.markdown_table(header, rows))
    print(f"login answers: {result['login_statuses']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
