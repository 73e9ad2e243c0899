"""The vector channel at scale: ``vector_match`` latency and ``rebuild`` throughput.

    .venv/bin/python bench/vector_bench.py                      # SQLite: 1k, 10k, 100k
    .venv/bin/python bench/vector_bench.py --sizes 10000 --seekdb   # embedded seekdb, 10k
    .venv/bin/python bench/vector_bench.py --ci                 # 1,000 entries (smoke)

For each size, a fresh database holds that many active Memory entries in one scope
(bench/corpus.py texts, written straight into the versions and the projection: the write
path is not what is measured here) with one vector each. The vectors are random unit
vectors, which cost the index exactly what real ones do; the queries are real prompts
(bench/prompts/prepare_prompts.json, or ``--prompts``: a coding-memory project's prompts as
users typed them) embedded by the model beforehand, so the figure is
``vector_match`` alone (nearest vectors, the join to the rows in the snapshot, the
version check), p50 and p95 over ``--queries`` queries. Then ``--rebuild`` entries lose
their vector and ``vectors.rebuild`` re-embeds them with the real model from their real
text: entries/s, the model's share, and the time spent comparing rows with vectors.
Then the split of a hybrid prepare over the same prompts, in process: the embedding of the
prompt's segments (one call), the lexical search, the nearest rows to any segment, in one search
(``hybrid.semantic_hits``), the fusion and reading of the hits, and
the whole ``prepare_context`` (the builder is what is left). Targets: vector_match p50 well
under 30 ms at 100k (prepare hybrid <= 60 ms), rebuild >= 200 entries/s.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCOPE = "bench:vectors"
PROMPTS = ROOT / "bench" / "prompts" / "prepare_prompts.json"


def setup_django(home: Path, url: str | None) -> None:
    os.environ["POWERCONTEXT_HOME"] = str(home)
    os.environ["DJANGO_SETTINGS_MODULE"] = "server.settings"
    if url:
        os.environ["POWERCONTEXT_DATABASE_URL"] = url
    else:
        os.environ.pop("POWERCONTEXT_DATABASE_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def wipe() -> None:
    from django.db import connection

    from memory.models import MemoryActiveEntry, MemoryEntryVersion, MemoryManifestRow
    from memory.search_index import MEMORY_INDEX
    from powercontext.models import ArtifactHead, ArtifactRevision, VectorIndexState
    from powercontext.search import vectors

    _, reverse = vectors.vector_engine().ddl(MEMORY_INDEX, 1)
    with connection.cursor() as cursor:
        for statement in reverse:
            cursor.execute(statement)
    VectorIndexState.objects.all().delete()
    MemoryActiveEntry.objects.all().delete()
    MemoryManifestRow.objects.all().delete()
    MemoryEntryVersion.objects.all().delete()
    ArtifactHead.objects.all().delete()
    ArtifactRevision.objects.all().delete()


def seed(entries: int) -> float:
    """``entries`` active entries with a random unit vector each, in chunks."""
    import numpy as np
    from django.db import transaction

    from bench.corpus import memories
    from memory.models import MemoryActiveEntry, MemoryEntryVersion
    from memory.search_index import MEMORY_INDEX
    from memory.services import content_hash, memory_remember, projection_values
    from powercontext import embedding
    from powercontext.search import vectors
    from powercontext.search.vectors import record as vector_record

    started = time.perf_counter()
    model = embedding.embedder()
    vector_record.create(MEMORY_INDEX, model, replace=True)
    # A head revision for the scope, so the searches run as they do on a real one (the
    # bulk-written rows below have no manifest rows: their hits are read, then refused).
    memory_remember(scope_id=SCOPE, kind="note", text="The bench scope's first entry.")
    engine = vectors.vector_engine()
    rng = np.random.default_rng(16)
    stream = memories(28)
    chunk = 2000
    for start in range(0, entries, chunk):
        size = min(chunk, entries - start)
        versions = []
        for _ in range(size):
            kind, text = next(stream)
            versions.append(
                MemoryEntryVersion(
                    entry_version_id="mem_ver_" + uuid.uuid4().hex,
                    scope_id=SCOPE,
                    entry_id="mem_ent_" + uuid.uuid4().hex,
                    version=1,
                    kind=kind,
                    text=text,
                    content_hash=content_hash(
                        kind=kind, text=text, source_refs=[], artifact_refs=[]
                    ),
                    created_in_revision=1,
                )
            )
        matrix = rng.standard_normal((size, model.dimension)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        with transaction.atomic():
            MemoryEntryVersion.objects.bulk_create(versions)
            MemoryActiveEntry.objects.bulk_create(
                [
                    MemoryActiveEntry(
                        scope_id=SCOPE, entry_id=version.entry_id, **projection_values(version)
                    )
                    for version in versions
                ]
            )
            rows = MemoryActiveEntry.objects.filter(
                entry_id__in=[version.entry_id for version in versions]
            ).values_list("pk", "entry_id", "entry_version_id")
            engine.upsert(
                MEMORY_INDEX,
                [
                    (vectors.VectorRow(key, SCOPE, entry, version, ""), matrix[offset])
                    for offset, (key, entry, version) in enumerate(rows)
                ],
            )
    return time.perf_counter() - started


def load_prompts(pattern: str | None) -> list[str]:
    """The prompts to prepare: bench/prompts/prepare_prompts.json by default, or those of
    the files ``pattern`` matches, each either of its form (``{"prompts": [text, ...]}``)
    or a coding-memory project's (``{"prompts": [{"prompt": text, ...}, ...]}``)."""
    files = sorted(glob.glob(pattern)) if pattern else [str(PROMPTS)]
    if not files:
        raise SystemExit(f"no prompt file matches {pattern}")
    prompts = []
    for name in files:
        for item in json.loads(Path(name).read_text(encoding="utf-8"))["prompts"]:
            prompts.append(item["prompt"] if isinstance(item, dict) else item)
    return prompts


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def time_matches(texts: list[str], limit: int) -> tuple[float, float, int]:
    from memory.search_index import MEMORY_INDEX
    from powercontext import embedding
    from powercontext.search import vectors
    from powercontext.snapshot import read_snapshot

    model = embedding.embedder()
    query_vectors = [model.embed_query(text) for text in texts]
    seconds, found = [], 0
    for _ in range(2):  # the first round warms the caches
        seconds = []
        for vector in query_vectors:
            began = time.perf_counter()
            with read_snapshot():
                hits = vectors.vector_match(
                    MEMORY_INDEX, scope_id=SCOPE, query_vectors=[vector], limit=limit
                )
            seconds.append(time.perf_counter() - began)
            found = len(hits)
    return statistics.median(seconds) * 1000, percentile(seconds, 0.95) * 1000, found


