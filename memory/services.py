"""Writes to a scope's Memory. Every write is one transaction that

1. reads the head revision R (checking ``expected_revision`` first, when given),
2. decides what changes (or that nothing does: an identical remember is a no-op), from
   the authoritative manifest and versions, never from the derived projection,
3. moves the head R -> R+1 by compare-and-swap,
4. writes the new immutable entry versions, closes and opens manifest rows for the
   changed entries only, updates the derived active-entry projection (the full-text
   index follows it in the same transaction), and appends revision R+1 to the hash
   chain with its list of changes.

A writer that loses the compare-and-swap retries from a fresh read when the caller did
not pin a revision, so concurrent writers in one scope never lose or duplicate a write.
"""

import dataclasses
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction

from memory.exceptions import MemoryEntryInactive
from memory.models import (
    ManifestState,
    MemoryActiveEntry,
    MemoryEntryVersion,
    MemoryManifestRow,
    SessionStartMark,
)
from memory.search_index import MEMORY_INDEX
from memory.selectors import entry_of, resolve_citation
from memory.values import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Citation,
    WriteResult,
    kind_text_hash,
    memory_ref,
    normalize_kind,
    normalize_text,
)
from powercontext.artifacts import HeadMoved, head_advance, head_revision, revision_append
from powercontext.chain import canonical_json, tagged_sha256
from powercontext.exceptions import PowerContextError, RevisionConflict
from powercontext.fields import identity_text
from powercontext.redaction import Redactions
from powercontext.search import Embedded

_ENTRY_DOMAIN = b"powercontext.memory-entry.v1\x00"
# Enough for heavy contention on one scope; each retry starts from a fresh read.
_MAX_ATTEMPTS = 50


@dataclass(frozen=True)
class _Change:
    op: str
    entry_id: str
    kind: str = ""
    text: str = ""
    from_version: MemoryEntryVersion | None = None
    reason: str | None = None


def content_hash(*, kind: str, text: str, source_refs: list[Any], artifact_refs: list[Any]) -> str:
    canonical = canonical_json(
        {"kind": kind, "text": text, "source_refs": source_refs, "artifact_refs": artifact_refs}
    )
    return tagged_sha256(_ENTRY_DOMAIN, canonical)


class MemoryVersionUnverified(PowerContextError):
    """A stored version no longer matches its content_hash (it was altered outside the
    server), so it may not enter the projection: a server-side fault, not the caller's."""

    default_message = (
        "A stored memory version fails its integrity check; run manage.py check_integrity."
    )


def version_verifies(version: MemoryEntryVersion) -> bool:
    """True when the version's content_hash recomputes from its stored content. Every
    path into the projection (a write, a rebuild) goes through this, so text altered in
    the database is never made searchable."""
    try:
        expected = content_hash(
            kind=version.kind,
            text=version.text,
            source_refs=json.loads(version.source_refs),
            artifact_refs=json.loads(version.artifact_refs),
        )
    except (ValueError, TypeError):
        return False
    return expected == version.content_hash


def memory_remember(
    *,
    scope_id: str,
    kind: str,
    text: str,
    reason: str | None = None,
    expected_revision: int | None = None,
) -> WriteResult:
    """Remember ``text`` as a new entry, unless an active entry already says exactly it.

    Secrets in the text and the reason are replaced by markers first
    (``powercontext.redaction``): what is compared, stored and answered is the redacted
    text, and the result's ``redacted`` says how many went. Raises RevisionConflict when
    ``expected_revision`` is not the head.
    """
    redactions = Redactions()
    kind = normalize_kind(kind)
    text, reason = redactions.text(normalize_text(text)), redactions.optional(reason)
    # An agent often remembers what is already there, and that is a no-op: seen before
    # the transaction, the model is not run for it (most of a remember's time). Decided
    # again inside; if the entry went meanwhile, the write starts over with its vector.
    embed = not _active_entry_says(scope_id, kind, text)

    def plan() -> _Change | None:
        if _active_entry_says(scope_id, kind, text):
            return None
        if not embed:
            raise _NotEmbedded()
        entry_id = "mem_ent_" + uuid.uuid4().hex
        return _Change("add", entry_id, kind=kind, text=text, reason=reason)

    try:
        result = _write(
            scope_id=scope_id,
            plan=plan,
            expected_revision=expected_revision,
            document=text if embed else None,
        )
    except _NotEmbedded:
        embed = True
        result = _write(
            scope_id=scope_id, plan=plan, expected_revision=expected_revision, document=text
        )
    return _with(result, redactions)


