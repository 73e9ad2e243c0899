"""The full-text index over the active-entry projection, on OceanBase.

A FULLTEXT index on the projection table itself, so it changes in the same transaction
as the rows. The space parser splits the analyzer's tokens exactly as FTS5 does on
SQLite; min_token_size=1 keeps one- and two-character tokens (CJK unigrams/bigrams).
"""

from django.db import migrations

from memory.search_index import MEMORY_INDEX
from powercontext.migration_operations import RunSQLForEngine

# The statements live with the engine, generic over declared indexes: this migration
# runs exactly what a rebuild recreates a missing index with (a test compares both with
# the statements first written here).
FORWARD, REVERSE = MEMORY_INDEX.ddl("oceanbase")


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_term_stats")]

    operations = [RunSQLForEngine("oceanbase", FORWARD, REVERSE)]
