"""Memory benchmark: write cost vs. size, search vs. raw FTS5, rebuild_index throughput.

    .venv/bin/python bench/memory_bench.py                  # 1,000 / 50,000 / 100,000
    .venv/bin/python bench/memory_bench.py --ci             # small, for CI (a smoke run)

Everything runs against a fresh data directory and the real server (``manage.py serve``
on 127.0.0.1, port 0). The first ``--entries-small`` entries are seeded through the
served HTTP API; the rest (up to ``--entries-large`` and ``--search-entries``) directly
through the Memory services (``memory_remember``, one transaction each: the server's own
write path minus HTTP), which the output says. Then:

- remember: median (and p90) latency of ``--samples`` HTTP remembers at the small and at
  the large size, same run; target: large <= 1.5 x small;
- search: every query of ``--queries`` (>= 200) through HTTP at ``--search-entries``
  in ``fts`` mode, against the raw FTS5 candidate statements the backend issues for the
  same terms, their rows scored as memory.selectors scores them, run with Python's
  sqlite3 on the same file; target: median and p99 <= raw + 5 ms; then once each in the
  default mode (``auto``: hybrid once the vectors are ready), its median reported;
- rebuild_index at ``--search-entries``: entries per second and peak RSS of the process,
  once with nothing to repair (while searches run against the server) and once after the
  projection was wiped; then check_integrity on the result, which must pass.

Prints one table. Targets are reported, not enforced, unless ``--enforce`` is given: this
is a measurement, not a timed test.
"""

import argparse
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.corpus import memories  # noqa: E402
from bench.served import (  # noqa: E402
    QUERIES,
    RAW_MATCH_SQL,
    Client,
    Completed,
    ServerProcess,
    Store,
    Unanswered,
    load_queries,
    manage,
    markdown_table,
    open_store,
    percentile,
)

SCOPE = "bench:memory"
REBUILD_LINE = re.compile(r"memory: (\d+) active entries .* checked in ([0-9.]+)s")
SEARCH_LIMIT = 10


