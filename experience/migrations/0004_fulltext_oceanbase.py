"""The full-text index over approved Experience, on OceanBase (RFC 0028 amendment:
"OceanBase FULLTEXT indexes the generic Artifact-head field").

A FULLTEXT index on ``powercontext_artifacthead.searchable_text`` itself, so it changes
in the same transaction as the head; searches filter ``family = 'experience'`` and the
scope. Other families' heads carry an empty searchable_text and never match. Same parser
settings as Memory's index (``memory.0004``).
"""

from django.db import migrations

from experience.search_index import EXPERIENCE_INDEX
from powercontext.migration_operations import RunSQLForEngine

# The statements live with the engine, generic over declared indexes: this migration
# runs exactly what a rebuild recreates a missing index with (a test compares both with
# the statements first written here).
FORWARD, REVERSE = EXPERIENCE_INDEX.ddl("oceanbase")


class Migration(migrations.Migration):
    dependencies = [("experience", "0003_reviewer_group"), ("powercontext", "0001_initial")]

    operations = [RunSQLForEngine("oceanbase", FORWARD, REVERSE)]
