"""``archive_export``: every scope's authoritative rows, from one read snapshot, into one
archive file (docs/portability.md).

Rows are read a chunk at a time by keyset (``(order..., pk) > (last...)``, the order's
index serving each chunk), never a whole scope at once, and written as they come: memory
stays flat whatever the archive's size. Every row passes the same checks an import makes
(order, chains, content hashes) as it is written, so an export of a database whose
history was altered fails here, naming the row, rather than at restore time.
"""

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import connection
from django.db.models import Field, Model, QuerySet

from powercontext.archive import format as archive_format
from powercontext.archive.format import Writer
from powercontext.archive.reader import (
    SectionCheck,
    describe_scope,
    header_left_out,
    header_streams,
)
from powercontext.archive.streams import ArchiveSchemaError, Column, Stream, streams
from powercontext.snapshot import read_snapshot

# (scope_id, rows written so far in the archive, rows the archive will hold)
ExportProgress = Callable[[str, int, int], None]


class ExportFailed(Exception):
    """The export cannot be made; nothing is left at the destination."""


@dataclass
class ExportReport:
    path: Path
    scopes: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0
    # The whole file's sha256 (what sha256sum gives), the chain digest of its last line
    # (the root digest, covering every byte), and whether the manifest carries an HMAC.
    sha256: str = ""
    root: str = ""
    signed: bool = False


def engine_name() -> str:
    return "oceanbase" if getattr(connection.features, "is_oceanbase", False) else connection.vendor


def archive_scopes(requested: list[str] | None = None) -> list[str]:
    """The scopes an archive holds, sorted: those given (each must hold authoritative
    rows, else ExportFailed), else every scope with a row in any stream."""
    found: set[str] = set()
    for stream in streams():
        model = stream.model_class()
        rows = model._default_manager.all()
        if requested is not None:
            rows = rows.filter(**{f"{stream.scope}__in": requested})
        found |= set(rows.values_list(stream.scope, flat=True).distinct())
    if requested is not None:
        unknown = sorted(set(requested) - found)
        if unknown:
            raise ExportFailed(
                f"No authoritative rows in scope(s) {', '.join(map(describe_scope, unknown))}."
            )
    return sorted(found)


def archive_export(
    *,
    out: Path,
    scope_ids: list[str] | None = None,
    chunk_size: int = 1000,
    progress: ExportProgress | None = None,
    key: bytes | None = None,
) -> ExportReport:
    """Write the archive of ``scope_ids`` (default: every scope) to ``out``.

    Reads one consistent snapshot (``read_snapshot``) while the server keeps serving,
    writes to a private temporary file beside ``out`` (mode 0600: it holds every memory)
    and renames it into place once complete, so ``out`` is never a partial archive. With
    ``key``, the manifest carries an HMAC that only the key's holder can compute
    (``archive_format.archive_hmac``). Raises ExportFailed (an unknown scope, a row
    that fails its checks).
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    started = time.monotonic()
    report = ExportReport(out)
    plan = [(stream, stream.columns()) for stream in streams()]
    temporary = out.with_name(f".{out.name}.{os.getpid()}.partial")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb", buffering=1 << 20) as file:
            writer = Writer(file)
            with read_snapshot():
                scopes = archive_scopes(scope_ids)
                total = _count(plan, scopes) if progress else 0
                writer.write(
                    {
                        "type": "archive",
                        "format": archive_format.FORMAT,
                        "version": archive_format.VERSION,
                        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                        "source": {"engine": engine_name()},
                        "scopes": scopes,
                        "streams": header_streams(),
                        "left_out": header_left_out(),
                    }
                )
                stated: list[list[Any]] = []
                done = 0
                for scope_id in scopes:

                    def advanced(rows: int, scope_id: str = scope_id, before: int = done) -> None:
                        if progress:
                            progress(scope_id, before + rows, total)

                    done += _scope(writer, plan, scope_id, chunk_size, stated, report, advanced)
            content_sha256 = writer.whole.hexdigest()
            manifest: dict[str, Any] = {
                "type": "manifest",
                "records": writer.lines,
                "scopes": len(scopes),
                "sha256": content_sha256,
                "streams": stated,
            }
            if key is not None:
                manifest["hmac"] = archive_format.archive_hmac(key, content_sha256)
                report.signed = True
            writer.write(manifest)
            # The manifest's sha256 covers the lines before it; what is printed is the
            # whole file's, as sha256sum gives it (issue 42).
            report.sha256 = writer.whole.hexdigest()
            report.root = writer.previous.hex()
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    report.scopes = len(scopes)
    report.records = writer.lines
    report.bytes = writer.bytes
    report.seconds = time.monotonic() - started
    return report


def _count(plan: list[tuple[Stream, list[Column]]], scopes: list[str]) -> int:
    return sum(
        stream.model_class()._default_manager.filter(**{f"{stream.scope}__in": batch}).count()
        for stream, _ in plan
        for batch in _batches(scopes)
    )


def _batches(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _scope(
    writer: Writer,
    plan: list[tuple[Stream, list[Column]]],
    scope_id: str,
    chunk_size: int,
    stated: list[list[Any]],
    report: ExportReport,
    advanced: Callable[[int], None],
) -> int:
    """Write one scope's section; the number of rows written."""
    writer.write({"type": "scope", "scope_id": scope_id})
    shared: dict[str, Any] = {}
    total = 0
    for stream, columns in plan:
        writer.write({"type": "stream", "scope_id": scope_id, "stream": stream.name})
        check = SectionCheck(stream, scope_id, shared)
        digest = hashlib.sha256()
        rows = 0
        for values in _rows(stream, columns, scope_id, chunk_size):
            rows += 1
            problem = check.row(values)
            if problem:
                raise ExportFailed(_refusal(stream, scope_id, values, problem))
            try:
                encoded = {column.name: column.encode(values[column.name]) for column in columns}
            except ArchiveSchemaError as error:
                raise ExportFailed(_refusal(stream, scope_id, values, str(error))) from None
            body = writer.write({"type": "row", "values": encoded})
            digest.update(body + b"\n")
            if rows % chunk_size == 0:
                advanced(total + rows)
        problem = check.end()
        if problem:
            raise ExportFailed(f"{stream.name} of scope {describe_scope(scope_id)}: {problem}")
        writer.write(
            {
                "type": "stream_end",
                "scope_id": scope_id,
                "stream": stream.name,
                "rows": rows,
                "sha256": digest.hexdigest(),
            }
        )
        stated.append([scope_id, stream.name, rows, digest.hexdigest()])
        report.rows[stream.name] = report.rows.get(stream.name, 0) + rows
        total += rows
    writer.write({"type": "scope_end", "scope_id": scope_id, "rows": total})
    advanced(total)
    return total


