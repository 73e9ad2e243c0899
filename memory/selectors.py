"""Reads of a scope's Memory: exact citations, listings, changes and search."""

import json
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

from django.db import connection
from django.db.models import Q

from memory.exceptions import MemoryNotFound
from memory.models import (
    ManifestState,
    MemoryEntryVersion,
    MemoryManifestRow,
    SessionStartMark,
)
from memory.search_index import MEMORY_INDEX
from memory.values import (
    CHANGE_OP_WIRE,
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Citation,
    MemoryChange,
    MemoryChanges,
    MemoryEntry,
    MemoryEntryPage,
    MemoryFound,
    MemoryRevision,
    MemorySearchResult,
    memory_ref,
)
from powercontext.artifacts import head_revision, revision_content
from powercontext.cursors import decode_cursor, encode_cursor
from powercontext.exceptions import ArtifactNotFound, InvalidRequest
from powercontext.fields import identity_text
from powercontext.models import ArtifactRevision
from powercontext.pages import json_text_bytes
from powercontext.refs import artifact_refs, source_refs
from powercontext.search import Considered, Query, SearchInconsistent
from powercontext.snapshot import read_snapshot

# A list page stops before the entry that would take its entries past this many bytes
# (text, kind and references, as the response's JSON carries them, escapes included),
# and always holds at least one entry: 1000 entries of 8 KiB would otherwise make one
# response of 10 to 48 MB (docs/RELIABILITY.md, "Bounded responses").
LIST_PAGE_BYTES = 1024 * 1024


def memory_head(*, scope_id: str) -> int:
    """The scope's Memory head revision; 0 when the scope has no Memory yet."""
    return head_revision(scope_id=scope_id, family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID)


def entry_of(revision: int, version: MemoryEntryVersion, state: str) -> MemoryEntry:
    """The MemoryEntry for ``version`` as seen in ``revision``."""
    return MemoryEntry(
        citation=Citation(revision, version.entry_id, version.entry_version_id),
        version=version.version,
        kind=version.kind,
        text=version.text,
        state=state,
        source_refs=source_refs(json.loads(version.source_refs)),
        artifact_refs=artifact_refs(json.loads(version.artifact_refs)),
    )


def _valid_at(revision: int) -> Q:
    return Q(valid_from__lte=revision) & (Q(valid_to__isnull=True) | Q(valid_to__gt=revision))


def resolve_citation(*, scope_id: str, citation: Citation) -> MemoryManifestRow:
    """The manifest row that makes ``citation`` true, or ArtifactNotFound / MemoryNotFound."""
    if citation.family != MEMORY_FAMILY or citation.artifact_id != MEMORY_ARTIFACT_ID:
        raise ArtifactNotFound()
    if citation.revision > memory_head(scope_id=scope_id):
        raise ArtifactNotFound()
    row = (
        MemoryManifestRow.objects.select_related("entry_version")
        .filter(
            _valid_at(citation.revision),
            scope_id=scope_id,
            entry_id=citation.entry_id,
            entry_version_id=citation.entry_version_id,
        )
        .first()
    )
    if row is None:
        raise MemoryNotFound()
    return row


def memory_entry_get(*, scope_id: str, citation: Citation) -> MemoryEntry:
    """Exactly the cited version, with its state in the cited revision."""
    row = resolve_citation(scope_id=scope_id, citation=citation)
    return entry_of(citation.revision, row.entry_version, row.state)


@dataclass(frozen=True)
class _ListCursor:
    revision: int
    after_entry_id: str
    include_inactive: bool

    def encode(self) -> str:
        return encode_cursor([self.revision, self.after_entry_id, self.include_inactive])

    @classmethod
    def decode(cls, token: str) -> "_ListCursor":
        return decode_cursor(token, cls._parse)

    @classmethod
    def _parse(cls, values: list[Any]) -> "_ListCursor":
        revision, after, inactive = values
        if not (
            isinstance(revision, int)
            and not isinstance(revision, bool)
            and revision >= 1
            and isinstance(after, str)
            and isinstance(inactive, bool)
        ):
            raise ValueError(values)
        return cls(revision, after, inactive)


