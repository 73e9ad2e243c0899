"""The full-text index over the active-entry projection, on OceanBase.

A FULLTEXT index on the projection table itself, so it changes in the same transaction
as the rows. The space parser splits the analyzer's tokens exactly as FTS5 does on
SQLite; min_token_size=1 keeps one- and two-character tokens (CJK unigrams/bigrams).
"""

from django.db import migrations

from powercontext.migration_operations import RunSQLForEngine

FORWARD = [
    "CREATE FULLTEXT INDEX `memory_activeentry_ft` ON `memory_memoryactiveentry` "
    "(`searchable_text`) WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1)",
]
REVERSE = ["DROP INDEX `memory_activeentry_ft` ON `memory_memoryactiveentry`"]


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_term_stats")]

    operations = [RunSQLForEngine("oceanbase", FORWARD, REVERSE)]
