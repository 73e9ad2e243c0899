"""The full-text index over approved Experience, on SQLite (FTS5).

One row per ``experience`` head of the generic kernel (rowid = the head's id), holding
the scope token, the head's analyzed searchable_text, and the artifact id and revision it
describes (unindexed: the revision lets search notice a stale row). Only approval writes
a head, so pending and rejected candidates can never be in it.

Why not an external-content table kept by triggers, like Memory's: the content would be
``powercontext_artifacthead``, another app's table, filtered by family through a view.
Django rebuilds a SQLite table to alter it (create, copy, drop, rename), which silently
drops triggers on it and fails outright on a view over it, so one later migration of the
kernel would break or quietly stop this index. The approval service writes the row in
its own transaction instead (``experience.search_index``: kept by writes), and
``rebuild_index`` rewrites the table from the heads. Term statistics for term selection
live in ``ExperienceTermStat`` (per scope, backend-neutral), not in an fts5vocab table.
"""

from django.db import migrations

from experience.search_index import EXPERIENCE_INDEX
from powercontext.migration_operations import RunSQLForEngine

# The statements live with the engine, generic over declared indexes: this migration
# runs exactly what a rebuild recreates a missing index with (a test compares both with
# the statements first written here).
FORWARD, REVERSE = EXPERIENCE_INDEX.ddl("sqlite")


class Migration(migrations.Migration):
    dependencies = [("experience", "0001_initial"), ("powercontext", "0001_initial")]

    operations = [RunSQLForEngine("sqlite", FORWARD, REVERSE)]