def memory_entries_list(
    *, scope_id: str, include_inactive: bool = False, limit: int = 1000, cursor: str | None = None
) -> MemoryEntryPage:
    """Entries of one revision (the head, or the revision a cursor was issued for),
    ordered by entry id, so paging never mixes revisions."""
    if cursor is not None:
        position = _ListCursor.decode(cursor)
        if position.include_inactive != include_inactive:
            raise InvalidRequest("cursor", "The cursor was issued for other filters.")
        if position.revision > memory_head(scope_id=scope_id):
            raise InvalidRequest("cursor", "The cursor does not belong to this scope.")
        revision, after = position.revision, position.after_entry_id
    else:
        revision, after = memory_head(scope_id=scope_id), ""
    if revision == 0:
        return MemoryEntryPage(memory=None, entries=[], next_cursor=None)
    rows = MemoryManifestRow.objects.select_related("entry_version").filter(
        _valid_at(revision), scope_id=scope_id, entry_id__gt=after
    )
    if not include_inactive:
        rows = rows.filter(state=ManifestState.ACTIVE)
    page: list[MemoryManifestRow] = []
    page_bytes = 0
    next_cursor = None
    # Rows are read in chunks, so a page that fills its bytes early reads little more.
    for row in rows.order_by("entry_id")[: limit + 1].iterator(chunk_size=100):
        size = _entry_bytes(row.entry_version)
        if len(page) == limit or (page and page_bytes + size > LIST_PAGE_BYTES):
            next_cursor = _ListCursor(revision, page[-1].entry_id, include_inactive).encode()
            break
        page.append(row)
        page_bytes += size
    return MemoryEntryPage(
        memory=memory_ref(revision),
        entries=[entry_of(revision, row.entry_version, row.state) for row in page],
        next_cursor=next_cursor,
    )


def _entry_bytes(version: MemoryEntryVersion) -> int:
    # As the response carries them: the text and kind JSON-escaped (a control character
    # takes six bytes), the references kept as JSON text already.
    return (
        json_text_bytes(version.text)
        + json_text_bytes(version.kind)
        + len(version.source_refs.encode())
        + len(version.artifact_refs.encode())
    )


def memory_changes(*, scope_id: str, since_revision: int, limit: int = 1000) -> MemoryChanges:
    """Revisions after ``since_revision``, oldest first, each with its changes."""
    head = memory_head(scope_id=scope_id)
    if head == 0:
        return MemoryChanges(memory=None, revisions=[], next_since=None)
    revisions = list(
        ArtifactRevision.objects.filter(
            scope_id=scope_id,
            family=MEMORY_FAMILY,
            artifact_id=MEMORY_ARTIFACT_ID,
            revision__gt=since_revision,
            revision__lte=head,
        ).order_by("revision")[: limit + 1]
    )
    next_since = None
    if len(revisions) > limit:
        revisions = revisions[:limit]
        next_since = revisions[-1].revision
    return MemoryChanges(
        memory=memory_ref(head),
        revisions=[
            MemoryRevision(memory_ref(item.revision), _changes(revision_content(item)))
            for item in revisions
        ],
        next_since=next_since,
    )


def _changes(content: dict[str, Any]) -> list[MemoryChange]:
    """A revision's stored change list with each op under its public name."""
    return [
        MemoryChange(
            op=CHANGE_OP_WIRE[change["op"]],
            entry_id=change["entry_id"],
            from_entry_version_id=change.get("from_entry_version_id"),
            to_entry_version_id=change.get("to_entry_version_id"),
            reason=change.get("reason"),
        )
        for change in content["changes"]
    ]


@dataclass(frozen=True)
class MemorySearchHit:
    revision: int
    entry_id: str
    entry_version_id: str
    text: str
    score: float
    # The channels that proposed the hit (``powercontext.search.fusion``).
    channels: tuple[str, ...] = ("fts",)


def memory_search_at(
    *,
    scope_id: str,
    head: int,
    query: Query,
    limit: int,
    verdicts: list[Considered] | None = None,
) -> list[MemorySearchHit]:
    """The entries of revision ``head`` that ``query`` finds, best first, at most
    ``limit`` (``powercontext.search.search``: both channels, fused, and only the
    candidates the relevance decision admits). When given, ``verdicts`` receives every
    candidate with the decision's verdict (the desk's pack preview, from the same search).

    Must run in the same read snapshot in which ``head`` was read. Each hit's revision
    comes from the manifest row that makes it active, so a projection that disagreed with
    the head would surface as a citation of another revision, which the Context Pack
    builder refuses, instead of passing silently.
    """
    return _found(scope_id=scope_id, head=head, query=query, limit=limit, verdicts=verdicts)[0]


