"""The same citations on the other side: a history carried from SQLite to the suite's
engine and back to SQLite reads byte for byte the same at every step (every citation,
the ``changes`` feed, the entries at the head, candidates, Experience, captured prompts
and Context Packs for the same prompts; for the 10,000 entries, packs on the SQLite
sides only: see that test), and every archive along the way holds the same records.

In the ``POWERCONTEXT_TEST_DATABASE=oceanbase`` run this is SQLite -> OceanBase ->
SQLite; in the SQLite run the same test goes SQLite -> SQLite -> SQLite, so the
cross-engine trip runs once in CI without a second OceanBase start. The SQLite sides
are data directories of their own, driven through ``manage.py`` in subprocesses
(``archive_sides.SqliteSide``).
"""

import io
import json
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection

from tests.conftest import engine
from tests.powercontext.archive.archive_history import HOSTILE_SCOPE, PLAIN_SCOPE, probe
from tests.powercontext.archive.archive_sides import SqliteSide

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCOPES = sorted([HOSTILE_SCOPE, PLAIN_SCOPE])
BIG_SCOPE = "scope-10k"
BIG = 10_000


def records(path: Path) -> list[dict]:
    return [json.loads(line)["record"] for line in path.read_bytes().splitlines()]


def same_records(*paths: Path) -> None:
    """The archives hold the same records; their headers differ only in when and from
    which engine they were written."""
    first, *others = [records(path) for path in paths]
    for other in others:
        assert other[1:-1] == first[1:-1]
        unstamped = {**first[0], "created_at": "", "source": {}}
        assert {**other[0], "created_at": "", "source": {}} == unstamped


def quiet(command: str, *args, **options) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out, stderr=io.StringIO(), **options)
    return out.getvalue()


def read_here(api, scopes: list[str], *, every: int = 1) -> dict:
    # Through JSON, as the subprocesses' answers come.
    return json.loads(json.dumps(probe(api, scopes, every=every), sort_keys=True))


def without_packs(read: dict) -> dict:
    return {scope: {**found, "packs": None} for scope, found in read.items()}


def trip(
    tmp_path: Path,
    api,
    seed: str,
    scopes: list[str],
    *,
    embeddings: bool = True,
    every: int = 1,
    packs_across_engines: bool = True,
) -> None:
    """Seed a SQLite side with ``seed`` (Python run in its ``manage.py shell``), carry it
    to the suite's engine and on to a second SQLite side, reading it at each step. The
    packs on another engine are compared only with ``packs_across_engines``."""
    first, second, third = (tmp_path / name for name in ("1.jsonl", "2.jsonl", "3.jsonl"))
    source = SqliteSide(tmp_path / "source", embeddings=embeddings)
    _, before = source.session(
        "call_command('migrate', verbosity=0)\n" + seed, scopes, every=every, export=first
    )

    output = quiet("import", first)
    assert "Import complete: integrity check passed." in output
    here = read_here(api, scopes, every=every)
    if packs_across_engines or engine() == "sqlite":
        assert here == before
    else:
        assert without_packs(here) == without_packs(before)
    quiet("export", out=second)

    back = SqliteSide(tmp_path / "back", embeddings=embeddings)
    output, after = back.session(
        f"call_command('import', Path({str(second)!r}))", scopes, every=every, export=third
    )
    assert "Import complete: integrity check passed." in output
    assert after == before
    same_records(first, second, third)


def test_a_hostile_history_reads_the_same_after_a_round_trip(tmp_path, api):
    seed = (
        "from experience import services\n"
        "from tests.powercontext.archive.archive_history import hostile_history\n"
        "issued = services.reviewer_token_issue(username='rita', create=True)\n"
        "hostile_history(ApiClient(Client(HTTP_HOST='localhost')),\n"
        "    ApiClient(Client(HTTP_HOST='localhost'), token=issued.token))\n"
    )
    trip(tmp_path, api, seed, SCOPES)


def test_a_scope_of_ten_thousand_entries_reads_the_same_after_a_round_trip(
    tmp_path, api, monkeypatch, request
):
    """Lexical only on every side: embedding 10,000 entries three times would take
    minutes; the vectors' trip is the hostile history's. Every citation of a revise,
    retire or reactivation is resolved, and every 100th of an add; every entry at the
    head is listed, every revision's changes read.

    The packs are compared on the SQLite sides only: where more entries hold a prompt's
    words than a search takes candidates (hundreds of this corpus's entries say "run" and
    "migrate"), each engine's full-text index proposes its own best-scored ones before
    the shared ranking, and OceanBase's picks differ from FTS5's among equals."""
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    request.addfinalizer(lambda: empty(BIG_SCOPE))
    seed = (
        "from tests.powercontext.archive.archive_history import bulk_memory\n"
        f"bulk_memory({BIG_SCOPE!r}, {BIG})\n"
    )
    trip(tmp_path, api, seed, [BIG_SCOPE], embeddings=False, every=100, packs_across_engines=False)


def empty(scope_id: str) -> None:
    """Empty the tables the 10,000 entries are in before the test's closing flush, which
    deletes each table in one statement: OceanBase cuts that at its 10 s statement
    timeout, and deleting the rows in chunks took it two minutes (the full-text index
    follows every row). TRUNCATE is DDL there, immediate; the transactional test began
    on empty tables, so they hold only its own rows. SQLite's flush is quick as it is."""
    if connection.vendor != "mysql":
        return
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
        try:
            for label in (
                "memory.MemoryTermStat",
                "memory.MemoryActiveEntry",
                "memory.MemoryManifestRow",
                "memory.MemoryEntryVersion",
                "powercontext.ArtifactHead",
                "powercontext.ArtifactRevision",
            ):
                table = apps.get_model(label)._meta.db_table
                cursor.execute(f"TRUNCATE TABLE {quote(table)}")
        finally:
            cursor.execute("SET FOREIGN_KEY_CHECKS = 1")
