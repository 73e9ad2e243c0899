"""One ranking from both channels of a declared index, for any family.

A family's selector gathers and scores its lexical candidates (``policy`` and
``ranking``) and asks here for the semantic ones and the fused order; it then reads each
hit's cited version at the head it resolved, in the same read snapshot, exactly as for a
lexical hit. The semantic channel is optional at every step: switched off, without its
model, before its first vector or after a model change it proposes nothing and the
ranking is the lexical one, unchanged.
"""

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from powercontext import embedding as embeddings
from powercontext.search import vectors
from powercontext.search.fusion import LEXICAL, fuse
from powercontext.search.indexes import IndexHit, SearchIndex

# Modes of an explicit search; ``auto`` resolves to hybrid when the index's vector channel
# is ready and to fts otherwise, and the response says which ran.
FTS, VECTOR, HYBRID, AUTO = "fts", "vector", "hybrid", "auto"
SEARCH_MODES = (AUTO, FTS, VECTOR, HYBRID)

# A candidate only the semantic channel proposes must be at least this similar to the
# query (cosine) to be a hit: the nearest rows of a scope are always "nearest", even to a
# question nothing answers. Candidates the words found are never cut by it.
SEMANTIC_FLOOR = 0.3

# A Context Pack (never an explicit search) for a prompt to which no row of the scope comes
# as near as this, by any of its segments, holds at most its ``UNANSWERED_HITS`` best
# candidates: the words of a question nothing answers ("How do I rotate the TLS
# certificate?") still match entries that share one of them ("certificate"), and those are
# noise to the agent. Measured on both dev sets (docs/relevance.md §7): every no-answer
# prompt of the coding-memory set is under 0.35, 6 of its 171 answerable ones and 3 of
# LoCoMo's 759 bare questions are.
ANSWER_FLOOR = 0.35
UNANSWERED_HITS = 2
# And in any Context Pack, a candidate whose fused score is under this share of the best
# one's, and whose similarity to the prompt is under ``NEAR``, is left out: it shares a weak
# word or two with the prompt and little meaning, and only costs the agent's context.
# Measured on both dev sets (docs/relevance.md §7): 0.2 alone cost LoCoMo 0.2 points of
# all-evidence recall; sparing the near ones keeps it and the coding-memory recall.
RELATIVE_FLOOR = 0.3
NEAR = 0.4


# Query segments whose vectors are kept (``query_vectors``): 1,024 of 384 float32 values
# are 1.5 MB.
QUERY_CACHE_SIZE = 1024
_cache: OrderedDict[tuple[str, str], Any] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class Ranked:
    """A candidate in fused order; ``channels`` are those that proposed it."""

    hit: IndexHit
    score: float
    channels: tuple[str, ...]


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
            for text, vector in zip(new, model.embed_documents(new), strict=True):
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


def _kept(item: Ranked, semantic_scores: dict[str, float], floor: float) -> bool:
    return LEXICAL in item.channels or semantic_scores[item.hit.cited_id] >= floor


def ranked(
    lexical: Sequence[IndexHit],
    lexical_scores: Sequence[tuple[str, float]],
    semantic: Sequence[IndexHit] | None,
    *,
    floor: float = SEMANTIC_FLOOR,
    answer_floor: float | None = None,
) -> list[Ranked]:
    """Candidates best first: the lexical order alone when ``semantic`` is None, else
    both channels fused (``powercontext.search.fusion``). Every lexical candidate is
    kept; a semantic-only one is kept when its similarity reaches ``floor``. With an
    ``answer_floor`` (a Context Pack's), when no semantic candidate reaches it only the
    ``UNANSWERED_HITS`` best are kept, and a candidate under ``RELATIVE_FLOOR`` of the best
    fused score and under ``NEAR`` in similarity is left out; never all of them: the best
    stays. The caller cuts to its window."""
    by_id = {hit.cited_id: hit for hit in semantic or ()}
    # The lexical hit wins for a candidate both found: it carries the indexed version the
    # caller's consistency check compares.
    by_id.update((hit.cited_id, hit) for hit in lexical)
    if semantic is None:
        return [Ranked(by_id[key], score, (LEXICAL,)) for key, score in lexical_scores]
    similarity = {hit.cited_id: hit.score for hit in semantic}
    fused = fuse(lexical_scores, similarity.items())
    items = [Ranked(by_id[hit.key], hit.score, hit.channels) for hit in fused]
    kept = [item for item in items if _kept(item, similarity, floor)]
    # An empty pool (no row has a vector yet) says nothing about the prompt: not cut.
    if answer_floor is None or not similarity or not kept:
        return kept
    if max(similarity.values()) < answer_floor:
        kept = kept[:UNANSWERED_HITS]
    least = RELATIVE_FLOOR * kept[0].score
    return [
        item
        for item in kept
        if item.score >= least or similarity.get(item.hit.cited_id, -1.0) >= NEAR
    ]
