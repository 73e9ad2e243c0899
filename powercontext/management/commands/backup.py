"""``manage.py backup``: a consistent copy of the running SQLite database, taken while
the server serves (SQLite's online backup API; docs/portability.md, "Backup")."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from powercontext.backup import BackupFailed, BackupUnsupported, sqlite_backup
from powercontext.startup import require_migrated


class Command(BaseCommand):
    help = (
        "Copy the running SQLite database to one file, as of one instant, while the "
        "server keeps serving (SQLite's online backup API): history, indexes and vectors, "
        "so a restore is a file copy. The copy is checked (PRAGMA integrity_check) before "
        "it replaces FILE. On OceanBase, use `manage.py export`."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--out", required=True, type=Path, help="The backup file (replaced if it exists)."
        )

    def handle(self, *args, out, verbosity, **options):
        if not out.parent.is_dir():
            raise CommandError(f"No such directory: {out.parent}")
        require_migrated("back up")
        try:
            report = sqlite_backup(out=out)
        except BackupUnsupported as error:
            raise CommandError(str(error)) from None
        except (BackupFailed, OSError) as error:
            raise CommandError(f"Backup failed, nothing written: {error}") from None
        if verbosity >= 1:
            self.stdout.write(
                f"Copied {report.source} ({report.bytes:,} bytes, {report.pages:,} pages) "
                f"in {report.seconds:.2f}s; the copy passes PRAGMA integrity_check."
            )
            self.stdout.write(
                self.style.SUCCESS(
                    f"Backup written: {out}. To restore it, stop the server, copy it over "
                    "the database file and delete that file's -wal and -shm files "
                    "(docs/portability.md)."
                )
            )
