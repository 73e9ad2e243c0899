"""Which vector engine serves this database, and which declared indexes have a vector
channel. Engines are named by path, chosen by the connection's engine when first asked."""

from django.db import connection
from django.utils.module_loading import import_string

from powercontext.migration_operations import engine_of
from powercontext.search.indexes import SearchIndex, declared_indexes
from powercontext.search.vectors.engine import VectorEngine

_ENGINES = {
    "sqlite": "powercontext.search.vector_sqlite.SqliteVectors",
    "oceanbase": "powercontext.search.vector_oceanbase.OceanBaseVectors",
}


def vector_engine() -> VectorEngine:
    engine: VectorEngine = import_string(_ENGINES[engine_of(connection)])()
    return engine


def vector_indexes() -> list[SearchIndex]:
    """The declared indexes that have a vector channel."""
    return [index for index in declared_indexes() if index.documents is not None]
