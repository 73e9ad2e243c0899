"""This server against the reference's current release, side by side, call by call.

    .venv/bin/python bench/versus_reference.py                  # installs the reference once
    .venv/bin/python bench/versus_reference.py --entries 300 --samples 30
    .venv/bin/python bench/versus_reference.py --reference-url http://127.0.0.1:PORT
    .venv/bin/python bench/versus_reference.py --ci    # against bench/reference_stand_in.py

The reference is PyPI ``powercontext`` 1.4.1, a different product that shares the name.
It is installed into a virtual environment of its own (``--reference-venv``, by default
~/.cache/powercontext/reference-1.4.1; created with ``python -m venv`` and ``pip install
"powercontext[cli,server]==1.4.1"`` when missing, never into this project's environment),
configured with ``powercontext config init --template -o .env`` (it asks before writing
even with ``--template``: answered ``y``) and started with ``powercontext server run
--env-file .env --port P`` in a fresh POWERCONTEXT_HOME. Its model features need an
inference API and stay off, so it answers from full-text search; this server runs as
served (``manage.py serve``, the local semantic channel on).

The workload (bench/workload.py), each call sent to one server then the other, the order
swapped every call so neither always goes first on a warm CPU:

1. remember ``--entries`` entries of bench/corpus.py (seed 1234) into one scope (the
   reference's made with ``POST /v1/scopes``); p50 of the first and the last 100;
2. ``--samples`` prepares (the committed prompts, max_bytes 8000): p50 and p95;
3. ``--samples`` searches (the committed queries, limit 16): p50;
4. each server's resident memory (the process and its children) at the end, and 2 s later
   (this server gives back what it freed once it rests: server/memory_release.py);
5. the floor: ``GET /health/live`` and a prepare on an empty scope, ``--samples`` each.

Prints one table with the ratio reference / this server (above 1: this server is faster),
and for this server how far each operation is above its floor (the empty-scope prepare).
Every figure comes from the same run, so a loaded machine inflates both sides alike; the
ratios are what to compare across runs.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import served, workload

REFERENCE_VERSION = "1.4.1"
DEFAULT_VENV = Path.home() / ".cache" / "powercontext" / f"reference-{REFERENCE_VERSION}"
STAND_IN = Path(__file__).resolve().parent / "reference_stand_in.py"
START_TIMEOUT = 180
EDGE = 100  # the first and last this many remembers
AT_REST_SECONDS = 2.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def install_reference(venv: Path) -> Path:
    """The reference's ``powercontext`` command in ``venv``, installed there if missing."""
    command = venv / "bin" / "powercontext"
    if command.exists():
        return command
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            f"powercontext[cli,server]=={REFERENCE_VERSION}",
        ],
        check=True,
    )
    return command


