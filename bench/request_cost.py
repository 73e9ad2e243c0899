"""What one request at the largest input each route allows costs the served process.

    .venv/bin/python bench/request_cost.py                      # model off, then on
    .venv/bin/python bench/request_cost.py --embeddings off     # the Python work alone
    .venv/bin/python bench/request_cost.py --repo /tmp/before   # another checkout
    .venv/bin/python bench/request_cost.py --ci                 # 300 entries, 3 rounds

A request holds the interpreter for its Python work: analysing a prompt, planning the
search, scoring, rendering. The embedding model (ONNX Runtime) and SQLite's own work run
outside it. So each case is measured twice, on a server with the model switched off
(``POWERCONTEXT_EMBEDDINGS=off``: what is left is the Python work, plus SQLite's) and on
one with the model, as served.

1. A fresh store (SQLite, or a database of its own on OceanBase) gets ``--entries``
   memories of bench/corpus.py in one scope, 150 entries of 8,192 bytes in another (a
   list page of 1 MiB), and 20 captured prompts of 200,000 characters in the first
   (what prepare's look at the recent prompts reads), through the services in a
   ``manage.py shell`` of the served checkout.
2. ``manage.py serve`` (4 threads, 127.0.0.1, no token); once it is idle, each case is
   sent ``--repeat`` times, one request at a time, each with an input of its own (no
   cache answers a repeat): the server's CPU time over the case (user and system, every
   thread, from /proc/<pid>/stat: 10 ms ticks, so a mean over the repeats) and each
   request's latency.

Prints one Markdown table per configuration (``--json PATH``: the raw results). Passes
when every request was answered as expected and, with the model off, every case's mean
CPU time is within ``--budget-ms``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import served

SCOPE = "bench:cost"
LARGE_SCOPE = "bench:cost-large"
MAX_CHARS = 8192

SEED = """
from bench.corpus import memories
from memory.services import memory_remember
from powercontext.sources import source_capture
corpus = memories(28)
done = 0
while done < {entries}:
    kind, text = next(corpus)
    done += memory_remember(scope_id={scope!r}, kind=kind, text=text).entry is not None
for n in range(150):
    words = " ".join(f"w{{n}}x{{i}}" for i in range(2000))
    memory_remember(scope_id={large!r}, kind="note", text=words.encode()[:8192].decode())
for n in range(20):
    line = f"Traceback {{n}}: worker failed, retry with backoff after the timeout\\n"
    source_capture(scope_id={scope!r}, source_id=f"prompt:seed-{{n}}",
                   content=(line * 4000)[:200_000],
                   metadata={{"agent": "codex", "session_id": "s-1"}})