def _with(result: WriteResult, redactions: Redactions) -> WriteResult:
    return dataclasses.replace(result, redacted=dict(redactions.kinds))


class _NotEmbedded(Exception):
    """A remember planned as a no-op turned out to add an entry: it needs its vector."""


def _active_entry_says(scope_id: str, kind: str, text: str) -> bool:
    """Whether an entry active at the head has exactly this kind and text.

    Decided from the authoritative rows, never from the rebuildable active-entry
    projection, so a drifted projection cannot turn a no-op into a duplicate (or the
    reverse): the versions with this content hash (indexed), then whether one of them is
    in an open, active manifest row. The kind and text are compared too, so only what a
    version really says counts.

    Plain statements, versions first: every remember asks twice (before its transaction
    and inside it), and the ORM's queries cost 0.2-0.6 ms a time against 0.03-0.06. Not
    one join: without statistics SQLite's planner walked the scope's open manifest rows
    first (every active entry) instead of the one or two versions."""
    digest = content_hash(kind=kind, text=text, source_refs=[], artifact_refs=[])
    versions = connection.ops.quote_name(MemoryEntryVersion._meta.db_table)
    manifest = connection.ops.quote_name(MemoryManifestRow._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT entry_version_id, kind, text FROM {versions} "  # noqa: S608 - names and placeholders only
            "WHERE scope_id = %s AND content_hash = %s",
            [scope_id, digest],
        )
        same = [
            version_id
            for version_id, stored_kind, stored_text in cursor.fetchall()
            if stored_kind == kind and stored_text == text
        ]
        # One version at a time (almost always the only one): with two in an IN list,
        # SQLite's planner walked the scope's open rows by manifest_open_idx instead.
        for version_id in same:
            cursor.execute(
                f"SELECT 1 FROM {manifest} WHERE entry_version_id = %s AND scope_id = %s "  # noqa: S608 - names and placeholders only
                "AND valid_to IS NULL AND state = %s LIMIT 1",
                [identity_text(version_id), scope_id, ManifestState.ACTIVE.value],
            )
            if cursor.fetchone() is not None:
                return True
        return False


def memory_entry_revise(
    *, scope_id: str, citation: Citation, kind: str, text: str, reason: str | None = None
) -> WriteResult:
    """Write a new version of the cited entry. The citation must name its latest version
    (RevisionConflict otherwise) and the entry must be active (MemoryEntryInactive).
    Identical kind and text (after redaction, as for remember) is a no-op."""
    redactions = Redactions()
    kind = normalize_kind(kind)
    # The cited version's markers are the server's: a revision that keeps them keeps them
    # as markers (any other marker in the text is escaped as typed).
    cited = (
        MemoryEntryVersion.objects.filter(entry_version_id=citation.entry_version_id)
        .values_list("text", flat=True)
        .first()
    )
    text = redactions.text(normalize_text(text), carried=cited)
    reason = redactions.optional(reason)

    def plan() -> _Change | None:
        current = _current_version(scope_id, citation)
        if current.state != ManifestState.ACTIVE:
            raise MemoryEntryInactive()
        version = current.entry_version
        if version.kind == kind and version.text == text:
            return None
        return _Change(
            "revise", citation.entry_id, kind=kind, text=text, from_version=version, reason=reason
        )

    return _with(_write(scope_id=scope_id, plan=plan, document=text), redactions)


def memory_entry_retire(
    *, scope_id: str, citation: Citation, reason: str | None = None
) -> WriteResult:
    """Retire the cited entry (latest version only; a retired entry is MemoryEntryInactive).
    Secrets in the reason are redacted."""
    redactions = Redactions()
    reason = redactions.optional(reason)

    def plan() -> _Change | None:
        current = _current_version(scope_id, citation)
        if current.state != ManifestState.ACTIVE:
            raise MemoryEntryInactive()
        return _Change(
            "retire", citation.entry_id, from_version=current.entry_version, reason=reason
        )

    return _with(_write(scope_id=scope_id, plan=plan), redactions)


