"""``manage.py purge_sources``: erase the content of captured prompts, keeping the journal."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from powercontext import maintenance
from powercontext.sources import source_purge
from powercontext.startup import require_migrated
from powercontext.stored_secrets import erasing


class Command(BaseCommand):
    help = (
        "Purge captured prompts: their content and metadata are erased, their place in "
        "the scope's journal (position, source id, the commitment the hash chain holds) "
        "is kept, and the redaction log records when and why, so check_integrity still "
        "verifies the journal. Either --scope S --position N (repeatable) or "
        "--older-than DAYS (every scope, or --scope)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--scope", help="Only this scope (required with --position).")
        parser.add_argument(
            "--position",
            type=int,
            action="append",
            default=[],
            help="A journal position to purge; repeat for more.",
        )
        parser.add_argument(
            "--older-than",
            type=int,
            metavar="DAYS",
            help="Purge every prompt captured more than DAYS days ago (0: all of them).",
        )
        parser.add_argument("--reason", default="", help="Kept in the redaction log.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would be purged; change nothing."
        )

    def handle(self, *args, scope, position, older_than, reason, dry_run, verbosity, **options):
        if bool(position) == (older_than is not None):
            raise CommandError("Say what to purge: --position (with --scope) or --older-than.")
        if position and scope is None:
            raise CommandError("--position needs --scope: positions count per scope.")
        if older_than is not None and older_than < 0:
            raise CommandError("--older-than must not be negative.")
        require_migrated("purge")
        if scope is not None and not maintenance.scope_has_data(scope):
            raise CommandError(f"Unknown scope {scope!r}: no table has a row in it.")
        before = None
        if older_than is not None:
            before = timezone.now() - timedelta(days=older_than)
            reason = reason or f"older than {older_than} days"
        with erasing(indexes=False):
            done = source_purge(
                reason=reason or "purge_sources",
                scope_id=scope,
                before=before,
                positions=position,
                dry_run=dry_run,
            )
        if verbosity >= 1:
            verb = "would be purged" if dry_run else "purged"
            self.stdout.write(f"{done.entries} captured source(s) {verb}.")
        if done.entries and verbosity >= 1:
            # An erasure reaches this database only: copies made before it still hold
            # what it erased, and nothing here records where they went.
            self.stdout.write(
                "Exports (manage.py export) and backups (manage.py backup, or any copy of "
                "the data directory) taken before this purge still hold the purged text: "
                "they are outside this command's reach. Delete them, or replace them with "
                "ones taken now."
            )
