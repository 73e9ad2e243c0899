"""Rebuilding and checking an index's vectors against its rows (``rebuild_index``,
``check_integrity``, and serve's catch-up: :func:`pending` at every start, then
:func:`rebuild` when there is work)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

from powercontext import embedding as embeddings
from powercontext.reports import CheckResult, Progress, RebuildReport
from powercontext.search.indexes import SearchIndex
from powercontext.search.vectors import record
from powercontext.search.vectors.availability import status
from powercontext.search.vectors.damage import DAMAGE
from powercontext.search.vectors.registry import vector_engine, vector_indexes
from powercontext.search.vectors.rows import indexed_rows, scope_cited_version
from powercontext.search.vectors.values import (
    Coverage,
    Damage,
    Pending,
    State,
    StoredVector,
    VectorRow,
    vec_table,
)
from powercontext.snapshot import read_snapshot

# Rows embedded per rebuild step (one embedding call, one short write transaction).
REBUILD_BATCH = 128
# Rows compared with their vectors at a time by :func:`pending`.
PENDING_CHUNK = 5000


def coverage(index: SearchIndex, *, scope_id: str | None = None, damage: bool = False) -> Coverage:
    """The rows and the stored vectors, read in one snapshot; with ``damage``, also the
    stored vectors that are damaged (every vector read: check and rebuild_index, not the
    catch-up at every start)."""
    engine = vector_engine()
    with read_snapshot():
        rows = indexed_rows(index, None, scope_id=scope_id)
        present = engine.problem(index) is None
        stored = engine.stored(index, scope_id) if present else {}
        recorded = record.recorded(index) if present and damage else None
        found = (
            engine.damaged(index, dimension=recorded[1], scope_id=scope_id)
            if recorded is not None
            else Damage()
        )
    return Coverage(rows, stored, found)


def pending(index: SearchIndex) -> Pending:
    """How many of the index's rows can have a vector, and how many of them have none or
    a stale one (of another version), every scope, read in one snapshot a chunk of
    :data:`PENDING_CHUNK` rows and their vectors at a time. Serve's catch-up asks at every
    start, and there is nothing to do nearly every time: :func:`coverage` holds every row
    and every vector at once (at 100,000 entries the server's start peaked at 241 MB
    against 160 without the catch-up)."""
    found = Pending()
    after: int | None = None
    with read_snapshot():
        present = vector_engine().problem(index) is None
        while chunk := _chunk_of_rows(index, after, present=present):
            rows, stored = chunk
            for key, (_, cited, version) in rows.items():
                if key not in stored:
                    found.missing += 1
                elif stored[key] != StoredVector(cited, version):
                    found.stale += 1
            found.rows += len(rows)
            after = max(rows)
    return found


def _chunk_of_rows(
    index: SearchIndex, after: int | None, *, present: bool
) -> tuple[dict[int, tuple[Any, ...]], dict[int, StoredVector]] | None:
    """The next :data:`PENDING_CHUNK` rows after the key ``after`` and the vectors stored
    for them (none when the vector objects are not ``present``), or None past the last
    row; read in the caller's snapshot."""
    rows = indexed_rows(index, None, scope_id=None, after=after, count=PENDING_CHUNK)
    if not rows:
        return None
    return rows, vector_engine().stored_of(index, list(rows)) if present else {}


