"""The full-text index over the active-entry projection, on SQLite (FTS5).

External-content FTS5 table kept in step by triggers, so every change to the projection
reaches the index in the same transaction. Tokens come from powercontext.search.analyzer already
split by spaces; unicode61 with "_" as a token character and diacritics kept splits that
text exactly at the spaces (marks are token characters, as in the analyzer, so words of
scripts with combining vowel signs stay whole). Term document frequencies live in
``MemoryTermStat`` (per scope, backend-neutral), not in an fts5vocab table.
"""

from django.db import migrations

from memory.search_index import MEMORY_INDEX
from powercontext.migration_operations import RunSQLForEngine

# The statements live with the engine, generic over declared indexes: this migration
# runs exactly what a rebuild recreates a missing index with (a test compares both with
# the statements first written here).
FORWARD, REVERSE = MEMORY_INDEX.ddl("sqlite")


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [RunSQLForEngine("sqlite", FORWARD, REVERSE)]
