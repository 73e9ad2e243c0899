"""``archive_import``: an archive's scopes into this database, verified first.

Two passes over the file (docs/portability.md, "Import"):

1. **Verify**, writing nothing: every line's digest, the grammar, each record's columns
   and types, every stream's order, hash chains, version chains, content hashes and
   journal positions, each stream's sha256, the closing manifest and the whole file's
   sha256. Then the target: this server's streams equal the archive's, every scope of
   the archive is empty here, the full-text indexes exist.
2. **Write**, one transaction per scope: the scope's rows, its derived state rebuilt by
   each family's registered rebuild, then the kernel's and the families' integrity
   checks, all before the commit; any finding rolls the scope back. The chain digest at
   the scope's last line must equal the first pass's, so the bytes written are the bytes
   verified even if the file changed in between.

Then the vectors are embedded (``vectors.rebuild_all``, outside any transaction: the
model's time must not hold the write lock) and checked.
"""

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import DatabaseError, connection, transaction

from powercontext import maintenance, reports
from powercontext.archive import format as archive_format
from powercontext.archive.format import ArchiveRefused
from powercontext.archive.reader import (
    Reader,
    Row,
    ScopeEnd,
    ScopeStart,
    StreamEnd,
    Summary,
    describe_scope,
)
from powercontext.archive.streams import Column, Stream, reasons_left_out

# (phase, done, total): phases are "verify" (records), "write" (rows), then one
# "<index> vectors" per vector index (rows embedded).
ImportProgress = Callable[[str, int, int], None]

_BATCH = 500
# Findings an ImportFailed message lists before "and N more".
_SHOWN = 10


class ImportFailed(Exception):
    """The import stopped after the verifying pass; ``imported`` lists the scopes
    committed before it stopped (none when it stopped in the first scope)."""

    def __init__(self, message: str, *, imported: list[str]) -> None:
        self.imported = imported
        super().__init__(message)


@dataclass
class ImportReport:
    path: Path
    dry_run: bool
    summary: Summary
    imported: list[str] = field(default_factory=list)
    verify_seconds: float = 0.0
    write_seconds: float = 0.0
    vector_seconds: float = 0.0
    rebuilds: list[reports.RebuildReport] = field(default_factory=list)
    checks: list[reports.CheckResult] = field(default_factory=list)
    # Whether the manifest's HMAC was checked with the user's key (else: integrity only).
    origin_checked: bool = False
    # The secrets the import redacted, as every other write does (issue 38), by kind.
    redacted: dict[str, int] = field(default_factory=dict)

    @property
    def scopes(self) -> list[str]:
        scopes: list[str] = self.summary.header["scopes"]
        return scopes

    def rows(self, stream: str | None = None) -> int:
        return sum(
            count
            for by_stream in self.summary.rows.values()
            for name, count in by_stream.items()
            if stream is None or name == stream
        )


@dataclass
class _Verified:
    summary: Summary
    # The chain digest at each scope's last line.
    ends: dict[str, bytes]


def archive_verify(
    path: Path, *, progress: ImportProgress | None = None, key: bytes | None = None
) -> _Verified:
    """The verifying pass: raises ArchiveRefused naming the first bad line, and (with
    ``key``) when the manifest's HMAC is missing or not that key's."""
    ends: dict[str, bytes] = {}
    with path.open("rb") as file:
        reader = Reader(file, strict=True)
        for event in reader.events():
            if isinstance(event, ScopeEnd):
                ends[event.scope_id] = event.digest
            if progress and isinstance(event, Row | ScopeEnd) and event.line % 1000 == 0:
                progress("verify", event.line, 0)
    assert reader.summary is not None  # noqa: S101 - set by a complete read
    if progress:
        progress("verify", reader.summary.records, reader.summary.records)
    if key is not None:
        summary = reader.summary
        if summary.hmac is None:
            raise ArchiveRefused(
                "the archive is not signed (its manifest has no hmac), so its origin "
                "cannot be checked with this key; nothing was written"
            )
        if not archive_format.hmac_matches(key, summary.content_sha256, summary.hmac):
            raise ArchiveRefused(
                "the archive's hmac is not this key's: it was changed and resealed after "
                "it was signed, or signed with another key; nothing was written"
            )
    return _Verified(reader.summary, ends)


