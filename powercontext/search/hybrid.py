"""The semantic channel of a search: the query's embeddings and the index's rows nearest
to them.

``query.search`` gathers the lexical candidates of a declared index (``policy`` and
``ranking``), asks here for the semantic ones, and has the relevance decision fuse and
judge both (``powercontext.search.relevance``); the family's selector then reads each
hit's cited version at the head it resolved, in the same read snapshot, exactly as for a
lexical hit. The channel is optional at every step: switched off, without its model,
before its first vector or after a model change it proposes nothing, and the ranking is
the lexical one, unjudged.
"""

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from powercontext import embedding as embeddings
from powercontext.search import token_states, vectors
from powercontext.search.indexes import IndexHit, SearchIndex

# Query segments whose vectors are kept (``query_vectors``): 1,024 of 384 float32 values
# are 1.5 MB.
QUERY_CACHE_SIZE = 1024
_cache: OrderedDict[tuple[str, str], Any] = OrderedDict()
_cache_lock = threading.Lock()


def can_embed() -> bool:
    """Whether this process can embed a query now (the channel is on, its model loads)."""
    if not embeddings.enabled():
        return False
    try:
        embeddings.embedder()
    except embeddings.EmbeddingsUnavailable:
        return False
    return True


def query_vector(text: str) -> Any | None:
    """The query's embedding, or None when the channel cannot embed (switched off, no
    model): never raises, so a prompt is always answered, lexically at worst. Kept as a
    prompt's segments are (:func:`query_vectors`): an agent repeats its searches too."""
    found = query_vectors([text])
    return None if found is None else found[0]


def query_vectors(texts: Sequence[str]) -> tuple[Any, ...] | None:
    """One embedding per text (a prompt's segments), the ones not seen lately in one call
    (``embed_documents``); None when the channel cannot embed or there is no text.

    The vectors of the last :data:`QUERY_CACHE_SIZE` segments are kept, by the model's
    identity and the text: an agent's prompts repeat whole segments (the instructions a
    hook or a template wraps every question in, a pasted checklist), and the model's time
    is most of a prepare's. A kept vector is the one the model gives that text (to float
    rounding: texts embedded together), so the ranking does not depend on it."""
    if not texts or not embeddings.enabled():
        return None
    try:
        model = embeddings.embedder()
        with _cache_lock:
            known = {
                text: _cache[(model.identity, text)]
                for text in texts
                if (model.identity, text) in _cache
            }
        new = [text for text in dict.fromkeys(texts) if text not in known]
        if new:
            # The same run gives the segments' token states: kept for the focus of this
            # prompt's candidates (``token_states``, ``relevance.focus``).
            found, states = model.embed_with_tokens(new)
            token_states.keep(model.identity, new, states)
            for text, vector in zip(new, found, strict=True):
                vector.flags.writeable = False  # shared by every prompt that has the text
                known[text] = vector
        with _cache_lock:
            for text in texts:
                _cache[(model.identity, text)] = known[text]
                _cache.move_to_end((model.identity, text))
            while len(_cache) > QUERY_CACHE_SIZE:
                _cache.popitem(last=False)
        return tuple(known[text] for text in texts)
    except embeddings.EmbeddingsUnavailable:
        return None


def forget_query_vectors() -> None:
    """Empty the query segments' cache (benchmarks measuring the model's cost cold)."""
    with _cache_lock:
        _cache.clear()


def semantic_hits(
    index: SearchIndex,
    *,
    scope_id: str,
    queries: Sequence[Any] | None,
    limit: int,
    required: bool = False,
) -> list[IndexHit] | None:
    """The index's ``limit`` rows nearest to any of ``queries`` (a query's vector, or each
    of a prompt's segments') in the caller's snapshot, best first: a row scores its
    similarity to the vector it is nearest to. None when there is no vector or the
    channel cannot be read now, unless ``required`` (a search whose answer names the
    mode that ran): then :class:`~powercontext.search.vectors.VectorsNotReady`."""
    if not queries:
        return None
    try:
        return vectors.vector_match(index, scope_id=scope_id, query_vectors=queries, limit=limit)
    except vectors.VectorsNotReady:
        if required:
            raise
        return None
