"""A query, built once, and the one call that searches a declared index with it.

``Query.prompt`` is a whole prompt as a hook sends it, for a Context Pack: its terms, the
user's recurring ones (from the scope's recent prompts), its segments, each segment's
embedding, its anchors. ``Query.lookup`` is a deliberate search, ranked as written.
``search(index, query, ...)`` runs every step for any family's index: the plan (which
terms, how much each weighs), the engine's lexical match, the vector index's nearest
rows, the ranking, the fusion and the relevance decision
(``powercontext.search.relevance``); the family's selector only resolves the hits to its
cited values.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from powercontext.search import analyzer, hybrid, relevance
from powercontext.search.indexes import IndexHit, SearchInconsistent, SearchIndex
from powercontext.search.policy import CANDIDATE_POOL, recurring_terms
from powercontext.search.ranking import query_segments, rank, semantic_segments
from powercontext.search.relevance import Considered, Ranked, anchors
from powercontext.search.term_counts import TermCounts

if TYPE_CHECKING:
    from powercontext.search import SearchEngine


@dataclass(frozen=True)
class Query:
    """``segments`` are the analyzer terms of a prompt's sentences and lines (None: the
    query is scored whole); ``vectors`` the embeddings the semantic channel searches with
    (None: by words alone); ``pack``: judged as a Context Pack is (see ``relevance``);
    ``fill``: a search that wants every entry holding its words, not only the rare
    words' candidates; ``vectors_required``: refuse rather than answer by words alone."""

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

    @classmethod
    def prompt(cls, text: str, *, history: Sequence[frozenset[str]] = ()) -> "Query":
        """A prompt for a Context Pack; ``history``: the terms of the scope's recent
        prompts (``contextpack.prompt_history``). Embeds its segments (none when the
        channel cannot embed): call it where a model call may take its time."""
        terms = analyzer.query_terms(text)
        recurring = recurring_terms(terms, history)
        segment_texts = tuple(semantic_segments(text, recurring))
        names = anchors.anchor_names(text)
        return cls(
            text=text,
            terms=terms,
            recurring=recurring,
            segments=query_segments(text),
            vectors=hybrid.query_vectors(segment_texts),
            segment_texts=segment_texts,
            # A name the user keeps asking about is the subject of their questions, not
            # their boilerplate: it stays an anchor however often it recurs.
            anchors=anchors.anchor_terms(names),
            anchor_names=names,
            pack=True,
        )

    @classmethod
    def lookup(
        cls, text: str, *, vector: Any | None = None, lexical: bool = True, required: bool = False
    ) -> "Query":
        """A deliberate search for ``text``: every entry holding its words, and with
        ``vector`` (its embedding) the ones near it in meaning."""
        names = anchors.anchor_names(text)
        return cls(
            text=text,
            terms=analyzer.query_terms(text),
            vectors=None if vector is None else (vector,),
            anchors=anchors.anchor_terms(names),
            anchor_names=names,
            fill=True,
            lexical=lexical,
            vectors_required=required,
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
        )


def search(
    index: SearchIndex, query: Query, *, scope_id: str, limit: int, counts: TermCounts
) -> list[Ranked]:
    """The hits of ``index`` in ``scope_id`` for ``query``, best first, at most ``limit``,
    each with the channels that proposed it; ``counts`` are the index's term counts. Run
    it in the caller's read snapshot. Raises SearchInconsistent when a write-kept index
    describes another version than its row."""
    return judged(index, query, scope_id=scope_id, limit=limit, counts=counts).hits


@dataclass(frozen=True)
class Searched:
    """``hits``: what the decision admitted, best first; ``considered``: every candidate
    in fused order with its verdict and the semantic channel's rank (for explanations)."""

    hits: list[Ranked]
    considered: list[Considered]


def judged(
    index: SearchIndex, query: Query, *, scope_id: str, limit: int, counts: TermCounts
) -> Searched:
    """``search``, with every candidate's verdict."""
    plan = counts.search_plan(
        scope_id=scope_id, terms=query.terms, recurring=query.recurring, segments=query.segments
    )
    engine = lexical_engine()
    pool = max(limit, CANDIDATE_POOL)
    candidates: list[IndexHit] = []
    for group in (plan.match, plan.fallback) if query.lexical else ():
        if group and (not candidates or (query.fill and len(candidates) < limit)):
            seen = {hit.cited_id for hit in candidates}
            candidates += [
                hit
                for hit in engine.match(index, scope_id=scope_id, terms=list(group), limit=pool)
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
    return Searched(hits, considered)


def lexical_engine() -> "SearchEngine":
    """The lexical channel's engine on the default database."""
    from powercontext.search import search_engine

    return search_engine()
