"""The vector channel: one derived vector index per declared search index, on any engine.

Beside its full-text index, every declared index (``powercontext.search.indexes``) that
says how to read its rows' documents (``SearchIndex.documents``) gets ``<name>_vec``:
per row of the indexed table, keyed by the row key, the scope, the cited id and version
the vector was computed from, and the embedding of the row's original text
(``powercontext.embedding``). Like the full-text index it is a projection, derived and
rebuildable, never authoritative:

- written with the row: the owning service embeds before its write transaction
  (:func:`embed_for`, the model's time stays outside the lock) and writes the vector in
  the transaction that writes the row (:func:`write`); a row without a vector (the model
  switched off or missing, or written before the channel existed) is still found
  lexically, and ``rebuild_index`` fills it in;
- read in the caller's snapshot (:func:`vector_match`): each nearest vector is joined to
  its row as the snapshot has it, and only a row whose cited id and version are the ones
  the vector was computed from is a hit, so a stale or orphaned vector never is;
- recorded with its model (``powercontext.models.VectorIndexState``): vectors of another
  model identity or dimension are never mixed with the running model's. The channel then
  reports "model changed" (:func:`status`) and is neither read nor written until
  ``rebuild_index`` recreates the index for the running model. The engine's layout of
  the vector objects is recorded beside the model, so a table an older release created
  is treated the same way ("layout changed"), never written with statements it lacks
  the columns for.

The engines (``vector_sqlite``, ``vector_oceanbase``) own the DDL, built from the
declaration and the model's dimension, and create it on first use: when a write path
first embeds with a model no table exists for yet, or when ``rebuild_index`` runs. Not in
a migration, because the dimension is the model's and a model change recreates the
table (a migration cannot know either), and because OceanBase commits DDL implicitly, so
the table is only ever created outside a write transaction there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from django.db import DatabaseError, connection, transaction
from django.utils.module_loading import import_string

from powercontext import embedding as embeddings
from powercontext.exceptions import PowerContextError
from powercontext.fields import identity_text
from powercontext.migration_operations import engine_of
from powercontext.search import focus
from powercontext.search.indexes import IndexHit, SearchIndex, declared_indexes
from powercontext.snapshot import read_snapshot

if TYPE_CHECKING:
    from powercontext.reports import CheckResult, Progress, RebuildReport

log = logging.getLogger(__name__)

# Nearest vectors fetched beyond ``limit``: a stale or orphaned vector among them is
# dropped by the join, and the hits still fill ``limit`` unless many are.
OVERFETCH = 16
# Rows embedded per rebuild step (one embedding call, one short write transaction).
REBUILD_BATCH = 128

_ENGINES = {
    "sqlite": "powercontext.search.vector_sqlite.SqliteVectors",
    "oceanbase": "powercontext.search.vector_oceanbase.OceanBaseVectors",
}


class VectorsNotReady(PowerContextError):
    """The vector channel of an index cannot be read now (switched off, no model, no
    vector table yet, or the vectors are of another model): search lexically."""

    default_message = "The vector index is not ready; run manage.py rebuild_index."


class VectorsDamaged(VectorsNotReady):
    """Stored vectors of a scope that the engine cannot compute with (on OceanBase,
    values whose products overflow): that scope is searched lexically until
    ``rebuild_index`` re-embeds them. Noted for ``/health/ready`` and logged once."""

    default_message = "Stored vectors are damaged; run manage.py rebuild_index."


# -- values ---------------------------------------------------------------------------


@dataclass(frozen=True)
class VectorRow:
    """One row a write path has just written, with the original text its vector is of."""

    row_key: int
    scope_id: str
    cited_id: str
    version: int | str
    document: str


@dataclass(frozen=True)
class Embedded:
    """Vectors computed before a write transaction (:func:`embed_for`). ``identity`` is
    None when nothing was embedded, and ``reason`` then says why."""

    documents: tuple[str, ...] = ()
    vectors: Any = None
    identity: str | None = None
    reason: str | None = None

    def vector_for(self, document: str) -> Any:
        """The vector of ``document``, or None when it was not embedded."""
        if self.identity is None or document not in self.documents:
            return None
        return self.vectors[self.documents.index(document)]


class State(StrEnum):
    READY = "ready"
    OFF = "off"
    UNAVAILABLE = "unavailable"
    MISSING = "missing"
    MODEL_CHANGED = "model_changed"
    LAYOUT_CHANGED = "layout_changed"


@dataclass(frozen=True)
class VectorStatus:
    index: str
    state: State
    detail: str
    # The model the stored vectors are of, as recorded (None before the first one).
    identity: str | None = None
    dimension: int | None = None

    @property
    def ready(self) -> bool:
        return self.state is State.READY


@dataclass(frozen=True)
class StoredVector:
    cited_id: str
    version: str


@dataclass
class Damage:
    """Stored vectors that cannot be what the model gave (:meth:`VectorEngine.damaged`):
    ``rows`` by row key, with what is wrong (a float vector of the wrong length, values
    that are not finite or all zero, a code that disagrees with its vector); ``storage``,
    problems of the engine's own storage that no row key names (the table is recreated)."""

    rows: dict[int, str] = field(default_factory=dict)
    storage: list[str] = field(default_factory=list)


