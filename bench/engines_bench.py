"""Engines benchmark: remember and prepare latency on OceanBase seekdb beside SQLite.

    .venv/bin/python bench/engines_bench.py          # 10,000 entries, 300 remembers, 240 prepares
    .venv/bin/python bench/engines_bench.py --ci     # 300 entries, 30 remembers, 30 prepares

One run, both engines, the same machine:

1. starts an embedded seekdb (``pylibseekdb``, through tests/oceanbase/seekdb.py) in the
   run's work directory and creates a fresh database on it (utf8mb4, utf8mb4_bin);
2. seeds ``--entries`` coding-agent memories (bench/corpus.py, the same texts in the same
   order on both) into one scope of a fresh SQLite data directory, then of the seekdb
   database. Seeding goes through the Memory services in a worker process per engine
   (``memory_remember``, one transaction each: the server's own write path minus HTTP),
   which the output says, with its rate;
3. starts a real ``manage.py serve`` (127.0.0.1, port 0, default threads) on each and,
   with both servers up, sends every request to both, alternating which engine goes first,
   so a change in the machine's load falls on both alike:

   - prepare: ``POST /v1/context/prepare`` over the committed realistic prompts
     (bench/prompts/prepare_prompts.json, else bench/queries/search_queries.txt), cycled
     to ``--requests`` timed requests after one untimed warm-up pass;
   - remember: ``--samples`` unique remembers (the corpus texts after the seeded ones)
     through ``POST /v1/memory/remember``, after the prepares (so every pack is built over
     exactly ``--entries`` entries);

4. prints one Markdown table: p50/p95/p99 of each with the ratio OceanBase / SQLite, the
   share of ``ready`` packs on each engine, and whether the two engines' packs cite the
   same entries for the same prompt (entry ids differ by engine, so citations are mapped
   back to corpus texts; scores differ by engine, so this is an overlap, not an equality).

Nothing is enforced: the figures are measurements. The work directory (SQLite data,
seekdb data, server logs) is deleted at the end unless ``--keep``; seekdb and both
servers are stopped however the run ends (they also die with this process).
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.corpus import memories  # noqa: E402
from bench.locomo import pack_citations  # noqa: E402
from bench.served import (  # noqa: E402
    PROMPTS,
    QUERIES,
    Client,
    ServerProcess,
    Store,
    die_with_parent,
    load_queries,
    markdown_table,
    open_store,
    percentile,
)
from bench.served import load_prompts as load_prompt_list  # noqa: E402

SCOPE = "bench:engines"
MAX_BYTES = 8000
ENGINES = ("sqlite", "oceanbase")
LABELS = {"sqlite": "SQLite", "oceanbase": "OceanBase (seekdb)"}


# --- seeding (a worker process per engine) ---------------------------------------------


def seed_worker(entries: int, seed: int, out: Path) -> int:
    """Migrate, then remember the first ``entries`` corpus texts through the services.

    Runs in its own process with the engine's environment (Django reads the database from
    it once). Writes {"seconds": ..., "ids": {entry_id: corpus index}} to ``out``.
    """
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from memory.services import memory_remember

    call_command("migrate", interactive=False, verbosity=0)
    ids: dict[str, int] = {}
    stream = memories(seed)
    started = time.perf_counter()
    for index in range(entries):
        kind, text = next(stream)
        result = memory_remember(scope_id=SCOPE, kind=kind, text=text)
        if result.entry is None:
            raise RuntimeError(f"corpus text {index} was a no-op: the scope was not fresh")
        ids[result.entry.citation.entry_id] = index
        if index and index % 2000 == 0:
            print(f"#   {index:,} ({time.perf_counter() - started:.0f} s)", flush=True)
    seconds = time.perf_counter() - started
    connections.close_all()
    out.write_text(json.dumps({"seconds": seconds, "ids": ids}), encoding="utf-8")
    return 0


def seed(store: Store, entries: int, seed_value: int, out: Path) -> tuple[float, dict]:
    command = [sys.executable, str(Path(__file__).resolve()), "--seed-worker", str(out)]
    command += ["--entries", str(entries), "--seed", str(seed_value)]
    completed = subprocess.run(
        command, cwd=REPO_ROOT, env=store.env(), preexec_fn=die_with_parent, check=False
    )
    if completed.returncode != 0:
        raise RuntimeError(f"seeding failed with exit code {completed.returncode}")
    result = json.loads(out.read_text(encoding="utf-8"))
    return result["seconds"], {key: int(value) for key, value in result["ids"].items()}


# --- the real servers ------------------------------------------------------------------


def post(clients: dict[str, Client], engine: str, path: str, body: dict) -> tuple[dict, float]:
    """The decoded answer and the wall time of the round trip, in milliseconds."""
    try:
        payload, seconds = clients[engine].timed(path, body)
    except RuntimeError as error:
        raise RuntimeError(f"{engine} {error}") from error
    return payload, seconds * 1000


# --- measuring -------------------------------------------------------------------------


@dataclass
class Measures:
    seed_seconds: float = 0.0
    ids: dict[str, int] = field(default_factory=dict)  # entry_id -> corpus index
    remember_ms: list[float] = field(default_factory=list)
    prepare_ms: list[float] = field(default_factory=list)
    ready: int = 0
    cited: dict[int, frozenset[int]] = field(default_factory=dict)  # prompt -> indexes


def load_prompts(path: Path | None) -> tuple[list[str], Path]:
    if path is None:
        path = PROMPTS if PROMPTS.exists() else QUERIES
    return (load_prompt_list(path) if path.suffix == ".json" else load_queries(path)), path


def both(turn: int) -> list[str]:
    """The engines in the order they are asked on this turn: alternating who goes first."""
    return list(ENGINES) if turn % 2 == 0 else list(reversed(ENGINES))


def measure_prepare(
    clients: dict[str, Client], measures: dict[str, Measures], prompts: list[str], requests: int
) -> None:
    def prepare(engine: str, prompt: str) -> tuple[dict, float]:
        body = {"scope_id": SCOPE, "query": prompt, "max_bytes": MAX_BYTES}
        return post(clients, engine, "/v1/context/prepare", body)

    for turn, prompt in enumerate(prompts[:requests]):  # warm caches and connections
        for engine in both(turn):
            prepare(engine, prompt)
    for turn in range(requests):
        number = turn % len(prompts)
        for engine in both(turn):
            payload, elapsed = prepare(engine, prompts[number])
            taken = measures[engine]
            taken.prepare_ms.append(elapsed)
            taken.ready += payload["status"] == "ready"
            ids = {entry_id for entry_id, _ in pack_citations(payload["content"])}
            unknown = ids - taken.ids.keys()
            if unknown:
                raise RuntimeError(f"{engine} cited entries it was not seeded with: {unknown}")
            cited = frozenset(taken.ids[entry_id] for entry_id in ids)
            if taken.cited.setdefault(number, cited) != cited:
                raise RuntimeError(f"{engine} gave two packs for prompt {number} at one state")


def measure_remember(
    clients: dict[str, Client], measures: dict[str, Measures], texts: list[tuple[str, str]]
) -> None:
    for turn, (kind, text) in enumerate(texts):
        for engine in both(turn):
            body = {"scope_id": SCOPE, "kind": kind, "text": text}
            payload, elapsed = post(clients, engine, "/v1/memory/remember", body)
            if payload["entry"] is None:
                raise RuntimeError(f"{engine}: a unique remember was a no-op")
            measures[engine].remember_ms.append(elapsed)


# --- the table -------------------------------------------------------------------------


def overlap(measures: dict[str, Measures]) -> tuple[float, int, int, int]:
    """(mean Jaccard overlap over prompts where a pack cites anything, prompts with the
    very same cited entries, prompts where either cites anything, prompts)."""
    sqlite, oceanbase = measures["sqlite"].cited, measures["oceanbase"].cited
    shares, identical, either = [], 0, 0
    for number, left in sqlite.items():
        right = oceanbase[number]
        identical += left == right
        if left or right:
            either += 1
            shares.append(len(left & right) / len(left | right))
    mean = 100 * statistics.fmean(shares) if shares else 100.0
    return mean, identical, either, len(sqlite)


def table(measures: dict[str, Measures]) -> list[tuple[str, str, str, str]]:
    sqlite, oceanbase = measures["sqlite"], measures["oceanbase"]
    rows = []
    for name, attribute in (("remember", "remember_ms"), ("prepare", "prepare_ms")):
        for label, share in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99)):
            low = percentile(getattr(sqlite, attribute), share)
            high = percentile(getattr(oceanbase, attribute), share)
            n = len(getattr(sqlite, attribute))
            rows.append(
                (f"{name} {label} ms (n={n})", f"{low:.2f}", f"{high:.2f}", f"{high / low:.2f}x")
            )
    requests = len(sqlite.prepare_ms)
    ready = [100 * taken.ready / requests for taken in (sqlite, oceanbase)]
    rows.append(
        (
            "packs ready",
            f"{ready[0]:.1f} %",
            f"{ready[1]:.1f} %",
            f"{ready[1] / ready[0]:.2f}x" if ready[0] else "-",
        )
    )
    mean_cited = [
        statistics.fmean(len(cited) for cited in taken.cited.values())
        for taken in (sqlite, oceanbase)
    ]
    share, identical, either, prompts = overlap(measures)
    rows.append(
        (
            "entries cited per pack (mean)",
            f"{mean_cited[0]:.1f}",
            f"{mean_cited[1]:.1f}",
            f"{mean_cited[1] / mean_cited[0]:.2f}x" if mean_cited[0] else "-",
        )
    )
    rows.append(
        (
            "same entries cited, same prompt",
            f"{prompts} prompts",
            f"{identical} identical",
            f"{share:.1f} % overlap (of {either})",
        )
    )
    return rows


def print_table(rows: list[tuple[str, str, str, str]]) -> None:
    header = ("measure", LABELS["sqlite"], LABELS["oceanbase"], "OceanBase / SQLite")
    print(markdown_table(header, rows))


# --- the run ---------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    prompts, prompts_path = load_prompts(args.prompts)
    if args.work_dir:
        work = Path(args.work_dir).resolve()
        if work.exists() and any(work.iterdir()):
            raise SystemExit(f"{work} is not empty: give a fresh directory")
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="powercontext-engines-bench-"))
    measures = {engine: Measures() for engine in ENGINES}
    stores: dict[str, Store] = {}
    servers: dict[str, ServerProcess] = {}
    clients: dict[str, Client] = {}
    started = time.perf_counter()
    print(
        f"# engines bench: {args.entries:,} entries, {args.samples} remembers, "
        f"{args.requests} prepares over {len(prompts)} prompts ({prompts_path.name}); "
        f"work dir {work}",
        flush=True,
    )
    try:
        for engine in ENGINES:  # OceanBase: a seekdb of its own, under the work directory
            stores[engine] = open_store(engine, work / engine)
        for engine in ENGINES:
            print(f"# seeding {LABELS[engine]} through the services ...", flush=True)
            seconds, ids = seed(stores[engine], args.entries, args.seed, work / f"{engine}.json")
            measures[engine].seed_seconds, measures[engine].ids = seconds, ids
        for engine in ENGINES:
            servers[engine] = ServerProcess(stores[engine])
            servers[engine].start()
            clients[engine] = servers[engine].client(timeout=60, retry_stale=True)
        print("# both servers up; measuring prepare, then remember", flush=True)
        measure_prepare(clients, measures, prompts, args.requests)
        stream = memories(args.seed)
        for _ in range(args.entries):
            next(stream)
        measure_remember(clients, measures, [next(stream) for _ in range(args.samples)])
    finally:
        for client in clients.values():
            client.close()
        for server in servers.values():  # before their seekdb
            server.stop()
        for store in stores.values():
            store.close(drop=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    print()
    print(
        f"PowerContext engines benchmark: {args.entries:,} entries per engine, one scope; "
        f"same machine, same run, requests alternating between the engines"
    )
    for engine in ENGINES:
        seconds = measures[engine].seed_seconds
        print(
            f"- seeding {LABELS[engine]}: {args.entries:,} entries through the services "
            f"in-process (memory_remember, one transaction each) in {seconds:.1f} s "
            f"({args.entries / max(seconds, 1e-9):,.0f}/s)"
        )
    print(
        f"- prepare: POST /v1/context/prepare (max_bytes {MAX_BYTES}) over {len(prompts)} "
        f"prompts from {prompts_path.relative_to(REPO_ROOT)}, {args.requests} timed requests "
        f"per engine after one warm-up pass; remember: {args.samples} unique HTTP remembers "
        f"per engine, from {args.entries:,} entries on"
    )
    print(f"- wall time {time.perf_counter() - started:.0f} s" + (f"; kept {work}" * args.keep))
    print()
    print_table(table(measures))
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000, help="seeded per engine")
    parser.add_argument("--samples", type=int, default=300, help="remembers timed per engine")
    parser.add_argument("--requests", type=int, default=240, help="prepares timed per engine")
    parser.add_argument(
        "--prompts",
        type=Path,
        help="a JSON {'prompts': [...]} or a text file of one query a line "
        "(default: bench/prompts/prepare_prompts.json, else bench/queries/search_queries.txt)",
    )
    parser.add_argument("--seed", type=int, default=28, help="corpus seed")
    parser.add_argument("--work-dir", help="a fresh directory (default: a new temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--ci", action="store_true", help="300 entries, 30 remembers, 30 prepares (a smoke run)"
    )
    parser.add_argument("--seed-worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ci:
        args.entries, args.samples, args.requests = 300, 30, 30
    if args.entries < 1 or args.samples < 1 or args.requests < 1:
        parser.error("--entries, --samples and --requests must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.seed_worker:
        return seed_worker(args.entries, args.seed, args.seed_worker)

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # so the finally blocks stop seekdb and the servers

    signal.signal(signal.SIGTERM, terminate)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