def _found(
    *, scope_id: str, head: int, query: Query, limit: int, verdicts: list[Considered] | None
) -> tuple[list[MemorySearchHit], str | None]:
    """:func:`memory_search_at`'s hits, and the mode the search ran in."""
    if head == 0:
        return [], None
    found = MEMORY_INDEX.search(query, scope_id=scope_id, limit=limit)
    if verdicts is not None:
        verdicts.extend(found.considered)
    ranked = [replace(item.hit, score=item.score) for item in found.hits]
    if not ranked:
        return [], found.mode
    channels = {item.hit.cited_id: item.channels for item in found.hits}
    rows = _active_versions(
        scope_id, [hit.cited_id for hit in ranked], [str(hit.version) for hit in ranked]
    )
    hits = []
    for hit in ranked:
        row = rows.get(str(hit.version))
        if row is None:
            # Revision 0 names no revision: a hit with no active manifest row at all,
            # which the callers refuse (the builder's head check, SearchInconsistent).
            hits.append(
                MemorySearchHit(
                    0, hit.cited_id, str(hit.version), "", hit.score, channels[hit.cited_id]
                )
            )
            continue
        valid_from, entry_id, entry_version_id, text = row
        hits.append(
            MemorySearchHit(
                max(valid_from, head),
                entry_id,
                entry_version_id,
                text,
                hit.score,
                channels[hit.cited_id],
            )
        )
    return hits, found.mode


def _active_versions(
    scope_id: str, entry_ids: list[str], version_ids: list[str]
) -> dict[str, tuple[int, str, str, str]]:
    """For the hits' versions (``entry_ids`` and ``version_ids``, one of each per hit)
    that an open active manifest row makes current:
    ``entry_version_id -> (valid_from, entry_id, entry_version_id, text)`` of that row and
    its version, in one query.

    Written as SQL because it runs on every prepare: the ORM spent longer building the
    model instances and the IN lists than the indexed lookup of a window of hits takes.
    """
    quote = connection.ops.quote_name
    manifest = quote(MemoryManifestRow._meta.db_table)
    versions = quote(MemoryEntryVersion._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.valid_from, v.entry_id, v.entry_version_id, v.text "  # noqa: S608 - names and placeholders only
            f"FROM {manifest} m JOIN {versions} v ON v.entry_version_id = m.entry_version_id "
            # entry_id first: it lets the planner seek the few hits' rows instead of
            # walking every open row of a large scope.
            f"WHERE m.entry_id IN ({', '.join(['%s'] * len(entry_ids))}) "
            f"AND m.entry_version_id IN ({', '.join(['%s'] * len(version_ids))}) "
            "AND m.scope_id = %s AND m.state = %s AND m.valid_to IS NULL",
            [*entry_ids, *version_ids, scope_id, ManifestState.ACTIVE.value],
        )
        rows = cursor.fetchall()
    result = {}
    for valid_from, entry_id, version_id, text in rows:
        version_id = identity_text(version_id)
        result[version_id] = (valid_from, identity_text(entry_id), version_id, text)
    return result


def memory_search(*, scope_id: str, query: str, mode: str, limit: int = 10) -> MemorySearchResult:
    """The search operation: normalised scores (best hit 1.0), ties by entry id.

    ``mode``: ``fts`` ranks by the query's words, ``vector`` by its meaning, ``hybrid``
    by both; ``auto`` is hybrid when the vector index is ready and fts otherwise
    (``powercontext.search.Query.lookup``). The result's ``mode`` says which ran.
    ``vector`` and ``hybrid`` asked for while the vector index cannot be read are refused
    (``capability_not_supported``, with the reason) rather than quietly answered by fts.
    """
    # Embedded before the snapshot opens: the model holds no lock.
    lookup = MEMORY_INDEX.lookup(query, mode=mode)
    with read_snapshot():
        head = memory_head(scope_id=scope_id)
        if head == 0:
            return MemorySearchResult(memory=None, mode=None, hits=[])
        hits, ran = _found(scope_id=scope_id, head=head, query=lookup, limit=limit, verdicts=None)
    if any(hit.revision != head for hit in hits):
        raise SearchInconsistent()
    best = hits[0].score if hits else 0.0
    return MemorySearchResult(
        memory=memory_ref(head),
        mode=ran,
        hits=[
            MemoryFound(
                citation=Citation(hit.revision, hit.entry_id, hit.entry_version_id),
                text=hit.text,
                score=hit.score / best if best > 0 else 0.0,
                matched_by=hit.channels,
            )
            for hit in hits
        ],
    )


# -- the review desk's reads (browsing only) --------------------------------------------

# What the desk calls a manifest state: "inactive" is what a retire leaves behind.
STATE_LABELS = {ManifestState.ACTIVE.value: "active", ManifestState.INACTIVE.value: "retired"}


def state_label(state: str | None) -> str:
    """``active``, ``retired``, or ``absent`` (the entry did not exist at that revision)."""
    return "absent" if state is None else STATE_LABELS.get(state, state)


def _wire_op(stored: str) -> str:
    """A change's op by its public name (the one ``/v1/memory/changes`` reports)."""
    return CHANGE_OP_WIRE.get(stored, stored)


@dataclass(frozen=True)
class EntryChange:
    """One change of one entry: what the revision did to it (by the op's public name)
    and why."""

    revision: int
    op: str
    entry_version_id: str
    version: int
    state: str
    reason: str | None
    at: Any