def memory_entry_reactivate(
    *, scope_id: str, citation: Citation, reason: str | None = None
) -> WriteResult:
    """Make a retired entry active again, at the version it was retired with.

    Reactivating an entry that is already active is a no-op. Secrets in the reason are
    redacted.
    """
    redactions = Redactions()
    reason = redactions.optional(reason)

    def plan() -> _Change | None:
        current = _current_version(scope_id, citation)
        if current.state == ManifestState.ACTIVE:
            return None
        return _Change(
            "reactivate", citation.entry_id, from_version=current.entry_version, reason=reason
        )

    # The cited version is the one reactivated (_current_version checks it).
    document = MemoryEntryVersion.objects.filter(
        scope_id=scope_id, entry_version_id=citation.entry_version_id
    ).values_list("text", flat=True)
    return _with(_write(scope_id=scope_id, plan=plan, document=document.first()), redactions)


def _current_version(scope_id: str, citation: Citation) -> MemoryManifestRow:
    """The entry's open manifest row, after checking the citation resolves and is current."""
    resolve_citation(scope_id=scope_id, citation=citation)
    current = (
        MemoryManifestRow.objects.select_related("entry_version")
        .filter(scope_id=scope_id, entry_id=citation.entry_id, valid_to__isnull=True)
        .get()
    )
    if current.entry_version_id != citation.entry_version_id:
        raise RevisionConflict("The citation names a superseded version of this entry.")
    return current


def _write(
    *,
    scope_id: str,
    plan: Callable[[], _Change | None],
    expected_revision: int | None = None,
    document: str | None = None,
) -> WriteResult:
    # The entry's vector is computed before the transaction (the model holds no lock).
    embedded = MEMORY_INDEX.embed([] if document is None else [document])
    # Only a lost race is retried, and only when the caller did not pin a revision; a
    # conflict the caller asked for (a pinned revision, a stale citation) is theirs.
    attempts = 1 if expected_revision is not None else _MAX_ATTEMPTS
    for attempt in range(attempts):
        try:
            with transaction.atomic():
                return _write_once(scope_id, plan, expected_revision, embedded)
        except (HeadMoved, IntegrityError) as error:
            if attempt == attempts - 1:
                raise RevisionConflict() from error
    raise AssertionError("unreachable")


def _write_once(
    scope_id: str,
    plan: Callable[[], _Change | None],
    expected_revision: int | None,
    embedded: Embedded,
) -> WriteResult:
    head = head_revision(scope_id=scope_id, family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID)
    if expected_revision is not None and expected_revision != head:
        raise RevisionConflict("expected_revision is not the current head.", details=None)
    change = plan()
    if change is None:
        return WriteResult(memory=memory_ref(head), entry=None)
    revision = head_advance(
        scope_id=scope_id,
        family=MEMORY_FAMILY,
        artifact_id=MEMORY_ARTIFACT_ID,
        expected_revision=head,
    )
    with MEMORY_INDEX.writing_vectors(embedded, scope_id=scope_id, cited_id=change.entry_id):
        version, row, record = _apply(scope_id, revision, change)
    revision_append(
        scope_id=scope_id,
        family=MEMORY_FAMILY,
        artifact_id=MEMORY_ARTIFACT_ID,
        revision=revision,
        content={"changes": [record]},
    )
    return WriteResult(memory=memory_ref(revision), entry=entry_of(revision, version, row.state))