@dataclass
class Coverage:
    """How the vectors of an index compare with its rows (check and rebuild)."""

    rows: dict[int, tuple[str, str, str]] = field(default_factory=dict)  # key: scope, cited, ver
    stored: dict[int, StoredVector] = field(default_factory=dict)
    damage: Damage = field(default_factory=Damage)  # looked for only when asked

    @property
    def damaged(self) -> list[int]:
        """Rows whose vector is damaged (and not already missing or stale)."""
        return [
            key
            for key in self.damage.rows
            if key in self.rows
            and key in self.stored
            and self.stored[key] == StoredVector(*self.rows[key][1:])
        ]

    @property
    def missing(self) -> list[int]:
        return [key for key in self.rows if key not in self.stored]

    @property
    def stale(self) -> list[int]:
        return [
            key
            for key, (_, cited, version) in self.rows.items()
            if key in self.stored and self.stored[key] != StoredVector(cited, version)
        ]

    @property
    def orphaned(self) -> list[int]:
        return [key for key in self.stored if key not in self.rows]


# -- the engines ----------------------------------------------------------------------


class VectorEngine(Protocol):
    # Whether DDL may run inside a transaction (SQLite) or commits it (OceanBase).
    transactional_ddl: ClassVar[bool]
    # Names the shape of the vector objects ``ddl`` creates; changed with that shape, so
    # objects of an older one are recreated by rebuild_index rather than misread.
    layout: ClassVar[str]

    @staticmethod
    def ddl(index: SearchIndex, dimension: int) -> tuple[list[str], list[str]]:
        """(create, drop) statements of the index's vector objects. Pure."""
        ...

    def problem(self, index: SearchIndex) -> str | None:
        """None when every vector object of the index exists, else what is missing."""
        ...

    def upsert(self, index: SearchIndex, rows: Sequence[tuple[VectorRow, Any]]) -> None:
        """Store each (row, vector), replacing the row key's previous vector."""
        ...

    def delete(self, index: SearchIndex, row_keys: Sequence[int]) -> None: ...

    def nearest(
        self, index: SearchIndex, *, scope_id: str, vectors: Sequence[Any], k: int
    ) -> list[tuple[int, str, str, float]]:
        """The ``k`` vectors of the scope nearest to any of ``vectors`` (a query's, or
        each of a prompt's segments'): (row key, cited id, version, cosine distance to the
        nearest of ``vectors``), nearest first, ties by row key. Only the vector table is
        read; the caller joins."""
        ...

    def stored(self, index: SearchIndex, scope_id: str | None) -> dict[int, StoredVector]: ...

    def vectors(
        self, index: SearchIndex, row_keys: Sequence[int]
    ) -> list[tuple[int, str, str, Any]]:
        """(row key, cited id, version, the vector as a float32 array) of ``row_keys``
        that have a vector; a damaged one (not finite, all zero) is left out."""
        ...

    def damaged(
        self,
        index: SearchIndex,
        *,
        dimension: int,
        scope_id: str | None = None,
        keys: Sequence[int] | None = None,
    ) -> Damage:
        """The stored vectors that cannot be the model's (of ``dimension`` values): of
        ``keys`` only (a cheap look at each, for readiness), else of the scope or the
        whole index (every vector read: for check_integrity and rebuild_index)."""
        ...

    def refresh_statistics(self, index: SearchIndex) -> None:
        """Bring the planner's statistics of the index's vector objects up to date after
        a rebuild has filled or changed them, where the engine's planner needs them (a
        no-op where it does not). Run outside any transaction."""
        ...