"""


def words(rng: random.Random, chars: int = MAX_CHARS) -> str:
    """``chars`` characters of distinct made-up words in sentences and lines: the most
    terms a prompt of that length holds."""
    parts: list[str] = []
    size = 0
    while size < chars:
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 9)))
        end = rng.choice([" ", " ", " ", " ", ". ", "\n"])
        parts.append(word + end)
        size += len(word) + len(end)
    return "".join(parts)[:chars].strip()


def cjk(rng: random.Random, chars: int = MAX_CHARS) -> str:
    """``chars`` CJK ideographs: each a term and, with its neighbour, a bigram."""
    return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(chars))


def one_letter_lines(rng: random.Random) -> str:
    """4,096 one-letter lines (8,191 characters): the prompt of issue 27, item 4."""
    return "\n".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4096))


def short_lines(rng: random.Random) -> str:
    """Lines of a pasted file list: short, each with a few terms."""
    return "\n".join(f"src/{rng.randint(0, 99)}/f{rng.randint(0, 9999)}.py" for _ in range(600))[
        :MAX_CHARS
    ]


@dataclass(frozen=True)
class Case:
    name: str
    path: str
    body: Callable[[random.Random, int], dict]
    status: int = 200


def _prepare(make: Callable[[random.Random], str]) -> Callable[[random.Random, int], dict]:
    return lambda rng, n: {"scope_id": SCOPE, "query": make(rng)[:MAX_CHARS], "max_bytes": 8000}


def _search(make: Callable[[random.Random], str]) -> Callable[[random.Random, int], dict]:
    return lambda rng, n: {"scope_id": SCOPE, "query": make(rng)[:MAX_CHARS], "limit": 50}


def _remember(make: Callable[[random.Random], str]) -> Callable[[random.Random, int], dict]:
    def body(rng: random.Random, n: int) -> dict:
        text = make(rng).encode()[:MAX_CHARS].decode("utf-8", "ignore")
        return {"scope_id": "bench:cost-writes", "kind": "note", "text": text}

    return body


def _capture(rng: random.Random, n: int) -> dict:
    return {
        "scope_id": "bench:cost-writes",
        "source_id": f"prompt:{n}:{rng.random()}",
        "content": (words(rng) * 25)[:200_000],
        "metadata": {"agent": "codex", "notes": words(rng, 15_000).replace("\n", " ")},
    }


def _mcp(tool: str, arguments: Callable[[random.Random], dict]) -> Callable:
    def body(rng: random.Random, n: int) -> dict:
        return {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments(rng)},
        }

    return body


CASES = [
    Case("prepare: an ordinary prompt", "/v1/context/prepare", lambda rng, n: {}),
    Case("prepare: 4,096 one-letter lines", "/v1/context/prepare", _prepare(one_letter_lines)),
    Case("prepare: 600 short lines (a file list)", "/v1/context/prepare", _prepare(short_lines)),
    Case("prepare: 8,192 chars of distinct words", "/v1/context/prepare", _prepare(words)),
    Case("prepare: 8,192 CJK characters", "/v1/context/prepare", _prepare(cjk)),
    Case("search: 8,192 chars of distinct words", "/v1/memory/search", _search(words)),
    Case("search: 8,192 CJK characters", "/v1/memory/search", _search(cjk)),
    Case("remember: 8,192 bytes of distinct words", "/v1/memory/remember", _remember(words)),
    Case("remember: 8,192 bytes of CJK", "/v1/memory/remember", _remember(cjk)),
    Case("capture: 200,000 chars, 16 KiB of metadata", "/v1/sources/content", _capture, 202),
    Case(
        "list: a page of 1 MiB",
        "/v1/memory/entries/list",
        lambda rng, n: {"scope_id": LARGE_SCOPE, "limit": 1000},
    ),
    Case(
        "changes: 1,000 revisions",
        "/v1/memory/changes",
        lambda rng, n: {"scope_id": SCOPE, "since_revision": 0, "limit": 1000},
    ),
    Case(
        "MCP search_memory: 8,192 chars",
        "/mcp",
        _mcp("search_memory", lambda rng: {"scope_id": SCOPE, "query": words(rng)}),
    ),
    Case(
        "MCP list_memory_entries: 1 MiB",
        "/mcp",
        _mcp("list_memory_entries", lambda rng: {"scope_id": LARGE_SCOPE}),
    ),
    Case(
        "MCP remember_memory: 8,192 bytes",
        "/mcp",
        _mcp(
            "remember_memory",
            lambda rng: {"scope_id": "bench:cost-writes", "kind": "note", "text": words(rng)},
        ),
    ),
]


def post(host: str, port: int, path: str, body: dict) -> tuple[int, bytes, float]:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    started = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=120)
    try:
        connection.request("POST", path, data, headers)
        response = connection.getresponse()
        payload = response.read()
    finally:
        connection.close()
    return response.status, payload, time.perf_counter() - started


def _answered(case: Case, status: int, payload: bytes) -> bool:
    if status != case.status:
        return False
    if case.path == "/mcp":
        try:
            return json.loads(payload)["result"].get("isError") is False
        except (ValueError, KeyError, AttributeError):
            return False
    return True


def measure(server: served.ServerProcess, case: Case, repeat: int, seed: int) -> dict:
    rng = random.Random(f"{case.name}:{seed}")
    ordinary = served.load_prompts(served.PROMPTS)
    bodies = []
    for n in range(repeat):
        body = case.body(rng, n)
        if not body:  # the ordinary prompt: the committed ones, in turn
            body = {"scope_id": SCOPE, "query": ordinary[n % len(ordinary)], "max_bytes": 8000}
        bodies.append(body)
    post(server.host, server.port, case.path, case.body(rng, repeat) or bodies[0])  # warm
    latencies, failures = [], []
    cpu = served.cpu_seconds(server.pid)
    for body in bodies:
        status, payload, seconds = post(server.host, server.port, case.path, body)
        latencies.append(seconds)
        if not _answered(case, status, payload):
            failures.append(f"{status}: {payload[:200]!r}")
    cpu = served.cpu_seconds(server.pid) - cpu
    return {
        "case": case.name,
        "cpu_ms": round(cpu / repeat * 1000, 1),
        "median_ms": round(statistics.median(latencies) * 1000, 1),
        "max_ms": round(max(latencies) * 1000, 1),
        "failures": failures[:3],
    }


def run(args: argparse.Namespace, embeddings: str) -> dict:
    scratch = None if args.data_dir else Path(tempfile.mkdtemp(prefix="pc-cost-bench-"))
    home = (args.data_dir or scratch) / embeddings
    store = served.open_store(args.engine, home, oceanbase_url=args.oceanbase_url)
    store.extra_env["POWERCONTEXT_EMBEDDINGS"] = embeddings
    try:
        done = served.manage(store, "migrate", "--verbosity", "0")
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        started = time.perf_counter()
        seed = SEED.format(entries=args.entries, scope=SCOPE, large=LARGE_SCOPE)
        done = served.manage(store, "shell", "-c", seed, timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        seeding = time.perf_counter() - started
        with served.ServerProcess(store) as server:
            served.wait_idle(server.pid)
            cases = [measure(server, case, args.repeat, args.seed) for case in CASES]
    finally:
        store.close(drop=True)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    over = [c["case"] for c in cases if embeddings == "off" and c["cpu_ms"] > args.budget_ms]
    failed = [c["case"] for c in cases if c["failures"]]
    return {
        "engine": args.engine,
        "embeddings": embeddings,
        "repo": str(served.REPO_ROOT),
        "entries": args.entries,
        "repeat": args.repeat,
        "seed_seconds": round(seeding, 1),
        "cases": cases,
        "over_budget": over,
        "failed": failed,
        "passed": not over and not failed,
    }


def render(result: dict) -> str:
    rows = [
        (
            case["case"],
            f"{case['cpu_ms']:.0f}",
            f"{case['median_ms']:.0f}",
            f"{case['max_ms']:.0f}",
            "; ".join(case["failures"]) or "",
        )
        for case in result["cases"]
    ]
    title = (
        f"{result['engine']}, model {result['embeddings']}, {result['entries']:,} entries, "
        f"{result['repeat']} requests a case, {result['repo']}"
    )
    table = served.markdown_table(
        ("case", "server CPU ms a request", "median ms", "max ms", "failures"), rows
    )
    return f"{title}\n\n{table}\n\npassed: {result['passed']}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=["sqlite", "oceanbase"], default="sqlite")
    parser.add_argument("--oceanbase-url", help="an OceanBase server to use (else seekdb)")
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--repo", type=Path, help="serve this checkout instead")
    parser.add_argument("--embeddings", choices=["off", "on", "both"], default="both")
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--budget-ms", type=float, default=100.0, help="CPU ms, model off")
    parser.add_argument("--ci", action="store_true", help="300 entries, 3 requests a case")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.ci:
        args.entries, args.repeat = 300, 3
        if args.embeddings == "both":
            args.embeddings = "off"
    if args.repo is not None:
        served.REPO_ROOT = args.repo.resolve()
    configs = ["off", "on"] if args.embeddings == "both" else [args.embeddings]
    return served.report_runs(configs, lambda embeddings: run(args, embeddings), render, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
