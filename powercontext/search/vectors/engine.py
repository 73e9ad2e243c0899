"""What every vector engine does: the base the engines (``vector_sqlite``,
``vector_oceanbase``) build on. Each owns its DDL, built from the declaration and the
model's dimension, and its reads and writes of the vector objects; the rest of the
channel reaches them through ``vectors.registry.vector_engine``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from django.db import connection

from powercontext.search.vectors.damage import DAMAGE, SearchDamage
from powercontext.search.vectors.values import Damage, StoredVector, VectorRow, vec_table

if TYPE_CHECKING:
    from powercontext.search.indexes import SearchIndex


class VectorEngine(ABC):
    """What a vector engine does (one subclass per engine: ``vector_sqlite``,
    ``vector_oceanbase``), and what the engines share: deleting by row key and the
    damage notes their searches make."""

    # Whether DDL may run inside a transaction (SQLite) or commits it (OceanBase).
    transactional_ddl: ClassVar[bool]
    # Names the shape of the vector objects ``ddl`` creates; changed with that shape, so
    # objects of an older one are recreated by rebuild_index rather than misread.
    layout: ClassVar[str]
    # The vector table's column that holds the indexed row's key.
    key_column: ClassVar[str]

    def __init__(self, damage: SearchDamage | None = None) -> None:
        # Where ``nearest`` notes the damaged vectors it meets (the process's by default).
        self.damage = DAMAGE if damage is None else damage

    @staticmethod
    @abstractmethod
    def ddl(index: SearchIndex, dimension: int) -> tuple[list[str], list[str]]:
        """(create, drop) statements of the index's vector objects. Pure."""
        ...

    @abstractmethod
    def problem(self, index: SearchIndex) -> str | None:
        """None when every vector object of the index exists, else what is missing."""
        ...

    @abstractmethod
    def upsert(self, index: SearchIndex, rows: Sequence[tuple[VectorRow, Any]]) -> None:
        """Store each (row, vector), replacing the row key's previous vector."""
        ...

    def delete(self, index: SearchIndex, row_keys: Sequence[int]) -> None:
        """Delete the vectors of ``row_keys``, 500 to a statement so no engine meets its
        limit on bound parameters."""
        vec = connection.ops.quote_name(vec_table(index))
        with connection.cursor() as cursor:
            for start in range(0, len(row_keys), 500):
                batch = list(row_keys[start : start + 500])
                marks = ", ".join(["%s"] * len(batch))
                cursor.execute(
                    f"DELETE FROM {vec} WHERE {self.key_column} IN ({marks})",  # noqa: S608
                    batch,
                )

    @abstractmethod
    def nearest(
        self, index: SearchIndex, *, scope_id: str, vectors: Sequence[Any], k: int
    ) -> list[tuple[int, str, str, float]]:
        """The ``k`` vectors of the scope nearest to any of ``vectors`` (a query's, or
        each of a prompt's segments'): (row key, cited id, version, cosine distance to the
        nearest of ``vectors``), nearest first, ties by row key. Only the vector table is
        read; the caller joins."""
        ...

    @abstractmethod
    def stored(self, index: SearchIndex, scope_id: str | None) -> dict[int, StoredVector]:
        """{row key: the cited id and version its vector is of} of every stored vector (of
        ``scope_id`` alone when given)."""

    @abstractmethod
    def stored_keys(self, index: SearchIndex, *, after: int | None, count: int) -> list[int]:
        """The row keys of the first ``count`` stored vectors past ``after``, in order
        (every scope): a rebuild walks them a chunk at a time for vectors whose row is
        gone."""

    @abstractmethod
    def stored_of(self, index: SearchIndex, row_keys: Sequence[int]) -> dict[int, StoredVector]:
        """:meth:`stored` of ``row_keys`` alone (those that have a vector)."""

    @abstractmethod
    def vectors(
        self, index: SearchIndex, row_keys: Sequence[int]
    ) -> list[tuple[int, str, str, Any]]:
        """(row key, cited id, version, the vector as a float32 array) of ``row_keys``
        that have a vector; a damaged one (not finite, all zero) is left out."""
        ...

    @abstractmethod
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
        return None
