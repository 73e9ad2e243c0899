"""The full-text index over approved Experience, on OceanBase (RFC 0028 amendment:
"OceanBase FULLTEXT indexes the generic Artifact-head field").

A FULLTEXT index on ``powercontext_artifacthead.searchable_text`` itself, so it changes
in the same transaction as the head; searches filter ``family = 'experience'`` and the
scope. Other families' heads carry an empty searchable_text and never match. Same parser
settings as Memory's index (``memory.0004``).
"""

from django.db import migrations

from powercontext.migration_operations import RunSQLForEngine

FORWARD = [
    "CREATE FULLTEXT INDEX `artifact_head_searchable_ft` ON `powercontext_artifacthead` "
    "(`searchable_text`) WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1)",
]
REVERSE = ["DROP INDEX `artifact_head_searchable_ft` ON `powercontext_artifacthead`"]


class Migration(migrations.Migration):
    dependencies = [("experience", "0003_reviewer_group"), ("powercontext", "0001_initial")]

    operations = [RunSQLForEngine("oceanbase", FORWARD, REVERSE)]