def measured(store: Store, *args: str) -> Completed:
    """One manage.py command in its own process: its output, wall time and peak RSS (the
    child's own, from wait4); RuntimeError if it failed."""
    done = manage(store, *args, timeout=24 * 3600)
    if done.returncode != 0:
        raise RuntimeError(
            f"manage.py {' '.join(args)} failed: {done.stderr[-2000:]}{done.stdout[-2000:]}"
        )
    return done


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.home = Path(args.data_dir or tempfile.mkdtemp(prefix="powercontext-bench-"))
        self.store = open_store("sqlite", self.home)
        # Django in this process reads the same settings as the server and the commands.
        environment = self.store.env()
        os.environ.clear()
        os.environ.update(environment)
        self.corpus = memories(args.seed)
        self.count = 0
        self.rows: list[tuple[str, str, str, str]] = []

    def row(self, metric: str, value: str, target: str = "", verdict: str = "") -> None:
        self.rows.append((metric, value, target, verdict))

    def remember_http(self, api: Client) -> float:
        kind, text = next(self.corpus)
        result, elapsed = api.timed(
            "/v1/memory/remember", {"scope_id": SCOPE, "kind": kind, "text": text}
        )
        assert result["entry"] is not None
        self.count += 1
        return elapsed

    def seed_services(self, until: int) -> float:
        from memory.services import memory_remember

        started = time.perf_counter()
        while self.count < until:
            kind, text = next(self.corpus)
            result = memory_remember(scope_id=SCOPE, kind=kind, text=text)
            assert result.entry is not None
            self.count += 1
        return time.perf_counter() - started

    def remember_samples(self, api: Client) -> list[float]:
        return [self.remember_http(api) for _ in range(self.args.samples)]

    def run(self) -> int:
        with ServerProcess(self.store) as server:
            api = server.client(timeout=60)
            try:
                import django

                django.setup()
                return self._measure(api, server)
            finally:
                api.close()

    def _measure(self, api: Client, server: ServerProcess) -> int:
        args = self.args
        started = time.perf_counter()
        while self.count < args.entries_small:
            self.remember_http(api)
        http_seed = time.perf_counter() - started
        small_at = self.count
        small = self.remember_samples(api)

        services_seconds = self.seed_services(args.entries_large)
        large_at = self.count
        large = self.remember_samples(api)
        services_seconds += self.seed_services(args.search_entries)
        services_seeded = self.count - small_at - 2 * args.samples
        self.row(
            "seeding",
            f"{small_at:,} via HTTP ({http_seed:.1f}s); {services_seeded:,} via services "
            f"({services_seeded / max(services_seconds, 1e-9):,.0f}/s)",
        )

        ratio = statistics.median(large) / statistics.median(small)
        self.row(
            f"remember median @ {small_at:,} (HTTP)",
            f"{statistics.median(small) * 1000:.2f} ms (p90 {percentile(small, 0.9) * 1000:.2f})",
        )
        self.row(
            f"remember median @ {large_at:,} (HTTP)",
            f"{statistics.median(large) * 1000:.2f} ms (p90 {percentile(large, 0.9) * 1000:.2f})",
        )
        ok_ratio = ratio <= 1.5
        self.row("remember large / small", f"{ratio:.2f}x", "<= 1.5x", _verdict(ok_ratio))

        ok_search = self._search(api)
        ok_rebuild = self._rebuild(server)
        self._print()
        passed = ok_ratio and ok_search and ok_rebuild
        return 0 if passed or not args.enforce else 1

    # -- search ------------------------------------------------------------------------

    def _search(self, api: Client) -> bool:
        from django.conf import settings

        from memory.models import MemoryTermStat
        from memory.search_index import MEMORY_INDEX
        from powercontext.search import analyzer
        from powercontext.search.policy import CANDIDATE_POOL, plan_search
        from powercontext.search.ranking import rank
        from powercontext.search.sqlite import match_expression
        from powercontext.search.term_counts import TermCounts

        queries = load_queries(self.args.queries)
        raw = sqlite3.connect(settings.DATABASES["default"]["NAME"])
        plans = []
        for query in queries:
            terms = analyzer.query_terms(query)
            # Term weights as memory.selectors takes them; the candidate statements and
            # the scoring of their rows are timed raw.
            frequencies, documents = TermCounts(MemoryTermStat).frequencies(
                scope_id=SCOPE, terms=terms
            )
            plans.append((query, plan_search(terms, frequencies, documents)))
        candidates_sql = RAW_MATCH_SQL.replace(" AS rank ", " AS rank, e.searchable_text ")
        pool = max(SEARCH_LIMIT, CANDIDATE_POOL)

        def raw_query(plan) -> tuple[list[str], float]:
            began = time.perf_counter()
            rows: list = []
            for group in (plan.match, plan.fallback):
                # As memory/search does: the common terms' candidates fill a short list.
                if group and len(rows) < SEARCH_LIMIT:
                    seen = {row[0] for row in rows}
                    found = raw.execute(
                        candidates_sql, [match_expression(MEMORY_INDEX, SCOPE, list(group)), pool]
                    ).fetchall()
                    rows += [row for row in found if row[0] not in seen]
            scored = rank(((row[0], row[3]) for row in rows), plan.weights)
            return [key for key, _ in scored[:SEARCH_LIMIT]], time.perf_counter() - began

        # Warm both paths (page cache, statement caches) before measuring. The lexical
        # mode is what the raw statements do; the default (auto: hybrid once the vectors
        # are ready) adds the query's embedding and the nearest rows, timed apart below.
        for query, expression in plans:
            api.ok(
                "/v1/memory/search",
                {"scope_id": SCOPE, "query": query, "limit": SEARCH_LIMIT, "mode": "fts"},
            )
            raw_query(expression)
        http_times, raw_times, mismatches, empty = [], [], 0, 0
        for _ in range(self.args.rounds):
            for query, expression in plans:
                body = {"scope_id": SCOPE, "query": query, "limit": SEARCH_LIMIT, "mode": "fts"}
                result, elapsed = api.timed("/v1/memory/search", body)
                ids, raw_elapsed = raw_query(expression)
                http_times.append(elapsed)
                raw_times.append(raw_elapsed)
                mismatches += [hit["citation"]["entry_id"] for hit in result["hits"]] != ids
                empty += not result["hits"]
        raw.close()
        auto_times, modes = [], set()
        for query, _ in plans:
            body = {"scope_id": SCOPE, "query": query, "limit": SEARCH_LIMIT}
            result, elapsed = api.timed("/v1/memory/search", body)
            auto_times.append(elapsed)
            modes.add(result["mode"])
        samples = len(http_times)
        medians = statistics.median(http_times), statistics.median(raw_times)
        p99s = percentile(http_times, 0.99), percentile(raw_times, 0.99)
        ok_median = medians[0] <= medians[1] + 0.005
        ok_p99 = p99s[0] <= p99s[1] + 0.005
        self.row(
            f"search @ {self.count:,}: queries",
            f"{len(plans)} x {self.args.rounds} rounds; {empty // self.args.rounds} without hits; "
            f"{mismatches} result mismatches vs raw",
        )
        self.row(
            "search median: HTTP / raw FTS5",  # raw: the candidate statements + scoring
            f"{medians[0] * 1000:.2f} / {medians[1] * 1000:.2f} ms",
            "HTTP <= raw + 5 ms",
            _verdict(ok_median),
        )
        self.row(
            "search p99: HTTP / raw FTS5",
            f"{p99s[0] * 1000:.2f} / {p99s[1] * 1000:.2f} ms (n={samples})",
            "HTTP <= raw + 5 ms",
            _verdict(ok_p99),
        )
        self.row(
            "search median, default mode (HTTP)",
            f"{statistics.median(auto_times) * 1000:.2f} ms, p99 "
            f"{percentile(auto_times, 0.99) * 1000:.2f} ms (ran: {', '.join(sorted(modes))})",
        )
        return ok_median and ok_p99 and mismatches == 0

    # -- rebuild_index and check_integrity ---------------------------------------------

    def _rebuild(self, server: ServerProcess) -> bool:
        # 1. Nothing to repair, while the server keeps answering searches.
        probe = SearchProbe(server, "run the tests before pushing")
        probe.start()
        done = measured(self.store, "rebuild_index")
        probe.stop()
        entries, seconds = _parse_rebuild(done.stdout)
        self.row(
            f"rebuild_index @ {entries:,}, up to date",
            f"{entries / seconds:,.0f} entries/s ({seconds:.1f}s; process {done.seconds:.1f}s)",
            "",
            "",
        )
        self.row("  peak RSS", f"{done.peak_rss_kib / 1024:.0f} MiB")
        self.row(
            "  searches served during it",
            f"{probe.count} (hit counts seen: {sorted(probe.hit_counts)}; "
            f"max {probe.slowest * 1000:.0f} ms)",
            "never fewer hits",
            _verdict(len(probe.hit_counts) == 1 and probe.errors == 0),
        )
        # 2. Every projection row lost: the whole projection and index are rewritten.
        from django.conf import settings

        with sqlite3.connect(settings.DATABASES["default"]["NAME"]) as raw:
            raw.execute("DELETE FROM memory_memoryactiveentry")
        done = measured(self.store, "rebuild_index")
        entries, seconds = _parse_rebuild(done.stdout)
        self.row(
            f"rebuild_index @ {entries:,}, projection wiped",
            f"{entries / seconds:,.0f} entries/s ({seconds:.1f}s; process {done.seconds:.1f}s)",
        )
        self.row("  peak RSS", f"{done.peak_rss_kib / 1024:.0f} MiB")
        # 3. The result (and the seeding) is consistent.
        done = measured(self.store, "check_integrity")
        self.row(
            f"check_integrity @ {self.count:,}",
            f"passed in {done.seconds:.1f}s, peak RSS {done.peak_rss_kib / 1024:.0f} MiB",
        )
        return len(probe.hit_counts) == 1 and probe.errors == 0

    def _print(self) -> None:
        """One Markdown table, ready to paste into an issue."""
        print(f"PowerContext memory benchmark (data: {self.home})")
        print(markdown_table(("measure", "value", "target", ""), self.rows))


