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
its own transaction instead (``SqliteSearchBackend.experience_index``), and
``rebuild_index`` rewrites the table from the heads. Term statistics for term selection
live in ``ExperienceTermStat`` (per scope, backend-neutral), not in an fts5vocab table.
"""

from django.db import migrations

from powercontext.migration_operations import RunSQLForEngine

FORWARD = [
    """
    CREATE VIRTUAL TABLE experience_head_fts USING fts5(
        scope_token, searchable_text, artifact_id UNINDEXED, revision UNINDEXED,
        tokenize="unicode61 remove_diacritics 0 categories 'L* N* Co M*' tokenchars '_'"
    )
    """,
]

REVERSE = [
    "DROP TABLE IF EXISTS experience_head_fts",
]


class Migration(migrations.Migration):
    dependencies = [("experience", "0001_initial"), ("powercontext", "0001_initial")]

    operations = [RunSQLForEngine("sqlite", FORWARD, REVERSE)]
