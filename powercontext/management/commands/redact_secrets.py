"""``manage.py redact_secrets``: find and redact secrets already stored."""

from django.core.management.base import BaseCommand, CommandError

from powercontext import maintenance
from powercontext.startup import require_migrated
from powercontext.stored_secrets import DEFAULT_REASON, erasing, redact_stored


class Command(BaseCommand):
    help = (
        "Find the secrets (API keys, tokens, passwords in assignments and URLs, private "
        "keys) and <private> spans stored before redaction existed: in captured prompts, "
        "Memory entry versions and change reasons, candidates and approved Experience. "
        "Each is replaced by its [redacted:<kind>] marker in place, recorded in the "
        "redaction log (so citations still resolve, to the redacted text, and "
        "check_integrity still verifies), and the derived indexes are rebuilt so none "
        "holds it. Rows that fail verification are left alone and listed; the command "
        "then exits non-zero."
    )

    def add_arguments(self, parser):
        parser.add_argument("--scope", help="Only this scope; an unknown one fails.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would be redacted; change nothing."
        )
        parser.add_argument("--reason", default=DEFAULT_REASON, help="Kept in the redaction log.")

    def handle(self, *args, scope, dry_run, reason, verbosity, **options):
        require_migrated("redact")
        if scope is not None and not maintenance.scope_has_data(scope):
            raise CommandError(f"Unknown scope {scope!r}: no table has a row in it.")
        if dry_run:
            reports = redact_stored(scope_id=scope, dry_run=True, reason=reason)
        else:
            with erasing():
                reports = redact_stored(scope_id=scope, reason=reason)
                if any(report.rows for report in reports):
                    # Projections, full-text rows, term counts and the dropped vectors.
                    maintenance.rebuild(scope_id=scope)
        verb = "would be redacted" if dry_run else "redacted"
        for report in reports:
            if verbosity >= 1:
                kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(report.kinds.items()))
                self.stdout.write(
                    f"{report.what}: {report.rows} row(s) {verb}" + (f" ({kinds})" if kinds else "")
                )
            if report.resealed and verbosity >= 1:
                self.stdout.write(
                    f"  {report.resealed} revision(s) redacted by an earlier release re-sealed "
                    "(hashed over what they hold, later revisions re-linked)"
                )
            for scope_id, subject in report.unverified:
                self.stdout.write(
                    self.style.ERROR(
                        f"  - {report.what}: [{scope_id}] {subject}: fails verification, left alone"
                    )
                )
        unverified = sum(len(report.unverified) for report in reports)
        if unverified:
            raise CommandError(
                f"{unverified} stored row(s) fail verification and were not redacted (ids "
                "above; `manage.py check_integrity` reports them): the history was altered "
                "outside the server."
            )
        if verbosity >= 1:
            total = sum(report.rows for report in reports)
            self.stdout.write(self.style.SUCCESS(f"{total} row(s) {verb}."))
