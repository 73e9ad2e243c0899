"""Peak memory of a served process under concurrent ``entries/list`` calls.

    .venv/bin/python bench/list_memory.py                # 1000 entries of 8 KiB, 6 clients
    .venv/bin/python bench/list_memory.py --entries 200 --clients 2
    .venv/bin/python bench/list_memory.py --entries 400 --rounds 3 --text control \
        --repo /tmp/before     # another checkout's server (e.g. before a fix)

1. On a fresh store (SQLite, or a database of its own on OceanBase: ``--engine``),
   ``manage.py serve`` (127.0.0.1, port 0) remembers ``--entries`` texts of 8,192 UTF-8
   bytes each over HTTP (``--text control``: control characters, which JSON escapes to
   six bytes each), then stops: writing is not what is measured.
2. A fresh server starts on that data; its resident memory (VmRSS) is read once idle
   (its embedding model loaded).
3. ``--clients`` threads at once each list every entry (``limit`` 1000, following
   ``next_cursor``), ``--rounds`` times; every listing must return every entry exactly
   once.
4. Reported: bytes per response (largest), pages per listing, the server's VmRSS before,
   its peak (VmHWM, the kernel's own high-water mark, and sampled VmRSS) and VmRSS
   ``--settle`` seconds after. Passes when every listing was whole and the peak and the
   after stayed under ``--rss-budget-mib`` (250). ``--ci`` is issue 27's run.

Loopback only; bounded by the entry count, the rounds and a per-request timeout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import served  # noqa: E402
from bench.served import MemorySampler, ServerProcess, memory_of, open_store  # noqa: E402

SCOPE = "bench-list"
TEXT_BYTES = 8192
LIST = "/v1/memory/entries/list"


def entry_text(index: int, kind: str = "terminal") -> str:
    """8,192 UTF-8 bytes of captured terminal output: colour codes, quotes, backslashes
    and newlines, which JSON escapes, so the response is about twice the text. With
    ``kind`` "control", control characters alone (each escaped to six bytes: the largest
    response a text of this size makes)."""
    line = f'\x1b[1m\x1b[31mFAIL\x1b[0m "{index}"\n'
    if kind == "control":
        # Distinct per entry (Memory keeps one entry per text): the index in hex digits.
        line = "".join(chr(1 + int(digit, 16)) for digit in f"{index:x}") + "\x02\x03\x04"
    text = (line * (TEXT_BYTES // len(line) + 1))[:TEXT_BYTES]
    assert len(text.encode()) == TEXT_BYTES
    return text


def list_all(client, sizes: list[int]) -> list[str]:
    ids: list[str] = []
    body: dict = {"scope_id": SCOPE, "limit": 1000}
    while True:
        status, page, _ = client.post(LIST, body)
        if status != 200 or page is None:
            raise RuntimeError(f"{LIST} answered {status}")
        sizes.append(len(json.dumps(page, ensure_ascii=False, separators=(",", ":")).encode()))
        ids.extend(entry["citation"]["entry_id"] for entry in page["entries"])
        if not page["next_cursor"]:
            return ids
        body = {**body, "cursor": page["next_cursor"]}


def run(args: argparse.Namespace) -> dict:
    scratch = None if args.data_dir else Path(tempfile.mkdtemp(prefix="pc-list-bench-"))
    home = args.data_dir or scratch / "home"
    store = open_store(args.engine, home, oceanbase_url=args.oceanbase_url)
    try:
        return _run(store, args.entries, args.clients, args.rounds, args.text, args.settle)
    finally:
        store.close(drop=True)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _run(store, entries: int, clients: int, rounds: int, text: str, settle: float) -> dict:
    with ServerProcess(store) as writer:
        client = writer.client(timeout=60)
        for index in range(entries):
            client.ok(
                "/v1/memory/remember",
                {"scope_id": SCOPE, "kind": "note", "text": entry_text(index, text)},
            )
        client.close()

    with ServerProcess(store) as server:
        # Idle: the embedding model loads in the background at start.
        served.wait_idle(server.pid)
        before = memory_of(server.pid)["VmRSS"]
        sampler = MemorySampler(server.pid, interval=0.05).start()
        sizes: list[int] = []
        pages: list[int] = []
        failures: list[str] = []

        def reader() -> None:
            client = server.client(timeout=120)
            try:
                for _ in range(rounds):
                    page_sizes: list[int] = []
                    ids = list_all(client, page_sizes)
                    sizes.extend(page_sizes)
                    pages.append(len(page_sizes))
                    if len(ids) != entries or len(set(ids)) != entries:
                        failures.append(f"{len(ids)} ids, {len(set(ids))} distinct")
            except Exception as error:
                failures.append(repr(error))
            finally:
                client.close()

        started = time.monotonic()
        threads = [threading.Thread(target=reader) for _ in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.monotonic() - started
        peak = sampler.stop()
        time.sleep(settle)
        after = memory_of(server.pid)["VmRSS"]
    return {
        "engine": store.engine,
        "entries": entries,
        "clients": clients,
        "rounds": rounds,
        "text": text,
        "repo": str(served.REPO_ROOT),
        "largest_response_bytes": max(sizes) if sizes else 0,
        "pages_per_listing": max(pages) if pages else 0,
        "seconds": round(seconds, 2),
        "rss_before_mib": round(before / 1024, 1),
        "peak_mib": round(peak / 1024, 1),
        "rss_after_mib": round(after / 1024, 1),
        "settle_seconds": settle,
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=["sqlite", "oceanbase"], default="sqlite")
    parser.add_argument("--oceanbase-url", help="an OceanBase server to use (else seekdb)")
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--text", choices=["terminal", "control"], default="terminal")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds before 'after'")
    parser.add_argument("--rss-budget-mib", type=float, default=250.0)
    parser.add_argument("--repo", type=Path, help="serve this checkout instead")
    parser.add_argument(
        "--ci",
        action="store_true",
        help="issue 27's run: 400 entries of control characters, 3 rounds",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.ci:
        args.entries, args.rounds, args.text, args.settle = 400, 3, "control", 3.0
    if args.repo is not None:
        served.REPO_ROOT = args.repo.resolve()
    result = run(args)
    result["passed"] = not result["failures"] and (
        max(result["peak_mib"], result["rss_after_mib"]) < args.rss_budget_mib
    )
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps([result], indent=1), encoding="utf-8")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