def _apply(
    scope_id: str, revision: int, change: _Change
) -> tuple[MemoryEntryVersion, MemoryManifestRow, dict[str, Any]]:
    previous = change.from_version
    if change.op in ("add", "revise"):
        version = MemoryEntryVersion.objects.create(
            entry_version_id="mem_ver_" + uuid.uuid4().hex,
            scope_id=scope_id,
            entry_id=change.entry_id,
            version=previous.version + 1 if previous else 1,
            previous_version_id=previous.entry_version_id if previous else None,
            kind=change.kind,
            text=change.text,
            source_refs="[]",
            artifact_refs="[]",
            content_hash=content_hash(
                kind=change.kind, text=change.text, source_refs=[], artifact_refs=[]
            ),
            created_in_revision=revision,
        )
    elif previous is not None:
        version = previous
    else:
        raise ValueError(f"{change.op} needs the entry's current version")

    if previous is not None:
        closed = MemoryManifestRow.objects.filter(
            scope_id=scope_id, entry_id=change.entry_id, valid_to__isnull=True
        ).update(valid_to=revision)
        if closed != 1:
            raise HeadMoved()
    state = ManifestState.INACTIVE if change.op == "retire" else ManifestState.ACTIVE
    row = MemoryManifestRow.objects.create(
        scope_id=scope_id,
        entry_id=change.entry_id,
        entry_version=version,
        state=state,
        valid_from=revision,
    )
    projection_sync(version, state)

    record = {
        "op": change.op,
        "entry_id": change.entry_id,
        "from_entry_version_id": None,
        "to_entry_version_id": None,
        "reason": change.reason,
    }
    # "from" is the version leaving the active set, "to" the one entering it.
    if change.op in ("revise", "retire"):
        if previous is None:  # _current_version found it: a revise or retire has one
            raise RuntimeError(f"{change.op} of {change.entry_id} without its version")
        record["from_entry_version_id"] = previous.entry_version_id
    if change.op != "retire":
        record["to_entry_version_id"] = version.entry_version_id
    return version, row, record


def projection_sync(version: MemoryEntryVersion, state: str) -> None:
    """Make the active-entry projection agree with the entry's new manifest row."""
    existing = MemoryActiveEntry.objects.filter(
        scope_id=version.scope_id, entry_id=version.entry_id
    )
    previous_text = _projected_text(version.scope_id, version.entry_id)
    if state != ManifestState.ACTIVE:
        existing.delete()
        MEMORY_INDEX.counts.adjust(scope_id=version.scope_id, removed=previous_text, added=None)
        return
    # A reactivation brings back a stored version: verify it rather than trust it.
    if not version_verifies(version):
        raise MemoryVersionUnverified()
    values = projection_values(version)
    if previous_text is None:
        MemoryActiveEntry.objects.create(
            scope_id=version.scope_id, entry_id=version.entry_id, **values
        )
    else:
        existing.update(**values)
    MEMORY_INDEX.counts.adjust(
        scope_id=version.scope_id, removed=previous_text, added=values["searchable_text"]
    )


def _projected_text(scope_id: str, entry_id: str) -> str | None:
    """The entry's searchable text in the projection, None when it has no row there. A
    plain statement: every write reads it (the ORM's took longer to build than to run)."""
    table = connection.ops.quote_name(MemoryActiveEntry._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT searchable_text FROM {table} WHERE scope_id = %s AND entry_id = %s",  # noqa: S608 - names and placeholders only
            [scope_id, entry_id],
        )
        found = cursor.fetchone()
    return None if found is None else str(found[0])


def projection_values(version: MemoryEntryVersion) -> dict[str, Any]:
    return {
        "entry_version": version,
        "kind_text_hash": kind_text_hash(version.kind, version.text),
        "scope_token": MEMORY_INDEX.scope_token(version.scope_id),
        "searchable_text": MEMORY_INDEX.analysed(version.text),
    }


# -- session-start marks (the desk) ----------------------------------------------------


def session_mark(*, entry_version: MemoryEntryVersion, marked_by: str) -> bool:
    """Mark ``entry_version`` for every session's start (``contextpack.session``), as
    ``marked_by`` chose on the desk; False when it already was. The caller checks that
    the user holds ``memory.mark_session_start``."""
    _mark, created = SessionStartMark.objects.get_or_create(
        entry_version=entry_version,
        defaults={"scope_id": entry_version.scope_id, "marked_by": marked_by},
    )
    return created


def session_unmark(*, entry_version: MemoryEntryVersion) -> bool:
    """Take ``entry_version`` out of session starts; False when it was not marked."""
    deleted, _ = SessionStartMark.objects.filter(entry_version=entry_version).delete()
    return bool(deleted)
