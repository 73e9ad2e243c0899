"""Peak memory of a served process under concurrent ``entries/list`` calls.

    .venv/bin/python bench/list_memory.py                # 1000 entries of 8 KiB, 6 clients
    .venv/bin/python bench/list_memory.py --entries 200 --clients 2

1. On a fresh SQLite data directory, ``manage.py serve`` (127.0.0.1, port 0) remembers
   ``--entries`` texts of 8,192 UTF-8 bytes each over HTTP, then stops: writing is not
   what is measured.
2. A fresh server starts on that data; its resident memory (VmRSS) is read once idle.
3. ``--clients`` threads at once each list every entry (``limit`` 1000, following
   ``next_cursor``), ``--rounds`` times; every listing must return every entry exactly
   once.
4. Reported: bytes per response (largest), pages per listing, the server's VmRSS before,
   its peak (VmHWM, the kernel's own high-water mark, and sampled VmRSS) and VmRSS after.

Loopback only; bounded by the entry count, the rounds and a per-request timeout.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.served import MemorySampler, ServerProcess, memory_of, open_store  # noqa: E402

SCOPE = "bench-list"
TEXT_BYTES = 8192
LIST = "/v1/memory/entries/list"


def entry_text(index: int) -> str:
    """8,192 UTF-8 bytes of captured terminal output: colour codes, quotes, backslashes
    and newlines, which JSON escapes, so the response is about twice the text."""
    line = f'\x1b[1m\x1b[31mFAIL\x1b[0m "{index}"\n'
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


def run(entries: int, clients: int, rounds: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="pc-list-bench-") as tmp:
        store = open_store("sqlite", Path(tmp) / "home")
        with ServerProcess(store) as writer:
            client = writer.client(timeout=60)
            for index in range(entries):
                client.ok(
                    "/v1/memory/remember",
                    {"scope_id": SCOPE, "kind": "note", "text": entry_text(index)},
                )
            client.close()

        with ServerProcess(store) as server:
            time.sleep(1)
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
            time.sleep(1)
            after = memory_of(server.pid)["VmRSS"]
    return {
        "entries": entries,
        "clients": clients,
        "rounds": rounds,
        "largest_response_bytes": max(sizes) if sizes else 0,
        "pages_per_listing": max(pages) if pages else 0,
        "seconds": round(seconds, 2),
        "rss_before_mib": round(before / 1024, 1),
        "peak_mib": round(peak / 1024, 1),
        "rss_after_mib": round(after / 1024, 1),
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    result = run(args.entries, args.clients, args.rounds)
    print(json.dumps(result, indent=2))
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
