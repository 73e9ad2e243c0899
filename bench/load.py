"""Load test: several client processes against the real served process, then a check
that no acknowledged write was lost and the database is consistent.

    .venv/bin/python bench/load.py --full     # SQLite at 50,000 entries, then OceanBase
                                              # seekdb at 5,000: 4 clients, 60 s each
    .venv/bin/python bench/load.py --ci       # 2 clients, 10 s, 2,000 entries (SQLite)
    .venv/bin/python bench/load.py --engine oceanbase --entries 5000 --duration 60

Per engine, on a fresh data directory (a fresh database on OceanBase: an embedded seekdb
started here, or the server given by ``--oceanbase-url``):

1. seed ``--entries`` memories of bench/corpus.py through the Memory services in a child
   process (not over HTTP; the output says so), after applying the migrations;
2. start ``manage.py serve`` on 127.0.0.1 (port 0) and sample its resident memory
   (/proc/<pid>/status: VmRSS, and VmHWM, the kernel's own peak) while it serves;
3. ``--clients`` processes, each with one keep-alive connection and no think time, mix
   prepare (80 %: whole coding-agent prompts from bench/prompts/prepare_prompts.json),
   remember (15 %: unique texts) and search (5 %: bench/queries/search_queries.txt)
   for ``--duration`` seconds or ``--max-requests`` requests, whichever comes first;
4. list every entry through /v1/memory/entries/list (cursor paging) and compare with what
   the clients recorded: every acknowledged remember present exactly once with its
   entry id, version and text; a remember that got no answer or an error present at most
   once; no other new entry; the entry count equal to seeded + acknowledged (+ the
   unacknowledged ones present);
5. stop the server (SIGTERM) and run ``manage.py check_integrity``.

Pass: every request answered 200 (so zero 5xx), zero lost or duplicated writes, integrity
check passed. The resident-memory goal (under 250 MiB for the server process, which is
the one worker, at 50,000 entries on SQLite) is reported beside it. Exits 1 on a failure.
Loopback only; bounded in time (duration, per-request timeout, a hard deadline for the
clients) and in count.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import re
import secrets
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.corpus import memories  # noqa: E402
from bench.served import (  # noqa: E402
    PROMPTS,
    QUERIES,
    Client,
    MemorySampler,
    ServerProcess,
    Unanswered,
    all_entries,
    descendants,
    django_task,
    load_prompts,
    load_queries,
    manage,
    markdown_table,
    memory_of,
    open_store,
    patient,
    percentile,
    report_runs,
)

SCOPE = "bench:load"
OPERATIONS = ("prepare", "remember", "search")
PATHS = {
    "prepare": "/v1/context/prepare",
    "remember": "/v1/memory/remember",
    "search": "/v1/memory/search",
}
RSS_GOAL_MIB = 250
# Seconds the clients get to start (spawned interpreters) before the clock starts.
START_DELAY = 3.0


@dataclass
class Config:
    engine: str
    entries: int
    duration: float
    clients: int
    max_requests: int
    mix: dict[str, float]
    threads: int = 4
    request_timeout: float = 30.0
    seed: int = 28
    data_dir: Path | None = None
    oceanbase_url: str | None = None


@dataclass
class ClientReport:
    """What one client process saw; written as JSON for the driver."""

    client: int
    latencies: dict[str, list[float]] = field(default_factory=dict)
    statuses: dict[str, dict[str, int]] = field(default_factory=dict)
    prepare_outcomes: dict[str, int] = field(default_factory=dict)
    unanswered: dict[str, int] = field(default_factory=dict)
    # (entry_id, entry_version_id, kind, text) of each acknowledged remember
    acknowledged: list[list[str]] = field(default_factory=list)
    # (kind, text, why) of each remember without a 200 answer naming an entry
    unacknowledged: list[list[str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    started: float = 0.0
    finished: float = 0.0


def client_main(spec: dict, out_path: str) -> None:
    """One load client (a process of its own): runs until the deadline or its request
    budget, then writes its ClientReport to ``out_path``."""
    rng = random.Random(spec["seed"])
    prompts, queries = spec["prompts"], spec["queries"]
    corpus = memories(spec["seed"])
    client = Client(spec["host"], spec["port"], timeout=spec["request_timeout"])
    report = ClientReport(client=spec["client"])
    statuses: dict[str, Counter] = {op: Counter() for op in OPERATIONS}
    outcomes: Counter = Counter()
    unanswered: Counter = Counter()
    latencies: dict[str, list[float]] = {op: [] for op in OPERATIONS}
    operations, weights = zip(*spec["mix"].items(), strict=True)
    while time.time() < spec["start_at"]:
        time.sleep(0.01)
    report.started = time.time()
    deadline = report.started + spec["duration"]
    sent = failures_in_a_row = 0
    while time.time() < deadline and sent < spec["max_requests"]:
        op = rng.choices(operations, weights)[0]
        if op == "prepare":
            body = {"scope_id": SCOPE, "query": rng.choice(prompts)[:8192], "max_bytes": 8000}
        elif op == "search":
            body = {"scope_id": SCOPE, "query": rng.choice(queries), "limit": 10}
        else:
            kind, text = next(corpus)
            # The tag makes every text unique across clients and runs, so "present
            # exactly once" can be checked by text as well as by entry id.
            text = f"{text} (load {spec['run']}.{spec['client']}.{sent})"
            body = {"scope_id": SCOPE, "kind": kind, "text": text}
        sent += 1
        try:
            status, decoded, elapsed = client.post(PATHS[op], body)
        except Unanswered as error:
            unanswered[op] += 1
            report.errors.append(f"{op}: no answer: {error}")
            if op == "remember":
                report.unacknowledged.append([body["kind"], body["text"], str(error)])
            failures_in_a_row += 1
            if failures_in_a_row >= 20:
                report.errors.append("20 requests in a row got no answer: stopped")
                break
            time.sleep(0.1)
            continue
        failures_in_a_row = 0
        statuses[op][str(status)] += 1
        latencies[op].append(elapsed)
        if status != 200:
            code = (decoded or {}).get("error", {}).get("code") if decoded else None
            report.errors.append(f"{op}: {status} {code}")
        if op == "prepare" and status == 200 and decoded:
            outcomes[str(decoded.get("status"))] += 1
        if op == "remember":
            entry = (decoded or {}).get("entry") if status == 200 else None
            if entry:
                citation = entry["citation"]
                report.acknowledged.append(
                    [
                        citation["entry_id"],
                        citation["entry_version_id"],
                        entry["kind"],
                        entry["text"],
                    ]
                )
            else:
                why = f"status {status}" if status != 200 else "answered as a no-op"
                report.unacknowledged.append([body["kind"], body["text"], why])
    report.finished = time.time()
    client.close()
    report.latencies = latencies
    report.statuses = {op: dict(counter) for op, counter in statuses.items()}
    report.prepare_outcomes = dict(outcomes)
    report.unanswered = dict(unanswered)
    Path(out_path).write_text(json.dumps(asdict(report)), encoding="utf-8")


def run_clients(config: Config, server: ServerProcess, workdir: Path, run: str) -> list[dict]:
    prompts, queries = load_prompts(PROMPTS), load_queries(QUERIES)
    context = multiprocessing.get_context("spawn")
    start_at = time.time() + START_DELAY
    per_client = max(1, config.max_requests // config.clients)
    processes = []
    for index in range(config.clients):
        spec = {
            "client": index,
            "seed": config.seed * 1000 + index + 1,
            "host": server.host,
            "port": server.port,
            "request_timeout": config.request_timeout,
            "start_at": start_at,
            "duration": config.duration,
            "max_requests": per_client,
            "mix": config.mix,
            "prompts": prompts,
            "queries": queries,
            "run": run,
        }
        out = workdir / f"client-{index}.json"
        process = context.Process(target=client_main, args=(spec, str(out)), daemon=True)
        process.start()
        processes.append((process, out))
    # Hard bound: the duration, one request timeout for the last request, and slack.
    hard_deadline = start_at + config.duration + config.request_timeout + 60
    reports = []
    for process, out in processes:
        process.join(max(hard_deadline - time.time(), 0.1))
        if process.is_alive():
            process.terminate()
            process.join(5)
        if out.exists():
            reports.append(json.loads(out.read_text(encoding="utf-8")))
        else:
            reports.append({"client": -1, "errors": [f"client exited with {process.exitcode}"]})
    return reports


def verify_writes(entries: list[dict], reports: list[dict], seeded: int, run: str) -> dict:
    """Compare the listed entries with the writes the clients recorded."""
    tag = f"(load {run}."
    by_text: dict[str, list[dict]] = {}
    for entry in entries:
        by_text.setdefault(entry["text"], []).append(entry)
    by_id = {entry["citation"]["entry_id"]: entry for entry in entries}
    acknowledged = [item for report in reports for item in report.get("acknowledged", [])]
    unacknowledged = [item for report in reports for item in report.get("unacknowledged", [])]
    problems: list[str] = []
    lost = duplicated = mismatched = 0
    for entry_id, version_id, kind, text in acknowledged:
        entry = by_id.get(entry_id)
        copies = len(by_text.get(text, []))
        if entry is None:
            lost += 1
            problems.append(f"acknowledged {entry_id} is missing")
        elif (
            entry["citation"]["entry_version_id"],
            entry["kind"],
            entry["text"],
            entry["state"],
        ) != (version_id, kind, text, "active"):
            mismatched += 1
            problems.append(f"acknowledged {entry_id} differs from what was acknowledged")
        if copies > 1:
            duplicated += 1
            problems.append(f"acknowledged text of {entry_id} is present {copies} times")
    unacknowledged_present = 0
    for _, text, _ in unacknowledged:
        copies = len(by_text.get(text, []))
        unacknowledged_present += copies
        if copies > 1:
            duplicated += 1
            problems.append(f"an unacknowledged text is present {copies} times")
    from_load = sum(1 for entry in entries if tag in entry["text"])
    expected_from_load = len(acknowledged) + unacknowledged_present
    if from_load != expected_from_load:
        problems.append(f"{from_load} load entries listed, {expected_from_load} expected")
    expected_total = seeded + expected_from_load
    if len(entries) != expected_total:
        problems.append(f"{len(entries)} entries listed, {expected_total} expected")
    return {
        "listed": len(entries),
        "acknowledged": len(acknowledged),
        "unacknowledged": len(unacknowledged),
        "unacknowledged_present": unacknowledged_present,
        "lost": lost,
        "duplicated": duplicated,
        "mismatched": mismatched,
        "problems": problems[:50],
        "ok": not problems,
    }


def seekdb_peak_kib(holder_pid: int | None) -> int:
    """Peak resident memory of the embedded seekdb (its holder and its children)."""
    if holder_pid is None:
        return 0
    return max(
        (memory_of(pid).get("VmHWM", 0) for pid in [holder_pid, *descendants(holder_pid)]),
        default=0,
    )


def run_load(config: Config) -> dict:
    """One engine's load run; the result as a dict (also what --json writes)."""
    base = config.data_dir or Path(tempfile.mkdtemp(prefix="powercontext-load-"))
    home = base / config.engine
    run = secrets.token_hex(4)
    result: dict = {"config": {**asdict(config), "data_dir": str(home)}, "run": run}
    store = open_store(config.engine, home, oceanbase_url=config.oceanbase_url)
    server = ServerProcess(store, threads=config.threads)
    try:
        # Set-up, not measured: OceanBase's statement timeout must not fail the seeding.
        seeding = django_task(
            patient(store),
            "seed",
            "--scope",
            SCOPE,
            "--entries",
            str(config.entries),
            "--seed",
            "28",
        )
        result["seeding"] = seeding
        server.start()
        sampler = MemorySampler(server.pid).start()
        result["server_rss_start_kib"] = sampler.first_kib
        reports = run_clients(config, server, home, run)
        result["server_peak_rss_kib"] = sampler.stop()
        result["seekdb_peak_rss_kib"] = seekdb_peak_kib(store.seekdb_pid)
        result["server_alive_after_load"] = server.process.poll() is None
        verifier = server.client(timeout=120)
        entries = all_entries(verifier, SCOPE)
        verifier.close()
        result["writes"] = verify_writes(entries, reports, seeding["seeded"], run)
        result["server_exit"] = server.stop()
        integrity = manage(store, "check_integrity")
        result["integrity"] = {
            "ok": integrity.returncode == 0,
            "seconds": integrity.seconds,
            "output": (integrity.stdout + integrity.stderr)[-4000:],
        }
    finally:
        server.stop()
        store.close(drop=True)
    log = home / server.log_name
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.exists() else []
    result["server_log_errors"] = [
        line for line in lines if re.search(r"ERROR|Traceback| 5\d\d [\d.]+ms$", line)
    ][:20]
    result["operations"] = summarize(reports)
    result["client_errors"] = [e for report in reports for e in report.get("errors", [])][:50]
    operations = result["operations"]
    result["passed"] = bool(
        operations["total"]["5xx"] == 0
        and operations["total"]["other_non_200"] == 0
        and operations["total"]["unanswered"] == 0
        and result["writes"]["ok"]
        and result["integrity"]["ok"]
    )
    result["rss_goal_met"] = result["server_peak_rss_kib"] < RSS_GOAL_MIB * 1024
    return result


