"""The model the vectors are of, and its record: each index's vector objects are
created for one model (identity and dimension) and one engine layout, recorded in
``VectorIndexState``, so vectors of another model or layout are never mixed in.

The engines create the objects on first use (:func:`ensure`: when a write path first
embeds with a model no table exists for yet) or when ``rebuild_index`` recreates them
(:func:`create`): not in a migration, because the dimension is the model's and a model
change recreates the table (a migration cannot know either), and because OceanBase
commits DDL implicitly, so the table is only ever created outside a write transaction
there.
"""

import logging
import threading

from django.db import DatabaseError, connection, transaction

from powercontext import embedding as embeddings
from powercontext.search.indexes import SearchIndex
from powercontext.search.vectors.registry import vector_engine
from powercontext.search.vectors.values import vec_table

log = logging.getLogger(__name__)


def running_model() -> embeddings.Embedder:
    return embeddings.embedder()


def recorded(index: SearchIndex) -> tuple[str, int, str] | None:
    """(model identity, dimension, layout) the index's vector objects were created for.

    The plain statement (:func:`recorded_raw`; the index name is the row's primary key):
    a remember reads it three times, and the ORM's query building cost each read about
    as much as the statement itself."""
    return recorded_raw(index)


def recorded_raw(index: SearchIndex) -> tuple[str, int, str] | None:
    """:func:`recorded` in one plain statement (the read path runs it per query)."""
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


def expected_record(model: embeddings.Embedder) -> tuple[str, int, str]:
    """What :func:`recorded` says when the vector objects are the running model's."""
    return model.identity, model.dimension, vector_engine().layout


def running_identity() -> tuple[str, int, str] | None:
    try:
        model = running_model()
    except embeddings.EmbeddingsUnavailable:
        return None
    return expected_record(model)


def record_model(index: SearchIndex, model: embeddings.Embedder) -> None:
    from powercontext.models import VectorIndexState, new_vectors_token

    VectorIndexState.objects.update_or_create(
        index=index.name,
        defaults={
            "model_identity": model.identity,
            "dimension": model.dimension,
            "layout": vector_engine().layout,
            # The objects were just created, empty: vectors kept from before are not
            # theirs (``changes``).
            "vectors_token": new_vectors_token(),
        },
    )


def create(index: SearchIndex, model: embeddings.Embedder, *, replace: bool) -> None:
    """Create the index's vector objects for ``model`` (dropping what is there first when
    ``replace``) and record the model, atomically where the engine allows."""
    engine = vector_engine()
    forward, reverse = engine.ddl(index, model.dimension)
    statements = [*reverse, *forward] if replace else forward
    if engine.transactional_ddl:
        with transaction.atomic(), connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
            record_model(index, model)
    else:
        # DDL commits on its own here: drop, create, then record; a crash in between
        # leaves no record or an empty table, which status reports and a rebuild repairs.
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
        record_model(index, model)
    # Statistics from the start, even of an empty table: OceanBase's planner guesses
    # without any, and estimates from the table itself once there are some.
    refresh_statistics(index)


def refresh_statistics(index: SearchIndex) -> None:
    """The engine's statistics step; a failure (say, a user without the privilege) is
    logged, never fatal: they only help the planner."""
    try:
        vector_engine().refresh_statistics(index)
    except DatabaseError as error:
        log.warning("%s: optimizer statistics not gathered: %s", vec_table(index), error)


# Concurrent first writes in one process create the vector objects once: without it
# OceanBase refused the second thread's DDL and that write failed.
_creating = threading.Lock()


def ensure(index: SearchIndex, model: embeddings.Embedder) -> None:
    """Create the vector objects on first use, when that is safe here."""
    if recorded(index) is not None:
        return
    engine = vector_engine()
    if connection.in_atomic_block and not engine.transactional_ddl:
        return  # DDL would commit the caller's transaction: rebuild_index creates it
    with _creating:
        if recorded(index) is not None:
            return  # another thread created them while this one waited
        create(index, model, replace=True)
