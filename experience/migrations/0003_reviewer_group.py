"""The reviewer group: may look at the review queue, Experience, Memory and the evidence
behind a proposal, and may decide candidates (approve, reject, revise).

Staff without ``experience.review_candidate`` can be given the view permissions alone:
they can look but not decide. Permissions are created here rather than left to
``post_migrate`` so the group is complete as soon as this migration has run.
"""

from django.contrib.auth.management import create_permissions
from django.contrib.contenttypes.management import create_contenttypes
from django.db import migrations

GROUP = "Experience reviewers"
PERMISSIONS = [
    ("experience", "review_candidate"),
    ("experience", "view_candidate"),
    ("experience", "view_candidateversion"),
    ("experience", "view_experience"),
    ("memory", "view_memoryentryversion"),
    ("memory", "view_memorymanifestrow"),
    ("powercontext", "view_artifactrevision"),
    ("powercontext", "view_artifacthead"),
    ("powercontext", "view_sourcerecord"),
]


def create_group(apps, schema_editor):
    for label in sorted({app for app, _ in PERMISSIONS}):
        app_config = apps.get_app_config(label)
        # The historical app registry has no models module; these helpers skip an app
        # without one.
        app_config.models_module = True
        create_contenttypes(app_config, apps=apps, verbosity=0, using=schema_editor.connection.alias)
        create_permissions(app_config, apps=apps, verbosity=0, using=schema_editor.connection.alias)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=GROUP)
    for app_label, codename in PERMISSIONS:
        group.permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )


def delete_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("experience", "0002_fulltext_sqlite"),
        ("memory", "0001_initial"),
        ("powercontext", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, delete_group)]