def vector_engine() -> VectorEngine:
    engine: VectorEngine = import_string(_ENGINES[engine_of(connection)])()
    return engine


def vector_indexes() -> list[SearchIndex]:
    """The declared indexes that have a vector channel."""
    return [index for index in declared_indexes() if index.documents is not None]


def vec_table(index: SearchIndex) -> str:
    return index.name + "_vec"


def delete_vectors(index: SearchIndex, key_column: str, row_keys: Sequence[int]) -> None:
    """Delete the vectors of ``row_keys`` (the engine's name for the key column), 500 to
    a statement so no engine meets its limit on bound parameters."""
    vec = connection.ops.quote_name(vec_table(index))
    with connection.cursor() as cursor:
        for start in range(0, len(row_keys), 500):
            batch = list(row_keys[start : start + 500])
            marks = ", ".join(["%s"] * len(batch))
            cursor.execute(f"DELETE FROM {vec} WHERE {key_column} IN ({marks})", batch)  # noqa: S608


# -- the model and its record ---------------------------------------------------------


def _model() -> embeddings.Embedder:
    return embeddings.embedder()


def _recorded(index: SearchIndex) -> tuple[str, int, str] | None:
    """(model identity, dimension, layout) the index's vector objects were created for."""
    from powercontext.models import VectorIndexState

    return (
        VectorIndexState.objects.filter(index=index.name)
        .values_list("model_identity", "dimension", "layout")
        .first()
    )


def _recorded_raw(index: SearchIndex) -> tuple[str, int, str] | None:
    """:func:`_recorded` in one plain statement (the read path runs it per query)."""
    from powercontext.models import VectorIndexState

    table = connection.ops.quote_name(VectorIndexState._meta.db_table)
    column = connection.ops.quote_name("index")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT model_identity, dimension, layout FROM {table} WHERE {column} = %s",  # noqa: S608
            [index.name],
        )
        found = cursor.fetchone()
    return None if found is None else (found[0], int(found[1]), found[2])


def _current(model: embeddings.Embedder) -> tuple[str, int, str]:
    """What :func:`_recorded` says when the vector objects are the running model's."""
    return model.identity, model.dimension, vector_engine().layout


def _identity() -> tuple[str, int, str] | None:
    try:
        model = _model()
    except embeddings.EmbeddingsUnavailable:
        return None
    return _current(model)


def _record(index: SearchIndex, model: embeddings.Embedder) -> None:
    from powercontext.models import VectorIndexState

    VectorIndexState.objects.update_or_create(
        index=index.name,
        defaults={
            "model_identity": model.identity,
            "dimension": model.dimension,
            "layout": vector_engine().layout,
        },
    )


def _create(index: SearchIndex, model: embeddings.Embedder, *, replace: bool) -> None:
    """Create the index's vector objects for ``model`` (dropping what is there first when
    ``replace``) and record the model, atomically where the engine allows."""
    engine = vector_engine()
    forward, reverse = engine.ddl(index, model.dimension)
    statements = [*reverse, *forward] if replace else forward
    if engine.transactional_ddl:
        with transaction.atomic(), connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
            _record(index, model)
    else:
        # DDL commits on its own here: drop, create, then record; a crash in between
        # leaves no record or an empty table, which status reports and a rebuild repairs.
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
        _record(index, model)
    # Statistics from the start, even of an empty table: OceanBase's planner guesses
    # without any, and estimates from the table itself once there are some.
    _refresh_statistics(index)


def _refresh_statistics(index: SearchIndex) -> None:
    """The engine's statistics step; a failure (say, a user without the privilege) is
    logged, never fatal: they only help the planner."""
    try:
        vector_engine().refresh_statistics(index)
    except DatabaseError as error:
        log.warning("%s: optimizer statistics not gathered: %s", vec_table(index), error)


# Concurrent first writes in one process create the vector objects once: without it
# OceanBase refused the second thread's DDL and that write failed.
_creating = threading.Lock()


