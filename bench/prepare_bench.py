"""Prepare latency at scale: POST /v1/context/prepare vs. the raw FTS5 query it runs.

    .venv/bin/python bench/prepare_bench.py          # 100,000 Memory entries
    .venv/bin/python bench/prepare_bench.py --ci     # 2,000 entries, one round (smoke)

Seeds ``--entries`` coding-agent memories (bench/corpus.py, deterministic from ``--seed``)
into one scope of a fresh data directory through the Memory services (``memory_remember``,
one transaction each: the server's write path minus HTTP), then starts the real server
(``manage.py serve`` on 127.0.0.1, port 0). As the hook does on every prompt, it first
captures each committed realistic prompt (bench/prompts/prepare_prompts.json) into the
scope's source journal (``POST /v1/sources/content``, ids stable, so a re-run on a reused
data directory repeats the same captures idempotently); prepare then reads that prompt
history and weighs the terms recurring in it down. It then sends every prompt through
``POST /v1/context/prepare``. In the same run, interleaved with the HTTP requests, it times
the raw FTS5 statement for the terms of prepare's first candidate query (recurring terms
left out as prepare leaves them out there; a window of 16, where prepare fetches 50
candidates and scores them) with Python's sqlite3 on the same database file. Target: median
HTTP latency <= raw median + 5 ms; p99 is reported too.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.served import PROMPTS, RAW_MATCH_SQL, ServerProcess, Store, percentile  # noqa: E402
from hooks.powercontext_hook import capture_source_id  # noqa: E402

SCOPE = "bench:prepare"
SESSION = "bench-prepare"
TARGET_MS = 5.0


def setup_django(home: Path) -> None:
    os.environ["POWERCONTEXT_HOME"] = str(home)
    os.environ["DJANGO_SETTINGS_MODULE"] = "server.settings"
    os.environ.pop("POWERCONTEXT_DATABASE_URL", None)
    import django

    django.setup()


def seed(entries: int, seed_value: int) -> float:
    from bench.corpus import memories
    from memory.services import memory_remember

    started = time.perf_counter()
    stream = memories(seed_value)
    for done in range(entries):
        kind, text = next(stream)
        memory_remember(scope_id=SCOPE, kind=kind, text=text)
        if done and done % 10_000 == 0:
            print(f"# seeded {done:,} ({time.perf_counter() - started:.0f} s)", flush=True)
    return time.perf_counter() - started


def capture_prompts(url: str, prompts: list[str]) -> None:
    """Capture every prompt into the scope's source journal through the HTTP API, in
    order, as the hook does while it prepares each prompt's pack (202 each)."""
    from powercontext_client import PowerContextClient

    with PowerContextClient(url, timeout=60) as client:
        for turn, prompt in enumerate(prompts):
            client.capture_content_source(
                scope_id=SCOPE,
                source_id=capture_source_id(SCOPE, SESSION, f"turn_id:{turn}", prompt),
                content=prompt,
            )


def prompt_history_size() -> int:
    """How many captured prompts the scope's source journal holds."""
    from powercontext.models import SourceRecord
    from powercontext.sources import CONTENT_SOURCE

    return SourceRecord.objects.filter(scope_id=SCOPE, source_type=CONTENT_SOURCE).count()


def plans(prompts: list[str]) -> list[tuple[str, str | None]]:
    """Each prompt with the MATCH expression prepare runs for it (None: no term selected):
    the same terms as ``contextpack.application`` selects, recurring prompt terms left out."""
    from contextpack.prompt_history import recent_prompt_terms
    from memory.models import MemoryTermStat
    from memory.search_index import MEMORY_INDEX
    from powercontext.search import analyzer
    from powercontext.search.policy import recurring_terms, select_terms
    from powercontext.search.sqlite import match_expression
    from powercontext.search.term_counts import TermCounts

    result = []
    for prompt in prompts:
        terms = analyzer.query_terms(prompt)
        recurring = recurring_terms(terms, recent_prompt_terms(scope_id=SCOPE, query=prompt))
        frequencies, documents = TermCounts(MemoryTermStat).frequencies(scope_id=SCOPE, terms=terms)
        selected = select_terms(terms, frequencies, documents, recurring)
        result.append(
            (prompt, match_expression(MEMORY_INDEX, SCOPE, selected) if selected else None)
        )
    return result


