"""Crash recovery: SIGKILL the server in the middle of a write load, restart it, and check
that nothing acknowledged was lost, nothing unacknowledged is half there, the integrity
check passes, and a rebuild of the derived state from nothing answers searches exactly as
the recovered server did.

    .venv/bin/python bench/crash.py --full    # SQLite (5 cycles at 5,000 entries), then
                                              # OceanBase seekdb (3 cycles at 2,000)
    .venv/bin/python bench/crash.py --ci      # one cycle at 300 entries (SQLite)
    .venv/bin/python bench/crash.py --engine oceanbase --cycles 2

On a fresh data directory (a fresh database on OceanBase), ``--entries`` memories are
seeded through the Memory services in a child process and ``manage.py serve`` is started.
Then, per cycle:

1. ``--writers`` client processes write as fast as they can, each on entries it created
   itself (so it knows every entry's current citation): remember 45 %, revise 30 %,
   retire 15 %, reactivate 10 %. Each keeps a journal: every request, and its answer or
   the lack of one. A writer stops at the first request without a 200 answer.
2. Once ``--kill-after`` writes were acknowledged (plus a random 0..50 ms), the server
   gets SIGKILL: no drain, no rollback by the application, connections cut mid-request.
3. The server is restarted on the same data. ``manage.py check_integrity`` must pass
   (hash chains, versions vs. manifest rows vs. revision changes, projection, term
   statistics, full-text index). The state is read back over HTTP (entries/list with
   inactive entries, changes, entries/get of every acknowledged citation) and compared
   with the journals: every acknowledged write is there, in the revision it was
   acknowledged in, with exactly its change; an unacknowledged write is either wholly
   there (its version, state, manifest row and revision with its change) or not at all;
   every new revision is accounted for by exactly one write; nothing else changed.
4. Searches (``--queries`` of bench/queries/search_queries.txt) and prepares (``--prompts``
   of bench/prompts/prepare_prompts.json) are recorded. The server is stopped, every
   derived Memory structure is destroyed (projection rows, term statistics, and the
   full-text index itself; ``check_integrity`` must now fail), ``manage.py
   rebuild_index`` rebuilds it from the authoritative tables, ``check_integrity`` must
   pass again, and after a restart the same searches and prepares must answer exactly
   the same (hits, versions, revisions, scores; byte-identical Context Packs).

Exits 1 if anything did not hold. Loopback only; bounded (cycles, writes per writer,
request timeouts, a deadline for the kill).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import secrets
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.corpus import memories  # noqa: E402
from bench.served import (  # noqa: E402
    PROMPTS,
    QUERIES,
    Client,
    ServerProcess,
    Store,
    Unanswered,
    all_entries,
    all_revisions,
    django_task,
    load_prompts,
    load_queries,
    manage,
    markdown_table,
    open_store,
    report_runs,
)

SCOPE = "bench:crash"
MIX = {"remember": 45, "revise": 30, "retire": 15, "reactivate": 10}
PATHS = {
    "remember": "/v1/memory/remember",
    "revise": "/v1/memory/entries/revise",
    "retire": "/v1/memory/entries/retire",
    "reactivate": "/v1/memory/entries/reactivate",
}
# The longest the driver waits for the writers to reach --kill-after.
KILL_DEADLINE = 120.0

# (entry_version_id, state, kind, text): what an entry is at a head.
State = tuple[str, str, str, str]


@dataclass
class Config:
    engine: str
    entries: int
    cycles: int
    writers: int
    kill_after: int
    queries: int
    prompts: int
    threads: int = 4
    request_timeout: float = 30.0
    seed: int = 28
    data_dir: Path | None = None
    oceanbase_url: str | None = None
    hash_seed: str = "0"
    # "index": drop the full-text index itself too; "rows": keep its definition.
    wipe: str = "index"
    # 0: searches and packs must be identical after the rebuild; > 0: see equivalent_hits.
    score_tolerance: float = 0.0


# -- the writers -----------------------------------------------------------------------


def writer_main(spec: dict, acknowledged, out_path: str) -> None:
    """One writer process: writes on its own entries until it gets no 200 answer (the
    server died) or its budget is spent; writes its journal to ``out_path``."""
    rng = random.Random(spec["seed"])
    corpus = memories(spec["seed"])
    client = Client(spec["host"], spec["port"], timeout=spec["request_timeout"])
    owned: dict[str, dict] = {}  # entry_id -> its latest acknowledged entry
    journal: list[dict] = []
    operations, weights = zip(*MIX.items(), strict=True)
    while time.time() < spec["start_at"]:
        time.sleep(0.01)
    for number in range(spec["max_writes"]):
        active = sorted(e for e, entry in owned.items() if entry["state"] == "active")
        retired = sorted(e for e, entry in owned.items() if entry["state"] == "inactive")
        op = rng.choices(operations, weights)[0]
        if (op in ("revise", "retire") and not active) or (op == "reactivate" and not retired):
            op = "remember"
        record: dict = {"op": op, "entry_id": None, "from": None, "kind": None, "text": None}
        tag = f"(crash {spec['run']}.{spec['writer']}.{number})"
        if op == "remember":
            kind, text = next(corpus)
            record.update(kind=kind, text=f"{text} {tag}")
            body = {"scope_id": SCOPE, "kind": record["kind"], "text": record["text"]}
        else:
            target = rng.choice(retired if op == "reactivate" else active)
            current = owned[target]
            record.update(entry_id=target, **{"from": current["citation"]["entry_version_id"]})
            body = {"scope_id": SCOPE, "citation": current["citation"], "reason": f"{op} {tag}"}
            if op == "revise":
                record.update(kind=current["kind"], text=f"{next(corpus)[1]} {tag}")
                body.update(kind=record["kind"], text=record["text"])
        try:
            status, decoded, _ = client.post(PATHS[op], body)
        except Unanswered as error:
            record.update(outcome="unanswered", error=str(error))
            journal.append(record)
            break
        entry = (decoded or {}).get("entry") if status == 200 else None
        if entry is None:
            record.update(outcome="error", status=status, answer=decoded)
            journal.append(record)
            break
        record.update(outcome="ack", revision=decoded["memory"]["revision"], entry=entry)
        journal.append(record)
        owned[entry["citation"]["entry_id"]] = entry
        with acknowledged.get_lock():
            acknowledged.value += 1
    client.close()
    Path(out_path).write_text(json.dumps(journal), encoding="utf-8")


# -- checking the recovered state ------------------------------------------------------


def state_of(entry: dict) -> State:
    return (
        entry["citation"]["entry_version_id"],
        entry["state"],
        entry["kind"],
        entry["text"],
    )


def expected_change(record: dict, entry: dict) -> dict:
    """The change a write of ``record`` leaves in its revision (DESIGN.md §3)."""
    op, version = record["op"], entry["citation"]["entry_version_id"]
    return {
        "op": {"remember": "add", "retire": "deactivate"}.get(op, op),
        "entry_id": entry["citation"]["entry_id"],
        "from_entry_version_id": record["from"] if op in ("revise", "retire") else None,
        "to_entry_version_id": None if op == "retire" else version,
    }


def _change_key(change: dict) -> dict:
    return {
        key: change[key]
        for key in ("op", "entry_id", "from_entry_version_id", "to_entry_version_id")
    }


def verify_recovery(
    client: Client, baseline: dict[str, State], base_head: int, journals: list[list[dict]]
) -> tuple[dict, dict[str, State], int]:
    """Compare the recovered state with ``baseline`` (the state before the cycle, at
    ``base_head``) plus the writers' journals. (report, observed state, head)."""
    entries = all_entries(client, SCOPE, include_inactive=True)
    observed = {entry["citation"]["entry_id"]: state_of(entry) for entry in entries}
    revisions = all_revisions(client, SCOPE)
    head = max(revisions, default=0)
    new_revisions = {r: changes for r, changes in revisions.items() if r > base_head}
    problems: list[str] = []
    accounted: dict[int, str] = {}

    def account(revision: int, what: str) -> None:
        if revision in accounted:
            problems.append(f"revision {revision} claimed by {accounted[revision]} and {what}")
        accounted[revision] = what

    expected = dict(baseline)
    acknowledged = [r for journal in journals for r in journal if r["outcome"] == "ack"]
    pending = [r for journal in journals for r in journal if r["outcome"] != "ack"]
    for record in acknowledged:
        entry = record["entry"]
        entry_id = entry["citation"]["entry_id"]
        expected[entry_id] = state_of(entry)
        changes = revisions.get(record["revision"])
        want = expected_change(record, entry)
        if changes is None or [_change_key(c) for c in changes] != [want]:
            problems.append(
                f"acknowledged {record['op']} of {entry_id} is not revision "
                f"{record['revision']}'s only change"
            )
        account(record["revision"], f"acknowledged {record['op']} of {entry_id}")
        # The exact version cited by the acknowledgement, with its state in that revision.
        status, got, _ = client.post(
            "/v1/memory/entries/get", {"scope_id": SCOPE, "citation": entry["citation"]}
        )
        if status != 200 or got is None or state_of(got) != state_of(entry):
            problems.append(f"acknowledged citation of {entry_id} does not read back ({status})")

    def find_change(want: dict) -> int | None:
        for revision, changes in new_revisions.items():
            if [_change_key(c) for c in changes] == [want]:
                return revision
        return None

    whole = absent = 0
    for record in pending:
        op = record["op"]
        if op == "remember":
            matches = [e for e, state in observed.items() if state[3] == record["text"]]
            if not matches:
                absent += 1
                continue
            if len(matches) > 1:
                problems.append(f"unacknowledged remember is present {len(matches)} times")
                continue
            entry_id = matches[0]
            now = observed[entry_id]
            if entry_id in expected or now[1:] != ("active", record["kind"], record["text"]):
                problems.append(f"unacknowledged remember became {entry_id} in a wrong state")
                continue
            want = {
                "op": "add",
                "entry_id": entry_id,
                "from_entry_version_id": None,
                "to_entry_version_id": now[0],
            }
        else:
            entry_id = record["entry_id"]
            before, now = expected[entry_id], observed.get(entry_id)
            if now == before:
                absent += 1
                continue
            if op == "revise":
                ok = (
                    now is not None
                    and now[0] != before[0]
                    and now[1:]
                    == (
                        "active",
                        record["kind"],
                        record["text"],
                    )
                )
            elif op == "retire":
                ok = now == (before[0], "inactive", before[2], before[3])
            else:
                ok = now == (before[0], "active", before[2], before[3])
            if not ok or now is None:
                problems.append(f"unacknowledged {op} of {entry_id} is half there: {now}")
                continue
            want = {
                "op": "deactivate" if op == "retire" else op,
                "entry_id": entry_id,
                "from_entry_version_id": before[0] if op in ("revise", "retire") else None,
                "to_entry_version_id": None if op == "retire" else now[0],
            }
        revision = find_change(want)
        if revision is None:
            problems.append(f"unacknowledged {op} of {entry_id} applied without its revision")
            continue
        account(revision, f"unacknowledged {op} of {entry_id}")
        expected[entry_id] = now
        whole += 1
    for entry_id in sorted(expected.keys() | observed.keys()):
        if expected.get(entry_id) != observed.get(entry_id):
            problems.append(
                f"{entry_id}: expected {expected.get(entry_id)}, found {observed.get(entry_id)}"
            )
    for revision in sorted(new_revisions.keys() - accounted.keys()):
        problems.append(f"revision {revision} is not accounted for by any write")
    for revision in sorted(accounted.keys() - new_revisions.keys()):
        problems.append(f"revision {revision} ({accounted[revision]}) is missing")
    report = {
        "acknowledged": len(acknowledged),
        "unacknowledged": len(pending),
        "unacknowledged_whole": whole,
        "unacknowledged_absent": absent,
        "entries": len(observed),
        "head": head,
        "new_revisions": len(new_revisions),
        "problems": problems[:50],
        "ok": not problems,
    }
    return report, observed, head