def _ensure(index: SearchIndex, model: embeddings.Embedder) -> None:
    """Create the vector objects on first use, when that is safe here."""
    if _recorded(index) is not None:
        return
    engine = vector_engine()
    if connection.in_atomic_block and not engine.transactional_ddl:
        return  # DDL would commit the caller's transaction: rebuild_index creates it
    with _creating:
        if _recorded(index) is not None:
            return  # another thread created them while this one waited
        _create(index, model, replace=True)


# -- status ---------------------------------------------------------------------------


def readable(index: SearchIndex) -> bool:
    """Whether the read path searches the index's vectors: the channel is on and the
    vector objects are recorded as the running model's and this layout's. One row, no
    catalogue lookup (:func:`status` has one, 15 ms on OceanBase, too dear for every
    search): a table missing behind its record fails the search's own statement
    instead, with :class:`VectorsNotReady`."""
    return embeddings.enabled() and _recorded_raw(index) == _identity()


def status(index: SearchIndex) -> VectorStatus:
    """Whether the index's vector channel can be read now, and if not why (cheap once the
    model is loaded: one row and a catalogue lookup)."""
    if not embeddings.enabled():
        return VectorStatus(index.name, State.OFF, "switched off (POWERCONTEXT_EMBEDDINGS=off)")
    recorded = _recorded(index)
    identity, dimension, _ = recorded if recorded else (None, None, None)
    try:
        model = _model()
    except embeddings.EmbeddingsUnavailable as error:
        return VectorStatus(index.name, State.UNAVAILABLE, str(error), identity, dimension)
    if recorded is None:
        return VectorStatus(
            index.name,
            State.MISSING,
            "no vector index yet (the first write creates it, or manage.py rebuild_index)",
        )
    engine = vector_engine()
    problem = engine.problem(index)
    if problem is not None:
        return VectorStatus(
            index.name,
            State.MISSING,
            f"{problem}: run manage.py rebuild_index",
            identity,
            dimension,
        )
    if recorded[:2] != (model.identity, model.dimension):
        return VectorStatus(
            index.name,
            State.MODEL_CHANGED,
            f"not ready: model changed (vectors of {identity}, {dimension} dimensions; "
            f"the model is {model.identity}, {model.dimension}), run manage.py rebuild_index",
            identity,
            dimension,
        )
    if recorded[2] != engine.layout:
        return VectorStatus(
            index.name,
            State.LAYOUT_CHANGED,
            f"not ready: the vector table has an older layout "
            f"({recorded[2] or 'unrecorded'}; this release uses {engine.layout}), "
            "run manage.py rebuild_index",
            identity,
            dimension,
        )
    return VectorStatus(index.name, State.READY, "ready", identity, dimension)


# -- writing --------------------------------------------------------------------------


def embed_for(index: SearchIndex, documents: Sequence[str]) -> Embedded:
    """Embed ``documents`` for ``index``, BEFORE the write transaction that stores them
    (a model call holds no lock). Never fails the write: with the channel off or the
    model missing it returns no vectors and the entries are found lexically only. Creates
    the index's vector objects on first use (outside any transaction on OceanBase)."""
    texts = tuple(documents)
    if not texts or index.documents is None:
        return Embedded(texts, reason="nothing to embed")
    if not embeddings.enabled():
        return Embedded(texts, reason="switched off")
    try:
        model = _model()
        # The same run gives the documents' token states: kept for the focus of the
        # prompts that will find them (``focus``).
        vectors, states = model.embed_with_tokens(list(texts))
        focus.keep(model.identity, texts, states)
        _ensure(index, model)
    except embeddings.EmbeddingsUnavailable as error:
        return Embedded(texts, reason=str(error))
    except DatabaseError as error:
        # Another process was creating the vector objects at this instant (their DDL
        # collided): this write goes without a vector, found lexically, and the next
        # write or rebuild_index gives it one.
        return Embedded(texts, reason=f"vector index not created: {error}")
    return Embedded(texts, vectors, model.identity)


