"""``manage.py rebuild_index`` and the start-up index check."""

import io
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memory.models import MemoryActiveEntry
from memory.rebuild import memory_rebuild
from memory.search_index import MEMORY_INDEX
from powercontext import startup
from powercontext.maintenance import FAMILIES
from powercontext.search import search_engine
from tests.conftest import sqlite_only

pytestmark = pytest.mark.django_db

REPO_ROOT = Path(__file__).resolve().parents[2]
FTS5 = sqlite_only("drops, damages or reads the FTS5 tables, or needs WAL snapshots")


def rebuild(*args, verbosity=1, stdout=None):
    out = stdout if stdout is not None else io.StringIO()
    call_command("rebuild_index", *args, verbosity=verbosity, stdout=out)
    return out.getvalue()


def search_texts(api, query, scope_id="scope-a", mode="auto"):
    body = {"scope_id": scope_id, "query": query, "limit": 50, "mode": mode}
    result = api.ok("/v1/memory/search", body)
    return sorted(hit["text"] for hit in result["hits"])


def projection():
    return sorted(
        MemoryActiveEntry.objects.values_list(
            "scope_id",
            "entry_id",
            "entry_version_id",
            "kind_text_hash",
            "scope_token",
            "searchable_text",
        )
    )


@pytest.fixture
def seeded(remember, api):
    entries = [
        remember(f"Run make test-{index} before pushing the lint target")["entry"]
        for index in range(5)
    ]
    other = remember("Deploys use the blue green pipeline", scope_id="scope-b")["entry"]
    revised = api.ok(
        "/v1/memory/entries/revise",
        {
            "scope_id": "scope-a",
            "citation": entries[0]["citation"],
            "kind": "note",
            "text": "Run make check before pushing the lint target",
        },
    )["entry"]
    api.ok("/v1/memory/entries/retire", {"scope_id": "scope-a", "citation": entries[1]["citation"]})
    return {"entries": entries, "revised": revised, "other": other}


def test_rebuild_of_a_healthy_database_changes_nothing_and_says_what_it_did(seeded, api):
    before = projection()
    output = rebuild()
    assert projection() == before
    assert "memory: 5 active entries in 2 scope(s) checked" in output
    assert (
        "0 inserted, 0 updated, 0 deleted; term statistics: 0 row(s) repaired; "
        "full-text index: rebuilt." in output
    )
    assert "projections were up to date" in output
    assert search_texts(api, "pushing") == sorted(
        ["Run make check before pushing the lint target"]
        + [f"Run make test-{index} before pushing the lint target" for index in (2, 3, 4)]
    )


def test_rebuild_restores_a_wiped_projection(seeded, api):
    before = projection()
    MemoryActiveEntry.objects.all().delete()
    assert search_texts(api, "pushing") == []
    output = rebuild()
    assert "5 inserted, 0 updated, 0 deleted" in output
    assert sorted(row[1:] for row in projection()) == sorted(row[1:] for row in before)
    assert len(search_texts(api, "pushing")) == 4
    assert search_texts(api, "blue", scope_id="scope-b") == ["Deploys use the blue green pipeline"]


def test_rebuild_repairs_stale_wrong_version_and_extra_rows(seeded, api):
    before = projection()
    entries, revised = seeded["entries"], seeded["revised"]
    # Stale text (the index follows the projection, so search would find the wrong thing).
    MemoryActiveEntry.objects.filter(entry_id=entries[2]["citation"]["entry_id"]).update(
        searchable_text="bogus words", scope_token="s" + "0" * 32
    )
    # Pointing at the superseded version.
    MemoryActiveEntry.objects.filter(entry_id=revised["citation"]["entry_id"]).update(
        entry_version_id=entries[0]["citation"]["entry_version_id"]
    )
    # A retired entry back in the projection.
    retired = entries[1]["citation"]
    MemoryActiveEntry.objects.create(
        scope_id="scope-a",
        entry_id=retired["entry_id"],
        entry_version_id=retired["entry_version_id"],
        kind_text_hash="x",
        scope_token="x",
        searchable_text="pushing",
    )
    assert search_texts(api, "bogus") == []  # scope token changed: the row left the scope
    output = rebuild()
    assert "0 inserted, 2 updated, 1 deleted" in output
    assert projection() == before
    assert len(search_texts(api, "pushing")) == 4