def _refusal(stream: Stream, scope_id: str, values: dict[str, Any], problem: str) -> str:
    key = ", ".join(f"{name}={values[name]!r}" for name in stream.order)
    return (
        f"{stream.name} of scope {describe_scope(scope_id)} ({key}): {problem}. "
        "Run `manage.py check_integrity`: the history in this database was altered."
    )


def _rows(
    stream: Stream, columns: list[Column], scope_id: str, chunk_size: int
) -> Iterator[dict[str, Any]]:
    """The scope's rows of ``stream`` in its order, ``chunk_size`` per query."""
    model = stream.model_class()
    pk = model._meta.pk
    if pk is None:
        raise ArchiveSchemaError(f"{stream.name}: {stream.model} has no primary key")
    key = list(stream.order) + ([] if pk.attname in stream.order else [pk.attname])
    names = [column.name for column in columns]
    fetched = names + [name for name in key if name not in names]
    positions = [fetched.index(name) for name in key]
    rows = model._default_manager.filter(**{stream.scope: scope_id}).order_by(*key)
    after: list[Any] | None = None
    while True:
        page = rows if after is None else _after(rows, model, key, after)
        chunk = list(page.values_list(*fetched)[:chunk_size])
        for row in chunk:
            yield dict(zip(names, row, strict=False))
        if len(chunk) < chunk_size:
            return
        after = [chunk[-1][position] for position in positions]


def _after(
    rows: QuerySet[Any], model: type[Model], key: list[str], values: list[Any]
) -> QuerySet[Any]:
    """``rows`` after ``values`` in ``key`` order: ``(key...) > (values...)``, a row-value
    comparison that SQLite (3.15+) and OceanBase both answer as one range of the index
    that serves the order.

    Written with ``extra`` rather than as a boolean expression in ``filter``: the MySQL
    family of backends compares such an expression to 1, and OceanBase then scans the
    scope from its start for every chunk (a range from the scope's first row, the tuple a
    filter), where the bare comparison starts the range at the last row read."""
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns, params = [], []
    for name, value in zip(key, values, strict=True):
        model_field = model._meta.get_field(name)
        if not isinstance(model_field, Field) or not model_field.column:
            raise ArchiveSchemaError(f"{model.__name__} orders by {name}, not a column")
        columns.append(f"{table}.{quote(model_field.column)}")
        params.append(model_field.get_db_prep_value(value, connection))
    marks = ", ".join(["%s"] * len(key))
    # Quoted names and placeholders only: the values are bound parameters.
    return rows.extra(where=[f"({', '.join(columns)}) > ({marks})"], params=params)  # noqa: S610