def write(index: SearchIndex, embedded: Embedded, rows: Iterable[VectorRow]) -> None:
    """Store the vectors of ``rows`` (just written in the caller's transaction, so the
    vectors commit or roll back with them). A row whose document was not embedded, or was
    embedded by another model than the index's, loses its previous vector instead: that
    one describes an older version."""
    rows = list(rows)
    if not rows:
        return
    recorded = _recorded(index)
    if recorded is None:
        return  # no vector index (yet): nothing to keep in step
    engine = vector_engine()
    # A table of an older layout lacks the columns an insert names: its vectors are
    # dropped (as for another model's) until rebuild_index recreates it.
    same_model = (
        embedded.identity is not None
        and recorded[0] == embedded.identity
        and recorded[2] == engine.layout
    )
    keep, drop = [], []
    for row in rows:
        vector = embedded.vector_for(row.document) if same_model else None
        if vector is None:
            drop.append(row.row_key)
        else:
            keep.append((row, vector))
    if drop:
        engine.delete(index, drop)
    if keep:
        engine.upsert(index, keep)


@contextmanager
def writing(
    index: SearchIndex,
    embedded: Embedded,
    *,
    scope_id: str,
    cited_id: str,
    document: str | None = None,
) -> Iterator[None]:
    """Around the statements of a write transaction that change the row of ``index``
    citing ``cited_id``: afterwards the row's vector is :func:`write_cited`'s, and when the
    block deleted the row (a retired entry) its vector goes with it."""
    before = _row_of(index, scope_id, cited_id)
    yield
    if _row_of(index, scope_id, cited_id) is None:
        if before is not None and _recorded(index) is not None:
            vector_engine().delete(index, [before[0]])
        return
    write_cited(index, embedded, scope_id=scope_id, cited_id=cited_id, document=document)


def _row_of(index: SearchIndex, scope_id: str, cited_id: str) -> tuple[int, Any] | None:
    """(row key, version) of the row citing ``cited_id`` in the scope, if any."""
    quote = connection.ops.quote_name
    conditions = " AND ".join(
        f"{quote(column)} = %s"
        for column in (index.scope_column, index.cited_id, *(name for name, _ in index.filters))
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {quote(index.row_key)}, {quote(index.version)} "  # noqa: S608 - names only
            f"FROM {quote(index.table)} WHERE {conditions}",
            [scope_id, cited_id, *(value for _, value in index.filters)],
        )
        found = cursor.fetchone()
    return None if found is None else (int(found[0]), _version(found[1]))


def write_cited(
    index: SearchIndex,
    embedded: Embedded,
    *,
    scope_id: str,
    cited_id: str,
    document: str | None = None,
) -> None:
    """:func:`write` for the one row of ``index`` citing ``cited_id`` in the scope, as the
    caller's transaction has just left it (nothing when it has no such row: a retired
    entry, whose vector went with its row). Its document is ``document``, by default the
    one text ``embedded`` holds."""
    if document is None:
        if len(embedded.documents) != 1:
            return
        document = embedded.documents[0]
    if _recorded(index) is None:
        return
    found = _row_of(index, scope_id, cited_id)
    if found is not None:
        write(index, embedded, [VectorRow(found[0], scope_id, cited_id, found[1], document)])


def drop_cited(index: SearchIndex, *, scope_id: str, cited_id: str) -> None:
    """Delete the vector of the row citing ``cited_id``, in the caller's transaction: the
    text it was computed from was redacted, and a vector must not describe text that is
    gone. ``rebuild_index`` (or serve's catch-up) embeds the row again."""
    if _recorded(index) is None:
        return
    found = _row_of(index, scope_id, cited_id)
    if found is not None:
        vector_engine().delete(index, [found[0]])


# -- damage met while searching -------------------------------------------------------

# What this process's searches found damaged, per index: row keys left out of the answer
# (with what is wrong) and scopes the engine could not search at all. ``/health/ready``
# says so until they are repaired; each is logged once, when first met. At most this many
# of each per index are remembered (and logged): the first are enough to say "damaged".
DAMAGE_KEPT = 100
_damage_lock = threading.Lock()
_damaged_rows: dict[str, dict[int, str]] = {}
_damaged_scopes: dict[str, set[str]] = {}


