"""Prepare in this checkout against another checkout, side by side, call by call: what a
change costs a pack, by the kind of prompt (the relevance decision against the tree before
it: a wrapped 8 KB prompt's prepare should cost no more than it did there).

    git worktree add /tmp/before ed3abd7
    (cd /tmp/before && python3 -m venv .venv && .venv/bin/pip install -r requirements.txt)
    .venv/bin/python bench/prepare_versus.py --before /tmp/before \\
        --files '<dev>/coding-memory-dev/*.json'
    .venv/bin/python bench/prepare_versus.py --files F --ci   # against itself, 5 prompts

Each checkout is served as a user serves it (``manage.py serve``, its own virtual
environment: ``--before-python``, by default ``<before>/.venv/bin/python``) in a fresh
POWERCONTEXT_HOME. Every entry of each project file (``codingmemory.py``'s form) is
remembered into a scope of its own on both; then each prompt is asked once of each server
(``POST /v1/context/prepare``, max_bytes 8000), the order swapped every call so neither
always goes first on a warm CPU, and never twice: a server may answer a prompt it has seen
from its caches, and a hook rarely sends the same prompt again. The prompts, by kind:

- **short**: the projects' one-line prompts (under 300 characters);
- **wrapped**: their ``boilerplate`` prompts (a question inside logs, diffs, instructions);
- **wrapped 8 KB**: each wrapped prompt followed by the project's next ones, cut at 8,000
  bytes (a long pasted context).

Each checkout is served by ``--servers`` processes (2 by default), started in turn
(other, this, this, other, ...), and each prompt goes to every one of them, the order
rotated and reversed so that each goes first as often. Two processes of the same checkout
answer at different speeds: on the same data, one keep-alive client, p50 of 120 calls,
prepare differed by up to 4 % and search by up to 12 % between four processes of one
tree (hash seeds and memory layout differ per process; with PYTHONHASHSEED fixed, 4 %).
One process a side cannot tell 1.05x from 1.1x, so the table also gives, per checkout,
the spread of its own processes' p50 (slowest / fastest): a ratio within it is noise.

A few prompts that are not measured warm each server first (its model loaded, its
statements prepared). Prints one table: p50 of each kind on both (every process of a
side pooled), the ratio (this checkout / the other: under 1 is faster) and the spreads.
Both sides come from the same run, so a loaded machine inflates both; the ratios are what
to compare across runs.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.served import die_with_parent, stop  # noqa: E402
from bench.versus_reference import free_port, wait_live  # noqa: E402

LONG_BYTES = 8000
SHORT_CHARS = 300
WARM_PROMPTS = 3


def serve(root: Path, python: str, home: Path, port: int) -> subprocess.Popen:
    """``manage.py serve`` of the checkout ``root`` on ``port``, in ``home``."""
    env = {**os.environ, "POWERCONTEXT_HOME": str(home)}
    # SQLite in ``home``, with the checkout's own settings, as a user serves it.
    env.pop("POWERCONTEXT_DATABASE_URL", None)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    log = open(home / "server.log", "w")  # the child keeps its own copy
    with log:
        return subprocess.Popen(
            [python, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,  # no server outlives a killed benchmark
        )


def rotation(servers: int, at: int) -> list[int]:
    """The order in which the ``servers`` answer the ``at``-th prompt: each rotation of
    them, then each reversed, so that every server goes first, and follows each other,
    as often as any."""
    start = at % servers
    order = [*range(start, servers), *range(start)]
    return order[::-1] if (at // servers) % 2 else order


@contextmanager
def served(root: Path, python: str) -> Iterator[int]:
    """The port of ``root``'s server, live; stopped on exit."""
    with tempfile.TemporaryDirectory(prefix="prepare-versus-") as home:
        port = free_port()
        process = serve(root, python, Path(home), port)
        try:
            wait_live(port, process, Path(home) / "server.log", f"the server of {root}")
            yield port
        finally:
            stop(process)