def summarize(reports: list[dict]) -> dict:
    started = min((r["started"] for r in reports if r.get("started")), default=0.0)
    finished = max((r["finished"] for r in reports if r.get("finished")), default=0.0)
    elapsed = max(finished - started, 1e-9)
    summary: dict = {"elapsed_seconds": elapsed}
    total = Counter()
    for op in OPERATIONS:
        latencies = [v for r in reports for v in r.get("latencies", {}).get(op, [])]
        statuses: Counter = Counter()
        for report in reports:
            statuses.update(report.get("statuses", {}).get(op, {}))
        unanswered = sum(r.get("unanswered", {}).get(op, 0) for r in reports)
        ok = statuses.get("200", 0)
        fives = sum(n for code, n in statuses.items() if code.startswith("5"))
        other = sum(statuses.values()) - ok - fives
        summary[op] = {
            "requests": len(latencies) + unanswered,
            "ok": ok,
            "5xx": fives,
            "other_non_200": other,
            "unanswered": unanswered,
            "per_second": ok / elapsed,
            "p50_ms": percentile(latencies, 0.50) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000,
            "max_ms": max(latencies, default=0.0) * 1000,
        }
        for key in ("requests", "ok", "5xx", "other_non_200", "unanswered"):
            total[key] += summary[op][key]
    outcomes: Counter = Counter()
    for report in reports:
        outcomes.update(report.get("prepare_outcomes", {}))
    summary["prepare"]["outcomes"] = dict(outcomes)
    summary["total"] = {**total, "per_second": total["ok"] / elapsed}
    return summary