def snapshot(client: Client, queries: list[str], prompts: list[str]) -> dict:
    """Search hits and Context Packs for a fixed set of queries and prompts."""
    searches = {
        query: client.ok("/v1/memory/search", {"scope_id": SCOPE, "query": query, "limit": 10})
        for query in queries
    }
    prepares = {
        prompt: client.ok(
            "/v1/context/prepare", {"scope_id": SCOPE, "query": prompt[:8192], "max_bytes": 8000}
        )
        for prompt in prompts
    }
    return {"search": searches, "prepare": prepares}


def _citation_key(hit: dict) -> tuple:
    citation = hit["citation"]
    return (citation["entry_id"], citation["entry_version_id"], citation["memory_ref"]["revision"])


def equivalent_hits(before: list[dict], after: list[dict], tolerance: float) -> bool:
    """Whether two hit lists agree up to ``tolerance`` on the (normalised) scores: shared
    hits score within it, hits in only one list sit within it of the cut-off, and hits
    whose scores are further apart than twice it keep their order."""
    b = {_citation_key(hit): hit["score"] for hit in before}
    a = {_citation_key(hit): hit["score"] for hit in after}
    if any(abs(b[key] - a[key]) > tolerance for key in b.keys() & a.keys()):
        return False
    if b.keys() != a.keys():
        floor = min([*b.values(), *a.values()])
        if any({**a, **b}[key] > floor + tolerance for key in b.keys() ^ a.keys()):
            return False
    shared = [key for key in b if key in a]
    return all(
        a[x] > a[y]
        for i, x in enumerate(shared)
        for y in shared[i + 1 :]
        if b[x] > b[y] + 2 * tolerance
    )