def time_prepare_split(texts: list[str]) -> dict[str, float]:
    """p50 ms of each part of a hybrid prepare, and of the whole operation (in process)."""
    from contextpack.application import prepare_context
    from contextpack.builder import MEMORY_WINDOW
    from memory.search_index import MEMORY_INDEX
    from memory.selectors import memory_head, memory_search_at
    from powercontext.search import analyzer, hybrid, token_states
    from powercontext.search.policy import CANDIDATE_POOL
    from powercontext.search.query import Query
    from powercontext.search.ranking import segmented, semantic_segments
    from powercontext.snapshot import read_snapshot

    parts: dict[str, list[float]] = {
        "embedding": [],
        "lexical": [],
        "vector": [],
        "fusion": [],
        "prepare": [],
        "prepare seen": [],
        # No token state kept (a restarted server): the focus embeds the window's entries.
        "prepare states cold": [],
    }
    for _ in range(2):  # the first round warms the caches
        for values in parts.values():
            values.clear()
        for text in texts:
            # Cold: the segments' vectors are kept between prompts (hybrid.query_vectors),
            # and a prompt whose segments were all seen costs "prepare seen" below.
            hybrid.forget_query_vectors()
            began = time.perf_counter()
            # As prepare embeds a prompt: each segment, in one call (no history here).
            query_vectors = hybrid.query_vectors(semantic_segments(segmented(text)))
            parts["embedding"].append(time.perf_counter() - began)
            segments = [list(dict.fromkeys(tokens)) for _, tokens in segmented(text)]
            words = Query(text, analyzer.query_terms(text), segments=segments)
            prompt = replace(words, vectors=query_vectors, pack=True)
            with read_snapshot():
                head = memory_head(scope_id=SCOPE)
                began = time.perf_counter()
                memory_search_at(scope_id=SCOPE, head=head, query=words, limit=MEMORY_WINDOW)
                lexical = time.perf_counter() - began
                began = time.perf_counter()
                hybrid.semantic_hits(
                    MEMORY_INDEX, scope_id=SCOPE, queries=query_vectors, limit=CANDIDATE_POOL
                )
                vector_seconds = time.perf_counter() - began
                began = time.perf_counter()
                memory_search_at(scope_id=SCOPE, head=head, query=prompt, limit=MEMORY_WINDOW)
                both = time.perf_counter() - began
            parts["lexical"].append(lexical)
            parts["vector"].append(vector_seconds)
            parts["fusion"].append(max(0.0, both - lexical - vector_seconds))
            hybrid.forget_query_vectors()
            began = time.perf_counter()
            prepare_context(scope_id=SCOPE, query=text, max_bytes=8000)
            parts["prepare"].append(time.perf_counter() - began)
            began = time.perf_counter()
            prepare_context(scope_id=SCOPE, query=text, max_bytes=8000)
            parts["prepare seen"].append(time.perf_counter() - began)
            hybrid.forget_query_vectors()
            token_states.forget()
            began = time.perf_counter()
            prepare_context(scope_id=SCOPE, query=text, max_bytes=8000)
            parts["prepare states cold"].append(time.perf_counter() - began)
    return {name: statistics.median(values) * 1000 for name, values in parts.items()}


