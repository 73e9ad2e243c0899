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

The rooms, by job: ``values`` (what is handed over and reported), ``engine`` (the base
the engines build on) and ``registry`` (which engine, which indexes), ``record`` (the
model and its record, the DDL's creation), ``availability`` (status and readiness),
``writes``, ``reads``, ``rows`` (the indexed rows as a snapshot has them), ``damage``
(what searches met) and ``rebuilding`` (rebuild and check). Callers use the names below.
"""

from powercontext.search.vectors.availability import readable, readiness, status
from powercontext.search.vectors.damage import DAMAGE
from powercontext.search.vectors.engine import VectorEngine
from powercontext.search.vectors.reads import documents_of, stored_vectors, vector_match
from powercontext.search.vectors.rebuilding import (
    check,
    check_all,
    coverage,
    pending,
    rebuild,
    rebuild_all,
)
from powercontext.search.vectors.registry import vector_engine, vector_indexes
from powercontext.search.vectors.values import (
    Coverage,
    Embedded,
    Pending,
    State,
    VectorRow,
    VectorsDamaged,
    VectorsNotReady,
    VectorStatus,
    vec_table,
)
from powercontext.search.vectors.writes import drop_cited, embed_for, write_cited, writing

__all__ = [
    "DAMAGE",
    "Coverage",
    "Embedded",
    "Pending",
    "State",
    "VectorEngine",
    "VectorRow",
    "VectorStatus",
    "VectorsDamaged",
    "VectorsNotReady",
    "check",
    "check_all",
    "coverage",
    "documents_of",
    "drop_cited",
    "embed_for",
    "pending",
    "readable",
    "readiness",
    "rebuild",
    "rebuild_all",
    "status",
    "stored_vectors",
    "vec_table",
    "vector_engine",
    "vector_indexes",
    "vector_match",
    "write_cited",
    "writing",
]