def test_rebuild_is_idempotent(seeded):
    MemoryActiveEntry.objects.filter(scope_id="scope-b").delete()
    rebuild()
    after_first = projection()
    output = rebuild()
    assert projection() == after_first
    assert "0 inserted, 0 updated, 0 deleted" in output


def test_rebuild_with_scope_touches_only_that_scope(seeded):
    MemoryActiveEntry.objects.all().delete()
    output = rebuild("--scope", "scope-b")
    assert "memory: 1 active entries in 1 scope(s)" in output
    assert "1 inserted" in output
    assert "full-text index: consistent, kept in step with the projection" in output
    assert {row[0] for row in projection()} == {"scope-b"}


@FTS5
def test_rebuild_recreates_a_dropped_fulltext_table(seeded, api):
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE memory_activeentry_fts")
    assert "memory_activeentry_fts" in search_engine().status(MEMORY_INDEX)
    output = rebuild()
    assert (
        "full-text index: recreated (missing full-text object(s): memory_activeentry_fts)" in output
    )
    assert search_engine().status(MEMORY_INDEX) is None
    assert len(search_texts(api, "pushing")) == 4
    # The recreated triggers keep following writes.
    api.ok("/v1/memory/remember", {"scope_id": "scope-a", "kind": "note", "text": "pushing again"})
    assert len(search_texts(api, "pushing")) == 5


@FTS5
def test_rebuild_recreates_a_dropped_trigger(seeded, api):
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER memory_activeentry_fts_insert")
    assert "memory_activeentry_fts_insert" in search_engine().status(MEMORY_INDEX)
    rebuild("--scope", "scope-a")
    assert search_engine().status(MEMORY_INDEX) is None
    api.ok("/v1/memory/remember", {"scope_id": "scope-a", "kind": "note", "text": "pushing again"})
    assert len(search_texts(api, "pushing")) == 5


def _drop_from_index(entry_id):
    """Remove one row from the FTS5 index only: the index drifts from its table."""
    row = MemoryActiveEntry.objects.get(entry_id=entry_id)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memory_activeentry_fts(memory_activeentry_fts, rowid, scope_token, "
            "searchable_text) VALUES ('delete', %s, %s, %s)",
            [row.id, row.scope_token, row.searchable_text],
        )


@FTS5
def test_rebuild_repairs_an_index_that_drifted_from_its_table(seeded, api):
    _drop_from_index(seeded["entries"][2]["citation"]["entry_id"])
    # By its words alone: the semantic channel still finds the dropped row (it holds the
    # word), so only the lexical search shows the drift.
    assert len(search_texts(api, "pushing", mode="fts")) == 3
    assert search_engine().integrity(MEMORY_INDEX) is not None
    rebuild()
    assert search_engine().integrity(MEMORY_INDEX) is None
    assert len(search_texts(api, "pushing")) == 4


@FTS5
def test_scoped_rebuild_repairs_a_drifted_index_as_a_whole(seeded, api):
    _drop_from_index(seeded["entries"][2]["citation"]["entry_id"])
    output = rebuild("--scope", "scope-b")
    assert "full-text index: rebuilt (FTS5 integrity-check failed" in output
    assert len(search_texts(api, "pushing")) == 4


@pytest.mark.parametrize("chunk_size", ["1", "2", "1000"])
def test_chunk_size_does_not_change_the_result(seeded, chunk_size):
    expected = projection()
    MemoryActiveEntry.objects.filter(entry_id=seeded["entries"][3]["citation"]["entry_id"]).delete()
    MemoryActiveEntry.objects.filter(entry_id=seeded["entries"][4]["citation"]["entry_id"]).update(
        searchable_text="stale"
    )
    rebuild("--chunk-size", chunk_size)
    assert projection() == expected


def test_chunk_size_must_be_positive(db):
    with pytest.raises(CommandError, match="--chunk-size"):
        rebuild("--chunk-size", "0")