def time_rebuild(count: int) -> tuple[int, float, str]:
    from memory.search_index import MEMORY_INDEX
    from powercontext.search import vectors

    engine = vectors.vector_engine()
    keys = sorted(engine.stored(MEMORY_INDEX, SCOPE))[:count]
    from django.db import transaction

    with transaction.atomic():
        engine.delete(MEMORY_INDEX, keys)
    report = vectors.rebuild(MEMORY_INDEX)
    return report.inserted, report.inserted / report.seconds, report.index


def create_database(url: str) -> None:
    """The database of a new seekdb's URL (its holder creates none)."""
    from urllib.parse import parse_qs, unquote, urlsplit

    import MySQLdb

    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    options: dict[str, object] = {"user": unquote(parts.username or "root")}
    if "unix_socket" in query:
        options["unix_socket"] = query["unix_socket"]
    else:
        options.update(host=parts.hostname or "127.0.0.1", port=parts.port or 2881)
    name = unquote(parts.path.lstrip("/"))
    connection = MySQLdb.connect(**options)
    try:
        connection.cursor().execute(f"CREATE DATABASE IF NOT EXISTS `{name}`")
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=30, help="prompts, the first N")
    parser.add_argument(
        "--prompts",
        help="prompt files (glob; default bench/prompts/prepare_prompts.json); a "
        "coding-memory project file's prompts are read too",
    )
    parser.add_argument("--limit", type=int, default=50, help="hits asked for (prepare: 50)")
    parser.add_argument("--rebuild", type=int, default=1000, help="entries to re-embed")
    parser.add_argument("--seekdb", action="store_true", help="run on a new embedded seekdb")
    parser.add_argument("--database-url", help="an existing database (oceanbase://...)")
    parser.add_argument("--ci", action="store_true", help="1,000 entries, 200 re-embedded")
    options = parser.parse_args()
    sizes = [1000] if options.ci else [int(size) for size in options.sizes.split(",")]
    rebuild_count = 200 if options.ci else options.rebuild
    prompts = load_prompts(options.prompts)[: options.queries]

    server = None
    url = options.database_url
    if options.seekdb and not url:
        from tests.oceanbase.seekdb import start_test_oceanbase

        server = start_test_oceanbase(database="vectorbench")
        url = server.url
        create_database(url)
    try:
        with tempfile.TemporaryDirectory(prefix="vector-bench-") as home:
            setup_django(Path(home), url)
            from django.db import connection

            engine = getattr(connection, "display_name", connection.vendor)
            print(f"# engine: {engine}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}")
            for size in sizes:
                wipe()
                seeded = seed(size)
                if os.environ.get("VECTOR_BENCH_PROFILE"):
                    import cProfile

                    cProfile.runctx(
                        "time_matches(prompts, options.limit)",
                        globals(),
                        locals(),
                        sort="cumulative",
                    )
                p50, p95, found = time_matches(prompts, options.limit)
                print(
                    f"vector_match {size:>7,} entries, one scope: p50 {p50:6.1f} ms, "
                    f"p95 {p95:6.1f} ms ({found} hits of {options.limit}; seeded in "
                    f"{seeded:.0f} s)",
                    flush=True,
                )
                split = time_prepare_split(prompts)
                print(
                    f"prepare    {size:>7,} entries, hybrid, p50 ms: "
                    + ", ".join(f"{name} {value:.1f}" for name, value in split.items())
                    + " (build = prepare - the rest; prepare seen: every segment embedded"
                    " before; prepare states cold: no token state kept, as after a restart)",
                    flush=True,
                )
            inserted, rate, detail = time_rebuild(min(rebuild_count, sizes[-1]))
            print(f"rebuild: {inserted} re-embedded at {rate:,.0f} entries/s ({detail})")
            print(f"# load at the end {os.getloadavg()[0]:.1f}")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
