"""The full-text index over the active-entry projection, on SQLite (FTS5).

External-content FTS5 table kept in step by triggers, so every change to the projection
reaches the index in the same transaction. Tokens come from powercontext.analyzer already
split by spaces; unicode61 with "_" as a token character and diacritics kept splits that
text exactly at the spaces (marks are token characters, as in the analyzer, so words of
scripts with combining vowel signs stay whole). Term document frequencies live in
``MemoryTermStat`` (per scope, backend-neutral), not in an fts5vocab table.
"""

from django.db import migrations

from powercontext.migration_operations import RunSQLForEngine

FORWARD = [
    """
    CREATE VIRTUAL TABLE memory_activeentry_fts USING fts5(
        scope_token, searchable_text,
        content='memory_memoryactiveentry', content_rowid='id',
        tokenize="unicode61 remove_diacritics 0 categories 'L* N* Co M*' tokenchars '_'"
    )
    """,
    """
    CREATE TRIGGER memory_activeentry_fts_insert AFTER INSERT ON memory_memoryactiveentry BEGIN
        INSERT INTO memory_activeentry_fts(rowid, scope_token, searchable_text)
        VALUES (new.id, new.scope_token, new.searchable_text);
    END
    """,
    """
    CREATE TRIGGER memory_activeentry_fts_delete AFTER DELETE ON memory_memoryactiveentry BEGIN
        INSERT INTO memory_activeentry_fts(memory_activeentry_fts, rowid, scope_token, searchable_text)
        VALUES ('delete', old.id, old.scope_token, old.searchable_text);
    END
    """,
    """
    CREATE TRIGGER memory_activeentry_fts_update AFTER UPDATE ON memory_memoryactiveentry BEGIN
        INSERT INTO memory_activeentry_fts(memory_activeentry_fts, rowid, scope_token, searchable_text)
        VALUES ('delete', old.id, old.scope_token, old.searchable_text);
        INSERT INTO memory_activeentry_fts(rowid, scope_token, searchable_text)
        VALUES (new.id, new.scope_token, new.searchable_text);
    END
    """,
    "INSERT INTO memory_activeentry_fts(memory_activeentry_fts) VALUES ('rebuild')",
]

REVERSE = [
    "DROP TRIGGER IF EXISTS memory_activeentry_fts_update",
    "DROP TRIGGER IF EXISTS memory_activeentry_fts_delete",
    "DROP TRIGGER IF EXISTS memory_activeentry_fts_insert",
    "DROP TABLE IF EXISTS memory_activeentry_fts",
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [RunSQLForEngine("sqlite", FORWARD, REVERSE)]
