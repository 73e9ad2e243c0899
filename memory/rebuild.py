"""Rebuilding the Memory family's derived state: the active-entry projection, its
full-text index and the per-scope term statistics (DESIGN.md §3, "Derived").

The authoritative answer to "what is active in scope S" is S's open manifest rows
(``valid_to`` NULL) in state ``active``, joined to their immutable versions; each
projection row must equal ``memory.services.projection_values`` of that version.

Only versions that verify (``memory.services.version_verifies``: the content_hash
recomputes from the stored content) are projected. A version altered in the database is
left out of the projection, and so of the full-text index and the term statistics, and
reported by id: a rebuild never makes tampered text searchable (``check_integrity``
keeps reporting the version itself).

A rebuild compares the two in chunks of entries (a merge over ``entry_id``, so memory
stays bounded by the chunk size) and writes only the rows that differ: missing rows are
inserted, stale ones updated, extra ones deleted. The FTS5 triggers carry each fix into
the index. The term statistics (``MemoryTermStat``) are then recounted from the expected
searchable texts and only differing rows rewritten. On a healthy database a rebuild
writes nothing to the projection, which is what makes it cheap to run again
(idempotent) and quick to run on a large database.

Everything happens in ONE transaction (whole scope, or every scope): on SQLite under WAL
a reader keeps the snapshot it started with until the rebuild commits, so it sees the
old projection and index or the new ones, never a partial or empty index; on OceanBase
the same holds under REPEATABLE READ. The price is that writers wait for the rebuild
(Django's IMMEDIATE transactions queue on the busy timeout, 30 s by default).
"""

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

from memory.models import ManifestState, MemoryActiveEntry, MemoryManifestRow, MemoryTermStat
from memory.search_index import MEMORY_INDEX
from memory.services import projection_values, version_verifies
from powercontext.reports import Progress, RebuildReport

# The projection columns a rebuild compares and writes (besides scope and entry ids).
PROJECTED_FIELDS = ("entry_version_id", "kind_text_hash", "scope_token", "searchable_text")


@dataclass
class ChunkDiff:
    """How one chunk of a scope's projection differs from the manifest."""

    checked: int = 0
    # (entry_id, expected values)
    missing: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # (row id, entry_id, expected values, names of the differing fields)
    stale: list[tuple[int, str, dict[str, Any], list[str]]] = field(default_factory=list)
    # (row id, entry_id)
    extra: list[tuple[int, str]] = field(default_factory=list)
    # The searchable_text of every active entry of the chunk, as it must be: what the
    # scope's term statistics are counted from.
    searchable_texts: list[str] = field(default_factory=list)
    # (entry_id, entry_version_id) of active entries whose version fails verification:
    # not projected (a projection row they still have is in ``extra``).
    unverified: list[tuple[str, str]] = field(default_factory=list)


def memory_scopes(scope_id: str | None = None) -> list[str]:
    """Scopes with any Memory state: a manifest, or (stray) projection rows or term
    statistics. With ``scope_id``: that scope, if it has any."""
    scopes: set[str] = set()
    for model in (MemoryManifestRow, MemoryActiveEntry, MemoryTermStat):
        rows = model.objects.all() if scope_id is None else model.objects.filter(scope_id=scope_id)
        scopes |= set(rows.values_list("scope_id", flat=True).distinct())
    return sorted(scopes)


def _active_rows(scope_id: str) -> Any:
    return MemoryManifestRow.objects.filter(
        scope_id=scope_id, valid_to__isnull=True, state=ManifestState.ACTIVE
    )


def projection_diff(scope_id: str, chunk_size: int) -> Iterator[ChunkDiff]:
    """The differences between ``scope_id``'s projection and its manifest, chunk by chunk.

    Read-only. Chunks are consecutive ``entry_id`` ranges, so a projection row is compared
    with the manifest row of the same entry, and a row with no manifest counterpart falls
    into exactly one chunk's range.
    """
    after = ""
    while True:
        # Newest first within an entry: if a corrupt manifest had two open rows for one
        # entry (check_integrity reports that), the latest wins and the keyset below
        # skips the rest.
        rows = list(
            _active_rows(scope_id)
            .filter(entry_id__gt=after)
            .select_related("entry_version")
            .order_by("entry_id", "-valid_from")[:chunk_size]
        )
        last_chunk = len(rows) < chunk_size
        expected: dict[str, dict[str, Any]] = {}
        unverified: list[tuple[str, str]] = []
        seen: set[str] = set()
        for row in rows:
            if row.entry_id in seen:
                continue
            seen.add(row.entry_id)
            if not version_verifies(row.entry_version):
                unverified.append((row.entry_id, row.entry_version_id))
            else:
                values = projection_values(row.entry_version)
                values["entry_version_id"] = values.pop("entry_version").entry_version_id
                expected[row.entry_id] = values
        actual = MemoryActiveEntry.objects.filter(scope_id=scope_id, entry_id__gt=after)
        if not last_chunk:
            actual = actual.filter(entry_id__lte=rows[-1].entry_id)
        diff = ChunkDiff(
            checked=len(seen),
            searchable_texts=[values["searchable_text"] for values in expected.values()],
            unverified=unverified,
        )
        for row in actual.order_by("entry_id").values("id", "entry_id", *PROJECTED_FIELDS):
            want = expected.pop(row["entry_id"], None)
            if want is None:
                diff.extra.append((row["id"], row["entry_id"]))
                continue
            differing = [name for name in PROJECTED_FIELDS if row[name] != want[name]]
            if differing:
                diff.stale.append((row["id"], row["entry_id"], want, differing))
        diff.missing.extend(expected.items())
        yield diff
        if last_chunk:
            return
        after = rows[-1].entry_id