def memory_entry_history(*, scope_id: str, entry_id: str) -> list[EntryChange]:
    """Every change of an entry, oldest first, with the reason its revision recorded."""
    rows = list(
        MemoryManifestRow.objects.select_related("entry_version")
        .filter(scope_id=scope_id, entry_id=entry_id)
        .order_by("valid_from")
    )
    revisions = {
        item.revision: item
        for item in ArtifactRevision.objects.filter(
            scope_id=scope_id,
            family=MEMORY_FAMILY,
            artifact_id=MEMORY_ARTIFACT_ID,
            revision__in=[row.valid_from for row in rows],
        )
    }
    history = []
    for row in rows:
        revision = revisions.get(row.valid_from)
        changes = revision_content(revision).get("changes", []) if revision else []
        change: dict[str, Any] = next((c for c in changes if c.get("entry_id") == entry_id), {})
        history.append(
            EntryChange(
                revision=row.valid_from,
                op=_wire_op(change.get("op", "?")),
                entry_version_id=row.entry_version_id,
                version=row.entry_version.version,
                state=state_label(row.state),
                reason=change.get("reason"),
                at=revision.created_at if revision else None,
            )
        )
    return history


@dataclass(frozen=True)
class CitedEntry:
    """An entry a Memory revision changed, as a reviewer weighs it as evidence: its text
    in that revision and its state then and now."""

    entry_id: str
    entry_version_id: str
    version: int
    text: str
    op: str
    state_at_revision: str
    state_now: str
    version_now: int | None


def memory_states_at(
    *, scope_id: str, entry_ids: Collection[str], revision: int
) -> dict[str, tuple[str, int]]:
    """``entry_id -> (state label, version)`` of the entries in the manifest of
    ``revision``; an entry missing from the result did not exist then."""
    rows = MemoryManifestRow.objects.select_related("entry_version").filter(
        _valid_at(revision), scope_id=scope_id, entry_id__in=list(entry_ids)
    )
    return {row.entry_id: (state_label(row.state), row.entry_version.version) for row in rows}


def memory_revision_cited(*, scope_id: str, revision: int) -> list[CitedEntry]:
    """The entries Memory revision ``revision`` changed, each with its state at that
    revision and at the head now. ArtifactNotFound when the scope has no such revision."""
    found = ArtifactRevision.objects.filter(
        scope_id=scope_id,
        family=MEMORY_FAMILY,
        artifact_id=MEMORY_ARTIFACT_ID,
        revision=revision,
    ).first()
    if found is None:
        raise ArtifactNotFound()
    changes = revision_content(found).get("changes", [])
    version_ids = [
        change.get("to_entry_version_id") or change.get("from_entry_version_id")
        for change in changes
    ]
    versions = {
        version.entry_version_id: version
        for version in MemoryEntryVersion.objects.filter(entry_version_id__in=version_ids)
    }
    entry_ids = [change["entry_id"] for change in changes]
    then = memory_states_at(scope_id=scope_id, entry_ids=entry_ids, revision=revision)
    now = memory_states_at(
        scope_id=scope_id, entry_ids=entry_ids, revision=memory_head(scope_id=scope_id)
    )
    cited = []
    for change, version_id in zip(changes, version_ids, strict=True):
        version = versions.get(version_id)
        if version is None:
            continue
        state_now, version_now = now.get(change["entry_id"], ("absent", None))
        cited.append(
            CitedEntry(
                entry_id=change["entry_id"],
                entry_version_id=version.entry_version_id,
                version=version.version,
                text=version.text,
                op=_wire_op(change.get("op", "?")),
                state_at_revision=then.get(change["entry_id"], ("absent", None))[0],
                state_now=state_now,
                version_now=version_now,
            )
        )
    return cited


def memory_session_entries(*, scope_id: str, revision: int, limit: int) -> list[MemoryEntry]:
    """At most ``limit`` entries a reviewer marked for session start (``SessionStartMark``)
    that are active at ``revision`` in the very version marked (an entry revised since
    is left out until its new version is marked), the most recently marked first. Run it
    in the caller's read snapshot, with the head it read."""
    if revision == 0 or limit <= 0:
        return []
    marked = SessionStartMark.objects.filter(scope_id=scope_id).values("entry_version_id")
    rows = (
        MemoryManifestRow.objects.select_related("entry_version", "entry_version__session_mark")
        .filter(
            _valid_at(revision),
            scope_id=scope_id,
            state=ManifestState.ACTIVE,
            entry_version_id__in=marked,
        )
        .order_by("-entry_version__session_mark__marked_at", "entry_id")[:limit]
    )
    return [entry_of(revision, row.entry_version, row.state) for row in rows]