def render(result: dict) -> str:
    config, ops = result["config"], result["operations"]
    seeding, writes = result["seeding"], result["writes"]
    name = {"sqlite": "SQLite", "oceanbase": "OceanBase seekdb"}[config["engine"]]
    lines = [
        f"## {name}: {config['clients']} clients x {config['duration']:g} s at "
        f"{seeding['seeded']:,} entries (data: {config['data_dir']})",
        "",
        f"Seeded {seeding['seeded']:,} entries through the Memory services in a child "
        f"process, not over HTTP ({seeding['seeded'] / max(seeding['seconds'], 1e-9):,.0f}/s).",
        "",
    ]
    rows = []
    for op in OPERATIONS:
        item = ops[op]
        rows.append(
            (
                op,
                f"{item['requests']:,}",
                f"{item['per_second']:.1f}",
                f"{item['p50_ms']:.1f}",
                f"{item['p99_ms']:.1f}",
                f"{item['max_ms']:.0f}",
                str(item["5xx"]),
                str(item["other_non_200"] + item["unanswered"]),
            )
        )
    total = ops["total"]
    rows.append(
        (
            "all",
            f"{total['requests']:,}",
            f"{total['per_second']:.1f}",
            "",
            "",
            "",
            str(total["5xx"]),
            str(total["other_non_200"] + total["unanswered"]),
        )
    )
    header = ("operation", "requests", "ok/s", "p50 ms", "p99 ms", "max ms", "5xx", "other fail")
    lines.append(markdown_table(header, rows))
    peak = result["server_peak_rss_kib"] / 1024
    lines += [
        "",
        f"- prepare outcomes: {ops['prepare'].get('outcomes', {})}",
        f"- server peak RSS: {peak:.0f} MiB (at start {result['server_rss_start_kib'] / 1024:.0f}"
        f" MiB; goal < {RSS_GOAL_MIB} MiB: {'met' if result['rss_goal_met'] else 'MISSED'})",
    ]
    if result.get("seekdb_peak_rss_kib"):
        lines.append(f"- embedded seekdb peak RSS: {result['seekdb_peak_rss_kib'] / 1024:.0f} MiB")
    lines += [
        f"- writes: {writes['acknowledged']:,} acknowledged remembers, {writes['lost']} lost, "
        f"{writes['duplicated']} duplicated, {writes['mismatched']} differing; "
        f"{writes['unacknowledged']} unacknowledged ({writes['unacknowledged_present']} "
        f"present); {writes['listed']:,} entries listed",
        f"- check_integrity: {'passed' if result['integrity']['ok'] else 'FAILED'} "
        f"({result['integrity']['seconds']:.1f}s)",
        f"- result: {'PASS' if result['passed'] else 'FAIL'}",
    ]
    for problem in writes["problems"][:10] + result["client_errors"][:10]:
        lines.append(f"  - {problem}")
    if not result["integrity"]["ok"]:
        lines.append(result["integrity"]["output"])
    if not result["passed"]:
        lines += ["- server log (errors):", *result["server_log_errors"]]
    return "\n".join(lines)