def post(port: int, path: str, body: dict) -> float:
    """Milliseconds to answer ``body``; fails on anything but 2xx."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()
    return (time.perf_counter() - started) * 1000


def prompts_of(project: dict, scope: str, limit: int | None) -> dict[str, list[tuple[str, str]]]:
    """The project's prompts by kind (the module's docstring), ``limit`` of each."""
    asked = [prompt["prompt"] for prompt in project["prompts"]]
    wrapped = [p["prompt"] for p in project["prompts"] if p.get("type") == "boilerplate"]
    long = []
    for at, prompt in enumerate(wrapped):
        text, following = prompt, at
        while len(text.encode()) < LONG_BYTES and len(wrapped) > 1:
            following = (following + 1) % len(wrapped)
            text += "\n\n" + wrapped[following]
        long.append(text.encode()[:LONG_BYTES].decode("utf-8", "ignore"))
    kinds = {
        "short": [p for p in asked if "\n" not in p and len(p) < SHORT_CHARS],
        "wrapped": wrapped,
        "wrapped 8 KB": long,
    }
    return {kind: [(scope, p) for p in found[:limit]] for kind, found in kinds.items()}


def measure(args: argparse.Namespace, ports: list[tuple[str, int]]) -> dict[str, list[list[float]]]:
    """Each kind's milliseconds, per server (in the order of ``ports``: (side, port))."""
    kinds: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(glob.glob(args.files)):
        project = json.loads(Path(path).read_text(encoding="utf-8"))
        scope = f"versus-{project['project']}"
        for entry in project["entries"]:
            body = {"scope_id": scope, "kind": entry["kind"], "text": entry["text"]}
            for _, port in ports:
                post(port, "/v1/memory/remember", body)
        for kind, found in prompts_of(project, scope, args.limit).items():
            kinds.setdefault(kind, []).extend(found)
    if not kinds:
        raise SystemExit(f"--files {args.files}: no project")
    # Warm each server on prompts of its own making, the words of some backwards: they
    # share no sentence (a segment's embedding is kept) with a prompt measured after.
    for scope, prompt in [*kinds["short"][:WARM_PROMPTS], *kinds["wrapped"][:WARM_PROMPTS]]:
        backwards = " ".join(reversed(prompt.split()))
        for _, port in ports:
            post(port, "/v1/context/prepare", {"scope_id": scope, "query": backwards})
    times: dict[str, list[list[float]]] = {}
    for kind, found in kinds.items():
        times[kind] = [[] for _ in ports]
        for at, (scope, prompt) in enumerate(found):
            body = {"scope_id": scope, "query": prompt, "max_bytes": 8000}
            for server in rotation(len(ports), at):
                times[kind][server].append(post(ports[server][1], "/v1/context/prepare", body))
    return times


def spread(per_server: list[list[float]]) -> float:
    """The slowest of these servers' p50 over the fastest's (1.0 for one server)."""
    medians = [statistics.median(times) for times in per_server]
    return max(medians) / min(medians)


def render(args: argparse.Namespace, sides: list[str], times: dict[str, list[list[float]]]) -> str:
    """The table: per kind, each side's p50 over all its servers, the ratio, and the
    spread of each side's own servers."""
    servers = len(sides) // 2
    lines = [
        f"# prepare p50, {args.before_label} against this checkout, {servers} server(s) "
        "each; every prompt asked once of every server",
        "",
        f"| prompts | n | {args.before_label} | this checkout | ratio "
        "| spread of its servers: other / this |",
        "|---|---|---|---|---|---|",
    ]
    for kind, per_server in times.items():
        of = {
            side: [times for at, times in enumerate(per_server) if sides[at] == side]
            for side in ("before", "after")
        }
        if not of["before"][0]:
            lines.append(f"| {kind} | 0 | - | - | - | - |")
            continue
        before, after = (
            statistics.median([value for times in of[side] for value in times])
            for side in ("before", "after")
        )
        lines.append(
            f"| {kind} | {len(of['before'][0])} | {before:.1f} ms | {after:.1f} ms "
            f"| {after / before:.2f}x | {spread(of['before']):.2f}x / {spread(of['after']):.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="the other checkout (default: this one)")
    parser.add_argument("--before-python", help="its Python (default: <before>/.venv/bin/python)")
    parser.add_argument("--files", required=True, help="coding-memory project files (a glob)")
    parser.add_argument("--limit", type=int, help="prompts of each kind per project")
    parser.add_argument(
        "--servers", type=int, default=2, help="processes serving each checkout (default 2)"
    )
    parser.add_argument("--ci", action="store_true", help="against itself, 5 prompts a kind")
    args = parser.parse_args(argv)
    if args.servers < 1:
        parser.error("--servers must be at least 1")
    if args.ci:
        args.limit = args.limit or 5
    before = (args.before or ROOT).resolve()
    python = args.before_python or str(before / ".venv" / "bin" / "python")
    if not Path(python).exists():
        if args.before_python:
            raise SystemExit(f"--before-python {python}: no such file")
        # No environment of its own (this checkout in CI): served by this one's Python.
        print(f"# {before} has no .venv: served with {sys.executable}", flush=True)
        python = sys.executable
    args.before_label = "this checkout again" if before == ROOT else str(before)
    # Started in turn, other, this, this, other, ...: neither side always starts first.
    sides = [
        side
        for pair in range(args.servers)
        for side in (("before", "after") if pair % 2 == 0 else ("after", "before"))
    ]
    with ExitStack() as stack:
        ports = [
            (
                side,
                stack.enter_context(
                    served(before, python) if side == "before" else served(ROOT, sys.executable)
                ),
            )
            for side in sides
        ]
        print(render(args, sides, measure(args, ports)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
