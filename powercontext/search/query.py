"""A query, built once, and the one call that searches a declared index with it.

``Query.prompt`` is a whole prompt as a hook sends it, for a Context Pack: its terms, the
user's recurring ones (from the scope's recent prompts), its segments, each segment's
embedding, its anchors. ``Query.lookup`` is a deliberate search in one of
:data:`SEARCH_MODES`, ranked as written, with its embedding when its mode needs one.
``search(index, query, ...)`` runs every step for any family's index: the plan (which
terms, how much each weighs, by the index's declared term counts), the engine's lexical
match, the vector index's nearest rows, the ranking, the fusion and the relevance
decision (``powercontext.search.relevance``), and an explicit search's words-only
fallback; the family's selector only resolves the hits to its cited values.
"""

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django.db import connection

from powercontext.exceptions import CapabilityNotSupported
from powercontext.search import analyzer, hybrid, relevance, vectors
from powercontext.search.engines import SearchEngine, search_engine
from powercontext.search.indexes import IndexHit, SearchInconsistent, SearchIndex
from powercontext.search.policy import CANDIDATE_POOL, PROMPT_HISTORY, recurring_terms
from powercontext.search.ranking import rank, segmented, semantic_segments
from powercontext.search.relevance import Considered, Ranked, anchors
from powercontext.search.term_counts import counts_of

# Modes of an explicit search; ``auto`` resolves to hybrid when the index's vector channel
# is ready and to fts otherwise, and the response says which ran.
FTS, VECTOR, HYBRID, AUTO = "fts", "vector", "hybrid", "auto"
SEARCH_MODES = (AUTO, FTS, VECTOR, HYBRID)


