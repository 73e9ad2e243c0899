"""Whether an index's vector channel can be read now, and if not why: for the read path
(:func:`readable`, one row), for rebuilds and checks (:func:`status`) and for
``/health/ready`` (:func:`readiness`)."""

from typing import Any

from powercontext import embedding as embeddings
from powercontext.search.indexes import SearchIndex
from powercontext.search.vectors import record
from powercontext.search.vectors.damage import DAMAGE
from powercontext.search.vectors.registry import vector_engine, vector_indexes
from powercontext.search.vectors.values import State, VectorStatus


def readable(index: SearchIndex) -> bool:
    """Whether the read path searches the index's vectors: the channel is on and the
    vector objects are recorded as the running model's and this layout's. One row, no
    catalogue lookup (:func:`status` has one, 15 ms on OceanBase, too dear for every
    search): a table missing behind its record fails the search's own statement
    instead, with :class:`VectorsNotReady`."""
    return embeddings.enabled() and record.recorded_raw(index) == record.running_identity()


def status(index: SearchIndex) -> VectorStatus:
    """Whether the index's vector channel can be read now, and if not why (cheap once the
    model is loaded: one row and a catalogue lookup)."""
    if not embeddings.enabled():
        return VectorStatus(index.name, State.OFF, "switched off (POWERCONTEXT_EMBEDDINGS=off)")
    recorded = record.recorded(index)
    identity, dimension, _ = recorded if recorded else (None, None, None)
    try:
        model = record.running_model()
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


def readiness() -> dict[str, Any]:
    """``/health/ready``'s ``vector_index`` check: failing only when the model cannot be
    loaded (lexical search answers without vectors, so readiness is then "degraded",
    not "not_ready"); its detail says plainly which channel is not ready and why, and
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
    # A model that cannot be loaded (a file failing its digest, a missing package) is a
    # broken install, not a channel still filling: the check fails, and readiness says
    # "degraded" (served, lexically) instead of "ready" (server/health.py).
    broken = any(state.state == State.UNAVAILABLE for state in states)
    return {
        "status": "failing" if broken else "ok",
        "detail": f"{detail} (search answers lexically meanwhile)",
    }


def _damage_detail(index: SearchIndex, dimension: int | None) -> str | None:
    """``SearchDamage.detail`` of the index, the rows looked at again by the engine."""
    if dimension is None:
        return DAMAGE.detail(index, None)
    engine = vector_engine()

    def recheck(keys: list[int]) -> dict[int, str]:
        return engine.damaged(index, dimension=dimension, keys=keys).rows

    return DAMAGE.detail(index, recheck)