class SearchProbe:
    """Searches the server in a loop on its own connection, recording hit counts."""

    def __init__(self, server: ServerProcess, query: str) -> None:
        self.server, self.query = server, query
        self.hit_counts: set[int] = set()
        self.count = self.errors = 0
        self.slowest = 0.0
        self.running = True
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        client = self.server.client(timeout=60)  # reconnects after a failure
        body = {"scope_id": SCOPE, "query": self.query, "limit": 50}
        while self.running:
            try:
                result, elapsed = client.timed("/v1/memory/search", body)
            except (RuntimeError, Unanswered):
                self.errors += 1
                continue
            self.count += 1
            self.hit_counts.add(len(result["hits"]))
            self.slowest = max(self.slowest, elapsed)
        client.close()

    def start(self) -> None:
        self.thread.start()
        while not self.count and self.thread.is_alive():
            time.sleep(0.01)

    def stop(self) -> None:
        self.running = False
        self.thread.join()


def _parse_rebuild(output: str) -> tuple[int, float]:
    match = REBUILD_LINE.search(output)
    if not match:
        raise RuntimeError(f"unexpected rebuild_index output: {output!r}")
    return int(match.group(1)), max(float(match.group(2)), 1e-9)


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries-small", type=int, default=1000)
    parser.add_argument("--entries-large", type=int, default=50000)
    parser.add_argument("--search-entries", type=int, default=100000)
    parser.add_argument("--samples", type=int, default=300, help="remembers timed per size")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the query set")
    parser.add_argument("--queries", type=Path, default=QUERIES)
    parser.add_argument("--seed", type=int, default=28, help="corpus seed")
    parser.add_argument("--data-dir", help="a fresh directory (default: a new temp dir)")
    parser.add_argument("--enforce", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--ci", action="store_true", help="a small configuration that finishes in seconds"
    )
    args = parser.parse_args(argv)
    if args.ci:
        args.entries_small, args.entries_large, args.search_entries = 100, 400, 600
        args.samples, args.rounds = 20, 1
    if not 0 < args.entries_small <= args.entries_large <= args.search_entries:
        parser.error("need 0 < --entries-small <= --entries-large <= --search-entries")
    return args


def main(argv: list[str] | None = None) -> int:
    return Bench(parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
