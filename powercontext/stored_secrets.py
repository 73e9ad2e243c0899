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
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from django.db import connection, transaction
from django.db.models import F

from powercontext import redaction_log
from powercontext.artifacts import REVISIONS, content_digest, revision_intact
from powercontext.capture_ids import CAPTURE_ID, keyed_refs
from powercontext.chain import canonical_json
from powercontext.legacy_capture_ids import sources_key
from powercontext.maintenance import families
from powercontext.models import ArtifactHead, ArtifactRevision
from powercontext.redaction import Redactions
from powercontext.reports import RedactReport
from powercontext.sources import source_redact

DEFAULT_REASON = "redact_secrets"
log = logging.getLogger(__name__)


def redact_stored(
    *, scope_id: str | None = None, dry_run: bool = False, reason: str = DEFAULT_REASON
) -> list[RedactReport]:
    """Find (and unless ``dry_run``, redact) the secrets left in every stored text: the
    captured sources (their ids first: ``legacy_capture_ids``), then each family's rows.
    The derived state of what changed is brought in step by each family's redaction
    (projection, term counts, vectors dropped); the caller rebuilds the indexes
    afterwards."""
    # The ids first: the records the redaction appends then name the keyed ones.
    reports = [sources_key(scope_id=scope_id, dry_run=dry_run)]
    sources = source_redact(reason=reason, scope_id=scope_id, dry_run=dry_run)
    reports.append(
        RedactReport("captured sources", sources.entries, sources.kinds, sources.unverified)
    )
    for family in families():
        if family.redact:
            reports.extend(family.load("redact")(scope_id=scope_id, reason=reason, dry_run=dry_run))
    return reports


def revision_key(family: str, artifact_id: str, revision: int) -> str:
    """A revision's ``target_key`` in the redaction log (as ``artifact.chain`` names it)."""
    return f"{family}/{artifact_id}@{revision}"


class _Unverified(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


@dataclass(frozen=True)
class _Change:
    content: str
    new_content: str
    kinds: dict[str, int]


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
    or all), one artifact at a time. Each redacted revision is hashed over its new
    content and every later revision of the artifact re-linked (:func:`_reseal`): a hash
    kept over the original would let anyone holding the database, a backup or an archive
    test guesses of the redacted value. A record per redacted revision keeps its new
    content's digest, so an auditor knows why the artifact's hashes changed from there
    on. ``after(revision)`` runs in the same transaction for each redacted revision, for
    the family's derived state.

    A revision redacted by an earlier release (its content held to its record's digest,
    its hash still the original's) is re-sealed the same way, without a new record."""
    rows = ArtifactRevision.objects.filter(family=family)
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    redacted = redaction_log.latest_digests(redaction_log.ARTIFACT_REVISION, scope_id)
    listed = rows.order_by("scope_id", "artifact_id", "revision").values_list(
        "scope_id", "artifact_id", "revision", "content", "previous_hash", "revision_hash"
    )
    for (scope, artifact_id), revisions in groupby(listed, key=lambda row: row[:2]):
        changes: dict[int, _Change] = {}
        earlier: list[int] = []  # redacted by an earlier release, hash over the original
        for _, _, number, content, previous_hash, revision_hash in revisions:
            redactions = Redactions()
            new_content = _redacted_json(content, redactions)
            if new_content is not None and redactions.count:
                changes[number] = _Change(content, new_content, dict(redactions.kinds))
            elif REVISIONS.link(previous_hash, content) != revision_hash and content_digest(
                content
            ) == redacted.get((scope, revision_key(family, artifact_id, number))):
                earlier.append(number)
        if dry_run:
            for change in changes.values():
                report.add(change.kinds)
            continue
        if not changes and not earlier:
            continue
        try:
            with transaction.atomic():
                _redact_artifact(
                    scope, family, artifact_id, changes, earlier, redacted, reason, after
                )
        except _Unverified as unverified:
            report.unverified.append((scope, unverified.key))
            continue
        for change in changes.values():
            report.add(change.kinds)
        report.resealed += len(earlier)


def _redact_artifact(
    scope_id: str,
    family: str,
    artifact_id: str,
    changes: dict[int, _Change],
    earlier: list[int],
    redacted: dict[tuple[str, str], str],
    reason: str,
    after: Callable[[ArtifactRevision], None] | None,
) -> None:
    first = min([*changes, *earlier])
    for revision in _reseal(scope_id, family, artifact_id, changes, first, redacted):
        change = changes.get(revision.revision)
        if change is None:
            continue
        redaction_log.record_append(
            scope_id=scope_id,
            target=redaction_log.ARTIFACT_REVISION,
            target_key=revision_key(family, artifact_id, revision.revision),
            action=redaction_log.REDACT,
            reason=reason,
            kinds=change.kinds,
            digest=content_digest(change.new_content),
        )
        if after is not None:
            after(revision)


def _reseal(
    scope_id: str,
    family: str,
    artifact_id: str,
    changes: dict[int, _Change],
    first: int,
    redacted: dict[tuple[str, str], str],
) -> list[ArtifactRevision]:
    """In the caller's transaction: give the artifact's revisions their ``changes``' new
    content and hash every revision from ``first`` on over what it holds, each linked to
    the one before; the revisions as now stored. Raises _Unverified, changing nothing,
    when a revision from ``first`` on fails verification (re-sealing it would launder an
    alteration) or changed since it was read (a concurrent redaction)."""
    # The head's row first: a writer moves it before appending, so no revision can be
    # linked to a hash while it is rewritten (on SQLite this takes the write lock).
    ArtifactHead.objects.filter(scope_id=scope_id, family=family, artifact_id=artifact_id).update(
        revision=F("revision")
    )
    chain = list(
        ArtifactRevision.objects.select_for_update()
        .filter(scope_id=scope_id, family=family, artifact_id=artifact_id, revision__gte=first)
        .order_by("revision")
    )
    for revision in chain:
        change = changes.get(revision.revision)
        intact = revision_intact(
            previous_hash=revision.previous_hash,
            content=revision.content,
            revision_hash=revision.revision_hash,
            redacted_digest=redacted.get(
                (scope_id, revision_key(family, artifact_id, revision.revision))
            ),
        )
        if not intact or (change is not None and revision.content != change.content):
            raise _Unverified(revision_key(family, artifact_id, revision.revision))
    previous_hash = chain[0].previous_hash if chain else ""
    for revision in chain:
        change = changes.get(revision.revision)
        if change is not None:
            revision.content = change.new_content
        revision.previous_hash = previous_hash
        revision.revision_hash = REVISIONS.link(previous_hash, revision.content)
        previous_hash = revision.revision_hash
    ArtifactRevision.objects.bulk_update(
        chain, ["content", "previous_hash", "revision_hash"], batch_size=500
    )
    return chain


def _redacted_json(content: str, redactions: Redactions) -> str | None:
    """``content`` with its strings redacted and the capture ids its ``source_refs``
    cite as the hook sent them keyed (``capture_ids``: a digest of the prompt as typed
    confirms guesses of what redaction took), counted as ``capture_id``; None when it is
    not JSON."""
    try:
        value: Any = json.loads(content)
    except ValueError:
        return None
    value = _values(value, redactions)
    if isinstance(value, dict) and isinstance(value.get("source_refs"), list):
        value["source_refs"], keyed = keyed_refs(value["source_refs"])
        if keyed:
            redactions.kinds[CAPTURE_ID] += keyed
    return canonical_json(value)


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