def archive_import(
    *,
    path: Path,
    dry_run: bool = False,
    progress: ImportProgress | None = None,
    key: bytes | None = None,
) -> ImportReport:
    """Verify the archive at ``path``, then (unless ``dry_run``) import every scope it
    holds into this database, which must hold none of them.

    Raises ArchiveRefused (the archive is damaged or not for this server, a scope is
    not empty here: nothing was written) and ImportFailed (a scope's rows failed a check
    once written, or the file changed under the import: that scope was rolled back, the
    scopes in ``imported`` were committed).
    """
    started = time.monotonic()
    verified = archive_verify(path, progress=progress, key=key)
    report = ImportReport(path, dry_run, verified.summary)
    report.origin_checked = key is not None
    report.verify_seconds = time.monotonic() - started
    occupied = [scope for scope in report.scopes if maintenance.scope_has_data(scope)]
    if occupied:
        shown = ", ".join(describe_scope(scope) for scope in occupied[:_SHOWN])
        raise ArchiveRefused(
            f"{len(occupied)} scope(s) of the archive already hold data in this database "
            f"({shown}): import writes into empty scopes only. Nothing was written."
        )
    missing = maintenance.missing_indexes()
    if missing:
        raise ArchiveRefused(
            "the full-text indexes are missing here "
            f"({'; '.join(f'{name}: {why}' for name, why in missing.items())}): run "
            "`manage.py rebuild_index` first. Nothing was written."
        )
    if dry_run:
        return report
    started = time.monotonic()
    total = report.rows()
    with path.open("rb") as file:
        events = Reader(file, strict=False).events()
        done = 0
        for event in events:
            if isinstance(event, ScopeStart):
                done = _scope(event, events, verified, report, done, total, progress)
                report.imported.append(event.scope_id)
    report.write_seconds = time.monotonic() - started
    started = time.monotonic()
    from powercontext.search import vectors

    for scope_id in report.scopes:
        report.rebuilds.extend(vectors.rebuild_all(scope_id=scope_id, progress=_phases(progress)))
    report.vector_seconds = time.monotonic() - started
    # Everything else was checked inside each scope's transaction, on what it committed.
    for scope_id in report.scopes:
        report.checks.extend(vectors.check_all(scope_id=scope_id))
    return report


def _phases(
    progress: ImportProgress | None,
) -> Callable[[str], reports.Progress | None] | None:
    """The vector rebuild's ``progress(index)`` as phases of the import's progress."""
    if progress is None:
        return None

    def phase(name: str) -> reports.Progress:
        return lambda done, total: progress(name, done, total)

    return phase


def _scope(
    start: ScopeStart,
    events: Iterator[Any],
    verified: _Verified,
    report: ImportReport,
    done: int,
    total: int,
    progress: ImportProgress | None,
) -> int:
    """Write one scope's rows, rebuild and check it, in one transaction."""
    scope_id = start.scope_id
    try:
        with transaction.atomic():
            if maintenance.scope_has_data(scope_id):
                raise ImportFailed(
                    f"scope {describe_scope(scope_id)} received data while importing: rolled back",
                    imported=list(report.imported),
                )
            inserters: dict[str, _Inserter] = {}
            for event in events:
                if isinstance(event, Row):
                    inserter = inserters.get(event.stream.name)
                    if inserter is None:
                        inserter = inserters[event.stream.name] = _Inserter(
                            event.stream, event.columns
                        )
                    inserter.add(event.values)
                    done += 1
                    if progress and done % 1000 == 0:
                        progress("write", done, total)
                elif isinstance(event, StreamEnd):
                    if event.stream.name in inserters:
                        inserters[event.stream.name].flush()
                elif isinstance(event, ScopeEnd):
                    if event.digest != verified.ends.get(scope_id):
                        raise ImportFailed(
                            f"line {event.line}: the archive changed since it was verified; "
                            f"scope {describe_scope(scope_id)} rolled back",
                            imported=list(report.imported),
                        )
                    break
            if progress:
                progress("write", done, total)
            for family in maintenance.families():
                report.rebuilds.extend(
                    maintenance.rebuild(scope_id=scope_id, family_name=family.name)
                )
            _redact(scope_id, report)
            findings = [
                finding for result in _authoritative_checks(scope_id) for finding in result.findings
            ]
            if findings:
                listed = "; ".join(str(finding) for finding in findings[:_SHOWN])
                more = f" and {len(findings) - _SHOWN} more" if len(findings) > _SHOWN else ""
                raise ImportFailed(
                    f"scope {describe_scope(scope_id)} fails its integrity check once "
                    f"written ({listed}{more}): rolled back",
                    imported=list(report.imported),
                )
    except ArchiveRefused as error:
        raise ImportFailed(
            f"{error} (scope {describe_scope(scope_id)} rolled back)",
            imported=list(report.imported),
        ) from error
    except DatabaseError as error:
        # A row the archive's own checks cannot refuse (one that needs the other rows
        # of the scope, as a manifest row naming another entry's version) breaks a
        # constraint of the database or of a family's rebuild.
        raise ImportFailed(
            f"scope {describe_scope(scope_id)} could not be written "
            f"({type(error).__name__}: {error}): rolled back",
            imported=list(report.imported),
        ) from error
    return done


