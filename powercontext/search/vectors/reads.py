"""Reading the vectors in the caller's snapshot: each nearest vector is joined to its row
as the snapshot has it, and only a row whose cited id and version are the ones the
vector was computed from is a hit, so a stale or orphaned vector never is."""

from collections.abc import Sequence
from typing import Any

from django.db import DatabaseError

from powercontext.search.indexes import IndexHit, SearchIndex
from powercontext.search.vectors.availability import readable
from powercontext.search.vectors.registry import vector_engine
from powercontext.search.vectors.rows import cited_rows, indexed_rows
from powercontext.search.vectors.values import VectorsNotReady

# Nearest vectors fetched beyond ``limit``: a stale or orphaned vector among them is
# dropped by the join, and the hits still fill ``limit`` unless many are.
OVERFETCH = 16


def vector_match(
    index: SearchIndex, *, scope_id: str, query_vectors: Sequence[Any], limit: int
) -> list[IndexHit]:
    """The ``limit`` rows of the scope nearest to any of ``query_vectors`` (a query's
    vector, or each of a prompt's segments'), best first: ``score`` is the cosine
    similarity to the nearest of them (higher is better), ties by cited id. The engine
    searches for all the vectors at once: one pass over the scope, not one per vector.

    Run it in the caller's read snapshot (``read_snapshot``): the rows are read there, and
    only a row whose cited id and version are those its vector was computed from is a
    hit. Raises :class:`VectorsNotReady` when the channel cannot be read."""
    if not readable(index):
        # Why is status()'s to say; the read path only needs to know (a prepare asks for
        # every index, also those with no vectors yet).
        raise VectorsNotReady(f"{index.name}: not ready (see /health/ready)")
    if limit <= 0 or not query_vectors:
        return []
    engine = vector_engine()
    try:
        # No savepoint (SQLite's read snapshot is a hand-opened transaction): a missing
        # table fails the statement alone, on either engine.
        nearest = engine.nearest(
            index, scope_id=scope_id, vectors=query_vectors, k=limit + OVERFETCH
        )
    except DatabaseError as error:
        raise VectorsNotReady(f"{index.name}: {error}") from error
    if not nearest:
        return []
    rows = indexed_rows(index, [key for key, *_ in nearest], scope_id=scope_id, with_text=True)
    hits = []
    for key, cited, version, distance in nearest:
        row = rows.get(key)
        if row is None or row[1] != cited or str(row[2]) != version:
            continue  # the row is gone, or the vector describes another version
        _, cited_id, row_version, text = row
        hits.append(IndexHit(cited_id, row_version, row_version, 1.0 - float(distance), text))
    hits.sort(key=lambda hit: (-hit.score, hit.cited_id))
    return hits[:limit]


def stored_vectors(
    index: SearchIndex, *, scope_id: str, cited_ids: Sequence[str]
) -> dict[str, Any]:
    """{cited id: its row's stored vector} of ``cited_ids`` in the scope (a few: a pack's
    candidates), read in the caller's snapshot; only a vector computed from the row's
    cited id and version, as for a hit of :func:`vector_match`. Empty when the channel
    cannot be read: the caller goes on without (a row without a vector is left out too)."""
    if not cited_ids or not readable(index):
        return {}
    try:
        rows = cited_rows(index, scope_id, cited_ids)
        if not rows:
            return {}
        stored = vector_engine().vectors(index, sorted(rows))
    except DatabaseError:
        # No savepoint (SQLite's read snapshot is a hand-opened transaction): a missing
        # table fails the statement alone, as in vector_match.
        return {}
    return {
        cited: vector for key, cited, version, vector in stored if rows.get(key) == (cited, version)
    }


def documents_of(index: SearchIndex, *, scope_id: str, cited_ids: Sequence[str]) -> dict[str, str]:
    """{cited id: the document its vector is computed from} of ``cited_ids`` in the scope
    (a pack's candidates, for their focus), read in the caller's snapshot."""
    if not cited_ids or index.documents is None:
        return {}
    rows = cited_rows(index, scope_id, cited_ids)
    documents = index.documents(sorted(rows)) if rows else {}
    return {rows[key][0]: text for key, text in documents.items() if key in rows}
