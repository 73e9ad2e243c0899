"""``manage.py check_integrity``: verify the authoritative history and the derived state."""

from django.core.management.base import BaseCommand, CommandError

from powercontext import maintenance
from powercontext.startup import require_migrated

# Findings printed per check at the default verbosity; --verbosity 2 prints all.
_SHOWN_PER_CHECK = 20


class Command(BaseCommand):
    help = (
        "Verify the revision hash chains, that every manifest resolves to existing "
        "immutable versions, content hashes, and that every projection and full-text "
        "index equals what the authoritative tables say. Exits non-zero on any finding, "
        "on a scope no table has a row in, and on a database that is not migrated."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--scope",
            help="Check only this scope (the index check is global); an unknown one fails.",
        )

    def handle(self, *args, scope, verbosity, **options):
        require_migrated("check")
        if scope is not None and not maintenance.scope_has_data(scope):
            # Not a pass: a mistyped scope must not read as a healthy one.
            raise CommandError(f"Unknown scope {scope!r}: no table has a row in it.")
        results = maintenance.check(scope_id=scope)
        failures = sum(len(result.findings) for result in results)
        if verbosity >= 1:
            width = max(len(result.check) for result in results)
            for result in results:
                if result.skipped:
                    status = f"skipped: {result.skipped}"
                elif result.findings:
                    status = self.style.ERROR(f"{len(result.findings)} problem(s)")
                else:
                    status = self.style.SUCCESS("ok")
                self.stdout.write(f"{result.check:<{width}}  {result.checked:>9} checked  {status}")
                shown = result.findings if verbosity >= 2 else result.findings[:_SHOWN_PER_CHECK]
                for finding in shown:
                    self.stdout.write(f"  - {finding}")
                if len(shown) < len(result.findings):
                    hidden = len(result.findings) - len(shown)
                    self.stdout.write(f"  ... and {hidden} more (--verbosity 2 shows all)")
        if failures:
            # CommandError: message on stderr and exit status 1 (from the command line).
            raise CommandError(
                f"Integrity check failed: {failures} problem(s) found. "
                "Projection and index problems are repaired by `manage.py rebuild_index`; "
                "others mean the authoritative history was altered."
            )
        if verbosity >= 1:
            self.stdout.write(self.style.SUCCESS("Integrity check passed."))