def note_damaged_rows(index: SearchIndex, damaged: dict[int, str]) -> None:
    """Rows an engine left out of a search because their vectors are damaged (an engine
    calls this from ``nearest``): logged the first time each is met."""
    with _damage_lock:
        known = _damaged_rows.setdefault(index.name, {})
        new = {key: why for key, why in damaged.items() if key not in known}
        new = dict(list(new.items())[: max(DAMAGE_KEPT - len(known), 0)])
        known.update(new)
    for key, why in new.items():
        log.warning(
            "%s: the vector of row %s is damaged (%s); it is left out of vector search "
            "until manage.py rebuild_index re-embeds it",
            vec_table(index),
            key,
            why,
        )


def note_damaged_scope(index: SearchIndex, scope_id: str, error: object) -> VectorsDamaged:
    """A scope whose vectors the engine could not search (an engine calls this from
    ``nearest`` and raises what it returns): logged the first time, without naming the
    scope (logs never do)."""
    with _damage_lock:
        known = _damaged_scopes.setdefault(index.name, set())
        new = scope_id not in known and len(known) < DAMAGE_KEPT
        if new:
            known.add(scope_id)
    if new:
        log.warning(
            "%s: the vectors of a scope cannot be searched (%s); that scope is searched "
            "lexically until manage.py rebuild_index re-embeds the damaged ones",
            vec_table(index),
            error,
        )
    return VectorsDamaged(f"{index.name}: damaged vectors in this scope ({error})")


def note_scope_searched(index: SearchIndex, scope_id: str) -> None:
    """The scope's vectors were searched without an error: whatever stopped them is gone."""
    with _damage_lock:
        known = _damaged_scopes.get(index.name)
        if known:
            known.discard(scope_id)


def damage_noted(index: SearchIndex) -> tuple[int, int]:
    """(damaged rows, scopes searched lexically) this process's searches noted in the
    index, as they were noted (readiness looks at the rows again)."""
    with _damage_lock:
        return len(_damaged_rows.get(index.name, {})), len(_damaged_scopes.get(index.name, ()))


def forget_damage() -> None:
    """Forget what searches met (tests)."""
    with _damage_lock:
        _damaged_rows.clear()
        _damaged_scopes.clear()


def _damage_detail(index: SearchIndex, dimension: int | None) -> str | None:
    """What searches met of damage in the index and is still there, for readiness: the
    row keys are looked at again (at most :data:`DAMAGE_KEPT`, by key: cheap), so a row
    ``rebuild_index`` repaired in another process is no longer reported; a scope is until
    a search of it succeeds."""
    with _damage_lock:
        rows = dict(_damaged_rows.get(index.name, {}))
        scopes = len(_damaged_scopes.get(index.name, ()))
    if rows and dimension is not None:
        still = vector_engine().damaged(index, dimension=dimension, keys=sorted(rows)).rows
        with _damage_lock:
            known = _damaged_rows.get(index.name, {})
            for key in set(rows) - set(still):
                known.pop(key, None)
        rows = still
    parts = []
    if rows:
        parts.append(f"{len(rows)} damaged vector(s) left out of search")
    if scopes:
        parts.append(f"{scopes} scope(s) searched lexically: their vectors cannot be searched")
    if not parts:
        return None
    return f"{' and '.join(parts)}, run manage.py rebuild_index"


# -- searching ------------------------------------------------------------------------


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
    rows = _rows(index, [key for key, *_ in nearest], scope_id=scope_id, with_text=True)
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
        rows = _cited_rows(index, scope_id, cited_ids)
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
    rows = _cited_rows(index, scope_id, cited_ids)
    documents = index.documents(sorted(rows)) if rows else {}
    return {rows[key][0]: text for key, text in documents.items() if key in rows}


