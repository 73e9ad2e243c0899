"""Record the layout of each vector table beside its model.

SQLite's vector table changed shape (a sign-bit column searched first, the float vector
rescoring it): a table recorded before this migration keeps layout "" and the channel
reports "layout changed" until ``rebuild_index`` recreates it. OceanBase's table did not
change, so its records get the layout it has always had and stay ready.
"""

from django.db import migrations, models

from powercontext.migration_operations import engine_of

OCEANBASE_LAYOUT = "vector hnsw"  # OceanBaseVectors.layout when this migration was made


def record_oceanbase_layout(apps, schema_editor):
    if engine_of(schema_editor.connection) != "oceanbase":
        return
    state = apps.get_model("powercontext", "VectorIndexState")
    state.objects.using(schema_editor.connection.alias).update(layout=OCEANBASE_LAYOUT)


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0002_vector_index_state"),
    ]

    operations = [
        migrations.AddField(
            model_name="vectorindexstate",
            name="layout",
            field=models.CharField(default="", max_length=64),
        ),
        migrations.RunPython(record_oceanbase_layout, migrations.RunPython.noop),
    ]
