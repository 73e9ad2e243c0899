"""Chain the source journal, and start the redaction log.

Each captured source gets a salt, a commitment (a salted digest of its payload) and its
link in its scope's hash chain (``powercontext.sources``); the rows already there have
them computed here, scope by scope in position order, so an existing database verifies
from the start. ``payload_hash`` may now be empty (a purged entry). ``RedactionRecord``
holds one record per erasure (``powercontext.redaction_log``).

The hashes are written out here rather than imported: a migration must compute what it
computed the day it was written, whatever the code becomes.
"""

import hashlib
import secrets

import rfc8785
from django.db import migrations, models

import powercontext.fields

GENESIS_HASH = "0" * 64
COMMITMENT_DOMAIN = b"powercontext.source-commitment.v1\x00"
ENTRY_DOMAIN = b"powercontext.source-entry.v1\x00"


def chain_existing(apps, schema_editor):
    records = apps.get_model("powercontext", "SourceRecord").objects.using(
        schema_editor.connection.alias
    )
    changed = []
    scope, previous = None, GENESIS_HASH
    for record in records.order_by("scope_id", "position").iterator(chunk_size=500):
        if record.scope_id != scope:
            scope, previous = record.scope_id, GENESIS_HASH
        salt = secrets.token_hex(32)
        commitment = hashlib.sha256(
            COMMITMENT_DOMAIN + bytes.fromhex(salt) + record.payload.encode("utf-8")
        ).hexdigest()
        fields = [previous, record.source_type, record.source_id, record.position, commitment]
        own = hashlib.sha256(ENTRY_DOMAIN + rfc8785.dumps(fields)).hexdigest()
        record.salt, record.commitment = salt, commitment
        record.previous_hash, record.entry_hash = previous, own
        changed.append(record)
        previous = own
        if len(changed) == 500:
            records.bulk_update(changed, ["salt", "commitment", "previous_hash", "entry_hash"])
            changed = []
    if changed:
        records.bulk_update(changed, ["salt", "commitment", "previous_hash", "entry_hash"])


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0003_vector_index_state_layout"),
    ]

    operations = [
        migrations.AddField(
            model_name="sourcerecord",
            name="commitment",
            field=models.CharField(default="", max_length=64),
        ),
        migrations.AddField(
            model_name="sourcerecord",
            name="entry_hash",
            field=models.CharField(default="", max_length=64),
        ),
        migrations.AddField(
            model_name="sourcerecord",
            name="previous_hash",
            field=models.CharField(default="", max_length=64),
        ),
        migrations.AddField(
            model_name="sourcerecord",
            name="salt",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AlterField(
            model_name="sourcerecord",
            name="payload_hash",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.RunPython(chain_existing, migrations.RunPython.noop),
        migrations.CreateModel(
            name="RedactionRecord",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("scope_id", powercontext.fields.IdentityField(max_length=256)),
                ("seq", models.PositiveBigIntegerField()),
                ("target", powercontext.fields.IdentityField(max_length=32)),
                ("target_key", powercontext.fields.IdentityField(max_length=256)),
                ("action", models.CharField(max_length=16)),
                ("reason", models.CharField(max_length=512)),
                ("kinds", models.TextField(default="{}")),
                ("digest", models.CharField(blank=True, max_length=64)),
                ("created_at", models.DateTimeField()),
                ("previous_hash", models.CharField(max_length=64)),
                ("record_hash", models.CharField(max_length=64)),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["scope_id", "target", "target_key"], name="redaction_target_idx"
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("scope_id", "seq"), name="redaction_seq_unique")
                ],
            },
        ),
    ]