def _cited_rows(
    index: SearchIndex, scope_id: str, cited_ids: Sequence[str]
) -> dict[int, tuple[str, str]]:
    """{row key: (cited id, version)} of the rows of ``index`` citing ``cited_ids``."""
    quote = connection.ops.quote_name
    conditions = [f"{quote(index.scope_column)} = %s"]
    conditions += [f"{quote(column)} = %s" for column, _ in index.filters]
    marks = ", ".join(["%s"] * len(cited_ids))
    conditions.append(f"{quote(index.cited_id)} IN ({marks})")
    sql = (
        f"SELECT {quote(index.row_key)}, {quote(index.cited_id)}, {quote(index.version)} "  # noqa: S608 - names only
        f"FROM {quote(index.table)} WHERE {' AND '.join(conditions)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [scope_id, *(value for _, value in index.filters), *cited_ids])
        return {
            int(key): (identity_text(cited), str(_version(version)))
            for key, cited, version in cursor.fetchall()
        }


def _rows(
    index: SearchIndex,
    keys: Sequence[int] | None,
    *,
    scope_id: str | None,
    with_text: bool = False,
) -> dict[int, tuple[Any, ...]]:
    """{row key: (scope, cited id, version[, searchable text])} of the indexed rows that
    can have a vector (the fixed filters hold, the text is not empty), read in the
    caller's snapshot; of ``keys`` only, or all of them."""
    quote = connection.ops.quote_name
    columns = [index.row_key, index.scope_column, index.cited_id, index.version]
    if with_text:
        columns.append(index.text_column)
    conditions = [f"{quote(column)} = %s" for column, _ in index.filters]
    params: list[Any] = [value for _, value in index.filters]
    conditions.append(f"{quote(index.text_column)} <> ''")
    if scope_id is not None and keys is None:
        conditions.append(f"{quote(index.scope_column)} = %s")
        params.append(scope_id)
    # Given keys, the scope is checked here, not in SQL: with both, SQLite's planner (no
    # statistics) walked the scope's index, every row of a 100,000-row scope, instead of
    # looking the keys up (20 ms a search).
    sql = (
        f"SELECT {', '.join(quote(column) for column in columns)} "  # noqa: S608 - names only
        f"FROM {quote(index.table)} WHERE {' AND '.join(conditions)}"
    )
    found: dict[int, tuple[Any, ...]] = {}
    batches: Iterable[Sequence[int] | None] = (
        [None]
        if keys is None
        else [keys[start : start + 500] for start in range(0, len(keys), 500)]
    )
    with connection.cursor() as cursor:
        for batch in batches:
            if batch is None:
                cursor.execute(sql, params)
            else:
                marks = ", ".join(["%s"] * len(batch))
                cursor.execute(f"{sql} AND {quote(index.row_key)} IN ({marks})", [*params, *batch])
            for key, scope, cited, version, *text in cursor.fetchall():
                # Identity columns come back as bytes on OceanBase; a version may be a
                # number (a revision): the vector stores it as text.
                row = (identity_text(scope), identity_text(cited))
                if scope_id is not None and row[0] != scope_id:
                    continue
                if with_text:
                    found[int(key)] = (*row, _version(version), *text)
                else:
                    found[int(key)] = (*row, str(_version(version)))
    return found


def _scope_cited_version(row: tuple[Any, ...]) -> tuple[str, str, str]:
    scope, cited, version = row
    return scope, cited, version


def _version(value: Any) -> Any:
    return bytes(value).decode("utf-8") if isinstance(value, bytes | bytearray) else value


# -- rebuilding and checking ----------------------------------------------------------


def coverage(index: SearchIndex, *, scope_id: str | None = None, damage: bool = False) -> Coverage:
    """The rows and the stored vectors, read in one snapshot; with ``damage``, also the
    stored vectors that are damaged (every vector read: check and rebuild_index, not the
    catch-up at every start)."""
    engine = vector_engine()
    with read_snapshot():
        rows = _rows(index, None, scope_id=scope_id)
        present = engine.problem(index) is None
        stored = engine.stored(index, scope_id) if present else {}
        recorded = _recorded(index) if present and damage else None
        found = (
            engine.damaged(index, dimension=recorded[1], scope_id=scope_id)
            if recorded is not None
            else Damage()
        )
    return Coverage(rows, stored, found)


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
    stays; a later rebuild goes on from there)."""
    from powercontext.reports import RebuildReport

    started = time.monotonic()
    report = RebuildReport(f"{index.name} vectors", unit="rows embedded")
    current = status(index)
    if current.state in (State.OFF, State.UNAVAILABLE):
        report.index = f"vectors skipped: {current.detail}"
        report.seconds = time.monotonic() - started
        return report
    model = _model()
    recreated = current.state in (State.MISSING, State.MODEL_CHANGED, State.LAYOUT_CHANGED)
    if recreated:
        if connection.in_atomic_block and not vector_engine().transactional_ddl:
            # DDL would commit the caller's transaction here (OceanBase).
            report.index = f"vectors skipped inside a transaction: {current.detail}"
            report.seconds = time.monotonic() - started
            return report
        _create(index, model, replace=True)
        scope_id = None
    state = coverage(index, scope_id=scope_id, damage=damaged and not recreated)
    storage = state.damage.storage
    if storage and not (connection.in_atomic_block and not vector_engine().transactional_ddl):
        # Rows the engine's storage no longer names cannot be re-embedded one by one.
        _create(index, model, replace=True)
        recreated, scope_id = True, None
        state = coverage(index)
    orphaned = state.orphaned
    if orphaned:
        with transaction.atomic():
            vector_engine().delete(index, orphaned)
    repaired = state.damaged
    todo = sorted([*state.missing, *state.stale, *repaired])
    report.scopes = len({scope for scope, _, _ in state.rows.values()})
    report.deleted = len(orphaned)
    embedded_seconds = 0.0
    done = 0
    for start in range(0, len(todo), batch_size):
        if stop is not None and stop.is_set():
            break
        batch = todo[start : start + batch_size]
        with read_snapshot():
            rows = _rows(index, batch, scope_id=None)
            documents = index.documents(list(rows)) if index.documents else {}
        keys = [key for key in batch if key in rows and key in documents]
        began = time.monotonic()
        vectors = model.embed_documents([documents[key] for key in keys])
        embedded_seconds += time.monotonic() - began
        with transaction.atomic():
            now = _rows(index, keys, scope_id=None)
            fresh = [
                (VectorRow(key, *_scope_cited_version(rows[key]), documents[key]), vector)
                for key, vector in zip(keys, vectors, strict=True)
                if now.get(key) == rows[key]
            ]
            if _recorded(index) == _current(model) and fresh:
                vector_engine().upsert(index, fresh)
        report.inserted += len(fresh)
        done += len(batch)
        if progress:
            progress(done, len(todo))
    if not (connection.in_atomic_block and not vector_engine().transactional_ddl):
        # OceanBase's planner needs them for the table a rebuild has just filled (it
        # commits on its own there, so never inside the caller's transaction).
        _refresh_statistics(index)
    report.entries = len(todo)
    report.seconds = time.monotonic() - started
    rate = report.inserted / report.seconds if report.seconds and report.inserted else 0.0
    what = "recreated for the model and " if recreated else ""
    if storage and recreated:
        what = f"recreated ({'; '.join(storage)}) and "
    stopped = f", stopped after {done} of {len(todo)}" if done < len(todo) else ""
    fixed = f" ({len(repaired)} of them damaged)" if repaired else ""
    report.index = (
        f"{what}{report.inserted} vector(s) embedded{fixed} at {rate:,.0f} entries/s "
        f"(model {embedded_seconds:.2f}s), {len(orphaned)} orphaned vector(s) dropped"
        f"{stopped}"
    )
    if damaged and done == len(todo) and scope_id is None:
        # Every damaged vector was re-embedded: searches may try every scope again.
        with _damage_lock:
            _damaged_scopes.pop(index.name, None)
    return report


def check(index: SearchIndex, *, scope_id: str | None = None) -> CheckResult:
    """Vectors of another model, missing vector objects, rows with no vector, stale
    vectors (of another version than the row's), orphaned ones (of no row) and damaged
    ones (:meth:`VectorEngine.damaged`: every stored vector is read)."""
    from powercontext.reports import CheckResult

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


def readiness() -> dict[str, Any]:
    """``/health/ready``'s ``vector_index`` check: never failing (lexical search answers
    without vectors), but its detail says plainly which channel is not ready and why, and
    which has damaged vectors that searches met (:func:`_damage_detail`)."""
    indexes = vector_indexes()
    states = [status(index) for index in indexes]
    damage = {
        state.index: found
        for index, state in zip(indexes, states, strict=True)
        if state.ready and (found := _damage_detail(index, state.dimension))
    }
    if all(state.ready for state in states) and not damage:
        return {"status": "ok", "detail": "ready"}
    detail = "; ".join(
        f"{state.index}: {damage.get(state.index) or state.detail}" for state in states
    )
    return {"status": "ok", "detail": f"{detail} (search answers lexically meanwhile)"}
