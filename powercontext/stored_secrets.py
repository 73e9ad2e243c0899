"""Redacting what was stored before redaction existed (``manage.py redact_secrets``).

The kernel redacts its own rows, the captured sources (``powercontext.sources``), and
offers the families :func:`revision_redact` for their artifact revisions; each family
redacts its own rows through the ``redact`` function it registers in
``powercontext.maintenance``. Every change is one short transaction that also appends a
redaction record, and a row that fails verification is never redacted (that would give
an altered row a valid record): it is reported by id instead.
"""

import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction

from powercontext import redaction_log
from powercontext.artifacts import content_digest, revision_intact
from powercontext.chain import canonical_json
from powercontext.maintenance import families
from powercontext.models import ArtifactRevision
from powercontext.redaction import Redactions
from powercontext.reports import RedactReport
from powercontext.sources import source_redact

DEFAULT_REASON = "redact_secrets"
log = logging.getLogger(__name__)


def redact_stored(
    *, scope_id: str | None = None, dry_run: bool = False, reason: str = DEFAULT_REASON
) -> list[RedactReport]:
    """Find (and unless ``dry_run``, redact) the secrets left in every stored text: the
    captured sources, then each family's rows. The derived state of what changed is
    brought in step by each family's redaction (projection, term counts, vectors
    dropped); the caller rebuilds the indexes afterwards."""
    sources = source_redact(reason=reason, scope_id=scope_id, dry_run=dry_run)
    reports = [RedactReport("captured sources", sources.entries, sources.kinds, sources.unverified)]
    for family in families():
        if family.redact:
            reports.extend(family.load("redact")(scope_id=scope_id, reason=reason, dry_run=dry_run))
    return reports


def revision_key(family: str, artifact_id: str, revision: int) -> str:
    """A revision's ``target_key`` in the redaction log (as ``artifact.chain`` names it)."""
    return f"{family}/{artifact_id}@{revision}"


def revisions_redact(
    *,
    family: str,
    report: RedactReport,
    scope_id: str | None,
    reason: str,
    dry_run: bool,
    after: Callable[[ArtifactRevision], None] | None = None,
) -> None:
    """Redact every string of the stored content of ``family``'s revisions (in one scope
    or all). The content is replaced, its ``revision_hash`` kept (the next revision's link
    still holds) and a record keeps the new content's digest, which is what
    ``artifact.chain`` then verifies it by. ``after(revision)`` runs in the same
    transaction, for the family's derived state."""
    rows = ArtifactRevision.objects.filter(family=family)
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    redacted = redaction_log.latest_digests(redaction_log.ARTIFACT_REVISION, scope_id)
    for pk, scope, content in rows.order_by("pk").values_list("pk", "scope_id", "content"):
        redactions = Redactions()
        new_content = _redacted_json(content, redactions)
        if new_content is None or not redactions.count:
            continue
        if dry_run:
            report.add(dict(redactions.kinds))
            continue
        with transaction.atomic():
            revision = ArtifactRevision.objects.select_for_update().get(pk=pk)
            key = revision_key(family, revision.artifact_id, revision.revision)
            intact = revision_intact(
                previous_hash=revision.previous_hash,
                content=revision.content,
                revision_hash=revision.revision_hash,
                redacted_digest=redacted.get((scope, key)),
            )
            if not intact:
                report.unverified.append((scope, key))
                continue
            if revision.content != content:
                continue
            ArtifactRevision.objects.filter(pk=pk).update(content=new_content)
            revision.content = new_content
            redaction_log.record_append(
                scope_id=scope,
                target=redaction_log.ARTIFACT_REVISION,
                target_key=key,
                action=redaction_log.REDACT,
                reason=reason,
                kinds=redactions.kinds,
                digest=content_digest(new_content),
            )
            if after is not None:
                after(revision)
        report.add(dict(redactions.kinds))


def _redacted_json(content: str, redactions: Redactions) -> str | None:
    try:
        value: Any = json.loads(content)
    except ValueError:
        return None
    return canonical_json(_values(value, redactions))


def _values(value: Any, redactions: Redactions) -> Any:
    """Every string value redacted; keys (the content's own field names) kept."""
    if isinstance(value, str):
        return redactions.stored(value)
    if isinstance(value, list):
        return [_values(item, redactions) for item in value]
    if isinstance(value, dict):
        return {key: _values(item, redactions) for key, item in value.items()}
    return value


# How often a truncating checkpoint is tried while a reader holds an older snapshot;
# each try already waits the connection's busy timeout for readers to finish.
CHECKPOINT_TRIES = 3
CHECKPOINT_PAUSE = 0.1


@contextmanager
def erasing(*, indexes: bool = True) -> Iterator[None]:
    """Around an erasure on SQLite: deleted and overwritten content is zeroed in the
    file (``secure_delete``, which every connection of the backend has on, so no earlier
    write left a stale copy in free space either), and afterwards (``indexes``) the
    full-text indexes are merged into one segment each (FTS5 keeps a deleted term in its
    old segment until a merge) and the write-ahead log is checkpointed and truncated: it
    holds page images of earlier writes, and a passive checkpoint leaves them (and the
    database pages a reader still sees) in place. The truncation waits for readers and
    holds writers back meanwhile; while a reader keeps an older snapshot it is tried
    again, and if it never succeeds a warning says the log still holds erased pages
    until the next checkpoint. A no-op elsewhere: OceanBase frees old row versions at its
    own compactions (docs/RELIABILITY.md)."""
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete = ON")
    yield
    from powercontext.search.indexes import declared_indexes
    from powercontext.search.sqlite import fts_table

    with connection.cursor() as cursor:
        for index in declared_indexes() if indexes else ():
            fts = connection.ops.quote_name(fts_table(index))
            cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")  # noqa: S608
    # Not inside a caller's transaction (a test's): nothing is committed yet.
    if not connection.in_atomic_block and not truncate_log():
        log.warning(
            "the write-ahead log could not be truncated (a reader held it): it keeps "
            "erased pages until the next checkpoint"
        )


def truncate_log() -> bool:
    """Checkpoint the write-ahead log completely and truncate it to zero bytes; False
    when readers kept it from completing every time it was tried."""
    for attempt in range(CHECKPOINT_TRIES):
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            busy = cursor.fetchone()[0]
        if not busy:
            return True
        if attempt + 1 < CHECKPOINT_TRIES:
            time.sleep(CHECKPOINT_PAUSE)
    return False
