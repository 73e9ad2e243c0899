"""The redaction log: one record per erasure of stored text (``RedactionRecord``).

A redaction or a purge changes a row that was written once and is otherwise never
changed; the record is what lets ``check_integrity`` accept that change and still catch
any other. Each record is chained to the scope's record before it (``seq`` 1, 2, 3, ...),
so a record cannot be dropped or altered without the chain saying so, and it carries the
digest of what the row holds afterwards, in that row's own terms. Callers own the
transaction: a record is appended in the one that changes the row.
"""

from collections.abc import Mapping
from datetime import UTC, datetime

from django.utils import timezone

from powercontext.chain import Chain, Walk, canonical_json, next_link
from powercontext.models import RedactionRecord
from powercontext.reports import CheckResult

# A scope's log: each record hashed over the one before and its own fields (:func:`record_hash`).
LOG = Chain(b"powercontext.redaction-record.v1\x00")
REDACT = "redact"
PURGE = "purge"

# The kinds of rows an erasure touches (``RedactionRecord.target``).
SOURCE = "source"
MEMORY_VERSION = "memory.version"
CANDIDATE_VERSION = "candidate.version"
CANDIDATE_DECISION = "candidate.decision"
ARTIFACT_REVISION = "artifact.revision"


def record_hash(
    *,
    previous_hash: str,
    seq: int,
    target: str,
    target_key: str,
    action: str,
    reason: str,
    kinds: str,
    digest: str,
    created_at: datetime,
) -> str:
    return LOG.link(
        previous_hash,
        seq,
        target,
        target_key,
        action,
        reason,
        kinds,
        digest,
        # UTC, to the microsecond: both engines keep that much and give it back.
        created_at.astimezone(UTC).isoformat(),
    )


def stored_record_hash(record: RedactionRecord) -> str:
    """:func:`record_hash` over a stored record's fields, as they are now."""
    return record_hash(
        previous_hash=record.previous_hash,
        seq=record.seq,
        target=record.target,
        target_key=record.target_key,
        action=record.action,
        reason=record.reason,
        kinds=record.kinds,
        digest=record.digest,
        created_at=record.created_at,
    )


def record_append(
    *,
    scope_id: str,
    target: str,
    target_key: str,
    action: str,
    reason: str,
    kinds: Mapping[str, int],
    digest: str,
) -> RedactionRecord:
    """Append a record to the scope's log (inside the caller's transaction, which also
    changes the row). The scope's latest record is read locked, so two writers of one
    scope queue behind each other; for a scope's very first record there is nothing to
    lock, and the loser of that race fails on ``seq``'s unique constraint (its whole
    transaction rolls back: the chain never forks)."""
    last = (
        RedactionRecord.objects.select_for_update()
        .filter(scope_id=scope_id)
        .order_by("-seq")
        .values_list("seq", "record_hash")
        .first()
    )
    seq, previous = next_link(last)
    # Microseconds kept, tz-aware UTC: what both engines store and read back exactly.
    now = timezone.now().astimezone(UTC)
    kinds_json = canonical_json(dict(kinds))
    return RedactionRecord.objects.create(
        scope_id=scope_id,
        seq=seq,
        target=target,
        target_key=target_key,
        action=action,
        reason=reason[:512],
        kinds=kinds_json,
        digest=digest,
        created_at=now,
        previous_hash=previous,
        record_hash=record_hash(
            previous_hash=previous,
            seq=seq,
            target=target,
            target_key=target_key,
            action=action,
            reason=reason[:512],
            kinds=kinds_json,
            digest=digest,
            created_at=now,
        ),
    )


def latest_digests(target: str, scope_id: str | None = None) -> dict[tuple[str, str], str]:
    """{(scope, target_key): digest of the latest record} for every row of ``target``
    that was ever erased (in one scope or all)."""
    rows = RedactionRecord.objects.filter(target=target)
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    latest: dict[tuple[str, str], str] = {}
    for scope, key, digest in rows.order_by("scope_id", "seq").values_list(
        "scope_id", "target_key", "digest"
    ):
        latest[(scope, key)] = digest
    return latest


def redaction_chain_check(*, scope_id: str | None = None) -> CheckResult:
    """Per scope: records 1..n without gaps, each chained to the one before, each hash
    recomputed from its fields."""
    result = CheckResult("redaction.log")
    rows = RedactionRecord.objects.all()
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    walk: Walk[str] = Walk()
    for record in rows.order_by("scope_id", "seq").iterator(chunk_size=2000):
        step = walk.step(record.scope_id, record.seq, record.previous_hash, record.record_hash)
        result.checked += 1
        subject = f"record {record.seq} ({record.target} {record.target_key})"
        if not step.in_place:
            result.add(record.scope_id, subject, f"expected record {step.expected} here (gap)")
        if not step.linked:
            result.add(record.scope_id, subject, "previous_hash does not match the prior record")
        if stored_record_hash(record) != record.record_hash:
            result.add(record.scope_id, subject, "record_hash does not match its fields")
    return result
