"""Reads of the kernel's records for the pages above it (the desk, the home page): a
captured source, an artifact's revisions, the newest captures. Each comes back as a
frozen value, so no family's admin queries the kernel's tables itself (issue 15); the
families' own reads of their artifacts stay in their selectors."""

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.db import connection
from django.db.models import OuterRef, QuerySet, Subquery

from powercontext.capture_ids import stored_source_id
from powercontext.fields import identity_text
from powercontext.models import ArtifactHead, ArtifactRevision, SourceRecord

Head = TypeVar("Head", bound=ArtifactHead)


@dataclass(frozen=True)
class StoredSource:
    """A captured source as a reader sees it: its name, id and position in the scope's
    journal, and the payload it was captured with (``content`` and ``metadata``; empty
    once purged)."""

    record_id: int  # the row's key, for a link to its admin page
    scope_id: str
    name: str
    source_id: str
    position: int
    payload: dict[str, Any]
    captured_at: datetime

    @property
    def content(self) -> str:
        content: str = self.payload.get("content", "")
        return content


def _stored_source(record: SourceRecord) -> StoredSource:
    return StoredSource(
        record_id=record.pk,
        scope_id=record.scope_id,
        name=record.source_type,
        source_id=record.source_id,
        position=record.position,
        # A purged entry keeps its place in the journal and no payload at all.
        payload=json.loads(record.payload) if record.payload else {},
        captured_at=record.created_at,
    )


def source_get(*, scope_id: str, name: str, source_id: str) -> StoredSource | None:
    """The source ``name:source_id`` captured in ``scope_id``; None when it never was.
    ``source_id`` as the capture was sent, or as stored (``capture_ids``)."""
    record = SourceRecord.objects.filter(
        scope_id=scope_id, source_type=name, source_id=stored_source_id(source_id)
    ).first()
    return None if record is None else _stored_source(record)


@dataclass(frozen=True)
class RecentCaptures:
    """How many of the newest captures came from one scope, agent kind and session (the
    digest recorded when they were captured; "" for none). Never a payload."""

    scope_id: str
    agent: str
    session_key: str
    prompts: int


def sources_recent_agents(*, name: str, since: datetime, limit: int) -> list[RecentCaptures]:
    """The newest ``limit`` captures of sources named ``name`` in every scope made at or
    after ``since``, counted by scope, agent kind and session. Counted by the database
    over one covering index (``source_recent_agents``): no payload is read, and only the
    groups come back, whatever the prompts weigh."""
    table = connection.ops.quote_name(SourceRecord._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT scope_id, agent, session_key, COUNT(*) FROM ("  # noqa: S608 - names only
            f"SELECT scope_id, agent, session_key FROM {table} "
            "WHERE source_type = %s AND created_at >= %s ORDER BY created_at DESC LIMIT %s"
            ") recent GROUP BY scope_id, agent, session_key",
            [name, connection.ops.adapt_datetimefield_value(since), limit],
        )
        groups = cursor.fetchall()
    return [
        RecentCaptures(identity_text(scope_id), agent, session_key, int(prompts))
        for scope_id, agent, session_key, prompts in groups
    ]


@dataclass(frozen=True)
class StoredRevision:
    """One revision of an artifact: its place in the chain and its content."""

    record_id: int  # the row's key, for a link to its admin page
    scope_id: str
    family: str
    artifact_id: str
    revision: int
    content: dict[str, Any]
    created_at: datetime


def _stored_revision(row: ArtifactRevision) -> StoredRevision:
    return StoredRevision(
        record_id=row.pk,
        scope_id=row.scope_id,
        family=row.family,
        artifact_id=row.artifact_id,
        revision=row.revision,
        content=json.loads(row.content),
        created_at=row.created_at,
    )


def artifact_revision_get(
    *, scope_id: str, family: str, artifact_id: str, revision: int
) -> StoredRevision | None:
    """Revision ``revision`` of ``family/artifact_id`` in ``scope_id``; None when the
    artifact has no such revision."""
    row = ArtifactRevision.objects.filter(
        scope_id=scope_id, family=family, artifact_id=artifact_id, revision=revision
    ).first()
    return None if row is None else _stored_revision(row)


def artifact_revisions_list(
    *, scope_id: str, family: str, artifact_id: str
) -> list[StoredRevision]:
    """Every revision of ``family/artifact_id`` in ``scope_id``, newest first."""
    rows = ArtifactRevision.objects.filter(
        scope_id=scope_id, family=family, artifact_id=artifact_id
    ).order_by("-revision")
    return [_stored_revision(row) for row in rows]


def heads_with_content(heads: QuerySet[Head]) -> QuerySet[Head]:
    """``heads`` with each head's current revision content (the stored JSON text) as
    ``head_content``, read in the same query: a changelist pages and sorts heads, so it
    needs them as a queryset rather than as values."""
    content = ArtifactRevision.objects.filter(
        scope_id=OuterRef("scope_id"),
        family=OuterRef("family"),
        artifact_id=OuterRef("artifact_id"),
        revision=OuterRef("revision"),
    ).values("content")[:1]
    annotated: QuerySet[Head] = heads.annotate(head_content=Subquery(content))
    return annotated
