"""Prepares while the vectors catch up: a large scope written with the semantic channel
off, then served with it on, so ``serve``'s background catch-up embeds every entry while
prompts arrive. Each prompt must be answered from words at the usual speed (no request
waits for the embedding) and the server's memory must stay bounded.

    .venv/bin/python bench/catch_up_prepare.py --entries 10000
    .venv/bin/python bench/catch_up_prepare.py --entries 2000 --prompts 20
    .venv/bin/python bench/catch_up_prepare.py --entries 100000 --prompts 0   # memory alone

1. ``--entries`` entries of bench/corpus.py seeded through the services with
   ``POWERCONTEXT_EMBEDDINGS=off`` (bench/django_tasks.py seed: no vector written);
2. ``manage.py serve`` with the channel on: the catch-up starts at once;
3. as soon as it answers, ``--prompts`` prepares one after the other (the committed
   prompts), each timed, and the server's peak RSS sampled throughout;
4. the same prompts again once the catch-up is done (the server idle), for comparison.

Prints the first prepare, p50 and max of those during the catch-up, p50 after, and the
peak RSS.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import served, workload

SCOPE = "bench-catch-up"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--prompts", type=int, default=30)
    parser.add_argument("--catch-up-wait", type=float, default=1800, help="seconds at most")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="pc-catch-up-"))
    try:
        store = served.open_store("sqlite", base / "data")
        off = replace(store, extra_env={"POWERCONTEXT_EMBEDDINGS": "off"})
        seeded = served.django_task(off, "seed", "--scope", SCOPE, "--entries", str(args.entries))
        print(f"seeded {seeded['seeded']:,} entries (channel off) in {seeded['seconds']:.0f} s")
        prompts = workload.prompts(args.prompts)
        with served.ServerProcess(store) as server:
            sampler = served.MemorySampler(server.pid, 0.1).start()
            # Reconnects after the idle wait below (the server closes idle connections).
            client = served.Client.for_url(server.url, timeout=120, retry_stale=True)
            during = [workload.Ours(client).prepare(SCOPE, p) for p in prompts]
            ms = [t * 1000 for t in during]
            if ms:
                print(
                    f"during the catch-up: first {ms[0]:.0f} ms, p50 "
                    f"{served.percentile(ms, 0.5):.0f} ms, max {max(ms):.0f} ms",
                    flush=True,
                )
            served.wait_idle(server.pid, most=args.catch_up_wait)
            after = [workload.Ours(client).prepare(SCOPE, p) for p in prompts]
            peak = sampler.stop()
        if after:
            print(f"after it: p50 {served.percentile(after, 0.5) * 1000:.0f} ms")
        print(f"peak RSS {peak / 1024:.0f} MB")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
