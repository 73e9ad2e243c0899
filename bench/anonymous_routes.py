"""What the routes anyone may GET cost the server with a large source journal.

A web page in the user's browser can make the browser GET any of these (a no-cors GET
carries no Origin, so the origin policy cannot tell it from the user), and with a token
anyone on the network can. Each must cost the same however much the hooks captured.

    .venv/bin/python bench/anonymous_routes.py           # 2,000 captures of 200,000 chars
    .venv/bin/python bench/anonymous_routes.py --ci      # 300 captures
    .venv/bin/python bench/anonymous_routes.py --repo /tmp/pc-before   # another checkout

1. A fresh store (SQLite, or a database of its own on OceanBase) gets ``--prompts``
   captured prompts of ``--chars`` characters (through ``source_capture`` in a
   ``manage.py shell`` of the served checkout, as the hooks' captures are stored).
2. ``manage.py serve`` (4 threads, 127.0.0.1, no token) answers each anonymous route
   once to warm it, then ``--repeat`` times in a row: median and largest latency,
   status, bytes, and the server's CPU time per request (user and system, from /proc:
   unlike a latency it does not grow with what else the machine runs).
3. ``--clients`` threads GET ``/`` for ``--seconds`` while the server's resident memory
   is sampled; then it idles ``--settle`` seconds.

Passes when every route answers its expected status, each one costs the server at most
``--budget-ms`` of CPU a request, and the routes and the flood raised the server's
resident memory (from its idle start) by less than ``--rss-budget-mib``. Prints a
Markdown table; ``--json PATH`` writes the result.
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import served

# (path, expected status): every route that answers without a token or a session.
ROUTES = [
    ("/", 200),
    ("/health/live", 200),
    ("/health/ready", 200),
    ("/api/docs/", 200),
    ("/api/schema/", 200),
    ("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js", 200),
    ("/admin/login/", 200),
    ("/admin/", 302),
    ("/admin/reset/MQ/set-password/", 200),
    ("/v1/capabilities", 200),
    ("/metrics", 200),
    ("/no-such-page", 404),
]

CAPTURE = """
from powercontext.sources import source_capture
line = "ERROR worker {{n}}: request {{i}} failed after retry, see trace id {{n}}-{{i}}\\n"
for n in range({prompts}):
    text = "".join(line.format(n=n, i=i) for i in range({chars} // 40 + 1))[:{chars}]
    source_capture(
        scope_id=f"bench:journal-{{n % 4}}",
        source_id=f"prompt:{{n}}",
        content=text,
        metadata={{"agent": ("codex", "claude")[n % 2], "event": "UserPromptSubmit",
                  "session_id": f"session-{{n % 7}}"}},
    )
"""


def get(host: str, port: int, path: str, timeout: float = 60.0) -> tuple[int, int, float]:
    """(status, body bytes, seconds) of one GET on a new connection."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
    finally:
        connection.close()
    return response.status, len(body), time.perf_counter() - started


def run(args: argparse.Namespace) -> dict:
    if args.repo is not None:
        served.REPO_ROOT = args.repo.resolve()
    scratch = None if args.data_dir else Path(tempfile.mkdtemp(prefix="pc-anon-bench-"))
    home = args.data_dir or scratch / "home"
    store = served.open_store(args.engine, home, oceanbase_url=args.oceanbase_url)
    try:
        done = served.manage(store, "migrate", "--verbosity", "0")
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        started = time.perf_counter()
        script = CAPTURE.format(prompts=args.prompts, chars=args.chars)
        done = served.manage(store, "shell", "-c", script, timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        capture_seconds = time.perf_counter() - started
        with served.ServerProcess(store) as server:
            served.wait_idle(server.pid)
            idle = served.memory_of(server.pid)["VmRSS"]
            routes = []
            for path, expected in ROUTES:
                get(server.host, server.port, path)  # warm: a first call may fill a cache
                cpu = served.cpu_seconds(server.pid)
                answers = [get(server.host, server.port, path) for _ in range(args.repeat)]
                cpu = served.cpu_seconds(server.pid) - cpu
                seconds = [answer[2] for answer in answers]
                routes.append(
                    {
                        "path": path,
                        "expected": expected,
                        "statuses": sorted({answer[0] for answer in answers}),
                        "bytes": answers[-1][1],
                        "median_ms": round(statistics.median(seconds) * 1000, 1),
                        "max_ms": round(max(seconds) * 1000, 1),
                        "cpu_ms": round(cpu / args.repeat * 1000, 1),
                    }
                )
            flood = _flood(server, args.clients, args.seconds, args.settle)
            flood["rss_idle_mib"] = round(idle / 1024, 1)
    finally:
        store.close(drop=True)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)  # the journal: hundreds of MB
    slow = [r["path"] for r in routes if r["cpu_ms"] > args.budget_ms]
    wrong = [r["path"] for r in routes if r["statuses"] != [r["expected"]]]
    grew = flood["peak_mib"] - flood["rss_idle_mib"]
    return {
        "engine": args.engine,
        "repo": str(served.REPO_ROOT),
        "prompts": args.prompts,
        "chars": args.chars,
        "capture_seconds": round(capture_seconds, 1),
        "routes": routes,
        "flood": flood,
        "over_budget": slow,
        "wrong_status": wrong,
        "passed": not slow and not wrong and grew < args.rss_budget_mib,
    }


def _flood(server: served.ServerProcess, clients: int, seconds: float, settle: float) -> dict:
    """``clients`` threads GET ``/`` for ``seconds``: pages answered, their latencies and
    the server's resident memory before, at its peak and ``settle`` seconds after."""
    before = served.memory_of(server.pid)["VmRSS"]
    sampler = served.MemorySampler(server.pid, interval=0.1).start()
    latencies: list[float] = []
    failures: list[str] = []
    deadline = time.monotonic() + seconds

    def client() -> None:
        while time.monotonic() < deadline:
            try:
                status, _, took = get(server.host, server.port, "/", timeout=60)
            except OSError as error:
                failures.append(repr(error))
                continue
            if status != 200:
                failures.append(f"status {status}")
            latencies.append(took)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    peak = sampler.stop()
    time.sleep(settle)
    after = served.memory_of(server.pid)["VmRSS"]
    return {
        "clients": clients,
        "seconds": seconds,
        "pages": len(latencies),
        "p50_ms": round(served.percentile(latencies, 0.5) * 1000, 1),
        "p95_ms": round(served.percentile(latencies, 0.95) * 1000, 1),
        "failures": failures[:5],
        "rss_before_mib": round(before / 1024, 1),
        "peak_mib": round(peak / 1024, 1),
        "rss_after_mib": round(after / 1024, 1),
    }


def render(result: dict) -> str:
    rows = [
        (
            route["path"],
            ", ".join(str(status) for status in route["statuses"]),
            f"{route['bytes']:,}",
            f"{route['median_ms']:.1f}",
            f"{route['max_ms']:.1f}",
            f"{route['cpu_ms']:.1f}",
        )
        for route in result["routes"]
    ]
    flood = result["flood"]
    return "\n".join(
        [
            f"{result['engine']}, {result['prompts']:,} captures of {result['chars']:,} "
            f"characters (captured in {result['capture_seconds']} s), {result['repo']}",
            "",
            served.markdown_table(
                ("route", "status", "bytes", "median ms", "max ms", "server CPU ms"), rows
            ),
            "",
            f"`/` by {flood['clients']} clients for {flood['seconds']} s: {flood['pages']} "
            f"pages, p50 {flood['p50_ms']} ms, p95 {flood['p95_ms']} ms; server RSS "
            f"{flood['rss_idle_mib']} MiB idle, {flood['rss_before_mib']} MiB after the "
            f"routes above, peak {flood['peak_mib']} MiB, "
            f"{flood['rss_after_mib']} MiB after"
            + (f"; failures: {flood['failures']}" if flood["failures"] else ""),
            f"passed: {result['passed']}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=["sqlite", "oceanbase"], default="sqlite")
    parser.add_argument("--oceanbase-url", help="an OceanBase server to use (else seekdb)")
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--repo", type=Path, help="serve this checkout instead")
    parser.add_argument("--prompts", type=int, default=2000)
    parser.add_argument("--chars", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--budget-ms", type=float, default=50.0, help="CPU ms a request")
    parser.add_argument("--rss-budget-mib", type=float, default=50.0)
    parser.add_argument("--ci", action="store_true", help="300 captures, 6 s of flood")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.ci:
        args.prompts, args.seconds, args.repeat = 300, 6.0, 5
    return served.report_runs([args], run, render, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