def compare_snapshots(before: dict, after: dict, tolerance: float = 0.0) -> dict:
    """Exact comparison, or with ``tolerance`` > 0 an equivalence of the searches (see
    equivalent_hits) and of the packs' statuses; byte-different packs are then counted."""
    differing_search = [q for q in before["search"] if before["search"][q] != after["search"][q]]
    differing_prepare = [
        p for p in before["prepare"] if before["prepare"][p] != after["prepare"][p]
    ]
    hits = sum(len(answer["hits"]) for answer in before["search"].values())
    ready = sum(answer["status"] == "ready" for answer in before["prepare"].values())
    ids_only = [
        q
        for q in differing_search
        if [_citation_key(h) for h in before["search"][q]["hits"]]
        != [_citation_key(h) for h in after["search"][q]["hits"]]
    ]
    beyond_tolerance = [
        q
        for q in differing_search
        if not equivalent_hits(before["search"][q]["hits"], after["search"][q]["hits"], tolerance)
    ]
    statuses = [
        p
        for p in differing_prepare
        if before["prepare"][p]["status"] != after["prepare"][p]["status"]
    ]
    scores = [
        abs(x["score"] - y["score"])
        for q in differing_search
        for x, y in zip(before["search"][q]["hits"], after["search"][q]["hits"], strict=False)
        if _citation_key(x) == _citation_key(y)
    ]
    detail = [
        {
            "query": q,
            "before": [
                (h["citation"]["entry_id"], h["score"]) for h in before["search"][q]["hits"]
            ],
            "after": [(h["citation"]["entry_id"], h["score"]) for h in after["search"][q]["hits"]],
        }
        for q in differing_search[:2]
    ]
    exact = not differing_search and not differing_prepare
    return {
        "queries": len(before["search"]),
        "hits": hits,
        "prompts": len(before["prepare"]),
        "ready_packs": ready,
        "differing_searches": len(differing_search),
        "differing_citations": len(ids_only),
        "largest_score_difference": max(scores, default=0.0),
        "differing_packs": len(differing_prepare),
        "tolerance": tolerance,
        "beyond_tolerance": len(beyond_tolerance) + len(statuses),
        "exact": exact,
        "ok": exact if tolerance == 0 else not beyond_tolerance and not statuses,
        "detail": detail,
    }