@dataclass(frozen=True)
class Query:
    """``segments`` are the analyzer terms of a prompt's sentences and lines (None: the
    query is scored whole); ``vectors`` the embeddings the semantic channel searches with
    (None: by words alone); ``pack``: judged as a Context Pack is (see ``relevance``);
    ``fill``: a search that wants every entry holding its words, not only the rare
    words' candidates; ``vectors_required``: refuse rather than answer by words alone.
    ``mode``: an explicit search's mode as it will run, ``asked`` as it was asked for
    (``Query.lookup``; None for a pack's)."""

    text: str
    terms: list[str]
    recurring: frozenset[str] = frozenset()
    segments: list[list[str]] | None = None
    vectors: tuple[Any, ...] | None = None
    # The texts ``vectors`` embed (a prompt's semantic segments), for their focus.
    segment_texts: tuple[str, ...] = ()
    anchors: frozenset[str] = field(default_factory=frozenset)
    # Each name the anchors come from, as the terms an entry must hold together.
    anchor_names: frozenset[frozenset[str]] = field(default_factory=frozenset)
    pack: bool = False
    fill: bool = False
    lexical: bool = True
    vectors_required: bool = False
    mode: str | None = None
    asked: str | None = None

    # How many of the scope's recent prompts ``Query.prompt``'s ``history`` looks back on.
    HISTORY: ClassVar[int] = PROMPT_HISTORY

    @staticmethod
    def prompt_terms(text: str) -> frozenset[str]:
        """One past prompt's terms, as ``Query.prompt``'s ``history`` holds them."""
        return frozenset(analyzer.tokens(text))

    @staticmethod
    def can_embed() -> bool:
        """Whether a query built now carries its embedding (the model is on and loaded;
        waits for a load under way)."""
        return hybrid.can_embed()

    @classmethod
    def prompt(cls, text: str, *, history: Sequence[frozenset[str]] = ()) -> "Query":
        """A prompt for a Context Pack; ``history``: the terms of the scope's recent
        prompts (``contextpack.prompt_history``). Embeds its segments (none when the
        channel cannot embed): call it where a model call may take its time."""
        parts = segmented(text)
        segments = [list(dict.fromkeys(tokens)) for _, tokens in parts]
        # The prompt's distinct terms in order (``analyzer.query_terms``): segments split
        # at whitespace only, where no term runs across.
        terms = list(dict.fromkeys(itertools.chain.from_iterable(segments)))
        recurring = recurring_terms(terms, history)
        segment_texts = tuple(semantic_segments(parts, recurring))
        names = anchors.anchor_names(text)
        return cls(
            text=text,
            terms=terms,
            recurring=recurring,
            segments=segments,
            vectors=hybrid.query_vectors(segment_texts),
            segment_texts=segment_texts,
            # A name the user keeps asking about is the subject of their questions, not
            # their boilerplate: it stays an anchor however often it recurs.
            anchors=anchors.anchor_terms(names),
            anchor_names=names,
            pack=True,
        )

    @classmethod
    def lookup(cls, text: str, *, index: SearchIndex, mode: str = AUTO) -> "Query":
        """A deliberate search of ``index`` for ``text``: every entry holding its words
        (``fts``), the ones near it in meaning (``vector``), or both (``hybrid``);
        ``auto`` is hybrid when the index's vector channel is ready and fts otherwise,
        and fts too when the query cannot be embedded. Embeds the query when its mode
        needs it: call it before the read snapshot opens (the model holds no lock).

        Raises CapabilityNotSupported for a mode this server does not have, and for
        ``vector`` or ``hybrid`` asked for while the index's vectors cannot be read
        (with the reason) rather than quietly answering by fts."""
        if mode not in SEARCH_MODES:
            raise CapabilityNotSupported(f"Search mode {mode!r} is not supported by this server.")
        asked = mode
        if mode != FTS:
            # The read path's own one-row test, not status(): its catalogue lookup cost an
            # OceanBase search 15 of its 25 ms. status() is only asked why.
            ready = vectors.readable(index)
            if not ready and mode != AUTO:
                raise _not_ready(index, mode)
            if mode == AUTO:
                mode = HYBRID if ready else FTS
        vector = hybrid.query_vector(text) if mode != FTS else None
        if mode != FTS and vector is None:
            mode = FTS
        names = anchors.anchor_names(text)
        return cls(
            text=text,
            terms=analyzer.query_terms(text),
            vectors=None if vector is None else (vector,),
            anchors=anchors.anchor_terms(names),
            anchor_names=names,
            fill=True,
            lexical=mode != VECTOR,
            vectors_required=vector is not None,
            mode=mode,
            asked=asked,
        )

    @classmethod
    def subjects(
        cls, terms: list[str], *, history: Sequence[frozenset[str]], segments: list[list[str]]
    ) -> "Query":
        """The subjects of a session's recent prompts (``terms``, scored by ``segments``,
        one per prompt), with the words the user repeats in ``history`` weighing less: a
        session pack's query. By words alone."""
        return cls(
            " ".join(terms),
            terms,
            recurring=recurring_terms(terms, history),
            segments=segments,
        )

    def by_words(self) -> "Query":
        """The same query without the semantic channel."""
        return Query(
            text=self.text,
            terms=self.terms,
            recurring=self.recurring,
            segments=self.segments,
            anchors=self.anchors,
            anchor_names=self.anchor_names,
            pack=self.pack,
            fill=self.fill,
            mode=None if self.mode is None else FTS,
            asked=self.asked,
        )


@dataclass(frozen=True)
class Searched:
    """``hits``: what the decision admitted, best first; ``considered``: every candidate
    in fused order with its verdict and the semantic channel's rank (for explanations);
    ``mode``: the mode an explicit search ran in (None for a pack's)."""

    hits: list[Ranked]
    considered: list[Considered]
    mode: str | None = None


def search(index: SearchIndex, query: Query, *, scope_id: str, limit: int) -> Searched:
    """The hits of ``index`` in ``scope_id`` for ``query``, best first, at most ``limit``,
    each with the channels that proposed it, and every candidate with the relevance
    decision's verdict. Run it in the caller's read snapshot. Raises SearchInconsistent
    when a write-kept index describes another version than its row.

    An explicit search whose vectors were recorded as ready yet cannot be read (their
    table dropped behind the record) is refused as ``Query.lookup`` refuses it when its
    mode was asked for, and answered by the words alone in ``auto`` (``mode`` says so)."""
    try:
        return _search(index, query, scope_id=scope_id, limit=limit)
    except vectors.VectorsNotReady:
        if query.asked is None:
            raise
        if query.asked != AUTO:
            raise _not_ready(index, query.asked) from None
        return _search(index, query.by_words(), scope_id=scope_id, limit=limit)


