"""``manage.py rebuild_index``: rebuild every derived projection and full-text index."""

import time

from django.core.management.base import BaseCommand, CommandError

from powercontext import maintenance
from powercontext.reports import Progress
from powercontext.startup import require_migrated

_BAR_WIDTH = 30
# Redrawing more often than this only costs time.
_REDRAW_SECONDS = 0.1


class ProgressBar:
    """A one-line progress bar drawn with carriage returns. Hand-written (a dozen lines)
    rather than tqdm, so serving needs no extra dependency."""

    def __init__(self, out, label: str) -> None:
        self.out, self.label = out, label
        self.started = self.drawn = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and self.shown and now - self.drawn < _REDRAW_SECONDS:
            return
        self.drawn, self.shown = now, True
        share = done / total if total else 1.0
        filled = round(share * _BAR_WIDTH)
        rate = done / max(now - self.started, 1e-9)
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        line = f"\r{self.label} [{bar}] {done}/{total} ({rate:,.0f}/s)"
        self.out.write(line, ending="")
        self.out.flush()

    def close(self) -> None:
        if self.shown:
            self.out.write("")  # end the bar's line


class Command(BaseCommand):
    help = (
        "Rebuild every derived projection and full-text index from the authoritative "
        "tables, in one transaction per family: readers keep seeing the old index until "
        "it commits. Idempotent; safe while the server is serving (writers wait). Rows "
        "whose content fails verification are left out of every projection and index and "
        "listed by id; the command then exits non-zero."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--scope",
            help="Rebuild only this scope's derived rows, of every family; an unknown one fails.",
        )
        parser.add_argument(
            "--chunk-size",
            type=int,
            default=1000,
            help="Entries compared and fixed per step (default 1000).",
        )

    def handle(self, *args, scope, chunk_size, verbosity, **options):
        if chunk_size < 1:
            raise CommandError("--chunk-size must be at least 1.")
        require_migrated("rebuild")
        if scope is not None and not maintenance.scope_has_data(scope):
            # Not "complete": a mistyped scope must not read as a repaired one.
            raise CommandError(f"Unknown scope {scope!r}: no table has a row in it.")
        bars: list[ProgressBar] = []

        def progress(family: str) -> Progress | None:
            if verbosity < 1 or not self.stdout.isatty():
                return None
            bars.append(ProgressBar(self.stdout, family))
            return bars[-1]

        try:
            reports = maintenance.rebuild(scope_id=scope, chunk_size=chunk_size, progress=progress)
        finally:
            for bar in bars:
                bar.close()
        unverified = [
            (report.family, scope_id, subject)
            for report in reports
            for scope_id, subject in report.unverified
        ]
        if verbosity >= 1:
            self._print(reports, unverified)
        if unverified:
            # Committed: everything that verifies is rebuilt. The rest needs a person.
            raise CommandError(
                f"{len(unverified)} authoritative row(s) fail verification and were left out "
                "of every projection and index (ids above; `manage.py check_integrity` "
                "reports them): the history was altered outside the server."
            )

    def _print(self, reports, unverified) -> None:
        for report in reports:
            rate = report.entries / report.seconds if report.seconds else 0.0
            derived = "".join(
                f"; {name}: {count} row(s) repaired" for name, count in report.derived.items()
            )
            self.stdout.write(
                f"{report.family}: {report.entries} {report.unit} in {report.scopes} "
                f"scope(s) checked in {report.seconds:.2f}s ({rate:,.0f}/s); projection: "
                f"{report.inserted} inserted, {report.updated} updated, "
                f"{report.deleted} deleted{derived}; full-text index: {report.index}."
            )
        for family, scope_id, subject in unverified:
            self.stdout.write(
                self.style.ERROR(
                    f"  - {family}: [{scope_id}] {subject}: fails verification, left out"
                )
            )
        changed = sum(report.changed for report in reports)
        repaired = (
            f"{changed} projection row(s) repaired." if changed else "projections were up to date."
        )
        if unverified:
            self.stdout.write(self.style.ERROR(f"Rebuild left rows out: {repaired}"))
        else:
            self.stdout.write(self.style.SUCCESS(f"Rebuild complete: {repaired}"))