def test_verbosity_zero_prints_nothing(seeded):
    MemoryActiveEntry.objects.all().delete()
    assert rebuild(verbosity=0) == ""
    assert len(projection()) == 5


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal(seeded):
    assert "\r" not in rebuild("--chunk-size", "2")
    output = rebuild("--chunk-size", "2", stdout=FakeTerminal())
    assert "\rmemory [" in output
    assert "5/5" in output


def test_progress_reports_every_chunk(seeded):
    calls = []
    report = memory_rebuild(chunk_size=2, progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (0, 5)
    assert calls[-1] == (5, 5)
    assert report.entries == 5


# -- start-up ------------------------------------------------------------------------


@FTS5
def test_startup_rebuilds_a_missing_index(seeded, api, caplog):
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE memory_activeentry_fts")
    with caplog.at_level(logging.INFO, logger="powercontext.startup"):
        startup.ensure_indexes()
    assert search_engine().status(MEMORY_INDEX) is None
    assert len(search_texts(api, "pushing")) == 4
    assert "rebuilding" in caplog.text


def test_startup_leaves_a_present_index_alone(seeded, django_assert_max_num_queries):
    # One status probe per family, nothing else.
    with django_assert_max_num_queries(len(FAMILIES)):
        startup.ensure_indexes()


# -- readers during a rebuild (needs a file-backed database: runs in a subprocess) ----

READER_SCRIPT = textwrap.dedent(
    """
    import os, sqlite3, sys
    import django
    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from memory.models import MemoryActiveEntry
    from memory.rebuild import memory_rebuild
    from memory.services import memory_remember
    from powercontext.search import scope_token

    ENTRIES = 300
    call_command("migrate", verbosity=0)
    for index in range(ENTRIES):
        memory_remember(scope_id="s", kind="note", text=f"alpha entry number {index}")
    # Force a full rewrite: every row wrong, so the rebuild changes all of them.
    MemoryActiveEntry.objects.update(searchable_text="stale")
    path = connection.settings_dict["NAME"]
    match = f'scope_token : "{scope_token("s")}"'

    def snapshot(reader):
        rows = reader.execute(
            "SELECT searchable_text FROM memory_activeentry_fts "
            "WHERE memory_activeentry_fts MATCH ?",
            [match],
        ).fetchall()
        alpha = reader.execute(
            "SELECT count(*) FROM memory_activeentry_fts WHERE memory_activeentry_fts MATCH ?",
            [match + ' AND searchable_text : "alpha"'],
        ).fetchone()[0]
        return len(rows), alpha

    # One reader holds a snapshot from before the rebuild for its whole duration; a fresh
    # reader looks after every chunk.
    held = sqlite3.connect(path)
    held.execute("BEGIN")
    assert snapshot(held) == (ENTRIES, 0)
    seen = []

    def progress(done, total):
        fresh = sqlite3.connect(path)
        seen.append(snapshot(fresh))
        fresh.close()
        seen.append(snapshot(held))

    memory_rebuild(chunk_size=25, progress=progress)
    assert len(seen) >= 2 * (ENTRIES // 25), seen
    assert set(seen) == {(ENTRIES, 0)}, set(seen)
    held.rollback()
    assert snapshot(held) == (ENTRIES, ENTRIES)
    print("OK", len(seen))
    """
)


@FTS5
def test_readers_see_the_old_complete_index_until_the_rebuild_commits(tmp_path):
    env = {
        **os.environ,
        "POWERCONTEXT_HOME": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "server.settings",
    }
    env.pop("POWERCONTEXT_DATABASE_URL", None)
    completed = subprocess.run(
        [sys.executable, "-c", READER_SCRIPT],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.startswith("OK")
    assert sqlite3.connect(tmp_path / "powercontext.sqlite3").execute(
        "PRAGMA journal_mode"
    ).fetchone() == ("wal",)


def test_every_registered_family_is_rebuilt_and_reported(seeded):
    output = rebuild()
    for family in FAMILIES:
        assert f"\n{family.name}: " in "\n" + output
    assert "experience: 0 approved heads" in output