def _apply(scope_id: str, diff: ChunkDiff, report: RebuildReport) -> None:
    # A row that must point at another version is replaced rather than updated: its
    # version may still be held by another (corrupt) row, and the one-to-one constraint
    # on entry_version needs that row gone first.
    replaced = [item for item in diff.stale if "entry_version_id" in item[3]]
    updated = [item for item in diff.stale if "entry_version_id" not in item[3]]
    inserts = diff.missing + [(entry_id, values) for _, entry_id, values, _ in replaced]
    doomed = [row_id for row_id, _ in diff.extra] + [row_id for row_id, _, _, _ in replaced]
    for batch in _batches(doomed):
        MemoryActiveEntry.objects.filter(id__in=batch).delete()
    report.deleted += len(diff.extra)
    # Holders of a wanted version outside this chunk (another entry or scope) are
    # corrupt by definition; their own chunk would delete them anyway.
    for batch in _batches([values["entry_version_id"] for _, values in inserts]):
        report.deleted += MemoryActiveEntry.objects.filter(entry_version_id__in=batch).delete()[0]
    for row_id, _, values, _ in updated:
        MemoryActiveEntry.objects.filter(id=row_id).update(**values)
    MemoryActiveEntry.objects.bulk_create(
        MemoryActiveEntry(scope_id=scope_id, entry_id=entry_id, **values)
        for entry_id, values in inserts
    )
    report.updated += len(diff.stale)
    report.inserted += len(diff.missing)


def _batches(items: list[Any], size: int = 500) -> Iterator[list[Any]]:
    """Slices small enough for any engine's limit on bound parameters in one IN (...)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def term_stats_diff(scope_id: str, expected: Counter[str]) -> dict[str, tuple[int, int]]:
    """{term: (stored count, expected count)} where the scope's term statistics differ
    from ``expected`` (0 stands for "no row")."""
    stored = dict(MemoryTermStat.objects.filter(scope_id=scope_id).values_list("term", "documents"))
    return {
        term: (stored.get(term, 0), expected.get(term, 0))
        for term in stored.keys() | expected.keys()
        if stored.get(term, 0) != expected.get(term, 0)
    }


def _repair_term_stats(scope_id: str, differences: dict[str, tuple[int, int]]) -> None:
    stale = [term for term, (stored, _) in differences.items() if stored]
    for batch in _batches(stale):
        MemoryTermStat.objects.filter(scope_id=scope_id, term__in=batch).delete()
    MemoryTermStat.objects.bulk_create(
        MemoryTermStat(scope_id=scope_id, term=term, documents=count)
        for term, (_, count) in differences.items()
        if count
    )


def memory_rebuild(
    *, scope_id: str | None = None, chunk_size: int = 1000, progress: Progress | None = None
) -> RebuildReport:
    """Make the projection (and so the full-text index) equal the manifest, for one scope
    or all, in one transaction. Idempotent: a second run changes nothing.

    Without ``scope_id`` the FTS5 index is also rebuilt from the projection table as a
    whole (``'rebuild'``), which repairs an index that drifted from its table. With
    ``scope_id`` only that scope's rows are fixed, through the triggers; FTS5 cannot
    re-index single rows of an external-content index whose old contents are unknown, so
    the index is then checked and rebuilt as a whole only when the check fails. A
    missing index table or trigger is recreated either way.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    started = time.monotonic()
    report = RebuildReport("memory")
    recreated = MEMORY_INDEX.status()
    ddl_is_transactional = connection.features.can_rollback_ddl
    if recreated and not ddl_is_transactional:
        # OceanBase commits DDL implicitly, so the index cannot be created inside the
        # rebuild's transaction; created first, it covers the rows already there.
        MEMORY_INDEX.rebuild()
    with transaction.atomic():
        if recreated and ddl_is_transactional:
            MEMORY_INDEX.rebuild()
        scopes = memory_scopes(scope_id)
        total = (
            _active_rows(scope_id).count()
            if scope_id is not None
            else MemoryManifestRow.objects.filter(
                valid_to__isnull=True, state=ManifestState.ACTIVE
            ).count()
        )
        if progress:
            progress(0, total)
        repaired_terms = 0
        for scope in scopes:
            report.scopes += 1
            expected_terms: Counter[str] = Counter()
            for diff in projection_diff(scope, chunk_size):
                _apply(scope, diff, report)
                report.unverified.extend((scope, version) for _, version in diff.unverified)
                expected_terms.update(MEMORY_INDEX.counts.expected(diff.searchable_texts))
                report.entries += diff.checked
                if progress:
                    progress(report.entries, total)
            differences = term_stats_diff(scope, expected_terms)
            _repair_term_stats(scope, differences)
            repaired_terms += len(differences)
        report.derived["term statistics"] = repaired_terms
        if recreated:
            report.index = f"recreated ({recreated})"
        elif scope_id is None:
            MEMORY_INDEX.rebuild()
            report.index = "rebuilt"
        else:
            problem = MEMORY_INDEX.integrity()
            if problem:
                MEMORY_INDEX.rebuild()
                report.index = f"rebuilt ({problem})"
            else:
                report.index = "consistent, kept in step with the projection"
    report.seconds = time.monotonic() - started
    return report


def memory_index_problem() -> str | None:
    """None when the Memory full-text index exists, else why not (start-up probe)."""
    return MEMORY_INDEX.status()
