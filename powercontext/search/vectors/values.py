"""The vector channel's values: what a write path hands over, what status and coverage
say, and the two refusals a reader meets. Plain values, no database."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from powercontext.exceptions import PowerContextError

if TYPE_CHECKING:
    from powercontext.search.indexes import SearchIndex


class VectorsNotReady(PowerContextError):
    """The vector channel of an index cannot be read now (switched off, no model, no
    vector table yet, or the vectors are of another model): search lexically."""

    default_message = "The vector index is not ready; run manage.py rebuild_index."


class VectorsDamaged(VectorsNotReady):
    """Stored vectors of a scope that the engine cannot compute with (on OceanBase,
    values whose products overflow): that scope is searched lexically until
    ``rebuild_index`` re-embeds them. Noted for ``/health/ready`` and logged once."""

    default_message = "Stored vectors are damaged; run manage.py rebuild_index."


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


@dataclass
class Pending:
    """How many rows can have a vector, and how many of them have none (``missing``) or
    one of another version (``stale``): :func:`powercontext.search.vectors.pending`."""

    rows: int = 0
    missing: int = 0
    stale: int = 0


def vec_table(index: SearchIndex) -> str:
    return index.name + "_vec"
