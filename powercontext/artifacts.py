"""Kernel operations on the generic Artifact store: the revision hash chain (a
``powercontext.chain`` chain per artifact), appending revisions and moving heads by
compare-and-swap.

Callers own the transaction: every function here must run inside ``transaction.atomic``
together with the family rows it describes.
"""

import json
from typing import Any

from django.db import connection

from powercontext.chain import GENESIS_HASH, ContentChain, canonical_json, tagged_sha256
from powercontext.exceptions import RevisionConflict
from powercontext.models import ArtifactHead, ArtifactRevision

# Each revision hashed over the previous one's hash and its own content.
REVISIONS = ContentChain(b"powercontext.artifact-revision.v1\x00")
_CONTENT_DOMAIN = b"powercontext.artifact-content.v1\x00"


class HeadMoved(RevisionConflict):
    """The head was not at the expected revision: another writer got there first."""


def content_digest(content: str) -> str:
    """The digest of a revision's stored content alone: what a redaction record keeps for
    a revision whose content it redacted (``powercontext.redaction_log``)."""
    return tagged_sha256(_CONTENT_DOMAIN, content)


def revision_intact(
    *, previous_hash: str, content: str, revision_hash: str, redacted_digest: str | None
) -> bool:
    """Whether a stored revision is as written: its hash recomputes from its content, or
    (a revision redacted by an earlier release, which kept the hash over the original)
    its content is exactly what its latest redaction record left. ``redact_secrets``
    re-seals such a revision (``powercontext.stored_secrets``)."""
    if REVISIONS.link(previous_hash, content) == revision_hash:
        return True
    return redacted_digest is not None and content_digest(content) == redacted_digest


def revision_append(
    *, scope_id: str, family: str, artifact_id: str, revision: int, content: dict[str, Any]
) -> ArtifactRevision:
    """Write revision ``revision`` of an artifact, chained to ``revision - 1``.

    The unique constraint on (scope, family, artifact, revision) makes a second writer of
    the same revision fail, so the chain can never fork.
    """
    if revision == 1:
        previous_hash = GENESIS_HASH
    else:
        # As SQL, as head_revision: every write reads it, by the unique index.
        table = connection.ops.quote_name(ArtifactRevision._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT revision_hash FROM {table} "  # noqa: S608 - names and placeholders only
                "WHERE scope_id = %s AND family = %s AND artifact_id = %s AND revision = %s",
                [scope_id, family, artifact_id, revision - 1],
            )
            found = cursor.fetchone()  # one at most: the revision's unique key
        if found is None:
            raise ArtifactRevision.DoesNotExist(
                f"revision {revision - 1} of {family}/{artifact_id} in {scope_id} is missing"
            )
        previous_hash = found[0]
    text = canonical_json(content)
    return ArtifactRevision.objects.create(
        scope_id=scope_id,
        family=family,
        artifact_id=artifact_id,
        revision=revision,
        content=text,
        previous_hash=previous_hash,
        revision_hash=REVISIONS.link(previous_hash, text),
    )


def head_revision(*, scope_id: str, family: str, artifact_id: str) -> int:
    """The current head revision, 0 when the artifact does not exist yet."""
    # Written as SQL: every Context Pack starts with this lookup, and the ORM took several
    # times longer to build the statement than the unique index takes to answer it.
    table = connection.ops.quote_name(ArtifactHead._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT revision FROM {table} "  # noqa: S608 - names and placeholders only
            "WHERE scope_id = %s AND family = %s AND artifact_id = %s",
            [scope_id, family, artifact_id],
        )
        row = cursor.fetchone()
    return row[0] if row is not None else 0


def head_advance(
    *,
    scope_id: str,
    family: str,
    artifact_id: str,
    expected_revision: int,
    searchable_text: str | None = None,
) -> int:
    """Move the head from ``expected_revision`` to the next one, or raise RevisionConflict.

    A conditional UPDATE (or, for a new artifact, an INSERT guarded by the unique
    constraint) so that of two writers that read the same head, exactly one moves it.
    Doing this first in a write transaction also takes the head's row lock early on
    databases that lock rows, so concurrent writers queue instead of deadlocking.
    """
    new_revision = expected_revision + 1
    fields: dict[str, Any] = {"revision": new_revision}
    if searchable_text is not None:
        fields["searchable_text"] = searchable_text
    if expected_revision == 0:
        _, created = ArtifactHead.objects.get_or_create(
            scope_id=scope_id, family=family, artifact_id=artifact_id, defaults=fields
        )
        if not created:
            raise HeadMoved()
        return new_revision
    # As SQL: every write moves a head, and the ORM's update took longer to build than to
    # run. Like QuerySet.update, it leaves updated_at alone.
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(name)} = %s" for name in fields)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(ArtifactHead._meta.db_table)} SET {assignments} "  # noqa: S608 - names and placeholders only
            "WHERE scope_id = %s AND family = %s AND artifact_id = %s AND revision = %s",
            [*fields.values(), scope_id, family, artifact_id, expected_revision],
        )
        moved = cursor.rowcount
    if moved != 1:
        raise HeadMoved()
    return new_revision


def revision_content(revision: ArtifactRevision) -> dict[str, Any]:
    content: dict[str, Any] = json.loads(revision.content)
    return content
