"""The semantic channel's side of a search, and one ranking from both channels.

``query.search`` gathers and scores the lexical candidates of a declared index
(``policy`` and ``ranking``) and asks here for the query's embeddings, the semantic
candidates and the fused order with the relevance decision's verdicts (``ranked``); the
family's selector then reads each hit's cited version at the head it resolved, in the
same read snapshot, exactly as for a lexical hit. The semantic channel is optional at
every step: switched off, without its model, before its first vector or after a model
change it proposes nothing, and the ranking is the lexical one, unjudged.
"""

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from powercontext import embedding as embeddings
from powercontext.search import focus, relevance, vectors
from powercontext.search.fusion import LEXICAL, fuse
from powercontext.search.indexes import IndexHit, SearchIndex
from powercontext.search.policy import STOP_TERMS, SearchPlan

if TYPE_CHECKING:
    from powercontext.search import SearchEngine
    from powercontext.search.query import Query

# Modes of an explicit search; ``auto`` resolves to hybrid when the index's vector channel
# is ready and to fts otherwise, and the response says which ran.
FTS, VECTOR, HYBRID, AUTO = "fts", "vector", "hybrid", "auto"
SEARCH_MODES = (AUTO, FTS, VECTOR, HYBRID)

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
            # The same run gives the segments' token states, for their focus (``focus``).
            found, states = model.embed_with_tokens(new)
            focus.keep(model.identity, new, states)
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


def lexical_engine() -> "SearchEngine":
    """The lexical channel's engine on the default database."""
    from powercontext.search import search_engine

    return search_engine()


@dataclass(frozen=True)
class Considered:
    """A candidate as the relevance decision saw it: ``semantic_rank`` is its place among
    the semantic channel's candidates (1 = nearest; None when that channel did not propose
    it), ``verdict`` why it was admitted or left out; ``duplicate_of``, for a
    near-duplicate, the cited id of the better-ranked candidate that stands for it."""

    ranked: Ranked
    semantic_rank: int | None
    similarity: float | None
    verdict: relevance.Verdict
    duplicate_of: str | None = None
    # How much of the prompt it speaks to, token by token (``focus``): for the admitted
    # candidates of a pack's window.
    focus: float | None = None

    @property
    def admitted(self) -> bool:
        return self.verdict in relevance.ADMITTED


def ranked(
    lexical: Sequence[IndexHit],
    lexical_scores: Sequence[tuple[str, float]],
    semantic: Sequence[IndexHit] | None,
    *,
    query: "Query",
    plan: SearchPlan,
) -> list[Considered]:
    """Every candidate best first (the lexical order alone when ``semantic`` is None,
    else both channels fused: ``powercontext.search.fusion``), each with the relevance
    decision's verdict (``powercontext.search.relevance``). Without semantic evidence (the
    channel off, no vector in the scope yet) nothing is judged: every lexical candidate is
    admitted, in the lexical order. ``plan`` is the search's (its weights and counts). The
    caller cuts the admitted ones to its window."""
    weights = plan.weights
    by_id = {hit.cited_id: hit for hit in semantic or ()}
    # The lexical hit wins for a candidate both found: it carries the indexed version the
    # caller's consistency check compares.
    by_id.update((hit.cited_id, hit) for hit in lexical)
    if not semantic:
        return [
            Considered(Ranked(by_id[key], score, (LEXICAL,)), None, None, relevance.Verdict.WORDS)
            for key, score in lexical_scores
        ]
    similarity = {hit.cited_id: hit.score for hit in semantic}
    semantic_rank = {hit.cited_id: place for place, hit in enumerate(semantic, start=1)}
    fused = fuse(lexical_scores, similarity.items())
    # A lexical candidate the nearest rows left out is at most as near as the farthest of
    # them: a bound, not a measure, but enough to tell that it is not near.
    farthest = min(similarity.values())
    lexical_keys = {hit.cited_id for hit in lexical}
    content = [term for term in query.terms if term not in STOP_TERMS]
    # A query of one word ("deployment", a tag) names one thing, as an identifier does.
    names = query.anchor_names | {frozenset(content)} if len(content) == 1 else query.anchor_names
    anchors = query.anchors | frozenset(content) if len(content) == 1 else query.anchors
    anchors_only = bool(content) and all(term in anchors for term in content)
    anchors_known = frozenset(term for term in anchors if term in weights)
    # A name most of the scope's entries hold (the speaker of half a chat, the language
    # the project is written in) picks none of them out: the entries holding it are
    # anchored, but do not show that the scope answers. Asked alone, it is what the
    # query names.
    picking = frozenset(
        term
        for term in anchors_known
        if anchors_only
        or relevance.picks_out(term, plan.document_frequency.get(term, 0), plan.documents)
    )
    mean_weight = sum(weights.values()) / len(weights) if weights else 0.0
    subjects = frozenset(term for term, weight in weights.items() if weight >= mean_weight)
    evidence = []
    segments = query.segments or [query.terms]
    prepared = relevance.weighted(weights, segments)
    for hit in fused:
        terms = frozenset(by_id[hit.key].searchable_text.split())
        held = len(weights.keys() & terms)
        evidence.append(
            relevance.Evidence(
                key=hit.key,
                lexical=hit.key in lexical_keys,
                similarity=similarity.get(hit.key, farthest),
                coverage=relevance.coverage_of(terms, prepared),
                terms=terms,
                anchors_held=relevance.held(names, terms),
                readable=relevance.readable(by_id[hit.key].searchable_text),
                subjects=terms & subjects,
                held=held,
                # Only the word-list rule reads it, and only past WORD_LIST_HELD words.
                spread=relevance.spread(terms, weights, segments)
                if held >= relevance.WORD_LIST_HELD
                else 0.0,
            )
        )
    judgements = relevance.judge(
        evidence,
        anchors_known=picking,
        anchors_common=anchors_known - picking,
        anchors_unknown=anchors - anchors_known,
        anchors_only=anchors_only,
        single_segment=len(segments) <= 1,
        readable_query=relevance.readable(query.text),
        pack=query.pack,
    )
    return [
        Considered(
            Ranked(by_id[hit.key], hit.score, hit.channels),
            semantic_rank.get(hit.key),
            similarity.get(hit.key),
            judgement.verdict,
        )
        for hit, judgement in zip(fused, judgements, strict=True)
    ]
