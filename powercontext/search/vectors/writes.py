"""Writing the vectors with their rows: the owning service embeds before its write
transaction (:func:`embed_for`, the model's time stays outside the lock) and writes the
vectors in the transaction that writes the rows (:func:`write`, :func:`writing`), so
they commit or roll back together. A row without a vector (the model switched off or
missing, or written before the channel existed) is still found lexically, and
``rebuild_index`` fills it in."""

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import DatabaseError

from powercontext import embedding as embeddings
from powercontext.search import token_states
from powercontext.search.indexes import SearchIndex
from powercontext.search.vectors import record
from powercontext.search.vectors.registry import vector_engine
from powercontext.search.vectors.rows import row_of
from powercontext.search.vectors.values import Embedded, VectorRow


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
        model = record.running_model()
        # The same run gives the documents' token states: kept for the focus of the
        # prompts that will find them (``token_states``, ``relevance.focus``).
        vectors, states = model.embed_with_tokens(list(texts))
        token_states.keep(model.identity, texts, states)
        record.ensure(index, model)
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
    recorded = record.recorded(index)
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
    before = row_of(index, scope_id, cited_id)
    yield
    after = row_of(index, scope_id, cited_id)
    if after is None:
        if before is not None and record.recorded(index) is not None:
            vector_engine().delete(index, [before[0]])
        return
    # The row just read: write_cited would read it again.
    _write_row(index, embedded, scope_id, cited_id, after, document)


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
    found = row_of(index, scope_id, cited_id)
    if found is not None:
        _write_row(index, embedded, scope_id, cited_id, found, document)


def _write_row(
    index: SearchIndex,
    embedded: Embedded,
    scope_id: str,
    cited_id: str,
    found: tuple[int, Any],
    document: str | None,
) -> None:
    """:func:`write` for ``found`` ((row key, version) of the row citing ``cited_id``)."""
    if document is None:
        if len(embedded.documents) != 1:
            return
        document = embedded.documents[0]
    write(index, embedded, [VectorRow(found[0], scope_id, cited_id, found[1], document)])


def drop_cited(index: SearchIndex, *, scope_id: str, cited_id: str) -> None:
    """Delete the vector of the row citing ``cited_id``, in the caller's transaction: the
    text it was computed from was redacted, and a vector must not describe text that is
    gone. ``rebuild_index`` (or serve's catch-up) embeds the row again."""
    if record.recorded(index) is None:
        return
    found = row_of(index, scope_id, cited_id)
    if found is not None:
        vector_engine().delete(index, [found[0]])