# -- one engine ------------------------------------------------------------------------


def run_writers(
    config: Config, server: ServerProcess, workdir: Path, run: str, cycle: int
) -> tuple[list[list[dict]], dict]:
    """Start the writers, SIGKILL the server mid-load, collect the journals."""
    context = multiprocessing.get_context("spawn")
    acknowledged = context.Value("i", 0)
    start_at = time.time() + 3.0
    processes = []
    for index in range(config.writers):
        spec = {
            "writer": f"{cycle}.{index}",
            "seed": config.seed * 1000 + cycle * 100 + index,
            "host": server.host,
            "port": server.port,
            "request_timeout": config.request_timeout,
            "start_at": start_at,
            "max_writes": config.kill_after * 4,  # the kill comes long before this
            "run": run,
        }
        out = workdir / f"journal-{cycle}-{index}.json"
        process = context.Process(
            target=writer_main, args=(spec, acknowledged, str(out)), daemon=True
        )
        process.start()
        processes.append((process, out))
    rng = random.Random(config.seed + cycle)
    deadline = time.time() + KILL_DEADLINE
    while acknowledged.value < config.kill_after and time.time() < deadline:
        if not any(process.is_alive() for process, _ in processes):
            break
        time.sleep(0.005)
    time.sleep(rng.uniform(0, 0.05))
    at_kill = acknowledged.value
    load_seconds = time.time() - start_at
    server.kill()
    journals = []
    for process, out in processes:
        process.join(config.request_timeout + 30)
        if process.is_alive():
            process.terminate()
            process.join(5)
        journals.append(json.loads(out.read_text(encoding="utf-8")) if out.exists() else [])
    return journals, {"acknowledged_at_kill": at_kill, "load_seconds": load_seconds}


