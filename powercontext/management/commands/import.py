"""``manage.py import``: an archive's scopes into this database, every digest and chain
verified before anything is written (docs/portability.md)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from powercontext.archive.format import ArchiveRefused
from powercontext.archive.importer import ImportFailed, ImportReport, archive_import
from powercontext.archive.origin import KEY_VARIABLE, ArchiveKeyError, archive_key
from powercontext.archive.reader import describe_scope
from powercontext.maintenance import RebuildReport
from powercontext.management.commands.rebuild_index import ProgressBar
from powercontext.startup import migrate_if_needed, unapplied_migrations

_SHOWN_FINDINGS = 20


class Command(BaseCommand):
    help = (
        "Import an archive written by `manage.py export`. Reads it twice: first verifies "
        "every line's digest, every hash chain, version chain, content hash and journal "
        "position and the closing manifest, writing nothing (a damaged archive is "
        "refused naming its first bad line); then writes each scope in one transaction, "
        "rebuilds its derived data and checks it before committing. Imports into empty "
        "scopes only. Migrates a fresh database first."
    )

    def add_arguments(self, parser):
        parser.add_argument("archive", type=Path, help="The archive file.")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Verify the archive and the target and say what would be written; write nothing.",
        )
        parser.add_argument(
            "--key-file",
            type=Path,
            help=f"Check the archive's origin with the key in this file (else ${KEY_VARIABLE}, "
            "if set): an archive not signed with it, or changed since, is refused.",
        )

    def handle(self, *args, archive, dry_run, key_file, verbosity, **options):
        if not archive.is_file():
            raise CommandError(f"No such archive: {archive}")
        try:
            key = archive_key(key_file)
        except ArchiveKeyError as error:
            raise CommandError(f"Archive refused, nothing written: {error}.") from None
        if dry_run and unapplied_migrations():
            raise CommandError(
                "The database is not migrated: run `manage.py migrate` before a dry run "
                "(an import migrates it first)."
            )
        if not dry_run:
            migrate_if_needed(stderr=self.stderr)
        bars: dict[str, ProgressBar] = {}
        tty = verbosity >= 1 and self.stdout.isatty()

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in bars:
                for bar in bars.values():
                    bar.close()
                bars[phase] = ProgressBar(self.stdout, phase)
            bars[phase](done, total or done)

        try:
            report = archive_import(
                path=archive, dry_run=dry_run, progress=progress if tty else None, key=key
            )
        except ArchiveRefused as error:
            raise CommandError(f"Archive refused, nothing written: {error}") from None
        except OSError as error:
            raise CommandError(f"Cannot read the archive: {error}") from None
        except ImportFailed as error:
            committed = (
                f" Scopes imported before it: {', '.join(map(describe_scope, error.imported))}."
                if error.imported
                else " Nothing was committed."
            )
            raise CommandError(f"Import failed: {error}.{committed}") from None
        finally:
            for bar in bars.values():
                bar.close()
        if verbosity >= 1:
            self._print(report, verbosity)
        findings = [finding for result in report.checks for finding in result.findings]
        if findings:
            raise CommandError(
                f"The imported scopes were committed, but the integrity check reports "
                f"{len(findings)} problem(s) (above): run `manage.py check_integrity`."
            )

    def _print(self, report: ImportReport, verbosity: int) -> None:
        summary = report.summary
        source = summary.header.get("source", {}).get("engine", "?")
        self.stdout.write(
            f"Verified {summary.records:,} records ({summary.bytes:,} bytes, format version "
            f"{summary.header['version']}, exported from {source} at "
            f"{summary.header.get('created_at')}) in {report.verify_seconds:.2f}s: every "
            "digest and chain holds."
        )
        self.stdout.write(f"sha256 {summary.file_sha256}; root digest {summary.root}.")
        self.stdout.write(
            "Origin checked: signed with your key, unchanged since."
            if report.origin_checked
            else "Integrity checked, not origin: the digests catch accidental damage, but "
            "anyone can recompute them after an edit. Import with --key-file (or "
            f"${KEY_VARIABLE}) to check an archive signed at export."
        )
        verb = "Would import" if report.dry_run else "Imported"
        self.stdout.write(f"{verb} {len(report.scopes)} scope(s):")
        for scope_id in report.scopes:
            counts = ", ".join(
                f"{name} {count:,}" for name, count in summary.rows[scope_id].items() if count
            )
            self.stdout.write(f"  {describe_scope(scope_id)}: {counts or 'no rows'}")
        if report.dry_run:
            self.stdout.write(
                self.style.SUCCESS("Dry run: every scope is empty here; nothing was written.")
            )
            return
        if report.redacted:
            kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(report.redacted.items()))
            self.stdout.write(
                f"Redacted {sum(report.redacted.values())} secret(s) the archive held, as "
                f"every write does ({kinds}); the redaction log records each."
            )
        rows = report.rows()
        rate = rows / report.write_seconds if report.write_seconds else 0.0
        self.stdout.write(
            f"Wrote {rows:,} rows, rebuilt and checked each scope in "
            f"{report.write_seconds:.2f}s ({rate:,.0f} rows/s); vectors in "
            f"{report.vector_seconds:.2f}s."
        )
        for scope_id, rebuild in _vector_rebuilds(report):
            self.stdout.write(f"  {describe_scope(scope_id)} {rebuild.family}: {rebuild.index}")
        for result in report.checks:
            if result.findings:
                self.stdout.write(
                    self.style.ERROR(f"{result.check}: {len(result.findings)} problem(s)")
                )
                for finding in result.findings[:_SHOWN_FINDINGS]:
                    self.stdout.write(f"  - {finding}")
        if not any(result.findings for result in report.checks):
            self.stdout.write(self.style.SUCCESS("Import complete: integrity check passed."))


def _vector_rebuilds(report: ImportReport) -> list[tuple[str, RebuildReport]]:
    """Each vector rebuild with its scope: the importer embeds scope by scope, every
    vector index in turn (``vectors.rebuild_all``), and a report names no scope."""
    rebuilds = [rebuild for rebuild in report.rebuilds if rebuild.family.endswith("vectors")]
    if not report.scopes or len(rebuilds) % len(report.scopes):
        return [("?", rebuild) for rebuild in rebuilds]
    per_scope = len(rebuilds) // len(report.scopes)
    return [
        (report.scopes[position // per_scope], rebuild) for position, rebuild in enumerate(rebuilds)
    ]
