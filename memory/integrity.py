"""Integrity checks of the Memory family (``manage.py check_integrity``).

Each check reads the authoritative tables and reports what does not hold, as findings;
none repairs anything. The artifact hash chain itself is the kernel's check
(``powercontext.maintenance.artifact_chain_check``). Per scope:

- ``memory.versions``: every version's ``content_hash`` recomputed from its content (a
  redacted version's also equal to the hash its redaction record kept), and its version
  chain (v1 has no predecessor, vN names v(N-1) of the same entry);
- ``memory.manifest``: every manifest row resolves to an existing version of the same
  scope and entry, ranges are well formed and within the head, an entry's rows follow
  each other without gap or overlap (one open row at most), and every version is in the
  manifest;
- ``memory.session_marks``: every session-start mark names an existing version of its
  own scope (an archive carries marks apart from the versions they name);
- ``memory.changes``: each revision's recorded changes are exactly the manifest rows
  that open and close at that revision, and the versions it creates;
- ``memory.projection``: the active-entry projection equals what the manifest says
  (missing, extra and stale rows), leaving out versions that fail their content hash
  (a row for one is a finding: it would serve altered text);
- ``memory.term_stats``: the per-scope term statistics count exactly the active
  entries' terms;
- ``memory.fulltext``: the full-text index agrees with the projection (FTS5
  ``integrity-check``; not scoped: the index is one structure).
"""

import json
from collections import Counter, defaultdict
from typing import Any

from memory.models import (
    ManifestState,
    MemoryEntryVersion,
    MemoryManifestRow,
    SessionStartMark,
)
from memory.rebuild import memory_scopes, projection_diff, term_stats_diff
from memory.search_index import MEMORY_INDEX
from memory.services import content_hash
from memory.values import MEMORY_ARTIFACT_ID, MEMORY_FAMILY
from powercontext.artifacts import head_revision
from powercontext.models import ArtifactHead, ArtifactRevision
from powercontext.redaction_log import MEMORY_VERSION, latest_digests
from powercontext.reports import CheckResult
from powercontext.snapshot import read_snapshot

_CHUNK = 2000
# (entry_id, entry_version_id, state) of a manifest row.
RowKey = tuple[str, str, str]


def memory_check(*, scope_id: str | None = None) -> list[CheckResult]:
    versions = CheckResult("memory.versions")
    manifest = CheckResult("memory.manifest")
    changes = CheckResult("memory.changes")
    projection = CheckResult("memory.projection")
    terms = CheckResult("memory.term_stats")
    marks = CheckResult("memory.session_marks")
    scopes = set(memory_scopes(scope_id))
    # A scope may have a head and revisions but lost every manifest row and version.
    heads = ArtifactHead.objects.filter(family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID)
    versions_of = MemoryEntryVersion.objects.all()
    marks_of = SessionStartMark.objects.all()
    if scope_id is not None:
        heads, versions_of = heads.filter(scope_id=scope_id), versions_of.filter(scope_id=scope_id)
        marks_of = marks_of.filter(scope_id=scope_id)
    scopes |= set(heads.values_list("scope_id", flat=True))
    scopes |= set(versions_of.values_list("scope_id", flat=True).distinct())
    scopes |= set(marks_of.values_list("scope_id", flat=True).distinct())
    for scope in sorted(scopes):
        # One snapshot per scope: a write committing meanwhile cannot show up in one
        # table and not yet in another, which would read as a false finding.
        with read_snapshot():
            head = head_revision(
                scope_id=scope, family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID
            )
            known = _check_versions(scope, versions)
            opened, closed = _check_manifest(scope, head, known, manifest)
            _check_marks(scope, known, marks)
            _check_changes(scope, known, opened, closed, changes)
            _check_projection(scope, projection, terms)
    # Outside any snapshot: FTS5's check is one statement (atomic by itself) that writes.
    return [versions, manifest, marks, changes, projection, terms, _check_fulltext()]