def run(args: argparse.Namespace) -> int:
    from contextpack.builder import MEMORY_WINDOW

    prompts = json.loads(Path(args.prompts).read_text(encoding="utf-8"))["prompts"]
    home = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="pc-prep-"))
    home.mkdir(parents=True, exist_ok=True)
    setup_django(home)
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from memory.models import MemoryActiveEntry
    from powercontext.search.policy import PROMPT_HISTORY

    call_command("migrate", interactive=False, verbosity=0)
    present = MemoryActiveEntry.objects.filter(scope_id=SCOPE).count()
    if present == 0:
        seconds = seed(args.entries, args.seed)
        note = f"seeded through the services in {seconds:.0f} s"
    elif present == args.entries:
        note = "reused from an earlier run of this bench"
    else:
        print(f"{home} holds {present:,} entries, not {args.entries:,}", file=sys.stderr)
        return 2
    # Seed first, then start the server, as after a restart: the writes are checkpointed
    # and the measurement does not share the machine with the seeding.
    connections.close_all()
    print(
        f"# {args.entries:,} entries {note}; {len(prompts)} prompts x {args.rounds} round(s); "
        f"home {home}",
        flush=True,
    )
    # No server log: the data directory may be reused run after run.
    with ServerProcess(Store("sqlite", home.resolve()), log_name=None) as server:
        if not args.no_capture:
            capture_prompts(server.url, prompts)
        history = prompt_history_size()
        print(
            f"# prompt history: {history} captured prompt(s) in the scope; prepare looks back "
            f"on the latest {PROMPT_HISTORY}",
            flush=True,
        )
        planned = plans(prompts)
        raw = sqlite3.connect(settings.DATABASES["default"]["NAME"])
        api = server.client(timeout=60, retry_stale=True)

        def raw_query(expression: str | None) -> float:
            if expression is None:
                return 0.0
            began = time.perf_counter()
            raw.execute(RAW_MATCH_SQL, [expression, MEMORY_WINDOW]).fetchall()
            return (time.perf_counter() - began) * 1000

        def prepare(prompt: str) -> tuple[dict, float]:
            body = {"scope_id": SCOPE, "query": prompt, "max_bytes": 8000}
            payload, seconds = api.timed("/v1/context/prepare", body)
            return payload, seconds * 1000

        for prompt, expression in planned:  # warm page cache and statement caches
            prepare(prompt)
            raw_query(expression)
        http_ms, raw_ms, empty, sizes = [], [], 0, []
        for _ in range(args.rounds):
            for prompt, expression in planned:
                payload, elapsed = prepare(prompt)
                http_ms.append(elapsed)
                raw_ms.append(raw_query(expression))
                empty += payload["status"] == "empty"
                sizes.append(payload["content_bytes"])
        api.close()
        raw.close()

    median = statistics.median(http_ms), statistics.median(raw_ms)
    p99 = percentile(http_ms, 0.99), percentile(raw_ms, 0.99)
    ok = median[0] <= median[1] + TARGET_MS
    print(f"# prepare at {args.entries:,} entries, n={len(http_ms)} requests")
    print("| measure | prepare (HTTP) | raw FTS5 | difference | target |")
    print("|---|---|---|---|---|")
    print(
        f"| p50 ms | {median[0]:.2f} | {median[1]:.2f} | {median[0] - median[1]:+.2f} "
        f"| <= raw + {TARGET_MS:g} ms: {'met' if ok else 'MISSED'} |"
    )
    print(f"| p99 ms | {p99[0]:.2f} | {p99[1]:.2f} | {p99[0] - p99[1]:+.2f} | reported |")
    print(
        f"# packs: {100 * empty / len(http_ms):.1f} % empty, mean content_bytes "
        f"{statistics.fmean(sizes):.0f}"
    )
    return 0 if ok or not args.enforce else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=28, help="corpus seed")
    parser.add_argument("--prompts", default=str(PROMPTS))
    parser.add_argument("--rounds", type=int, default=3, help="passes over the prompts")
    parser.add_argument("--data-dir", help="a fresh directory (default: a new temp dir)")
    parser.add_argument("--enforce", action="store_true", help="exit 1 when the target is missed")
    parser.add_argument(
        "--no-capture",
        action="store_true",
        help="do not capture the prompts first (a data directory without captured prompts "
        "then measures prepare with no prompt history: every term of a prompt counted)",
    )
    parser.add_argument("--ci", action="store_true", help="2,000 entries, one round")
    args = parser.parse_args(argv)
    if args.ci:
        args.entries, args.rounds = min(args.entries, 2_000), 1
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
