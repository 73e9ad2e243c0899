"""The agent kind and a session digest of each captured source, in indexed columns.

The home page counts the last hour's prompts per agent, session and project. It used to
read and decode the newest 2,000 payloads (up to 200,000 characters each) on every
visit (issue 27); it now reads these columns through one covering index. Captures made
before this migration get theirs here, from their payload's metadata, a batch at a time.
"""

import json

from django.db import migrations, models

from powercontext.sources import capture_agent

BATCH = 200


def fill_agent_columns(apps, schema_editor):
    source = apps.get_model("powercontext", "SourceRecord")
    rows = source.objects.using(schema_editor.connection.alias)
    last = 0
    while True:
        # By key ranges rather than one open cursor: each batch is updated before the
        # next is read, and at most a batch of payloads is held at a time.
        batch = list(
            rows.filter(pk__gt=last).order_by("pk").values_list("pk", "payload")[:BATCH]
        )
        if not batch:
            return
        updated = []
        for pk, payload in batch:
            try:
                metadata = json.loads(payload).get("metadata")
            except (ValueError, AttributeError):
                metadata = None
            updated.append(source(pk=pk, **capture_agent(metadata)))
        rows.bulk_update(updated, ["agent", "session_key"])
        last = batch[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0004_source_journal_chain"),
    ]

    operations = [
        migrations.AddField(
            model_name="sourcerecord",
            name="agent",
            field=models.CharField(default="", max_length=16),
        ),
        migrations.AddField(
            model_name="sourcerecord",
            name="session_key",
            field=models.CharField(default="", max_length=16),
        ),
        migrations.RunPython(fill_agent_columns, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="sourcerecord",
            index=models.Index(
                fields=["source_type", "created_at", "agent", "session_key", "scope_id"],
                name="source_recent_agents",
            ),
        ),
    ]