def parse_mix(text: str) -> dict[str, float]:
    mix = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        if name.strip() not in OPERATIONS:
            raise argparse.ArgumentTypeError(f"unknown operation {name!r}")
        mix[name.strip()] = float(weight)
    if sum(mix.values()) <= 0:
        raise argparse.ArgumentTypeError("the weights must add up to more than 0")
    return mix


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[Config]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("sqlite", "oceanbase"), default="sqlite")
    parser.add_argument("--entries", type=int, default=50000, help="seeded before the load")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--clients", type=int, default=4, help="client processes")
    parser.add_argument(
        "--max-requests", type=int, default=200000, help="request budget (all clients)"
    )
    parser.add_argument(
        "--mix", type=parse_mix, default="prepare=80,remember=15,search=5", help="op=weight,..."
    )
    parser.add_argument("--threads", type=int, default=4, help="server worker threads")
    parser.add_argument("--request-timeout", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--data-dir", type=Path, help="a fresh directory (default: temporary)")
    parser.add_argument(
        "--oceanbase-url",
        help="an OceanBase server (oceanbase://...) to create the database on, instead of "
        "starting an embedded seekdb",
    )
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    preset = parser.add_mutually_exclusive_group()
    preset.add_argument(
        "--full",
        action="store_true",
        help="SQLite at 50,000 entries, then OceanBase seekdb at 5,000: 4 clients, 60 s each",
    )
    preset.add_argument(
        "--ci", action="store_true", help="2 clients, 10 s, 2,000 entries (one engine)"
    )
    args = parser.parse_args(argv)
    if isinstance(args.mix, str):
        args.mix = parse_mix(args.mix)

    def config(engine: str, **overrides: object) -> Config:
        values = {
            "engine": engine,
            "entries": args.entries,
            "duration": args.duration,
            "clients": args.clients,
            "max_requests": args.max_requests,
            "mix": args.mix,
            "threads": args.threads,
            "request_timeout": args.request_timeout,
            "seed": args.seed,
            "data_dir": args.data_dir,
            "oceanbase_url": args.oceanbase_url,
        }
        values.update(overrides)
        return Config(**values)  # type: ignore[arg-type]

    if args.full:
        configs = [
            config("sqlite", entries=50000, duration=60.0, clients=4),
            config("oceanbase", entries=5000, duration=60.0, clients=4),
        ]
    elif args.ci:
        configs = [config(args.engine, entries=2000, duration=10.0, clients=2, max_requests=5000)]
    else:
        configs = [config(args.engine)]
    for item in configs:
        if item.entries < 0 or item.duration <= 0 or item.clients < 1 or item.max_requests < 1:
            parser.error("need --entries >= 0, --duration > 0, --clients >= 1, --max-requests >= 1")
    return args, configs


def main(argv: list[str] | None = None) -> int:
    args, configs = parse_args(argv)
    return report_runs(configs, run_load, render, args.json)


if __name__ == "__main__":
    sys.exit(main())
