"""The reliability benchmarks' steps that need Django, run in a child process with the
server's environment (POWERCONTEXT_HOME, POWERCONTEXT_DATABASE_URL):

    python bench/django_tasks.py seed --scope S --entries N [--seed 28]
    python bench/django_tasks.py wipe-derived [--keep-index]

``seed`` applies the migrations, then remembers ``--entries`` texts of bench/corpus.py
through ``memory.services.memory_remember`` (one transaction each: the server's own
write path minus HTTP). ``wipe-derived`` destroys every derived Memory structure (the
active-entry projection, the per-scope term statistics and the full-text index itself:
FTS5 tables and triggers on SQLite, the FULLTEXT index on OceanBase) so that
``manage.py rebuild_index`` has to rebuild them from nothing; with ``--keep-index`` the
index's definition stays (its contents follow the deleted rows: empty). Each prints one
JSON line.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")


def seed(scope: str, entries: int, corpus_seed: int) -> dict:
    from django.core.management import call_command

    from bench.corpus import memories
    from memory.services import memory_remember

    started = time.perf_counter()
    call_command("migrate", interactive=False, verbosity=0)
    migrated = time.perf_counter() - started
    corpus = memories(corpus_seed)
    started = time.perf_counter()
    seeded = 0
    while seeded < entries:
        kind, text = next(corpus)
        if memory_remember(scope_id=scope, kind=kind, text=text).entry is not None:
            seeded += 1
    return {
        "seeded": seeded,
        "seconds": time.perf_counter() - started,
        "migrate_seconds": migrated,
    }


def wipe_derived(*, keep_index: bool) -> dict:
    from django.db import connection, transaction

    from memory.models import MemoryActiveEntry, MemoryTermStat

    quote = connection.ops.quote_name
    table = quote(MemoryActiveEntry._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            from importlib import import_module

            ddl = import_module("memory.migrations.0002_fulltext_sqlite")
            with transaction.atomic():
                if not keep_index:
                    for statement in ddl.REVERSE:  # triggers first, then the FTS5 tables
                        cursor.execute(statement)
                projection = MemoryActiveEntry.objects.all().delete()[0]
                terms = MemoryTermStat.objects.all().delete()[0]
            index = "FTS5 index emptied" if keep_index else "FTS5 tables and triggers dropped"
        else:
            from memory.search_index import MEMORY_INDEX
            from powercontext.search.oceanbase import fulltext_index

            # DDL commits on its own in MySQL mode; the deletes follow in one transaction.
            if not keep_index:
                cursor.execute(
                    f"ALTER TABLE {table} DROP INDEX {quote(fulltext_index(MEMORY_INDEX))}"
                )
            with transaction.atomic():
                projection = MemoryActiveEntry.objects.all().delete()[0]
                terms = MemoryTermStat.objects.all().delete()[0]
            index = "FULLTEXT index emptied" if keep_index else "FULLTEXT index dropped"
    return {"projection_rows": projection, "term_stats": terms, "index": index}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    tasks = parser.add_subparsers(dest="task", required=True)
    seeding = tasks.add_parser("seed")
    seeding.add_argument("--scope", required=True)
    seeding.add_argument("--entries", type=int, required=True)
    seeding.add_argument("--seed", type=int, default=28)
    wiping = tasks.add_parser("wipe-derived")
    wiping.add_argument("--keep-index", action="store_true", help="keep the index definition")
    args = parser.parse_args(argv)

    import django

    django.setup()
    if args.task == "seed":
        answer = seed(args.scope, args.entries, args.seed)
    else:
        answer = wipe_derived(keep_index=args.keep_index)
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