def _check_versions(scope: str, result: CheckResult) -> dict[str, tuple[str, int, int]]:
    """Recompute content hashes; return {version id: (entry_id, version, created_in)}."""
    known: dict[str, tuple[str, int, int]] = {}
    previous_of: dict[str, str | None] = {}
    # A redacted version's hash was recomputed over the redacted text; its record keeps
    # that hash, so a later change and a recomputed hash still disagree with it.
    redacted = latest_digests(MEMORY_VERSION, scope)
    rows = (
        MemoryEntryVersion.objects.filter(scope_id=scope)
        .values_list(
            "entry_version_id",
            "entry_id",
            "version",
            "previous_version_id",
            "kind",
            "text",
            "source_refs",
            "artifact_refs",
            "content_hash",
            "created_in_revision",
        )
        .iterator(chunk_size=_CHUNK)
    )
    for (
        version_id,
        entry_id,
        number,
        previous,
        kind,
        text,
        sources,
        artifacts,
        stored,
        created,
    ) in rows:
        result.checked += 1
        known[version_id] = (entry_id, number, created)
        previous_of[version_id] = previous
        try:
            expected = content_hash(
                kind=kind,
                text=text,
                source_refs=json.loads(sources),
                artifact_refs=json.loads(artifacts),
            )
        except ValueError:
            result.add(scope, version_id, "source_refs or artifact_refs is not JSON")
            continue
        if expected != stored:
            result.add(scope, version_id, "content_hash does not match its content")
        elif (scope, version_id) in redacted and redacted[(scope, version_id)] != stored:
            result.add(scope, version_id, "content differs from what its redaction left")
    for version_id, previous in previous_of.items():
        entry_id, number, _ = known[version_id]
        if number == 1:
            if previous is not None:
                result.add(scope, version_id, "version 1 names a previous version")
        elif previous not in known or known[previous][:2] != (entry_id, number - 1):
            result.add(scope, version_id, f"previous version is not v{number - 1} of {entry_id}")
    return known


def _check_marks(scope: str, known: dict[str, tuple[str, int, int]], result: CheckResult) -> None:
    """Every session-start mark of ``scope`` names one of its versions (``known``)."""
    rows = SessionStartMark.objects.filter(scope_id=scope).values_list(
        "entry_version_id", flat=True
    )
    for version_id in rows.iterator(chunk_size=_CHUNK):
        result.checked += 1
        if version_id not in known:
            result.add(scope, version_id, "the session-start mark names no version of its scope")


def _check_manifest(
    scope: str, head: int, known: dict[str, tuple[str, int, int]], result: CheckResult
) -> tuple[dict[int, set[RowKey]], dict[int, set[RowKey]]]:
    """Check manifest rows; return the rows opened and closed at each revision."""
    opened: dict[int, set[RowKey]] = defaultdict(set)
    closed: dict[int, set[RowKey]] = defaultdict(set)
    referenced: set[str] = set()
    previous: tuple[str, int | None] | None = None  # (entry_id, valid_to) of the prior row
    rows = (
        MemoryManifestRow.objects.filter(scope_id=scope)
        .order_by("entry_id", "valid_from", "id")
        .values_list("id", "entry_id", "entry_version_id", "state", "valid_from", "valid_to")
        .iterator(chunk_size=_CHUNK)
    )
    for row_id, entry_id, version_id, state, valid_from, valid_to in rows:
        result.checked += 1
        subject = f"manifest row {row_id} ({entry_id} [{valid_from}, {valid_to or ''}))"
        referenced.add(version_id)
        version = known.get(version_id)
        if version is None:
            result.add(scope, subject, f"names {version_id}, which is not a version in this scope")
        elif version[0] != entry_id:
            result.add(scope, subject, f"names {version_id}, a version of {version[0]}")
        if state not in ManifestState.values:
            result.add(scope, subject, f"unknown state {state!r}")
        if valid_from < 1 or valid_from > head:
            result.add(scope, subject, f"starts outside revisions 1..{head}")
        if valid_to is not None and not valid_from < valid_to <= head:
            result.add(scope, subject, f"ends outside ({valid_from}, {head}]")
        if previous is not None and previous[0] == entry_id:
            if previous[1] is None:
                result.add(scope, subject, "overlaps an earlier row that is still open")
            elif previous[1] > valid_from:
                result.add(scope, subject, "overlaps the entry's previous row")
            elif previous[1] < valid_from:
                result.add(scope, subject, "leaves a gap after the entry's previous row")
        previous = (entry_id, valid_to)
        opened[valid_from].add((entry_id, version_id, state))
        if valid_to is not None:
            closed[valid_to].add((entry_id, version_id, state))
    for version_id in sorted(known.keys() - referenced):
        result.add(scope, version_id, "version is in no manifest row")
    return opened, closed