def rebuild(
    index: SearchIndex,
    *,
    scope_id: str | None = None,
    batch_size: int = REBUILD_BATCH,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    damaged: bool = False,
) -> RebuildReport:
    """(Re)embed the rows of ``index`` that have no vector or a stale one, and drop the
    vectors of rows that are gone; after a model change (or with the vector objects
    missing) recreate them for the running model and embed every row, of every scope.
    With ``damaged`` (``rebuild_index``), every stored vector is read too and the damaged
    ones are re-embedded (:meth:`VectorEngine.damaged`); damaged storage of the engine's
    own, which no row names, has the vector objects recreated.

    Unlike a family's rebuild this is not one transaction: the model's time would hold
    the write lock for minutes. Each batch is embedded outside any transaction, then
    written in a short one that first rereads the batch's rows and stores a vector only
    for a row still at the version it was computed from. Every stored vector is valid on
    its own, so a reader meanwhile sees fewer vectors, never wrong ones. Idempotent.
    With ``stop``, it returns before the next batch once ``stop`` is set (what is written
    stays; a later rebuild goes on from there).

    Without ``damaged`` (serve's catch-up), the rows and the vectors are compared a
    chunk of :data:`PENDING_CHUNK` at a time, as :func:`pending` does, so its memory
    does not grow with the index (holding every row and vector at once, a served catch-up
    of 100,000 rows peaked at 255 MB; a chunk at a time, 209)."""
    started = time.monotonic()
    report = RebuildReport(f"{index.name} vectors", unit="rows embedded")
    current = status(index)
    if current.state in (State.OFF, State.UNAVAILABLE):
        report.index = f"vectors skipped: {current.detail}"
        report.seconds = time.monotonic() - started
        return report
    model = record.running_model()
    recreated = current.state in (State.MISSING, State.MODEL_CHANGED, State.LAYOUT_CHANGED)
    if recreated:
        if connection.in_atomic_block and not vector_engine().transactional_ddl:
            # DDL would commit the caller's transaction here (OceanBase).
            report.index = f"vectors skipped inside a transaction: {current.detail}"
            report.seconds = time.monotonic() - started
            return report
        record.create(index, model, replace=True)
        scope_id = None
    work = (
        _work_found(index, model, scope_id=scope_id, damage=not recreated)
        if damaged or scope_id is not None
        else _work_by_chunk(index)
    )
    scopes: set[str] = set()
    storage: list[str] = []
    repaired = done = total = 0
    embedded_seconds = 0.0
    for found in work:
        if found.storage:
            recreated, scope_id, storage = True, None, found.storage
        if found.orphaned:
            with transaction.atomic():
                vector_engine().delete(index, found.orphaned)
            report.deleted += len(found.orphaned)
        scopes.update(found.scopes)
        repaired += found.repaired
        total = max(total, found.total)
        for start in range(0, len(found.todo), batch_size):
            if stop is not None and stop.is_set():
                break
            batch = found.todo[start : start + batch_size]
            began = time.monotonic()
            report.inserted += _embed_batch(index, model, batch)
            embedded_seconds += time.monotonic() - began
            done += len(batch)
            if progress:
                progress(done, max(done, total))
        if stop is not None and stop.is_set():
            break
    report.scopes = len(scopes)
    if not (connection.in_atomic_block and not vector_engine().transactional_ddl):
        # OceanBase's planner needs them for the table a rebuild has just filled (it
        # commits on its own there, so never inside the caller's transaction).
        record.refresh_statistics(index)
    report.entries = total
    report.seconds = time.monotonic() - started
    rate = report.inserted / report.seconds if report.seconds and report.inserted else 0.0
    what = "recreated for the model and " if recreated else ""
    if storage and recreated:
        what = f"recreated ({'; '.join(storage)}) and "
    stopped = f", stopped after {done} of {total}" if done < total else ""
    fixed = f" ({repaired} of them damaged)" if repaired else ""
    report.index = (
        f"{what}{report.inserted} vector(s) embedded{fixed} at {rate:,.0f} entries/s "
        f"(model {embedded_seconds:.2f}s), {report.deleted} orphaned vector(s) dropped"
        f"{stopped}"
    )
    if damaged and done == total and scope_id is None:
        # Every damaged vector was re-embedded: searches may try every scope again.
        DAMAGE.repaired(index)
    return report


@dataclass
class _Work:
    """What one step of a rebuild finds: the rows to embed (by key, in order), the
    vectors of rows that are gone, and how many rows the whole rebuild embeds."""

    todo: list[int]
    orphaned: list[int]
    total: int
    scopes: set[str] = field(default_factory=set)
    repaired: int = 0
    storage: list[str] = field(default_factory=list)


def _work_found(
    index: SearchIndex, model: embeddings.Embedder, *, scope_id: str | None, damage: bool
) -> Iterator[_Work]:
    """All the work at once, from :func:`coverage` (``rebuild_index``: it reads every
    stored vector for damage anyway, or a scope's alone)."""
    state = coverage(index, scope_id=scope_id, damage=damage)
    storage = state.damage.storage
    if storage and not (connection.in_atomic_block and not vector_engine().transactional_ddl):
        # Rows the engine's storage no longer names cannot be re-embedded one by one.
        record.create(index, model, replace=True)
        state = coverage(index)
    else:
        storage = []
    repaired = state.damaged
    todo = sorted([*state.missing, *state.stale, *repaired])
    scopes = {scope for scope, _, _ in state.rows.values()}
    yield _Work(todo, state.orphaned, len(todo), scopes, len(repaired), list(storage))