def integrity(store: Store) -> dict:
    done = manage(store, "check_integrity")
    problems = [line for line in done.stdout.splitlines() if "problem(s)" in line]
    return {
        "ok": done.returncode == 0,
        "seconds": done.seconds,
        "problems": problems,
        "output": (done.stdout + done.stderr)[-3000:],
    }


def run_cycle(
    config: Config,
    store: Store,
    server: ServerProcess,
    item: dict,
    run: str,
    cycle: int,
    baseline: dict[str, State],
    base_head: int,
) -> tuple[ServerProcess, dict[str, State], int]:
    """One SIGKILL cycle (steps 1-4 of the module docstring), results into ``item``; the
    server now serving and the verified state."""
    home = store.home
    queries = load_queries(QUERIES)[: config.queries]
    prompts = load_prompts(PROMPTS)[: config.prompts]
    journals, item["load"] = run_writers(config, server, home, run, cycle)
    started = time.perf_counter()
    server = ServerProcess(store, threads=config.threads).start()
    item["restart_seconds"] = time.perf_counter() - started
    item["integrity_after_restart"] = integrity(store)
    client = server.client(timeout=120)
    item["writes"], baseline, base_head = verify_recovery(client, baseline, base_head, journals)
    before = snapshot(client, queries, prompts)
    client.close()
    server.stop()
    wipe = ["wipe-derived"] + (["--keep-index"] if config.wipe == "rows" else [])
    item["wipe"] = django_task(store, *wipe)
    item["integrity_after_wipe"] = integrity(store)
    rebuilt = manage(store, "rebuild_index")
    item["rebuild"] = {
        "ok": rebuilt.returncode == 0,
        "seconds": rebuilt.seconds,
        "output": (rebuilt.stdout + rebuilt.stderr)[-2000:],
    }
    item["integrity_after_rebuild"] = integrity(store)
    if not item["rebuild"]["ok"]:
        raise RuntimeError(f"rebuild_index failed:\n{item['rebuild']['output']}")
    server = ServerProcess(store, threads=config.threads).start()
    client = server.client(timeout=120)
    after = snapshot(client, queries, prompts)
    client.close()
    item["search_after_rebuild"] = compare_snapshots(before, after, config.score_tolerance)
    if not item["search_after_rebuild"]["ok"]:  # kept for a diagnosis
        for name, value in (("before", before), ("after", after)):
            path = home / f"snapshot-{cycle + 1}-{name}.json"
            path.write_text(json.dumps(value, indent=1), encoding="utf-8")
    item["passed"] = bool(
        item["load"]["acknowledged_at_kill"] > 0
        and item["integrity_after_restart"]["ok"]
        and item["writes"]["ok"]
        and not item["integrity_after_wipe"]["ok"]  # the wipe really broke it
        and item["rebuild"]["ok"]
        and item["integrity_after_rebuild"]["ok"]
        and item["search_after_rebuild"]["ok"]
    )
    return server, baseline, base_head


