"""``manage.py createsuperuser``: Django's, after applying pending migrations.

Creating the admin before the first ``serve`` is a natural order, and on a fresh data
directory Django's own command fails on a missing table. This app is listed before
``django.contrib.auth`` in INSTALLED_APPS, so this command is the one Django runs.
"""

from django.contrib.auth.management.commands import createsuperuser

from powercontext.startup import migrate_if_needed


class Command(createsuperuser.Command):
    # Django's pre-flight warning about unapplied migrations: they are applied here.
    requires_migrations_checks = False

    def handle(self, *args, **options):
        migrate_if_needed(stderr=self.stderr)
        return super().handle(*args, **options)