def _redact(scope_id: str, report: ImportReport) -> None:
    """Redact the scope's secrets and ``<private>`` spans as every write does: an old or
    crafted archive would otherwise land them in Memory and packs. The same redaction as
    ``manage.py redact_secrets`` (each change with its redaction record, the chains still
    verifying), after the rebuild, whose derived state it brings in step; a row it cannot
    verify fails the scope's check below."""
    from powercontext.stored_secrets import redact_stored

    for found in redact_stored(scope_id=scope_id, reason="import"):
        for kind, count in found.kinds.items():
            report.redacted[kind] = report.redacted.get(kind, 0) + count
        if found.unverified:
            raise ImportFailed(
                f"scope {describe_scope(scope_id)}: {found.what} rows fail verification "
                "and could not be redacted: rolled back",
                imported=list(report.imported),
            )


def _authoritative_checks(scope_id: str) -> list[reports.CheckResult]:
    """The kernel's chain check and every family's checks of one scope, inside the
    import's transaction (the vector checks run after the vectors are embedded)."""
    results = [maintenance.artifact_chain_check(scope_id=scope_id)]
    for family in maintenance.families():
        results.extend(family.load("check")(scope_id=scope_id))
    return results


class _Inserter:
    """Batched INSERTs of one stream's rows, with every value as the archive gives it.

    Plain INSERT statements rather than the ORM's create: ``auto_now`` and
    ``auto_now_add`` fields must keep the archive's times, not take the import's. A
    left-out field takes its model default (NULL for a user, "" for derived text); an
    auto-numbered key is left to the database.
    """

    def __init__(self, stream: Stream, columns: list[Column]) -> None:
        model = stream.model_class()
        reasons = reasons_left_out(stream)
        defaulted = [
            model_field
            for model_field in model._meta.concrete_fields
            if model_field.name in reasons
            and not (
                model_field.primary_key and model_field.get_internal_type().endswith("AutoField")
            )
        ]
        self.carried = [(column.name, column.to_database()) for column in columns]
        self.defaults = [
            model_field.get_db_prep_save(model_field.get_default(), connection)
            for model_field in defaulted
        ]
        quote = connection.ops.quote_name
        names = [column.field.column for column in columns] + [
            model_field.column for model_field in defaulted
        ]
        self.sql = (
            f"INSERT INTO {quote(model._meta.db_table)} "  # noqa: S608 - quoted names and placeholders only
            f"({', '.join(quote(name) for name in names)}) "
            f"VALUES ({', '.join(['%s'] * len(names))})"
        )
        self.batch: list[list[Any]] = []

    def add(self, values: dict[str, Any]) -> None:
        self.batch.append([prepare(values[name]) for name, prepare in self.carried] + self.defaults)
        if len(self.batch) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            with connection.cursor() as cursor:
                cursor.executemany(self.sql, self.batch)
            self.batch = []