def run_crash(config: Config) -> dict:
    base = config.data_dir or Path(tempfile.mkdtemp(prefix="powercontext-crash-"))
    home = base / config.engine
    run = secrets.token_hex(4)
    result: dict = {"config": {**asdict(config), "data_dir": str(home)}, "cycles": []}
    store = open_store(config.engine, home, oceanbase_url=config.oceanbase_url)
    if config.hash_seed != "random":
        # Every server process hashes strings alike, so nothing that iterates a set can
        # make two processes disagree on the very same index: the comparison is about
        # the rebuilt index only. --hash-seed random lifts the pin.
        store.extra_env["PYTHONHASHSEED"] = config.hash_seed
    server = ServerProcess(store, threads=config.threads)
    try:
        result["seeding"] = django_task(
            store, "seed", "--scope", SCOPE, "--entries", str(config.entries)
        )
        server.start()
        client = server.client(timeout=120)
        baseline = {
            e["citation"]["entry_id"]: state_of(e)
            for e in all_entries(client, SCOPE, include_inactive=True)
        }
        base_head = max(all_revisions(client, SCOPE), default=0)
        client.close()
        for cycle in range(config.cycles):
            item: dict = {"cycle": cycle + 1}
            result["cycles"].append(item)
            try:
                server, baseline, base_head = run_cycle(
                    config, store, server, item, run, cycle, baseline, base_head
                )
            except Exception:  # report what failed, with the state left for inspection
                item["error"] = traceback.format_exc()[-3000:]
                item["passed"] = False
                break
    finally:
        server.stop()
        store.close(drop=True)
    result["passed"] = bool(result["cycles"]) and all(c["passed"] for c in result["cycles"])
    return result


