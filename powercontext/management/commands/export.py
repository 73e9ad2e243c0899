"""``manage.py export``: every scope's (or the given scopes') authoritative history into
one verified archive file (docs/portability.md)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from powercontext.archive.export import ExportFailed, archive_export
from powercontext.archive.origin import KEY_VARIABLE, ArchiveKeyError, archive_key
from powercontext.management.commands.rebuild_index import ProgressBar
from powercontext.startup import require_migrated


class Command(BaseCommand):
    help = (
        "Write every scope's authoritative records (Artifact revisions with their hash "
        "chains, Memory entry versions and manifest rows, candidates and their versions, "
        "captured sources) to one archive, read from one consistent snapshot while the "
        "server keeps serving. Derived data (projections, indexes, vectors) is left out: "
        "`manage.py import` rebuilds it. Users and tokens are left out. Each row is "
        "checked as it is written: a history altered in the database stops the export."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--scope",
            dest="scopes",
            action="extend",
            nargs="+",
            metavar="S",
            help="Export only these scopes (repeatable); an unknown one fails.",
        )
        parser.add_argument(
            "--out", required=True, type=Path, help="The archive file (replaced if it exists)."
        )
        parser.add_argument(
            "--key-file",
            type=Path,
            help=f"Sign the archive with the key in this file (else ${KEY_VARIABLE}, if "
            "set): import with the same key then refuses an archive changed since.",
        )
        parser.add_argument(
            "--chunk-size",
            type=int,
            default=1000,
            help="Rows read per query (default 1000).",
        )

    def handle(self, *args, scopes, out, chunk_size, key_file, verbosity, **options):
        if chunk_size < 1:
            raise CommandError("--chunk-size must be at least 1.")
        try:
            key = archive_key(key_file)
        except ArchiveKeyError as error:
            raise CommandError(f"Export refused: {error}.") from None
        if not out.parent.is_dir():
            raise CommandError(f"No such directory: {out.parent}")
        require_migrated("export")
        bar = (
            ProgressBar(self.stdout, "export") if verbosity >= 1 and self.stdout.isatty() else None
        )
        try:
            report = archive_export(
                out=out,
                scope_ids=sorted(set(scopes)) if scopes else None,
                chunk_size=chunk_size,
                progress=(lambda _scope, done, total: bar(done, total)) if bar else None,
                key=key,
            )
        except ExportFailed as error:
            raise CommandError(f"Export failed, no archive written: {error}") from None
        except OSError as error:
            raise CommandError(f"Export failed, no archive written: {error}") from None
        finally:
            if bar:
                bar.close()
        if verbosity >= 1:
            rows = sum(report.rows.values())
            rate = rows / report.seconds if report.seconds else 0.0
            streams = ", ".join(f"{name} {count:,}" for name, count in report.rows.items())
            self.stdout.write(
                f"{report.scopes} scope(s), {rows:,} rows ({streams}) in "
                f"{report.seconds:.2f}s ({rate:,.0f} rows/s); {report.records:,} records, "
                f"{report.bytes:,} bytes."
            )
            self.stdout.write(
                self.style.SUCCESS(f"Archive written: {out} (sha256 {report.sha256})")
            )
            self.stdout.write(f"Root digest: {report.root}")
            self.stdout.write(
                "Signed: its manifest holds an HMAC under your key; import with the same "
                "key checks its origin."
                if report.signed
                else "Not signed: its digests show accidental damage only; sign it with "
                f"--key-file or ${KEY_VARIABLE} so that an import can check its origin."
            )