def wait_live(port: int, process: subprocess.Popen, log: Path, what: str = "the reference") -> None:
    """Return once ``process`` (``what``, logging to ``log``) answers ``/health/live`` on
    ``port``; RuntimeError when it exits or does not answer in START_TIMEOUT seconds."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited ({process.returncode}); see {log}")
        with contextlib.suppress(OSError, http.client.HTTPException):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/health/live")
            if connection.getresponse().status == 200:
                connection.close()
                return
        time.sleep(0.25)
    process.kill()
    raise RuntimeError(f"{what} did not answer /health/live in {START_TIMEOUT}s")


@contextlib.contextmanager
def reference_server(args: argparse.Namespace, home: Path) -> Iterator[tuple[str, int | None]]:
    """(base URL, pid or None) of the server to compare with, stopped on exit."""
    if args.reference_url:
        yield args.reference_url, None
        return
    port = free_port()
    home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERCONTEXT_", "DJANGO_"))}
    env.update(POWERCONTEXT_HOME=str(home / "data"), PYTHONUNBUFFERED="1")
    if args.ci:
        command = [sys.executable, str(STAND_IN), "--port", str(port)]
    else:
        powercontext = install_reference(args.reference_venv)
        subprocess.run(
            [str(powercontext), "config", "init", "--template", "-o", ".env"],
            cwd=home,
            env=env,
            input="y\n",
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        command = [str(powercontext), "server", "run", "--env-file", ".env", "--port", str(port)]
    log = home / "server.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            command,
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=served.die_with_parent,
        )
    try:
        wait_live(port, process, log)
        yield f"http://127.0.0.1:{port}", process.pid
    finally:
        served.stop(process, 30)


def rss_mib(pid: int | None) -> float | None:
    """Resident memory of ``pid`` and its children, MiB (None when unknown)."""
    if pid is None:
        return None
    total = sum(served.memory_of(p).get("VmRSS", 0) for p in [pid, *served.descendants(pid)])
    return total / 1024


def alternate(
    sides: list[workload.Ours | workload.Reference],
    count: int,
    call: Callable[[workload.Ours | workload.Reference, int], float],
) -> list[list[float]]:
    """``count`` calls on each side, one side then the other, the first side swapped each
    call; the seconds of each call, per side."""
    times: list[list[float]] = [[] for _ in sides]
    for index in range(count):
        order = range(len(sides)) if index % 2 == 0 else reversed(range(len(sides)))
        for side in order:
            times[side].append(call(sides[side], index))
    return times


def measure(args: argparse.Namespace, ours_url: str, ours_pid: int, ref_url: str, ref_pid):
    ours = workload.Ours(served.Client.for_url(ours_url))
    reference = workload.Reference(served.Client.for_url(ref_url))
    sides: list[workload.Ours | workload.Reference] = [reference, ours]
    for side in sides:
        side.create_scope(workload.SCOPE)
        side.create_scope(workload.EMPTY_SCOPE)
    texts = workload.entries(args.entries)
    remembered = alternate(sides, args.entries, lambda s, i: s.remember(workload.SCOPE, texts[i]))
    # Ours embeds in the background what a write left (none here, the channel being on);
    # wait until both servers are idle so the reads measure reads.
    for pid in (ours_pid, ref_pid):
        if pid is not None:
            served.wait_idle(pid, most=120)
    prompts, queries = workload.prompts(args.samples), workload.queries(args.samples)
    results: dict[str, list[list[float]]] = {
        "remember 1-100": [t[:EDGE] for t in remembered],
        f"remember last {EDGE}": [t[-EDGE:] for t in remembered],
        "prepare": alternate(
            sides, args.samples, lambda s, i: s.prepare(workload.SCOPE, prompts[i])
        ),
        "search": alternate(sides, args.samples, lambda s, i: s.search(workload.SCOPE, queries[i])),
        "floor: GET /health/live": alternate(sides, args.samples, lambda s, i: s.live()),
        "floor: prepare, empty scope": alternate(
            sides, args.samples, lambda s, i: s.prepare(workload.EMPTY_SCOPE, prompts[i])
        ),
    }
    memory = [rss_mib(ref_pid), rss_mib(ours_pid)]
    # And once both have rested: this server gives back what its last requests freed
    # after a second without one (server/memory_release.py).
    time.sleep(AT_REST_SECONDS)
    memory += [rss_mib(ref_pid), rss_mib(ours_pid)]
    return results, memory


def render(args: argparse.Namespace, results: dict, memory: list) -> str:
    floor_ours = served.percentile(results["floor: prepare, empty scope"][1], 0.5) * 1000
    lines = [
        f"{args.entries:,} entries, {args.samples} samples per read, alternating call by call"
        + (" (CI: against the stand-in, not the reference)" if args.ci else ""),
        "",
        "| p50 ms | reference 1.4.1 | this server | ratio | this server above its floor |",
        "|---|---|---|---|---|",
    ]

    def row(name: str, ref_ms: float, ours_ms: float, above: bool = True) -> None:
        ratio = f"{ref_ms / ours_ms:.2f}x" if ours_ms else "-"
        extra = f"{ours_ms - floor_ours:+.1f}" if above else ""
        lines.append(f"| {name} | {ref_ms:.1f} | {ours_ms:.1f} | {ratio} | {extra} |")

    for name, (ref_times, our_times) in results.items():
        ref_ms = served.percentile(ref_times, 0.5) * 1000
        ours_ms = served.percentile(our_times, 0.5) * 1000
        row(name, ref_ms, ours_ms, above=not name.startswith("floor"))
        if name == "prepare":
            row(
                "prepare (p95)",
                served.percentile(ref_times, 0.95) * 1000,
                served.percentile(our_times, 0.95) * 1000,
            )
    for name, (ref_mib, ours_mib) in (
        ("server RSS at the end (MB)", memory[:2]),
        (f"server RSS {AT_REST_SECONDS:g} s later (MB)", memory[2:]),
    ):
        shown = [f"{m:.0f}" if m is not None else "-" for m in (ref_mib, ours_mib)]
        ratio = f"{ref_mib / ours_mib:.2f}x" if ref_mib and ours_mib else "-"
        lines.append(f"| {name} | {shown[0]} | {shown[1]} | {ratio} | |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--reference-venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--reference-url", help="an already running reference server")
    parser.add_argument("--json", type=Path, help="the raw seconds, per operation and side")
    parser.add_argument(
        "--ci", action="store_true", help="200 entries, 10 samples, against the stand-in"
    )
    args = parser.parse_args()
    if args.ci:
        args.entries, args.samples = min(args.entries, 200), min(args.samples, 10)
    if args.entries < EDGE:
        parser.error(f"--entries must be at least {EDGE}")
    base = Path(tempfile.mkdtemp(prefix="pc-versus-"))
    try:
        store = served.open_store("sqlite", base / "ours")
        with (
            served.ServerProcess(store) as ours,
            reference_server(args, base / "reference") as (ref_url, ref_pid),
        ):
            served.wait_idle(ours.pid)
            results, memory = measure(args, ours.url, ours.pid, ref_url, ref_pid)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(render(args, results, memory))
    if args.json:
        args.json.write_text(json.dumps({"results": results, "rss_mib": memory}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