def render(result: dict) -> str:
    config = result["config"]
    name = {"sqlite": "SQLite", "oceanbase": "OceanBase seekdb"}[config["engine"]]
    seeding = result["seeding"]
    lines = [
        f"## {name}: {len(result['cycles'])} SIGKILL cycle(s), {config['writers']} writers, "
        f"{seeding['seeded']:,} seeded entries (data: {config['data_dir']})",
        "",
        f"Seeded through the Memory services in a child process, not over HTTP "
        f"({seeding['seeded'] / max(seeding['seconds'], 1e-9):,.0f}/s).",
        "",
    ]
    rows = []
    for item in result["cycles"]:
        writes, load = item.get("writes", {}), item.get("load", {})
        search = item.get("search_after_rebuild", {})

        def verdict(ok: bool | None) -> str:
            return "-" if ok is None else ("ok" if ok else "FAILED")

        rows.append(
            (
                str(item["cycle"]),
                f"{writes.get('acknowledged', 0)} after {load.get('load_seconds', 0):.1f}s",
                f"{writes.get('unacknowledged', 0)} ({writes.get('unacknowledged_whole', 0)} whole"
                f", {writes.get('unacknowledged_absent', 0)} absent)",
                f"{item.get('restart_seconds', 0):.1f}s",
                verdict(item.get("integrity_after_restart", {}).get("ok")),
                verdict(writes.get("ok")),
                "fails as it must"
                if item.get("integrity_after_wipe", {}).get("ok") is False
                else "DID NOT FAIL",
                f"{verdict(item.get('rebuild', {}).get('ok'))} "
                f"({item.get('rebuild', {}).get('seconds', 0):.1f}s)",
                verdict(item.get("integrity_after_rebuild", {}).get("ok")),
                f"{search.get('queries', 0) - search.get('differing_searches', 0)}/"
                f"{search.get('queries', 0)} searches ({search.get('hits', 0)} hits), "
                f"{search.get('prompts', 0) - search.get('differing_packs', 0)}/"
                f"{search.get('prompts', 0)} packs"
                + (
                    f"; rest within {search['tolerance']:g} (max score diff "
                    f"{search['largest_score_difference']:.2g})"
                    if search.get("ok") and not search.get("exact")
                    else ""
                ),
                "PASS" if item.get("passed") else "FAIL",
            )
        )
    header = (
        "cycle",
        "acked writes",
        "in flight at kill",
        "restart",
        "integrity",
        "writes vs journals",
        "integrity after wipe",
        "rebuild_index",
        "integrity after",
        "identical after rebuild (searches, packs)",
        "",
    )
    lines.append(markdown_table(header, rows))
    lines += ["", f"- result: {'PASS' if result['passed'] else 'FAIL'}"]
    for item in result["cycles"]:
        for problem in item.get("writes", {}).get("problems", [])[:10]:
            lines.append(f"  - cycle {item['cycle']}: {problem}")
        for key in ("integrity_after_restart", "integrity_after_rebuild"):
            if not item.get(key, {}).get("ok", True):
                lines.append(f"  - cycle {item['cycle']} {key}:\n{item[key]['output']}")
        if item.get("error"):
            lines.append(f"  - cycle {item['cycle']} stopped by an error:\n{item['error']}")
        if not item.get("search_after_rebuild", {}).get("ok", True):
            lines.append(f"  - cycle {item['cycle']}: {item['search_after_rebuild']}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[Config]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("sqlite", "oceanbase"), default="sqlite")
    parser.add_argument("--entries", type=int, default=5000, help="seeded before the first cycle")
    parser.add_argument("--cycles", type=int, default=3, help="SIGKILL/restart cycles")
    parser.add_argument("--writers", type=int, default=4, help="writer processes")
    parser.add_argument(
        "--kill-after", type=int, default=500, help="acknowledged writes before the SIGKILL"
    )
    parser.add_argument("--queries", type=int, default=1000, help="search queries compared")
    parser.add_argument("--prompts", type=int, default=20, help="prepare prompts compared")
    parser.add_argument("--threads", type=int, default=4, help="server worker threads")
    parser.add_argument("--request-timeout", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--data-dir", type=Path, help="a fresh directory (default: temporary)")
    parser.add_argument(
        "--oceanbase-url",
        help="an OceanBase server (oceanbase://...) to create the database on, instead of "
        "starting an embedded seekdb",
    )
    parser.add_argument(
        "--wipe",
        choices=("index", "rows"),
        default="index",
        help="before rebuild_index, destroy the projection, term statistics and the full-text "
        "index itself (index, the default) or only the rows (rows: the index definition "
        "stays, emptied)",
    )
    parser.add_argument(
        "--score-tolerance",
        type=float,
        default=0.0,
        help="0 (default): searches and Context Packs must be identical after the rebuild; "
        "> 0: search scores may differ by this much (normalised), near-ties may swap and "
        "packs need only the same status",
    )
    parser.add_argument(
        "--hash-seed",
        default="0",
        help="PYTHONHASHSEED of the server processes (default 0; 'random' for Python's "
        "default): search scores are compared bit for bit across processes",
    )
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    preset = parser.add_mutually_exclusive_group()
    preset.add_argument(
        "--full",
        action="store_true",
        help="SQLite: 5 cycles at 5,000 entries; then OceanBase seekdb: 3 cycles at 2,000",
    )
    preset.add_argument(
        "--ci", action="store_true", help="one cycle, 3 writers, 300 entries (one engine)"
    )
    args = parser.parse_args(argv)

    def config(engine: str, **overrides: object) -> Config:
        values = {
            "engine": engine,
            "entries": args.entries,
            "cycles": args.cycles,
            "writers": args.writers,
            "kill_after": args.kill_after,
            "queries": args.queries,
            "prompts": args.prompts,
            "threads": args.threads,
            "request_timeout": args.request_timeout,
            "seed": args.seed,
            "data_dir": args.data_dir,
            "oceanbase_url": args.oceanbase_url,
            "hash_seed": args.hash_seed,
            "wipe": args.wipe,
            "score_tolerance": args.score_tolerance,
        }
        values.update(overrides)
        return Config(**values)  # type: ignore[arg-type]

    if args.full:
        configs = [
            config("sqlite", entries=5000, cycles=5, writers=4, kill_after=500),
            config("oceanbase", entries=2000, cycles=3, writers=4, kill_after=300),
        ]
    elif args.ci:
        configs = [
            config(
                args.engine,
                entries=300,
                cycles=1,
                writers=3,
                kill_after=120,
                queries=30,
                prompts=8,
            )
        ]
    else:
        configs = [config(args.engine)]
    for item in configs:
        if item.entries < 0 or item.cycles < 1 or item.writers < 1 or item.kill_after < 1:
            parser.error("need --entries >= 0 and --cycles, --writers, --kill-after >= 1")
    return args, configs


def main(argv: list[str] | None = None) -> int:
    args, configs = parse_args(argv)
    return report_runs(configs, run_crash, render, args.json)


if __name__ == "__main__":
    sys.exit(main())
