"""A token naming what each index's stored vectors are (``VectorIndexState.vectors_token``).

Existing rows get one token between them; the index name tells them apart."""

from django.db import migrations, models

import powercontext.models


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0005_source_agent_columns"),
    ]

    operations = [
        migrations.AddField(
            model_name="vectorindexstate",
            name="vectors_token",
            field=models.CharField(default=powercontext.models.new_vectors_token, max_length=32),
        ),
    ]