def holds_rows(index: SearchIndex, *, scope_id: str) -> bool:
    """Whether ``index`` has any row of ``scope_id``: without one, every search of it
    there finds nothing, by words or by meaning (the vector channel only ever proposes
    the index's rows). One indexed read, so a prompt on a project with nothing stored yet
    skips the embedding of its segments. Run it in the caller's read snapshot."""
    quote = connection.ops.quote_name
    conditions = [f"{quote(column)} = %s" for column, _ in index.filters]
    conditions.append(f"{quote(index.scope_column)} = %s")
    values = [*(value for _, value in index.filters), scope_id]
    where = " AND ".join(conditions)
    with connection.cursor() as cursor:
        # Quoted names from the index's declaration; the values are parameters.
        cursor.execute(f"SELECT 1 FROM {quote(index.table)} WHERE {where} LIMIT 1", values)  # noqa: S608
        return cursor.fetchone() is not None


def _not_ready(index: SearchIndex, mode: str) -> CapabilityNotSupported:
    detail = vectors.status(index).detail
    return CapabilityNotSupported(
        f"Search mode {mode!r} needs the vector index, which is not ready: {detail}."
    )


def _search(index: SearchIndex, query: Query, *, scope_id: str, limit: int) -> Searched:
    counts = counts_of(index)
    plan = counts.search_plan(
        scope_id=scope_id, terms=query.terms, recurring=query.recurring, segments=query.segments
    )
    engine = lexical_engine()
    pool = max(limit, CANDIDATE_POOL)
    reach = max(pool, relevance.numbers.LEXICAL_REACH)
    candidates: list[IndexHit] = []
    for group in (plan.match, plan.fallback) if query.lexical else ():
        if group and (not candidates or (query.fill and len(candidates) < limit)):
            seen = {hit.cited_id for hit in candidates}
            matched = engine.match(index, scope_id=scope_id, terms=list(group), limit=reach)
            candidates += [
                hit
                for hit in _scope_cut(matched, plan.weights, query.segments, pool=pool)
                if hit.cited_id not in seen
            ]
    if any(hit.version != hit.indexed_version for hit in candidates):
        raise SearchInconsistent()
    semantic = hybrid.semantic_hits(
        index,
        scope_id=scope_id,
        queries=query.vectors,
        limit=pool,
        required=query.vectors_required,
    )
    scored = rank(
        ((hit.cited_id, hit.searchable_text) for hit in candidates), plan.weights, query.segments
    )
    considered = relevance.ranked(candidates, scored, semantic, query=query, plan=plan)
    if query.pack and semantic:
        considered = relevance.leave_near_duplicates(
            index, considered, scope_id=scope_id, limit=limit
        )
        considered = relevance.leave_off_focus(
            index, considered, segment_texts=query.segment_texts, scope_id=scope_id
        )
    hits = [item.ranked for item in considered if item.admitted][:limit]
    return Searched(hits, considered, query.mode)


def _scope_cut(
    candidates: list[IndexHit],
    weights: Mapping[str, float],
    segments: list[list[str]] | None,
    *,
    pool: int,
) -> list[IndexHit]:
    """The ``pool`` best of ``candidates`` by the scope's own term counts (``rank`` with
    the plan's ``weights``), in the engine's order; all of them when they are no more."""
    if len(candidates) <= pool:
        return candidates
    kept = {
        key
        for key, _ in rank(
            ((hit.cited_id, hit.searchable_text) for hit in candidates), weights, segments
        )[:pool]
    }
    return [hit for hit in candidates if hit.cited_id in kept]


def lexical_engine() -> SearchEngine:
    """The lexical channel's engine on the default database."""
    return search_engine()