def _expected_rows(change: dict[str, Any]) -> tuple[set[RowKey], set[RowKey], str | None]:
    """(rows the change opens, rows it closes, version it creates) per DESIGN.md §3.

    Ops by their stored names (``memory.values.CHANGE_OP_WIRE``): a deactivation is
    stored as ``retire`` and only reported as ``deactivate``; any other name is not a
    known change."""
    op, entry = change.get("op"), change.get("entry_id")
    source, target = change.get("from_entry_version_id"), change.get("to_entry_version_id")
    active, inactive = ManifestState.ACTIVE.value, ManifestState.INACTIVE.value
    if op == "add":
        return {(entry, target, active)}, set(), target
    if op == "revise":
        return {(entry, target, active)}, {(entry, source, active)}, target
    if op == "retire":
        return {(entry, source, inactive)}, {(entry, source, active)}, None
    if op == "reactivate":
        return {(entry, target, active)}, {(entry, target, inactive)}, None
    raise ValueError(op)


def _check_changes(
    scope: str,
    known: dict[str, tuple[str, int, int]],
    opened: dict[int, set[RowKey]],
    closed: dict[int, set[RowKey]],
    result: CheckResult,
) -> None:
    created: dict[int, set[str]] = defaultdict(set)
    for version_id, (_, _, revision) in known.items():
        created[revision].add(version_id)
    revisions = (
        ArtifactRevision.objects.filter(
            scope_id=scope, family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID
        )
        .order_by("revision")
        .values_list("revision", "content")
        .iterator(chunk_size=_CHUNK)
    )
    seen: set[int] = set()
    for revision, content in revisions:
        result.checked += 1
        seen.add(revision)
        subject = f"revision {revision}"
        want_open: set[RowKey] = set()
        want_closed: set[RowKey] = set()
        want_created: set[str] = set()
        try:
            for change in json.loads(content)["changes"]:
                rows_opened, rows_closed, new_version = _expected_rows(change)
                want_open |= rows_opened
                want_closed |= rows_closed
                if new_version is not None:
                    want_created.add(new_version)
        except (ValueError, KeyError, TypeError, AttributeError):
            result.add(scope, subject, "content is not a list of known changes")
            continue
        if want_open != opened.pop(revision, set()):
            result.add(scope, subject, "its changes disagree with the manifest rows it opens")
        if want_closed != closed.pop(revision, set()):
            result.add(scope, subject, "its changes disagree with the manifest rows it closes")
        if want_created != created.pop(revision, set()):
            result.add(scope, subject, "its changes disagree with the versions created in it")
    for name, strays in (("opened", opened), ("closed", closed), ("created", created)):
        for revision in sorted(strays.keys() - seen):
            result.add(
                scope, f"revision {revision}", f"rows or versions {name} in a missing revision"
            )


def _check_projection(scope: str, result: CheckResult, terms: CheckResult) -> None:
    expected: Counter[str] = Counter()
    for diff in projection_diff(scope, _CHUNK):
        expected.update(MEMORY_INDEX.counts.expected(diff.searchable_texts))
        result.checked += diff.checked
        for entry_id, _ in diff.missing:
            result.add(scope, entry_id, "active entry missing from the projection")
        for _, entry_id, _, differing in diff.stale:
            result.add(scope, entry_id, f"projection row is stale ({', '.join(differing)})")
        # An active entry whose version fails its content hash (memory.versions says
        # which) must not be projected: a row it still has would serve altered text.
        unverified = {entry_id for entry_id, _ in diff.unverified}
        for _, entry_id in diff.extra:
            if entry_id in unverified:
                result.add(scope, entry_id, "projection row for a version that fails verification")
            else:
                result.add(scope, entry_id, "projection row for an entry that is not active")
    differences = term_stats_diff(scope, expected)
    terms.checked += len(expected)
    for term, (stored, count) in sorted(differences.items()):
        subject = "document count" if term == MEMORY_INDEX.counts.DOCUMENTS else f"term {term!r}"
        terms.add(scope, subject, f"counted in {stored} entries, active in {count}")


def _check_fulltext() -> CheckResult:
    result = CheckResult("memory.fulltext")
    problem = MEMORY_INDEX.status()
    if problem is None:
        if not MEMORY_INDEX.checks_integrity:
            result.skipped = "this search backend has no index integrity check"
            return result
        problem = MEMORY_INDEX.integrity()
    result.checked = 1
    if problem:
        result.add(None, "full-text index", problem)
    return result
