"""Session-start marks (issue 38): the entries a reviewer chose for every session's start,
with who and when; the reviewer group may set them. Permissions are created here rather
than left to ``post_migrate`` so the group is complete as soon as this has run (as
``experience/0003_reviewer_group`` does)."""

import django.db.models.deletion
from django.contrib.auth.management import create_permissions
from django.contrib.contenttypes.management import create_contenttypes
from django.db import migrations, models

import powercontext.fields

GROUP = "Experience reviewers"


def grant(apps, schema_editor):
    app_config = apps.get_app_config("memory")
    app_config.models_module = True
    create_contenttypes(app_config, apps=apps, verbosity=0, using=schema_editor.connection.alias)
    create_permissions(app_config, apps=apps, verbosity=0, using=schema_editor.connection.alias)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group = Group.objects.filter(name=GROUP).first()
    if group is not None:
        group.permissions.add(
            Permission.objects.get(
                content_type__app_label="memory", codename="mark_session_start"
            ),
            Permission.objects.get(
                content_type__app_label="memory", codename="view_sessionstartmark"
            ),
        )


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0005_entry_version_content_index"),
        ("experience", "0003_reviewer_group"),
    ]

    operations = [
        migrations.CreateModel(
            name="SessionStartMark",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("scope_id", powercontext.fields.IdentityField(max_length=256)),
                ("marked_by", models.CharField(max_length=150)),
                ("marked_at", models.DateTimeField(auto_now_add=True)),
                (
                    "entry_version",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="session_mark",
                        to="memory.memoryentryversion",
                    ),
                ),
            ],
            options={
                "permissions": [
                    ("mark_session_start", "Can mark Memory entries for session start")
                ],
                "indexes": [
                    models.Index(fields=["scope_id", "marked_at"], name="session_mark_scope_idx")
                ],
            },
        ),
        migrations.RunPython(grant, migrations.RunPython.noop),
    ]