def _work_by_chunk(index: SearchIndex) -> Iterator[_Work]:
    """The work a chunk of rows at a time, every scope: first the vectors whose row is
    gone (their keys a chunk at a time, each chunk's rows looked up), then each chunk of
    rows with the vectors they have (:func:`pending`'s walk). The total is counted first
    by :func:`pending`."""
    engine = vector_engine()
    present = engine.problem(index) is None
    found = pending(index)
    total = found.missing + found.stale
    after: int | None = None
    while present:
        with read_snapshot():
            keys = engine.stored_keys(index, after=after, count=PENDING_CHUNK)
            rows = indexed_rows(index, keys, scope_id=None) if keys else {}
        if not keys:
            break
        after = keys[-1]
        orphaned = [key for key in keys if key not in rows]
        if orphaned:
            yield _Work([], orphaned, total)
    after = None
    while True:
        with read_snapshot():  # one per chunk: the batches write between chunks
            chunk = _chunk_of_rows(index, after, present=present)
        if chunk is None:
            break
        rows, stored = chunk
        after = max(rows)
        todo = sorted(
            key
            for key, (_, cited, version) in rows.items()
            if stored.get(key) != StoredVector(cited, version)
        )
        scopes = {scope for scope, _, _ in rows.values()}
        yield _Work(todo, [], total, scopes)


def _embed_batch(index: SearchIndex, model: embeddings.Embedder, batch: list[int]) -> int:
    """Embed the rows ``batch`` names (outside any transaction), then store the vectors
    of those still at the version embedded, in one short transaction; how many were."""
    with read_snapshot():
        rows = indexed_rows(index, batch, scope_id=None)
        documents = index.documents(list(rows)) if index.documents else {}
    keys = [key for key in batch if key in rows and key in documents]
    vectors = model.embed_documents([documents[key] for key in keys])
    with transaction.atomic():
        now = indexed_rows(index, keys, scope_id=None)
        fresh = [
            (VectorRow(key, *scope_cited_version(rows[key]), documents[key]), vector)
            for key, vector in zip(keys, vectors, strict=True)
            if now.get(key) == rows[key]
        ]
        if record.recorded(index) == record.expected_record(model) and fresh:
            vector_engine().upsert(index, fresh)
    return len(fresh)


def check(index: SearchIndex, *, scope_id: str | None = None) -> CheckResult:
    """Vectors of another model, missing vector objects, rows with no vector, stale
    vectors (of another version than the row's), orphaned ones (of no row) and damaged
    ones (:meth:`VectorEngine.damaged`: every stored vector is read)."""
    result = CheckResult(f"{index.name}.vectors")
    current = status(index)
    if current.state in (State.OFF, State.UNAVAILABLE):
        result.skipped = current.detail
        return result
    if current.state is State.MISSING:
        # No vector index at all (never created, or dropped): nothing to compare; the
        # rows are found lexically, and rebuild_index creates and fills it.
        result.skipped = current.detail
        return result
    if current.state is not State.READY:
        result.add(None, index.name, current.detail)
    state = coverage(index, scope_id=scope_id, damage=current.state is State.READY)
    result.checked = len(state.rows)
    for problem in state.damage.storage:
        result.add(scope_id, vec_table(index), f"{problem} (rebuild_index recreates it)")
    for key in state.damaged:
        scope, cited, version = state.rows[key]
        result.add(
            scope,
            f"{cited}@{version}",
            f"vector is damaged: {state.damage.rows[key]} (rebuild_index re-embeds it)",
        )
    for key in state.missing:
        scope, cited, version = state.rows[key]
        result.add(scope, f"{cited}@{version}", "has no vector (rebuild_index embeds it)")
    for key in state.stale:
        scope, cited, version = state.rows[key]
        stored = state.stored[key]
        result.add(
            scope,
            f"{cited}@{version}",
            f"vector is of {stored.cited_id}@{stored.version}, not of the row (stale)",
        )
    for key in state.orphaned:
        stored = state.stored[key]
        result.add(
            scope_id, f"{stored.cited_id}@{stored.version}", f"vector of row {key}, which is gone"
        )
    return result


def rebuild_all(
    *,
    scope_id: str | None = None,
    progress: Callable[[str], Progress | None] | None = None,
) -> list[RebuildReport]:
    """Every vector index's :func:`rebuild` (``rebuild_index`` runs this after the
    families, whose rebuilds may have rewritten the rows)."""
    reports = []
    for index in vector_indexes():
        name = f"{index.name} vectors"
        reports.append(
            rebuild(
                index,
                scope_id=scope_id,
                progress=progress(name) if progress else None,
                damaged=True,
            )
        )
    return reports


def check_all(*, scope_id: str | None = None) -> list[CheckResult]:
    return [check(index, scope_id=scope_id) for index in vector_indexes()]
